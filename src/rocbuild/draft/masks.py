"""Edits of a package's C++/CUDA sources that one trap makes in every file at once.

32-bit lane masks handed to HIP's warp sync builtins (__shfl_*_sync, __ballot_sync, ...).

From ROCm 7 (6.2 to 6.4 behind HIP_ENABLE_WARP_SYNC_BUILTINS, which cpp_extension sets) these builtins are
templates that static_assert a 64-bit mask, and CUDA code passes 0xffffffff. The mask that means "every
lane" on both wave sizes is all 64 bits: HIP itself drops the upper half on wave32 (gfx10/11/12), and on
wave64 (Instinct) a 32-bit mask would leave half the wave out. So a literal full mask, in the call or in a
*MASK* macro or constant, is widened; a mask computed into a 32-bit variable is left to a hand edit."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from rocbuild.draft.torch_reading import VENDOR_DIRS

FULL = "0xffffffffffffffffULL"
# A literal 32-bit full mask as a builtin's first argument. One fixed-width look-behind per builtin, so the
# replacement is plain text: a second run finds it and reports "already applied".
# `_sync(` covers every builtin but __syncwarp (a package's own *_sync wrapper passes the mask on, too).
# Written as 0xffffffff, or as a 32-bit -1 (pytorch-fast-transformers: uint32_t(-1)) or ~0u.
CALL = (r"(?:(?<=_sync\()|(?<=__syncwarp\())(?:0[xX][fF]{8}[uU]?\b|uint32_t\(-1\)|unsigned\(-1\)"
        r"|\((?:uint32_t|unsigned(?: int)?)\)[ \t]*-1\b|~0[uU]\b)")
# A full mask named once: `#define FULL_MASK (0xFFFFFFFF)`, `#define FULLWARP 0xffffffff` (torch-lap-cuda),
# `constexpr unsigned kFullMask = 0xffffffff;`.
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+\w*(?:MASK|WARP|LANES)\w*[ \t]+"
                    r"\(?[ \t]*(?P<lit>0[xX][fF]{8}[uU]?)[ \t]*\)?[ \t]*$",
                    re.MULTILINE | re.IGNORECASE)
CONSTANT = re.compile(r"^[ \t]*(?:static[ \t]+)?(?:constexpr|const)[ \t]+(?:__device__[ \t]+)?"
                      r"(?P<type>unsigned(?:[ \t]+int)?|uint32_t|unsigned)[ \t]+\w*[mM][aA][sS][kK]\w*[ \t]*=[ \t]*"
                      r"(?P<lit>0[xX][fF]{8}[uU]?)[ \t]*;", re.MULTILINE)
SOURCES = (".cu", ".cuh", ".hip", ".h", ".hpp", ".hh", ".cpp", ".cc", ".cxx", ".inl", ".tpp")
SKIP_DIRS = {".git", "build", "dist", "__pycache__", ".eggs"}
MAX_FILES = 4000  # a vendored tree (cutlass, CK) stops the scan before it costs seconds
MAX_BYTES = 2_000_000


@dataclass(frozen=True)
class SourceEdit:
    """A place in a source file one replace edit fixes (a 32-bit full mask handed to a builtin, a CUDA-only
    include): `find` is the text to replace (CALL, a regex, for a mask's call sites), `with_` what it becomes."""

    file: str
    line: int
    text: str  # the source line
    find: str
    with_: str
    regex: bool


def find_masks(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Every file's first place of each kind (one replace edit per file and kind covers its others);
    `texts`: the tree's sources (read_sources)."""
    found: list[SourceEdit] = []
    for rel, text in texts.items():
        call = re.search(CALL, text)
        if call:
            found.append(SourceEdit(rel, line_of(text, call.start()), line_at(text, call.start()), CALL, FULL, True))
        for match in [*DEFINE.finditer(text), *CONSTANT.finditer(text)]:
            whole = match.group(0).strip()
            wide = whole.replace(match.group("lit"), FULL)
            if "type" in match.groupdict() and match.group("type"):
                wide = re.sub(rf"\b{re.escape(match.group('type'))}\b", "unsigned long long", wide, count=1)
            found.append(SourceEdit(rel, line_of(text, match.start()), whole, whole, wide, False))
    return found


# Warp code written for 32 lanes that keeps its lane masks in 32-bit variables (gpuastar-cu's `unsigned const
# mask = __activemask()`, torch-ans's group_mask, ramnet-ops'): HIP's builtins static_assert a 64-bit mask. On a
# wave32 GPU 32 bits name every lane, so overloads that take an unsigned mask and pass it on widened (more
# specialized than HIP's templates, so chosen for it) keep the code's meaning; on a wave64 GPU the code would
# address half a wavefront, and its device compile stops with an #error instead.
# A 32-bit variable, or a function's parameter (deformops' `softmax_forward_warp(..., unsigned lane_mask)`).
MASK_VARIABLE = re.compile(r"\b(?:unsigned(?:\s+int)?|uint32_t)\s+(?:const\s+)?(?P<name>[A-Za-z_]\w*)\s*(?:=|;|,|\))")
SYNC_CALL = re.compile(r"\b(?:__(?:shfl(?:_up|_down|_xor)?|ballot|all|any|match_any)_sync|__syncwarp)"
                       r"\s*\(\s*(?P<arg>[A-Za-z_]\w*)\s*[,)]")
_SHFL = ("template <class T> __device__ inline T {name}(unsigned mask, T var, {third}, int width = warpSize) "
         "{{ return {name}(static_cast<unsigned long long>(mask), var, {arg}, width); }}")
WARP32 = "\n".join([
    "#if !defined(ROCBUILD_WARP32_MASKS)  // rocbuild: lane masks in 32-bit variables, for 32 lanes",
    "#define ROCBUILD_WARP32_MASKS",
    "#if defined(__HIPCC__)",
    "#include <hip/hip_runtime.h>",
    # GCN and CDNA (gfx6 to gfx9) run 64 lanes; ROCm 7's clang no longer says the wave size itself
    "#if defined(__HIP_DEVICE_COMPILE__) && (defined(__GFX9__) || defined(__GFX8__) || defined(__GFX7__) || "
    "defined(__GFX6__))",
    "#error \"this warp code keeps lane masks in 32-bit variables, for 32 lanes: build it for wave32 GPUs (RDNA) only\"",
    "#endif",
    _SHFL.format(name="__shfl_sync", third="int src", arg="src"),
    _SHFL.format(name="__shfl_xor_sync", third="int lane_mask", arg="lane_mask"),
    _SHFL.format(name="__shfl_up_sync", third="unsigned int delta", arg="delta"),
    _SHFL.format(name="__shfl_down_sync", third="unsigned int delta", arg="delta"),
    *(f"__device__ inline {ret} {name}(unsigned mask, int predicate) "
      f"{{ return {name}(static_cast<unsigned long long>(mask), predicate); }}"
      for ret, name in (("unsigned long long", "__ballot_sync"), ("int", "__all_sync"), ("int", "__any_sync"))),
    "template <class T> __device__ inline unsigned long long __match_any_sync(unsigned mask, T value) "
    "{ return __match_any_sync(static_cast<unsigned long long>(mask), value); }",
    "__device__ inline void __syncwarp(unsigned mask) { __syncwarp(static_cast<unsigned long long>(mask)); }",
    "#endif",
    "#endif",
    ""])


def variable_masks(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each file that hands a warp sync builtin a lane mask kept in a 32-bit variable, as rocbuild's overloads for
    such masks written first in it."""
    found: list[SourceEdit] = []
    for rel, text in texts.items():
        if "ROCBUILD_WARP32_MASKS" in text:
            continue
        narrow = {m.group("name") for m in MASK_VARIABLE.finditer(text)}
        call = next((m for m in SYNC_CALL.finditer(text) if m.group("arg") in narrow), None)
        if call is not None:
            found.append(SourceEdit(rel, line_of(text, call.start()), line_at(text, call.start()), r"\A", WARP32, True))
    return found


def cuda_includes(texts: Mapping[str, str], headers: dict[str, str]) -> list[SourceEdit]:
    """Each include of one of CUDA's own `headers` that hipify leaves as it is, as the include of HIP's header
    that declares the same (headers: CUDA's -> HIP's)."""
    pattern = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"](?P<header>" + "|".join(map(re.escape, headers))
                         + r")[>\"][^\n]*$", re.MULTILINE)
    found: list[SourceEdit] = []
    for rel, text in texts.items():
        for match in pattern.finditer(text):
            whole = match.group(0).strip()
            found.append(SourceEdit(rel, line_of(text, match.start()), whole, whole,
                                    f"#include <{headers[match.group('header')]}>", False))
    return found


# CUDA's runtime has template overloads that take a kernel itself; HIP's take `const void*` only, and clang
# finds no matching function. The kernel argument: the second of cudaFuncGetAttributes, the first of the others.
# A kernel's name, with one template argument list (fused-lncc's `lncc_fwd<h, S>`, commas and all).
_KERNEL = r"(?P<kernel>[A-Za-z_][\w:]*(?:\s*<[^<>;(){}]*>)?)"
KERNEL_SECOND = re.compile(r"\bcudaFuncGetAttributes\(\s*(?P<first>[^,()]+(?:\([^()]*\))?)\s*,\s*"
                           + _KERNEL + r"\s*\)")
KERNEL_FIRST = re.compile(r"\bcudaFunc(?:SetAttribute|SetCacheConfig|SetSharedMemConfig)\(\s*" + _KERNEL + r"\s*,")


def kernel_pointers(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each line that hands a kernel itself to a CUDA runtime call HIP declares with `const void*`, as the same
    line with the kernel cast (valid for CUDA too)."""
    found: list[SourceEdit] = []
    for rel, text in texts.items():
        if "cudaFunc" not in text:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            fixed = KERNEL_FIRST.sub(_cast, KERNEL_SECOND.sub(_cast, line))
            if fixed != line:
                found.append(SourceEdit(rel, number, line.strip(), line.strip(), fixed.strip(), False))
    return found


def _cast(match: re.Match[str]) -> str:
    """The match with its kernel argument cast to `const void*`."""
    text, at = match.group(0), match.start()
    if match.group("kernel").count("<") != match.group("kernel").count(">"):
        return text  # a template argument list with commas (vLLM's `k<batch, m, ...>`): cut short, left to a hand edit
    start, end = match.start("kernel") - at, match.end("kernel") - at
    return f"{text[:start]}reinterpret_cast<const void*>({match.group('kernel')}){text[end:]}"


# torch's C++ names removed since, each with the one that took its place and means the same.
RENAMED_TORCH_API = {"AT_CHECK": "TORCH_CHECK"}  # removed in torch 1.5
RENAMED = re.compile(r"\b(?P<name>" + "|".join(RENAMED_TORCH_API) + r")\b(?=\s*\()")


def renamed_torch_api(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each file that calls one of torch's removed names (AT_CHECK), as one regex edit to its new name."""
    found: list[SourceEdit] = []
    for rel, text in texts.items():
        for name, first in _firsts(RENAMED, text, "name").items():
            number = line_of(text, first.start())
            found.append(SourceEdit(rel, number, text.splitlines()[number - 1].strip(), rf"\b{name}\b(?=\s*\()",
                                    RENAMED_TORCH_API[name], True))
        dispatch = DISPATCH_ON_TYPE.search(text)
        if dispatch is not None:
            found.append(SourceEdit(rel, line_of(text, dispatch.start()), line_at(text, dispatch.start()),
                                    DISPATCH_ON_TYPE.pattern, r"\g<head>.scalar_type(),", True))
    return found


# AT_DISPATCH_*(x.type(), ...): dispatch on a tensor's DeprecatedTypeProperties, whose conversion to ScalarType
# torch 2.14's dispatch macros no longer take (svox 0.2.32); x.scalar_type() is what they dispatch on.
# The same in a dispatch macro of the package's own, the type not first (lietorch's
# `DISPATCH_GROUP_AND_FLOATING_TYPES(group_id, a.type(), ...)`, whose body calls at::detail::scalar_type).
DISPATCH_ON_TYPE = re.compile(r"(?P<head>\b\w*DISPATCH_\w+\s*\((?:\s*[\w.]+\s*,){0,2}\s*[^,;()]*?)\.type\(\)\s*,")


# cuComplex's names, which hipify leaves as they are (it maps the header and cuComplex alone); HIP's
# hip_complex.h declares each under the hip prefix.
CUCOMPLEX = re.compile(r"\b(make_)?cu(FloatComplex|DoubleComplex|ComplexFloatToDouble|ComplexDoubleToFloat"
                       r"|C(?:real|imag|add|sub|mul|div|fma|abs|sqabs)f?|Conjf?)\b")


def cucomplex_names(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each file that uses cuComplex's names, as one regex edit to HIP's (cuFloatComplex -> hipFloatComplex)."""
    return renames(texts, [(CUCOMPLEX, r"\1hip\2")])


# cuSOLVER's status type and codes, which torch's hipify leaves as they are (it maps cuSOLVER's handles and calls
# to hipSOLVER's); hipsolver.h declares each under the HIP prefix (cuda-moea's `cusolverStatus_t status =
# hipsolverDnCreate(&handle_)`).
CUSOLVER_STATUS = ((re.compile(r"\bcu(solverStatus_t)\b"), r"hip\1"),
                   (re.compile(r"\bCU(SOLVER_STATUS_(?:SUCCESS|NOT_INITIALIZED|ALLOC_FAILED|INVALID_VALUE|ARCH_MISMATCH"
                               r"|MAPPING_ERROR|EXECUTION_FAILED|INTERNAL_ERROR|NOT_SUPPORTED|ZERO_PIVOT"
                               r"|MATRIX_TYPE_NOT_SUPPORTED))\b"), r"HIP\1"))


def cusolver_status_names(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each file that uses cuSOLVER's status names, as one regex edit per form to hipSOLVER's."""
    return renames(texts, CUSOLVER_STATUS)


# A kernel launch written with spaces inside its chevrons (simple-knn's `coord2Morton << <(P + 255) / 256, 256 >> >
# (...)`, as Visual Studio formats it): nvcc takes it; hipify leaves it and clang reads `<< <` as a shift. Written
# `k<<<grid, block>>>(...)`, which both take.
SPACED_LAUNCH = re.compile(r"(?P<k>\b[A-Za-z_][\w:]*(?:\s*<[^<>;()]*>)?)\s*(?:<<\s+<|<\s+<\s*<)(?P<cfg>[^;<>]*?)"
                           r"(?:>>\s+>|>\s+>\s*>|>>>)\s*\(")


def spaced_launches(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each CUDA file with a kernel launch spaced inside its chevrons, as one regex edit to `<<<...>>>`."""
    return renames(texts, [(SPACED_LAUNCH, r"\g<k><<<\g<cfg>>>>(")], only=(".cu", ".cuh"))


# __ldg, which HIP declares for its scalar and vector types only: a template that loads another type through it
# (megablocks' `T value = __ldg((T*)x + i)` with T = c10::Half) finds no matching function. On AMD GPUs HIP's
# __ldg is a plain load, so each call becomes one: `*(p)`.
LDG_CALL = re.compile(r"\b__ldg\s*\(")


def ldg_calls(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each file that calls __ldg, as one regex edit to a plain load."""
    return renames(texts, [(LDG_CALL, "*(")])


def read_sources(tree: Path) -> dict[str, str]:
    """The tree's sources (sources()) as relative path -> text, read once for every detector."""
    texts: dict[str, str] = {}
    for path in sources(tree):
        try:
            texts[str(path.relative_to(tree))] = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    return texts


def sources(tree: Path) -> list[Path]:
    """The tree's C/C++/CUDA/HIP sources, less what a build made: its build folders, and what torch's hipify
    wrote beside the sources (a fix edits the sources; the next try starts from a fresh tree)."""
    found: list[Path] = []
    for folder, dirs, names in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        found += [Path(folder) / n for n in sorted(names) if n.endswith(SOURCES)]
        if len(found) >= MAX_FILES:
            break
    rels = {str(p.relative_to(tree)) for p in found}
    made = {hipified(rel) for rel in rels} & rels
    return [p for p in found if str(p.relative_to(tree)) not in made and p.stat().st_size <= MAX_BYTES]


def compiled_as(rel: str, named: str) -> bool:
    """Whether the file a compiler's message names is source `rel`, or torch's hipified copy of it (x.hip,
    x_hip.cpp): what a fix edits is the original."""
    compiled = os.path.normpath(named).lstrip("./")
    return any(compiled == name or compiled.endswith("/" + name) for name in (rel, hipified(rel)))


def hipified(rel: str) -> str:
    """Where torch's hipify (cpp_extension, an extension's tree) writes a source's HIP version:
    torch.utils.hipify.hipify_python.get_hip_file_path with is_pytorch_extension."""
    folder, name = os.path.split(rel)
    root, ext = os.path.splitext(name)
    ext = ".hip" if ext == ".cu" else ext
    new_folder = folder.replace("cuda", "hip").replace("CUDA", "HIP").replace("THC", "THH")
    root = root.replace("cuda", "hip").replace("CUDA", "HIP").replace("THC", "THH")
    if new_folder == folder and root + ext == name:
        root += "_hip"
    return os.path.join(new_folder, root + ext)


def _firsts(pattern: re.Pattern[str], text: str, key: str | int = 0) -> dict[str, re.Match[str]]:
    """The first match of `pattern` in `text` for each value of its group `key` (one edit per file and value)."""
    firsts: dict[str, re.Match[str]] = {}
    for match in pattern.finditer(text):
        firsts.setdefault(match.group(key), match)
    return firsts


def line_of(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def line_at(text: str, at: int) -> str:
    """The line of `text` that offset `at` falls in, stripped."""
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return text[start:end if end >= 0 else None].strip()


def renames(texts: Mapping[str, str], forms: Iterable[tuple[re.Pattern[str], str]],
            only: tuple[str, ...] = ()) -> list[SourceEdit]:
    """Each file (of the suffixes `only` names, or any) where a form's pattern matches, as one regex edit per form to
    its replacement, shown at its first match: the shape of the catalogue's renames (cuComplex's names, cuSOLVER's
    statuses, spaced kernel launches, __ldg)."""
    found: list[SourceEdit] = []
    for rel, text in texts.items():
        if only and not rel.endswith(only):
            continue
        for pattern, replacement in forms:
            first = pattern.search(text)
            if first is not None:
                found.append(SourceEdit(rel, line_of(text, first.start()), line_at(text, first.start()), pattern.pattern,
                                        replacement, True))
    return found


# CUDA's helper_math.h (copied into many packages) defines arithmetic operators over float2, int3, ... and a
# scalar lerp. HIP's vector types define the same operators, so every call is ambiguous: guarded out for HIP,
# each call takes HIP's own operator, which computes the same. Only definitions returning a vector type (or
# void, the compound ones) are guarded: an operator returning a scalar (a dot product written as
# float3 * float3) would silently change meaning as HIP's element-wise one, and is left to fail loudly.
# C++20's math.h declares ::lerp (std::lerp, the same formula), which clashes with the scalar lerp: under
# C++20 it gives way to that one, math.h included so that it is there.
GUARD = "#if !defined(__HIP_PLATFORM_AMD__)  // rocbuild: HIP's vector types define this operator"
LERP_ELSE = "#else  // rocbuild"
_VEC = r"(?:float|double|u?int|u?short|u?char|u?long)[1-4]"
_QUALIFIERS = r"(?:(?:inline|__inline__|__forceinline__|static|__host__|__device__)[ \t]+)+"
_BODY = r"\s*\{[^{}]*\}"
VECTOR_OPERATOR = (rf"^(?<!{re.escape(GUARD)}\n)(?P<def>{_QUALIFIERS}(?:{_VEC}|void)[ \t]*&?[ \t]*"
                   rf"operator[ \t]*[-+*/]=?[ \t]*\([^)]*\b{_VEC}\b[^)]*\){_BODY})")
SCALAR_LERP = (rf"^(?<!{re.escape(LERP_ELSE)}\n)(?P<def>{_QUALIFIERS}float[ \t]+lerp[ \t]*\([ \t]*float[ \t]+\w+"
               rf"[ \t]*,[ \t]*float[ \t]+\w+[ \t]*,[ \t]*float[ \t]+\w+[ \t]*\){_BODY})")
GUARDED = {VECTOR_OPERATOR: GUARD + "\n\\g<def>\n#endif",
           SCALAR_LERP: ("#if defined(__HIP_PLATFORM_AMD__) && __cplusplus > 201703L  // rocbuild: C++20's math.h "
                         "declares ::lerp (std::lerp)\n#include <math.h>\n" + LERP_ELSE + "\n\\g<def>\n#endif")}


def vector_helpers(texts: Mapping[str, str]) -> list[SourceEdit]:
    """A regex replace edit per file and kind (its vector operators; its scalar lerp) for CUDA's vector helpers
    (helper_math.h's), at the first definition of the kind."""
    found = []
    for rel, text in texts.items():
        for pattern, guarded in GUARDED.items():
            first = re.search(pattern, text, re.MULTILINE)
            if first:
                found.append(SourceEdit(rel, line_of(text, first.start()), line_at(text, first.start()), pattern,
                                        guarded, True))
    return found


# A header library a package vendors (GLM in gsplat's third_party/) that knows HIP itself: `#elif
# defined(__CUDACC__)` before its own `#elif defined(__HIP__)`. hipify rewrites the first to __HIPCC__, so hipcc
# takes the CUDA branch (GLM: "GLM requires CUDA 7.0 or higher"); and it copies to a _hip name every header it
# changes, an include it rewrote or a relative one it normalised ("../ext/x.hpp" -> "x.hpp") enough, while the
# library's .inl files (which hipify never reads) still include the originals: each definition then comes twice.
# hipify neither rewrites nor follows the includes of a file whose first line is its own breadcrumb
# (torch.utils.hipify.hipify_python.HIPIFY_C_BREADCRUMB): put on each header of the library that the package's own
# sources include (and on those that name CUDA's macros), hipify leaves the whole library as it is.
BREADCRUMB = "// !!! This is a file automatically generated by hipify!!!\n"
KNOWS_HIP = re.compile(r"\b__HIP(?:CC)?__\b|\b__HIP_PLATFORM_(?:AMD|HCC)__\b|\b__HIP_DEVICE_COMPILE__\b")
HIPIFIED_TOKEN = re.compile(r"\b__CUDACC__\b|\b__CUDA_ARCH__\b|\bCUDA_VERSION\b|#[ \t]*include[ \t]*[<\"]cuda")
INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"](?P<path>[^>\"]+)[>\"]", re.MULTILINE)
HEADERS = (".h", ".hpp", ".hh", ".cuh")


def vendored_hip_headers(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each header of a vendored library that knows HIP (one of its files tests __HIP__) which the package's own
    sources include, or which names CUDA's macros, as hipify's breadcrumb put first, so hipify leaves it."""
    library_of = _libraries(list(texts))
    libraries: dict[str, bool] = {}
    for rel, text in texts.items():
        library = library_of[rel]
        if library is not None:
            libraries[library] = libraries.get(library, False) or _knows_hip(text)
    # what the package's own files include (a vendored CUDA project's, and a library's that knows no HIP, too)
    included = {m.group("path").lstrip("./") for rel, text in texts.items() if not libraries.get(library_of[rel] or "")
                for m in INCLUDE.finditer(text)}
    found: list[SourceEdit] = []
    for rel, text in sorted(texts.items()):
        if not rel.endswith(HEADERS) or not libraries.get(library_of[rel] or "") or text.startswith(BREADCRUMB):
            continue
        unix = rel.replace(os.sep, "/")
        entry = next((p for p in included if unix == p or unix.endswith("/" + p)), None)
        token = HIPIFIED_TOKEN.search(text)
        if entry is not None or token is not None:
            at = token.start() if token is not None and entry is None else 0
            found.append(SourceEdit(rel, line_of(text, at), f"included as {entry}" if entry else line_at(text, at),
                                    r"\A", BREADCRUMB, True))
    return found


def _knows_hip(text: str) -> bool:
    """A HIP test of the file's own: not one a rocbuild edit wrote (vector-operators-redefined's guard)."""
    for match in KNOWS_HIP.finditer(text):
        end = text.find("\n", match.end())
        if "rocbuild" not in text[text.rfind("\n", 0, match.start()) + 1:end if end >= 0 else None]:
            return True
    return False


def _vendored_library(rel: str) -> str | None:
    """The folder of the library `rel` belongs to when it sits in a vendor folder, else None: the innermost
    (diff-gaussian-rasterization's own third_party/glm, inside the package's thirdparty/)."""
    parts = rel.replace(os.sep, "/").split("/")
    at = max((i for i, part in enumerate(parts[:-2]) if part.lower() in VENDOR_DIRS), default=None)
    return "/".join(parts[:at + 2]) if at is not None else None


def _libraries(rels: list[str]) -> dict[str, str | None]:
    """Each file's vendored library. A vendored folder with CUDA sources of its own is a CUDA project the package
    builds, which hipify must convert (wildgs-slam's thirdparty/lietorch): its subfolders are the libraries
    (lietorch/eigen, which knows HIP, apart from lietorch/lietorch, which does not)."""
    library_of = {rel: _vendored_library(rel) for rel in rels}
    projects = {library for rel, library in library_of.items() if library and rel.endswith(".cu")}
    for rel, library in library_of.items():
        if library in projects:
            rest = rel.replace(os.sep, "/")[len(library) + 1:].split("/")
            library_of[rel] = f"{library}/{rest[0]}" if len(rest) > 1 else None
    return library_of


# torch 2.11 stopped renaming CUDA to HIP in c10 (the MasqueradingAsCUDA cleanup, pytorch#174087): a ROCm torch's
# c10/hip headers declare c10::cuda::CUDAGuard, CUDAStream, CUDACachingAllocator, ... and no c10::hip::HIPGuard.
# An extension that wrote the HIP names for older ROCm torches takes the CUDA ones, which the same headers declare.
# The Masquerading names (ATen/hip/impl) are still there, and left as they are.
C10_HIP = re.compile(r"\bc10::hip::(?P<name>(?!\w*MasqueradingAsCUDA)\w*HIP\w*)")


def c10_hip_names(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each file that names c10::hip's HIP-named types and functions, as one regex edit per name to c10::cuda's."""
    found: list[SourceEdit] = []
    for rel, text in texts.items():
        for name, first in _firsts(C10_HIP, text, "name").items():
            found.append(SourceEdit(rel, line_of(text, first.start()), line_at(text, first.start()),
                                    rf"\bc10::hip::{name}\b", "c10::cuda::" + name.replace("HIP", "CUDA"), True))
    return found


# CUDA's directed-rounding intrinsics (__fadd_rd, __fmul_ru, __fma_rz, ...): clang's HIP headers define them only
# under OCML_BASIC_ROUNDED_OPERATIONS, a macro that would have to come before the HIP wrapper header every unit
# includes first. Each call becomes the device library's function clang's own definition calls
# (__clang_hip_math.h): the same rounding. The ocml.bc of ROCm 6.4 and 7.2 has add, sub, mul and fma in each
# rounding mode (5.2's, Debian 12's, has none), and no directed division, reciprocal or square root (__frcp_rd):
# those are left to a hand edit.
ROUNDING = re.compile(r"\b__(?P<op>[fd](?:add|sub|mul)|fmaf?)_r(?P<mode>[duz])\(")
# CUDA's name (without its rounding suffix) -> the device library's operation and width.
_OCML = {f"{p}{op}": (op, w) for p, w in (("f", 32), ("d", 64)) for op in ("add", "sub", "mul")} | {
    "fmaf": ("fma", 32), "fma": ("fma", 64)}
_OCML_MODE = {"d": "rtn", "u": "rtp", "z": "rtz"}


def rounding_intrinsics(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each file's calls of one of CUDA's directed-rounding intrinsics the device library has, as one regex edit per
    intrinsic to its call (__fadd_rd(x, y) -> __ocml_add_rtn_f32(x, y))."""
    found: list[SourceEdit] = []
    for rel, text in texts.items():
        for call, first in _firsts(ROUNDING, text).items():
            name, width = _OCML[first.group("op")]
            found.append(SourceEdit(rel, line_of(text, first.start()), line_at(text, first.start()), rf"\b{re.escape(call)}",
                                    f"__ocml_{name}_{_OCML_MODE[first.group('mode')]}_f{width}(", True))
    return found


# nvcc's idiom for functions both sides call: `#ifdef __CUDA_ARCH__` / `#define HD __host__ __device__` / `#else` /
# `#define HD`. nvcc defines __CUDA_ARCH__ in its device pass only, where they become device functions; clang compiles
# a HIP source's host and device sides with the same declarations and never defines __CUDA_ARCH__ (hipify leaves it),
# so they stay host-only, and a kernel calling one is refused (fast-rnnt's LogAdd: "call to __host__ function from
# __global__ function"). Tested with __HIPCC__ too (defined on both of clang's HIP sides, never by g++), they are
# host-and-device where HIP is compiled, and a plain C++ source that includes the header reads what it read before.
DEVICE_ARCH_GUARD = re.compile(r"^[ \t]*#[ \t]*(?:ifdef[ \t]+__CUDA_ARCH__|if[ \t]+defined[ \t]*\(?[ \t]*__CUDA_ARCH__[ \t]*\)?)"
                               r"[ \t]*(?://[^\n]*)?\n"
                               r"(?=[ \t]*#[ \t]*define[ \t]+(?P<macro>\w+)[ \t][^\n]*\b__(?:host|device)__\b)",
                               re.MULTILINE)
HIP_SIDES_GUARD = "#if defined(__CUDA_ARCH__) || defined(__HIPCC__)  // rocbuild: clang's HIP host side calls them too\n"


def device_arch_guards(texts: Mapping[str, str]) -> list[tuple[SourceEdit, str]]:
    """Each file's `#ifdef __CUDA_ARCH__` that alone makes a macro __host__ __device__, as one regex edit per file
    (every such guard in it), with the macro its first guard defines."""
    found: list[tuple[SourceEdit, str]] = []
    for rel, text in texts.items():
        first = DEVICE_ARCH_GUARD.search(text)
        if first:
            edit = SourceEdit(rel, line_of(text, first.start()), line_at(text, first.start()),
                              "(?m)" + DEVICE_ARCH_GUARD.pattern, HIP_SIDES_GUARD, True)
            found.append((edit, first.group("macro")))
    return found


# CUDA's <cooperative_groups/reduce.h> (cg::reduce and its operators): HIP's cooperative groups have the tiles and
# their shfl_xor, not the header. A tile's size is a power of two, so a butterfly over shfl_xor leaves every lane
# the reduction, as cg::reduce does. In place of the include, for HIP only.
CG_REDUCE_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"]cooperative_groups/reduce\.h[>\"][^\n]*$", re.MULTILINE)
_CG_OP = ("template <class T> struct {name} {{ __host__ __device__ T operator()(const T& a, const T& b) const "
          "{{ return {body}; }} }};")
CG_REDUCE = "\n".join([
    "#if defined(__HIP_PLATFORM_AMD__) && !defined(ROCBUILD_CG_REDUCE)  // rocbuild: HIP has no cooperative_groups/reduce.h",
    "#define ROCBUILD_CG_REDUCE",
    "#include <hip/hip_cooperative_groups.h>",
    "namespace cooperative_groups {",
    *(_CG_OP.format(name=n, body=b) for n, b in (("plus", "a + b"), ("less", "b < a ? b : a"),
                                                  ("greater", "a < b ? b : a"), ("bit_and", "a & b"),
                                                  ("bit_or", "a | b"), ("bit_xor", "a ^ b"))),
    "template <class Group, class T, class Op> __device__ T reduce(const Group& g, T value, Op op) {",
    "  for (unsigned offset = g.size() / 2; offset > 0; offset /= 2) value = op(value, g.shfl_xor(value, offset));",
    "  return value;",
    "}",
    "}  // namespace cooperative_groups",
    "#elif !defined(__HIP_PLATFORM_AMD__)",
    "#include <cooperative_groups/reduce.h>",
    "#endif"])


def cg_reduce_includes(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each include of <cooperative_groups/reduce.h>, as cg::reduce and its operators written for HIP in its place."""
    found: list[SourceEdit] = []
    for rel, text in texts.items():
        if CG_REDUCE.splitlines()[0] in text:
            continue  # written already
        for match in CG_REDUCE_INCLUDE.finditer(text):
            whole = match.group(0).strip()
            found.append(SourceEdit(rel, line_of(text, match.start()), whole, whole, CG_REDUCE, False))
    return found


# A float or double atomicMax/atomicMin of the package's own (svox's, by atomicCAS: CUDA has none for floats). HIP
# declares both, returning the old value, so a definition returning void cannot overload it, and one returning
# float redefines it: the package's is guarded out for HIP, whose own does the same.
ATOMIC_DEFINITION = re.compile(r"^[ \t]*(?:(?:static|inline|__inline__|__forceinline__|__device__)[ \t]+)+"
                               r"(?:void|float|double)[ \t]+atomic(?:Max|Min)[ \t]*\([ \t]*(?:float|double)[ \t]*\*[^)]*\)"
                               r"[ \t]*\{", re.MULTILINE)
ATOMIC_GUARD = "#if !defined(__HIP_PLATFORM_AMD__)  // rocbuild: HIP's runtime defines this atomic"


def atomic_overloads(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each definition of a float or double atomicMax/atomicMin, as the same definition guarded out for HIP."""
    found: list[SourceEdit] = []
    for rel, text in texts.items():
        for match in ATOMIC_DEFINITION.finditer(text):
            end = closing_brace(text, match.end() - 1)
            if end is None or text[:match.start()].rstrip().endswith(ATOMIC_GUARD):
                continue
            whole = text[match.start():end + 1]
            found.append(SourceEdit(rel, line_of(text, match.start()), line_at(text, match.start()), whole,
                                    f"{ATOMIC_GUARD}\n{whole}\n#endif", False))
    return found


def closing_brace(text: str, at: int) -> int | None:
    """Where the brace opened at `at` closes, counting braces outside comments and quotes; None if it never does."""
    depth = 0
    for match in re.finditer(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|[{}]", text[at:], re.DOTALL):
        token = match.group(0)
        depth += 1 if token == "{" else -1 if token == "}" else 0
        if depth == 0:
            return at + match.start()
    return None


# CUDA calls HIP declares in another form, each rewritten to one that means the same to both: HIP's bf16 header
# has no __floats2bfloat162_rn(a, b) but __float22bfloat162_rn(float2) (ramnet-ops); HIP's hipMalloc3DArray
# takes its `flags` without a default (torch-projectors); CUDA's default is 0. Arguments with parentheses of their
# own are left to a hand edit.
_ARG = r"[^(),;]+"
HIP_FORMS = (
    (re.compile(rf"\b__floats2bfloat162_rn\(\s*({_ARG}),\s*({_ARG})\)"), r"__float22bfloat162_rn(make_float2(\1, \2))"),
    (re.compile(rf"\bcudaMalloc3DArray\(\s*({_ARG}),\s*({_ARG}),\s*({_ARG})\)"), r"cudaMalloc3DArray(\1, \2, \3, 0)"),
    # HIP's bf16 has __float2bfloat16 (round to nearest even, as clang converts) and no _rn name (fusedtok)
    (re.compile(r"\b__float2bfloat16_rn\s*\("), "__float2bfloat16("),
    # and no __float2bfloat162_rn(float), which fills both halves (turbo-gnn)
    (re.compile(rf"\b__float2bfloat162_rn\(\s*({_ARG})\)"), r"__bfloat162bfloat162(__float2bfloat16(\1))"),
    # cuda_bf16.h's typedefs of __nv_bfloat16, which hipify maps, and not these (mhc-cuda)
    (re.compile(r"(?<![\w.])nv_bfloat16(2?)\b"), r"__hip_bfloat16\1"),
)


# CUDA's half2 __hmax2/__hmin2, which HIP's fp16 header lacks (it has __hmax and __hmin, and bf16's __hmax2):
# cugpt's ReLU. Each call goes to a function of rocbuild's, written first in the file: for HIP, lane by lane
# through __hmax/__hmin; for CUDA, CUDA's own. Once per translation unit (a header may carry it too).
HALF2_MINMAX_CALL = re.compile(r"\b__hm(ax|in)2\s*\(")
HALF2_MINMAX = "\n".join([
    "#if !defined(ROCBUILD_HALF2_MINMAX)  // rocbuild: HIP's fp16 has __hmax and __hmin, not their half2 forms",
    "#define ROCBUILD_HALF2_MINMAX",
    "#if defined(__HIPCC__)",
    "#include <hip/hip_fp16.h>",
    *(f"static __host__ __device__ inline __half2 rocbuild_h{op}2(__half2 a, __half2 b) {{ return __halves2half2("
      f"__h{op}(__low2half(a), __low2half(b)), __h{op}(__high2half(a), __high2half(b))); }}" for op in ("max", "min")),
    # any other pair (bf16's __hip_bfloat162, which has them: turbo-gnn calls both) goes to HIP's own; the name in
    # parentheses, which the rename edit leaves when it meets this text again
    "#include <hip/hip_bf16.h>",
    *(f"template <class T> static __host__ __device__ inline T rocbuild_h{op}2(T a, T b) {{ return (__h{op}2)(a, b); }}"
      for op in ("max", "min")),
    "#else",
    "#define rocbuild_hmax2 __hmax2",
    "#define rocbuild_hmin2 __hmin2",
    "#endif",
    "#endif",
    ""])


def hip_forms(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each file's calls HIP declares in another form, as one regex edit per form to the one both take; half2's
    max and min as a function of rocbuild's, written first in the file."""
    found = renames(texts, HIP_FORMS)
    for rel, text in texts.items():
        first = HALF2_MINMAX_CALL.search(text)
        if first is not None and "ROCBUILD_HALF2_MINMAX" not in text:
            where, line = line_of(text, first.start()), line_at(text, first.start())
            found += [SourceEdit(rel, where, line, HALF2_MINMAX_CALL.pattern, r"rocbuild_hm\g<1>2(", True),
                      SourceEdit(rel, where, line, r"\A", HALF2_MINMAX, True)]
    return found


# The macros with which torch turns fp16's operators and conversions off: CUDA's __CUDA_NO_HALF_OPERATORS__, ROCm's
# __HIP_NO_HALF_OPERATORS__ (cpp_extension defines it for hipcc). Code that writes its own operators where torch
# turned them off (turbo-gnn's `#ifdef __CUDA_NO_HALF_OPERATORS__` before its __half operator<) tests the CUDA
# name, which hipify leaves: on ROCm the condition is the HIP name's.
HALF_MACRO = re.compile(r"(?m)^(?P<pre>[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif)\b[^\n]*?)"
                        r"\b__CUDA_NO_(?P<what>HALF2?_(?:OPERATORS|CONVERSIONS))__")


def half_macros(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each file whose preprocessor tests CUDA's names of torch's fp16 switches, as one regex edit to HIP's."""
    return renames(texts, [(HALF_MACRO, r"\g<pre>__HIP_NO_\g<what>__")])


# CUDART_CB, the calling convention CUDA's runtime writes on host callbacks (empty but on Windows): hipify leaves
# it, and HIP defines nothing by that name, so `static void CUDART_CB cb(void*)` no longer parses.
CUDART_CB = re.compile(r"\bCUDART_CB[ \t]*")


def cudart_cb(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each file that writes CUDART_CB, as one regex edit that drops it (what it is on Linux)."""
    return renames(texts, [(CUDART_CB, "")])


# libcu++'s headers that are the standard library's own, for device code too: with HIP's clang, the standard
# library's constexpr functions and its types (std::array, std::pair, numeric_limits) are usable on the device.
# Any other cuda/std header (atomic, barrier, chrono, semaphore, ...) needs a port, and then nothing is renamed.
STD_OF_CUDA = ("array", "utility", "type_traits", "limits", "climits", "cstdint", "cstddef", "tuple", "functional",
               "span", "bit", "cmath", "cfloat", "optional", "initializer_list", "ratio")
CUDA_STD_INCLUDE = re.compile(r"^([ \t]*#[ \t]*include[ \t]*)<cuda/std/([\w/]+)>", re.MULTILINE)
CUDA_STD_NAME = re.compile(r"(?:::)?(?<!\w)cuda::std::")


def cuda_std_names(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Where the tree uses libcu++'s cuda::std only through headers the standard library has (STD_OF_CUDA): each
    include of <cuda/std/X> as <X>, and each `cuda::std::` as `std::`, one regex edit per file and form."""
    used = {m.group(2) for text in texts.values() for m in CUDA_STD_INCLUDE.finditer(text)}
    if not used or not used <= set(STD_OF_CUDA):
        return []
    return renames(texts, [(CUDA_STD_INCLUDE, r"\1<\2>"), (CUDA_STD_NAME, "std::")])


# CUDA's device __trap(), which HIP does not declare; clang's __builtin_trap() stops a kernel on both.
DEVICE_TRAP = re.compile(r"(?<![\w.])__trap\s*\(\s*\)")


def device_traps(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each file that calls CUDA's __trap(), as one regex edit to __builtin_trap()."""
    return renames(texts, [(DEVICE_TRAP, "__builtin_trap()")])


# Eigen's member templates called on a dependent expression (lietorch's `X.Matrix4x4().block<3,3>(0,0)` in a
# template): nvcc takes them, clang asks for the `template` keyword, which C++11 allows anywhere before one.
EIGEN_MEMBER_TEMPLATE = re.compile(
    r"(?P<head>[\w)\]])\.(?P<name>block|head|tail|segment|topLeftCorner|topRightCorner|bottomLeftCorner"
    r"|bottomRightCorner|topRows|bottomRows|leftCols|rightCols|middleRows|middleCols|cast)"
    r"(?=<[^<>;()]*>\s*\()")


def member_templates(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each CUDA file that calls one of Eigen's member templates with a template argument list, as one regex edit
    that writes the `template` keyword before it."""
    return renames(texts, [(EIGEN_MEMBER_TEMPLATE, r"\g<head>.template \g<name>")], only=(".cu", ".cuh"))
