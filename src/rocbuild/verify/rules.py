"""The rules verify judges by, one function each (the module docstring of verify/verdict.py lists them)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from rocbuild.verify.bundles import TargetId, covers
from rocbuild.verify.elf import RUNTIME_LIB
from rocbuild.verify.findings import FileFindings, InputFindings

# Absolute paths that exist only on the machine that built the wheel.
_BUILD_PATH = re.compile(r"^/(?:root|home|tmp|project|build|builds|github|__w|work|workspace|src|var/lib/buildkite"
                         r"|opt/conda/conda-bld|io)(?:/|$)")


def leaked_build_paths(paths: list[str]) -> list[str]:
    return [p for p in paths if _BUILD_PATH.match(p)]


LABEL_MAJOR = re.compile(r"(?:^|[.])rocm(\d+)(?:[.]\d+)?(?:[.]|$)")


# A library named for the ROCm release it serves: bitsandbytes' libbitsandbytes_rocm64.so (6.4),
# _rocm714 (7.14), or a dotted rocm7.2. A package ships one per release and loads the one that matches.
RELEASE_IN_NAME = re.compile(r"(?:^|[_.-])rocm(?:(\d+)\.(\d+)|(\d)(\d{1,2}))(?=[_.-]|$)")


def release_in_name(path: str) -> tuple[int, int] | None:
    """The ROCm release (major, minor) a library's file name says it serves, or None."""
    m = RELEASE_IN_NAME.search(Path(path).name.partition(".so")[0])
    if m is None:
        return None
    major, minor = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    return int(major), int(minor)


def judge_rocm_majors(found: InputFindings, built_with: int | None) -> None:
    """One ROCm major inside each library, and across the libraries loaded together; libraries named
    for a ROCm release (alternatives: the package loads the one that matches) each for their own.

    A wheel linking libamdhip64.so.6 that says +rocm7.2 was built from a stale build folder; one whose
    files link two majors cannot load either way. A wheel rocbuild built carries nothing for another
    ROCm than the one it was built with, alternatives included: there, another release's library is a
    stale one from an earlier build."""
    alternatives = {f.path: release_in_name(f.path) for f in found.files if f.info.rocm_majors}
    together: dict[int, list[str]] = {}
    for f in found.files:
        majors = f.info.rocm_majors
        if len(set(majors.values())) > 1:
            found.problems.append(f"{f.path} mixes ROCm majors inside one library: " + ", ".join(
                f"{lib} (ROCm {m})" for lib, m in sorted(majors.items())))
            continue
        release = alternatives.get(f.path)
        if release is not None and majors:
            _judge_alternative(found, f.path, release, majors)
            continue
        for lib, major in majors.items():
            together.setdefault(major, []).append(f"{f.path} links {lib}")
    if len(together) > 1:
        found.problems.append("mixes ROCm majors: " + "; ".join(
            f"ROCm {m}: {', '.join(sorted(set(w))[:3])}" for m, w in sorted(together.items()))
            + " (a stale library from an earlier build?)")
        return
    _judge_claims(found, built_with, together, {p: r for p, r in alternatives.items() if r is not None})


def _judge_alternative(found: InputFindings, path: str, release: tuple[int, int], majors: dict[str, int]) -> None:
    (lib, major), *_ = sorted(majors.items())
    if major != release[0]:
        found.problems.append(f"{path} is named for ROCm {release[0]}.{release[1]} but links ROCm {major} "
                              f"libraries ({lib}): it cannot load there")
    else:
        found.notes.append(f"{path} serves ROCm {release[0]}.{release[1]} (links {lib}); the package loads "
                           "the library for the ROCm it finds")


def _judge_claims(found: InputFindings, built_with: int | None, together: dict[int, list[str]],
                  alternatives: dict[str, tuple[int, int]]) -> None:
    """What the build says of itself (the ROCm it was built with, its provenance, its label) against
    what its libraries link. Alternatives answer to the build's own claims, not to a label."""
    own: list[tuple[str, int]] = []
    if built_with is not None:
        own.append((f"it was built with ROCm {built_with}", built_with))
    prov = found.provenance or {}
    toolchain = ((prov.get("identity") or {}).get("toolchain") or {}) if isinstance(prov, dict) else {}
    version = str(toolchain.get("rocm_version") or "")
    if version[:1].isdigit() and built_with is None:
        own.append((f"its provenance says it was built with ROCm {version}", int(version.split(".")[0])))
    label: list[tuple[str, int]] = []
    if found.kind == "wheel":
        name = _local_label(Path(found.path).name)
        m = LABEL_MAJOR.search(name)
        if m:
            label.append((f"its label +{name} says ROCm {m.group(1)}", int(m.group(1))))
    if together:
        (major, where), = together.items()
        for what, claimed in own + label:
            if claimed != major:
                found.problems.append(f"links ROCm {major} libraries ({where[0]}), but {what}: "
                                      "built from a stale build folder or against another ROCm; rebuild with --clean")
    for path, (major, minor) in sorted(alternatives.items()):
        for what, claimed in own:
            if claimed != major:
                found.problems.append(f"carries {path}, a library for ROCm {major}.{minor}, but {what}: a stale "
                                      "library from an earlier build; rebuild with --clean")


