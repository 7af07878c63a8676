"""Arithmetic on a `void*`, which GCC and nvcc take as a GNU extension (a byte offset) and clang, HIP's compiler,
refuses in C++ ("arithmetic on a pointer to void"). The fix writes the byte arithmetic out: the pointer cast to
char* (const char* where the pointee is const), which counts as the extension did; the result converts back to the
void* it is assigned to.

Only a line the compiler named is edited: a name declared void* in one function may be another type's pointer in
the next, where a char* cast would silently change what its arithmetic means."""

from __future__ import annotations

import re

# A name declared void* (a variable, a parameter, a member): `void *ptr = NULL;`, `const void* src,`; not a
# function returning one, nor an array of them (whose arithmetic steps over pointers, and compiles)
DECLARED = re.compile(r"\b(?P<const>const\s+)?void\s*\*\s*(?:const\s+|__restrict__\s+|__restrict\s+)?"
                      r"(?P<name>[A-Za-z_]\w*)\s*(?=[,;=)])")
# `(void*)x + n`: a cast to void* whose operand (a name, a member, a call) is offset right away
CAST = re.compile(r"\((?P<const>\s*const)?\s*void\s*\*\s*\)(?=\s*[A-Za-z_][\w.]*(?:->\w+)*(?:\([^()]*\))?"
                  r"\s*[+-](?![+=>-]))")
NEARBY = (0, -1, -2, 1, -3)  # the named line first; hipify's breadcrumb and include shift a .hip file's lines


def void_names(text: str) -> dict[str, str]:
    """Each name the source declares void*, and the char pointer its bytes are counted through."""
    return {m.group("name"): "const char*" if m.group("const") else "char*" for m in DECLARED.finditer(text)}


def _chain(name: str, group: str = "lhs") -> str:
    """`name`, or a member of that name reached through `.` and `->` (`s->data`, `buf.ptr`), as group `group`."""
    return rf"(?<![\w.>&)])(?P<{group}>(?:[A-Za-z_]\w*\s*(?:\.|->)\s*)*\b{re.escape(name)})\b"


def counted_in_bytes(line: str, names: dict[str, str]) -> str:
    """`line` with each arithmetic on a void* of `names` written on a char pointer (the line as it was where it has
    none): `p += n;` becomes `p = (char*)(p) + (n);`, `s->data + 2` becomes `((char*)s->data) + 2`."""
    for name in sorted(names, key=len, reverse=True):
        line = _in_bytes(line, name, names[name])
    return CAST.sub(lambda m: "(const char*)" if m.group("const") else "(char*)", line)


def _in_bytes(line: str, name: str, cast: str) -> str:
    """`line` with `name`'s compound assignments, left operands and right operands cast to `cast`."""

    def compound(m: re.Match[str]) -> str:
        return f"{m['lhs']} = ({cast})({m['lhs']}) {m['op']} ({m['rhs'].rstrip()});"

    chain = _chain(name)
    line = re.sub(chain + r"\s*(?P<op>[+-])=(?!=)\s*(?P<rhs>[^;]+);", compound, line)
    line = re.sub(chain + r"(?=\s*[+-](?![+=>-]))", lambda m: f"(({cast}){m['lhs']})", line)
    return re.sub(r"(?P<pre>[\w)\]]\s*[+-]\s*)" + _chain(name, "rhs") + r"(?!\s*(?:\.|->|\(|\[))",
                  lambda m: f"{m['pre']}(({cast}){m['rhs']})", line)


def byte_arithmetic(text: str, line: int) -> tuple[int, str, str] | None:
    """The line the compiler named at `line` (or beside it) that does arithmetic on a void*: its number, its text
    and the text it becomes, stripped."""
    names = void_names(text)
    lines = text.splitlines()
    for number in (line + d for d in NEARBY):
        if 1 <= number <= len(lines):
            was = lines[number - 1].strip()
            now = counted_in_bytes(was, names)
            if now != was:
                return number, was, now
    return None
