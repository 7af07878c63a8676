"""The port of a CMake project whose GPU language is CUDA to HIP (trap cmake-cuda-only), as recipe data: replace
edits of each CMakeLists.txt that enables CUDA, and a step that hipifies the sources in place before the build.

CMake (3.21+) compiles HIP as a language of its own. What the edits do, in each such CMakeLists.txt:
- before its first project(): the HIP compiler, its ROCm root and the archs asked for (CMake would ask
  rocm_agent_enumerator, which needs a GPU), and the C++ standard (20 against torch, which refuses less, and
  a C++ standard of 17 or less the file sets for CXX becomes 20 too);
- CUDA becomes HIP in project(LANGUAGES), enable_language() and check_language(), and in `if(CMAKE_CUDA_COMPILER)`;
- a languages variable project() is given (`set(languages ${languages} CUDA)`) adds HIP instead, and the nvcc
  its find_program() gated that on is taken as found (k2-fsa's projects);
- find_package(CUDAToolkit) is answered where HIP is enabled instead: HIP's runtime and ROCm's libraries stand
  behind CUDA's imported targets (CUDA::cudart, CUDA::cublas, ...), which stay the names the project links; so is
  the legacy find_package(CUDA), and its cuda_select_nvcc_arch_flags() gives no flags;
- at the end: every .cu source of every target below that folder compiles as HIP and links HIP's runtime.
What CMake hands nvcc alone ($<COMPILE_LANGUAGE:CUDA> flags, CUDA_ARCHITECTURES) no longer applies.

The sources are hipified by torch's own hipify (torch.utils.hipify, as cpp_extension runs it), with the target
python (which must hold torch); every file it rewrites under a new name is copied over its original, so that the
names the CMake files list hold the HIP source, and a header's new name (the one hipify's rewritten includes use)
includes the original."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rocbuild.draft.masks import SourceEdit
from rocbuild.draft.torch_reading import VENDOR_DIRS

CUDA_LANGUAGE = re.compile(r"\bproject\s*\([^)]*\bCUDA\b|\benable_language\s*\(\s*CUDA\b|\bcheck_language\s*\(\s*CUDA\b",
                           re.IGNORECASE)
# A languages variable project() is given, to which CUDA is added where nvcc is found (k2-fsa's fast_rnnt,
# optimized_transducer, k2: `set(languages CXX)`, `set(languages ${languages} CUDA)`, `project(x ${languages})`).
LANGUAGE_VARIABLE = re.compile(r"\bproject\s*\([^)]*\$\{(?P<var>\w+)\}", re.IGNORECASE)
HIP_LANGUAGE = re.compile(r"enable_language\s*\(\s*HIP|LANGUAGES[^)]*\bHIP\b|USE_ROCM|\bhip::", re.IGNORECASE)
SKIPPED = {*VENDOR_DIRS, "pybind11", "build", "_deps", "tests", "test", "examples", "benchmarks", "docs"}

# CUDA's imported targets and what stands behind each on ROCm: (ROCm CMake package, its target).
CUDA_TARGETS = {"cudart": (None, "hip::host"), "cudart_static": (None, "hip::host"), "cuda_driver": (None, "hip::host"),
                "cublas": ("hipblas", "roc::hipblas"), "cublasLt": ("hipblaslt", "roc::hipblaslt"),
                "curand": ("hiprand", "hip::hiprand"), "cufft": ("hipfft", "hip::hipfft"),
                "cusparse": ("hipsparse", "roc::hipsparse"), "cusolver": ("hipsolver", "roc::hipsolver")}

# Each file hipify rewrites under a new name: its HIP text goes over the original (the name the CMake files list);
# a header's new name then includes the original (one file: `#pragma once` holds whichever name a source used),
# and a source's new copy is removed (a folder's glob would compile it twice).
HIPIFY = "\n".join([
    "import os, shutil, sys",
    "from torch.utils.hipify import hipify_python as h",
    "root = os.path.abspath(sys.argv[1])",
    "marker = os.path.join(root, '.rocbuild-hipified')  # hipify would rewrite its own forwarding headers",
    "if os.path.exists(marker):",
    "    sys.exit(print('hipified already'))",
    "done = h.hipify(project_directory=root, output_directory=root, includes=[os.path.join(root, '*')],",
    "                show_detailed=False, show_progress=False, is_pytorch_extension=True)",
    "moved = [(s, r.hipified_path) for s, r in done.items()",
    "         if r.hipified_path and os.path.abspath(r.hipified_path) != os.path.abspath(s)]",
    "for old, new in moved:",
    "    shutil.copyfile(new, old)",
    "    if new.endswith(('.hip', '.cu', '.cpp', '.cc', '.cxx', '.c')):",
    "        os.remove(new)",
    "    else:",
    "        with open(new, 'w') as out:",
    "            out.write('#include \"%s\"\\n' % os.path.relpath(old, os.path.dirname(new)))",
    "open(marker, 'w').close()",
    "print('hipified in place:', len(moved), 'files')"])

PRE = "\n".join([
    "# rocbuild (trap cmake-cuda-only): CUDA built as HIP, with ROCm's compiler, for the archs asked",
    'set(CMAKE_HIP_COMPILER "${{{{ rocm.hip_compiler }}}}")',
    'set(CMAKE_HIP_COMPILER_ROCM_ROOT "${{{{ rocm.path }}}}")',
    "set(CMAKE_HIP_ARCHITECTURES \"${{{{ archs | join(';') }}}}\")",
    "set(CMAKE_HIP_STANDARD {standard})",
    "{cxx}"])

# Right where HIP is enabled (after project() or enable_language()), so that every folder below sees HIP's targets
# (a subfolder's find_package(Torch) names hip::amdhip64) and CUDA's names for them.
TARGETS = "\n".join([
    "# rocbuild (trap cmake-cuda-only): HIP's runtime and ROCm's libraries behind CUDA's imported targets",
    "find_package(hip REQUIRED)",
    "{packages}",
    "foreach(_rocbuild_pair {pairs})",
    '  string(REPLACE "=" ";" _rocbuild_pair "${{_rocbuild_pair}}")',
    "  list(GET _rocbuild_pair 0 _rocbuild_name)",
    "  list(GET _rocbuild_pair 1 _rocbuild_target)",
    "  if(NOT TARGET CUDA::${{_rocbuild_name}})",
    "    add_library(CUDA::${{_rocbuild_name}} INTERFACE IMPORTED GLOBAL)",
    "    target_link_libraries(CUDA::${{_rocbuild_name}} INTERFACE ${{_rocbuild_target}})",
    "  endif()",
    "endforeach()"])

WALK = "\n".join([
    "# rocbuild (trap cmake-cuda-only): each .cu source of each target compiles as HIP, with HIP's runtime",
    "find_package(hip REQUIRED)",
    "function(_rocbuild_cu_as_hip dir)",
    '  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)',
    "  foreach(t IN LISTS targets)",
    "    get_target_property(type ${t} TYPE)",
    '    if(type STREQUAL "INTERFACE_LIBRARY" OR type STREQUAL "UTILITY")',
    "      continue()",
    "    endif()",
    "    get_target_property(sources ${t} SOURCES)",
    "    get_target_property(sdir ${t} SOURCE_DIR)",
    '    set(cu "")',
    "    foreach(s IN LISTS sources)",
    '      if(s MATCHES "\\\\.cu$" AND NOT s MATCHES "^\\\\$<")',
    '        if(NOT IS_ABSOLUTE "${s}")',
    '          set(s "${sdir}/${s}")',
    "        endif()",
    '        list(APPEND cu "${s}")',
    "      endif()",
    "    endforeach()",
    "    if(cu)",
    "      set_source_files_properties(${cu} TARGET_DIRECTORY ${t} PROPERTIES LANGUAGE HIP)",
    "      set_property(TARGET ${t} APPEND PROPERTY LINK_LIBRARIES hip::host)",
    "      # nvcc includes cuda_runtime.h in every .cu file by itself; clang's HIP mode does not",
    "      set_property(TARGET ${t} APPEND PROPERTY COMPILE_OPTIONS",
    '        "$<$<COMPILE_LANGUAGE:HIP>:SHELL:-include hip/hip_runtime.h>")',
    "    endif()",
    "  endforeach()",
    '  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)',
    "  foreach(d IN LISTS subdirs)",
    '    _rocbuild_cu_as_hip("${d}")',
    "  endforeach()",
    "endfunction()",
    '_rocbuild_cu_as_hip("${CMAKE_CURRENT_SOURCE_DIR}")',
    ""])


@dataclass(frozen=True)
class CmakePort:
    """What the port edits: each CMakeLists.txt that enables CUDA (relative path, its first such line)."""

    files: tuple[tuple[str, int, str], ...]
    edits: tuple[SourceEdit, ...]
    torch: bool  # it builds against torch


def _cmake_texts(tree: Path) -> list[tuple[str, str]]:
    """The tree's CMakeLists.txt files outside its vendored, build and test folders: (relative path, text)."""
    return cmake_files(tree, ("CMakeLists.txt",))


