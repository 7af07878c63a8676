"""Arithmetic on a void*, written on a char pointer where the compiler named it (draft/void_arith.py)."""

from rocbuild.draft.void_arith import byte_arithmetic, counted_in_bytes, void_names

SOURCE = """\
void* table[4];
struct S { const void* data; };
float* f(void* p, S* s, int n, float* x) {
  float* y = x + n;
  p += n * 4;
  return (float*)(s->data + n) + (x - y);
}
"""


def test_only_names_declared_void_pointers_are_counted_in_bytes():
    names = void_names(SOURCE)
    assert names == {"data": "const char*", "p": "char*"}  # an array of void* steps over pointers: not one
    assert counted_in_bytes("float* y = x + n;", names) == "float* y = x + n;"
    assert counted_in_bytes("return (float*)(s->data + n) + (x - y);", names) == \
        "return (float*)(((const char*)s->data) + n) + (x - y);"
    assert counted_in_bytes("q = n + p - 1;", names) == "q = n + ((char*)p) - 1;"


def test_the_named_line_is_edited_first_then_the_lines_above_it():
    assert byte_arithmetic(SOURCE, 5) == (5, "p += n * 4;", "p = (char*)(p) + (n * 4);")
    # hipify's breadcrumb shifts a .hip file a line down: line 7 of the .hip (a brace) is line 6 of the source
    assert byte_arithmetic(SOURCE, 7)[:2] == (6, "return (float*)(s->data + n) + (x - y);")  # type: ignore[index]
    fixed = SOURCE.replace("p += n * 4;", "p = (char*)(p) + (n * 4);")
    assert byte_arithmetic(fixed, 5) == byte_arithmetic(SOURCE, 6)  # an edited line is left: the next is line 6
    done = fixed.replace("(s->data + n)", "(((const char*)s->data) + n)")
    assert byte_arithmetic(done, 6) is None
    assert byte_arithmetic(SOURCE, 4) == (5, "p += n * 4;", "p = (char*)(p) + (n * 4);")  # line 4 has none: below