def judge_file(f: FileFindings, targets: list[TargetId], *, allow_cuda: bool = False) -> None:
    """One ELF file's own rules: no CUDA library; its device code (if any) covers every target."""
    leaked = leaked_build_paths(f.info.runpath or f.info.rpath)
    if leaked:
        f.notes.append(f"its {'RUNPATH' if f.info.runpath else 'RPATH'} holds build-machine paths "
                       f"({', '.join(leaked)}): harmless where they do not exist, a hijack risk where they do")
    if not f.judged:
        return
    for lib in f.info.cuda:
        if allow_cuda:
            f.notes.append(f"links the CUDA library {lib} (allowed by --allow-cuda)")
            continue
        f.problems.append(f"links the CUDA library {lib}: it was built against CUDA, not ROCm "
                          "(for a torch extension: a CUDA torch was in the build environment; for a "
                          "multi-backend wheel, scope the check with --files or --allow-cuda)")
    if f.info.has_device_code and f.info.machine != "EM_AMDGPU":  # code object files are judged together
        have = f.info.targets
        for wanted in targets:
            ok, why = covers(have, wanted)
            f.coverage[str(wanted)] = why if ok else "missing"
            if not ok:
                f.problems.append(f"{why}; rebuild with --arch including {wanted}")


def judge(found: InputFindings, targets: list[TargetId], device_code_in: tuple[str, ...],
          links: tuple[str, ...] = (), *, allow_cuda: bool = False, require: bool = True) -> None:
    """Every rule on one input, in order; each adds its problems and notes to the findings."""
    for f in found.files:
        judge_file(f, targets, allow_cuda=allow_cuda)
    judged = [f for f in found.files if f.judged]
    code_objects_cover(found, judged, targets)
    device_code_present(found, judged, targets, require=require)
    named = named_files_carry_code(found, device_code_in)
    if links:
        files_link(named if device_code_in else [f for f in found.files if f.info.has_device_code and f.judged],
                   links)


def code_objects_cover(found: InputFindings, judged: list[FileFindings], targets: list[TargetId]) -> None:
    """One code object holds one target: a package ships one file per target, judged together (with any
    other device code of the package, which its loader may pick from as well)."""
    loose = [f for f in judged if f.info.machine == "EM_AMDGPU" and f.info.has_device_code]
    if not loose:
        return
    have = [t for f in judged for t in f.info.targets]
    for wanted in targets:
        ok, why = covers(have, wanted)
        if not ok:
            found.problems.append(f"its {len(loose)} code object file(s) have {why}; rebuild with --arch "
                                  f"including {wanted}")


def device_code_present(found: InputFindings, judged: list[FileFindings], targets: list[TargetId], *,
                        require: bool) -> None:
    """Archs were asked for and nothing carries device code: a CPU-only build, or a runtime binding."""
    unreadable = any("unreadable offload bundle" in p or "not a readable ELF" in p for f in judged for p in f.problems)
    if not targets or found.has_device_code or unreadable:  # an unreadable bundle is its own cause
        return
    runtime = sorted({lib for f in judged for lib in list(f.info.rocm) + f.info.loads if RUNTIME_LIB.match(lib)})
    wanted = ", ".join(map(str, targets))
    if runtime:
        what = (f"ships no GPU kernels of its own, but {'links' if any(f.info.rocm for f in judged) else 'loads'}"
                f" the ROCm runtime ({', '.join(runtime)}): a runtime binding or JIT compiler needs no kernels")
        if require:
            found.problems.append(f"{what}; this build was meant to carry device code for {wanted} (was the HIP "
                                  "backend of the project enabled?)")
        else:
            found.notes.append(what + f"; nothing to check for {wanted}")
        return
    n = len(judged)
    if found.kind in ("elf", "bundle", "code object", "windows library"):
        what = "carries no HIP device code (no offload bundle, no code object)"
    elif n:
        what = f"has no HIP device code: none of its {n} ELF file(s) carries an offload bundle or a code object"
    else:
        what = "holds no ELF file at all, so no HIP device code"
    found.problems.append(f"{what}, and nothing in it links the ROCm runtime, but {wanted} requested: "
                          "a CPU-only build (was the HIP/ROCm backend of the project enabled?)")


def named_files_carry_code(found: InputFindings, device_code_in: tuple[str, ...]) -> list[FileFindings]:
    """The files the recipe's globs name exist and carry device code; returns them in the order found."""
    named: list[FileFindings] = []
    for pattern in device_code_in:
        matched = [f for f in found.files if fnmatch.fnmatch(f.path, pattern)]
        if not matched:
            found.problems.append(f"no ELF file matches {pattern!r}, which must carry device code")
        for f in matched:
            if not f.info.has_device_code:
                f.problems.append(f"carries no device code (it matches {pattern!r}, which must)")
            if f not in named:
                named.append(f)
    return named


def files_link(files: list[FileFindings], links: tuple[str, ...]) -> None:
    """Each of `files` needs (DT_NEEDED) every library of `links`: a ROCm build of the extension."""
    for f in files:
        for lib in links:
            if not any(n == lib or n.startswith(lib + ".so") for n in f.info.needed):
                f.problems.append(f"does not link {lib} (DT_NEEDED: {', '.join(f.info.needed) or 'none'}): "
                                  "not a ROCm build of this extension")


def _local_label(wheel_name: str) -> str:
    """The local version label of a wheel file name (`1.0+rocm7.2-...` -> rocm7.2), "" when none."""
    try:
        return parse_wheel_filename(wheel_name)[1].local or ""
    except InvalidWheelFilename:
        return ""