def cmake_files(tree: Path, names: tuple[str, ...] = ("CMakeLists.txt", "*.cmake")) -> list[tuple[str, str]]:
    """The tree's CMake files (CMakeLists.txt and *.cmake, or the `names` given) outside its vendored, build and test
    folders: (relative path, text)."""
    paths = sorted({p for name in names for p in tree.rglob(name)})
    return [(p.relative_to(tree).as_posix(), p.read_text(errors="replace")) for p in paths
            if not any(part in SKIPPED or part.startswith(".") for part in p.relative_to(tree).parts[:-1])]


def _cuda_only(text: str) -> bool:
    """Whether a CMakeLists.txt's GPU language is CUDA only (comments left out)."""
    code = re.sub(r"#[^\n]*", "", text)
    return _first_cuda(code) is not None and not HIP_LANGUAGE.search(code)


def _cuda_added(text: str) -> re.Match[str] | None:
    """Where CUDA is added to the languages variable project() is given (`set(languages ${languages} CUDA)`,
    `list(APPEND languages CUDA)`); its group `var` names the variable."""
    for given in LANGUAGE_VARIABLE.finditer(text):
        var = re.escape(given.group("var"))
        added = re.search(rf"(?i)\bset\s*\(\s*(?P<var>{var})\s+\$\{{{var}\}}\s+CUDA\s*\)"
                          rf"|\blist\s*\(\s*APPEND\s+(?P<listed>{var})\s+CUDA\s*\)", text)
        if added:
            return added
    return None


def _first_cuda(text: str) -> re.Match[str] | None:
    """The first place `text` asks for CUDA as a language: project(), enable_language(), check_language(), or its
    languages variable."""
    found = [m for m in (CUDA_LANGUAGE.search(text), _cuda_added(text)) if m is not None]
    return min(found, key=lambda m: m.start()) if found else None


def _names_torch(tree: Path, cmake: list[tuple[str, str]]) -> bool:
    """Whether a CMakeLists.txt of the tree finds torch's CMake package, or its setup.py or pyproject.toml names
    torch (cuda-moea's setup.py passes torch's prefix to a subfolder's find_package(Torch))."""
    texts = [text for _, text in cmake]
    texts += [p.read_text(errors="replace") for p in (tree / "setup.py", tree / "pyproject.toml") if p.is_file()]
    return any(re.search(r"find_package\s*\(\s*Torch\b|\btorch\b", text) for text in texts)


def port(tree: Path, *, torch_extension: bool) -> CmakePort | None:
    """The port of each CUDA-only CMakeLists.txt of `tree`, None where there is none; `torch_extension`: setup.py
    builds against torch (else the build files are read for it: C++20 and torch's variables where they name it)."""
    cmake = _cmake_texts(tree)
    cuda = [(rel, text) for rel, text in cmake if _cuda_only(text)]
    # A project with a HIP path of its own in another of its files (deepmd-kit's source/lib/src/gpu enables HIP under
    # USE_ROCM_TOOLKIT, beside source/op/pt's CUDA-only operators) is no CUDA-only project: its switch is the way.
    if not cuda or any(HIP_LANGUAGE.search(re.sub(r"#[^\n]*", "", text)) for _, text in cmake):
        return None
    torch = torch_extension or _names_torch(tree, cmake)
    files, edits = [], []
    for rel, text in cuda:
        first = _first_cuda(text)
        assert first is not None
        number = text.count("\n", 0, first.start()) + 1
        files.append((rel, number, text.splitlines()[number - 1].strip()))
        edits += _edits(rel, text, number, torch=torch)
    return CmakePort(tuple(files), tuple(edits), torch)


def _edits(rel: str, text: str, number: int, *, torch: bool) -> list[SourceEdit]:
    line = text.splitlines()[number - 1].strip()
    cuda_standard = re.search(r"CMAKE_CUDA_STANDARD\s+(\d+)", text)
    standard = max(20 if torch else 17, int(cuda_standard.group(1)) if cuda_standard else 17)
    pre = PRE.format(standard=standard, cxx="set(CMAKE_CXX_STANDARD 20)" if torch else "").rstrip() + "\n"
    named = sorted(set(re.findall(r"\bCUDA::(\w+)", text)) & set(CUDA_TARGETS) | {"cudart", "cudart_static"})
    packages = sorted({package for n in named for package in [CUDA_TARGETS[n][0]] if package})
    targets = TARGETS.format(packages="\n".join(f"find_package({p} REQUIRED)" for p in packages),
                             pairs=" ".join(f"{n}={CUDA_TARGETS[n][1]}" for n in named))

    def edit(find: str, with_: str) -> SourceEdit:
        return SourceEdit(rel, number, line, find, with_, True)

    def insert(find: str, text: str) -> SourceEdit:  # written as it is: a regex replacement undoes escapes
        return edit(find, _escaped(text))

    # Each replacement starts with text of its own (or is literal), which is how a tree patched already is known.
    edits = [insert(r"(?i)^(?=[ \t]*project[ \t]*\()", pre),
             edit(r"(?i)\bproject(\s*\([^)]*?)\bCUDA\b([^)]*\))", r"project\g<1>HIP\g<2>" + "\n" + _escaped(targets))
             if re.search(r"\bproject\s*\([^)]*\bCUDA\b", text, re.IGNORECASE) else None,
             insert(r"(?i)\benable_language\s*\(\s*CUDA\s*\)", "enable_language(HIP)\n" + targets)
             if re.search(r"\benable_language\s*\(\s*CUDA\s*\)", text, re.IGNORECASE) else None,
             edit(r"(?i)\bcheck_language\s*\(\s*CUDA\s*\)", "check_language(HIP)")
             if re.search(r"\bcheck_language\s*\(\s*CUDA\s*\)", text, re.IGNORECASE) else None,
             edit(r"\bCMAKE_CUDA_COMPILER(?=\s*\))", "CMAKE_HIP_COMPILER")
             if re.search(r"\bif\s*\([^)]*\bCMAKE_CUDA_COMPILER\s*\)", text) else None,
             edit(r"(?i)\bfind_package\s*\(\s*CUDAToolkit\b[^)]*\)", "set(CUDAToolkit_FOUND TRUE)  # rocbuild: HIP's "
                  "stands in (where HIP is enabled)") if re.search(r"\bfind_package\s*\(\s*CUDAToolkit\b", text, re.I) else None,
             # CMake's legacy FindCUDA (torchopt's `find_package(CUDA)` gating enable_language(CUDA)) looks for nvcc
             edit(r"(?i)\bfind_package\s*\(\s*CUDA(?=[\s)])[^)]*\)", "set(CUDA_FOUND TRUE)  # rocbuild: HIP's stands "
                  "in (legacy FindCUDA)") if re.search(r"\bfind_package\s*\(\s*CUDA[\s)]", text, re.I) else None,
             edit(r"(?i)\bcuda_select_nvcc_arch_flags\s*\(\s*(\w+)[^)]*\)", r'set(\g<1> "")  # rocbuild: nvcc\'s archs, '
                  "of no use to HIP") if re.search(r"\bcuda_select_nvcc_arch_flags\s*\(", text, re.I) else None,
             edit(r"CXX_STANDARD(\s+\"?)1[147]\b", r"CXX_STANDARD\g<1>20")
             if torch and re.search(r"CXX_STANDARD\s+\"?1[147]\b", text) else None,
             *_language_variable(text, targets, edit, insert),
             insert(r"\Z", "\n" + WALK)]
    return [e for e in edits if e is not None]


def _language_variable(text: str, targets: str, edit: Callable[[str, str], SourceEdit],
                       insert: Callable[[str, str], SourceEdit]) -> list[SourceEdit]:
    """HIP added to the languages variable where CUDA was, HIP's targets right after the project() it is given,
    and the nvcc that gates it (find_program) taken as found: HIP's compiler stands in."""
    added = _cuda_added(text)
    if added is None:
        return []
    var = added.group("var") or added.group("listed")
    after = "|".join(rf"(?<=\$\{{{re.escape(var)}\}}{space}\))" for space in ("", " "))
    edits = [edit(re.escape(added.group(0)), re.sub(r"CUDA(\s*\))$", r"HIP\1", added.group(0))),
             insert(after, "\n" + targets)]
    if re.search(r"(?i)\bfind_program\s*\(\s*\w+\s+nvcc\b", text):
        edits.append(edit(r"(?i)\bfind_program\s*\(\s*(\w+)\s+nvcc\b[^)]*\)",
                          r"set(\g<1> TRUE)  # rocbuild (trap cmake-cuda-only): HIP's compiler stands in for nvcc"))
    return edits


def _escaped(text: str) -> str:
    """`text` as a regex replacement that writes it as it is."""
    return text.replace("\\", "\\\\")
