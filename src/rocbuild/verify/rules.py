"""The rules verify judges by, one function each (the module docstring of verify/verdict.py lists them).

A rule reads what it is given and returns what it found (codes with data, verify/finding.py); `judge`
assembles those into new findings. No rule edits what it is given: what was read is judged again,
unchanged, by the next check of the same wheel."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from rocbuild.verify.bundles import TargetId, covers
from rocbuild.verify.elf import RUNTIME_LIB
from rocbuild.verify.finding import UNREADABLE, Code, Finding
from rocbuild.verify.findings import FileFindings, InputFindings, runpath_kind


def leaked_build_paths(paths: list[str]) -> list[str]:
    """The RUNPATH/RPATH entries that name the build machine's own folders: absolute, and neither
    ROCm's (/opt/rocm, /opt/rocm-X.Y.Z, AMD's pip ROCm) nor the system's (/usr/lib, /lib64, ...)."""
    return [p for p in paths if runpath_kind(p) == "build"]


# torch's own libraries: whatever needs one was compiled against one torch release's C++ ABI.
TORCH_LIB = re.compile(r"^lib(?:c10|torch)(?:_[A-Za-z0-9_]+)?\.so(?:\.|$)")
VERSIONED_SO = re.compile(r"\.so\.\d")
_ANY = 1 << 30  # a series bound no specifier sets: any major, any minor

Series = tuple[int, int]  # a release series: (major, minor)


def release_series(spec: SpecifierSet) -> Series | None:
    """The one release series `spec` lets pip install, or None where it allows more than one (or none):
    ==2.14.*, ==2.14.1, ~=2.14.1, >=2.14,<2.15 and >=2.14.1,<=2.14.3 each confine to (2, 14)."""
    low, high = (0, 0), (_ANY, _ANY)
    for s in spec:
        try:
            v = Version(s.version.removesuffix(".*"))
        except InvalidVersion:  # `===` takes any string: nothing to tell from it
            return None
        lo, hi = _series_bounds(s.operator, v, wildcard=s.version.endswith(".*"))
        low, high = max(low, lo), min(high, hi)
    return low if low == high else None


def _series_bounds(operator: str, v: Version, *, wildcard: bool) -> tuple[Series, Series]:
    """The lowest and the highest series one specifier allows."""
    major, minor = (*v.release, 0)[:2]
    here, anything = (major, minor), ((0, 0), (_ANY, _ANY))
    if operator in ("==", "==="):
        return ((major, 0), (major, _ANY)) if wildcard and len(v.release) < 2 else (here, here)  # ==2.* or ==2.14.*
    if operator == "~=":
        return (here, here) if len(v.release) > 2 else (here, (major, _ANY))  # ~=2.14.1: 2.14; ~=2.14: 2.x
    if operator in (">=", ">"):
        return here, anything[1]
    if operator == "<=" or (operator == "<" and (any(v.release[2:]) or v.pre or v.post or v.dev)):
        return anything[0], here  # <2.15.1 still allows 2.15.0
    if operator == "<":
        return anything[0], (major, minor - 1) if minor else (major - 1, _ANY)  # <2.15: 2.14 at most
    return anything  # != excludes single versions only


def torch_pinned(found: InputFindings) -> tuple[Finding, ...]:
    """A wheel whose files need torch's libraries requires (Requires-Dist) one torch release series.
    torch's C++ ABI changes from release to release, and pip pairs an unpinned extension with whatever
    torch it finds or picks: "undefined symbol" at import. A library the wheel carries itself (torch's
    own wheel) is no torch it depends on; a requirement behind an extra is not installed by default."""
    if found.requires is None:
        return ()
    own = {Path(f.path).name for f in found.files}
    libs = sorted({n for f in found.files for n in f.info.needed if TORCH_LIB.match(n) and n not in own})
    if not libs:
        return ()
    torch = [r for r in found.requires if canonicalize_name(r.name) == "torch"]
    if any(release_series(r.specifier) for r in torch if r.marker is None or "extra" not in str(r.marker)):
        return ()
    where = next(f.path for f in found.files if set(f.info.needed) & set(libs))
    built = found.provenance.torch_version if found.provenance else None
    series = ".".join(map(str, Version(built).release[:2])) if built and _is_version(built) else ""
    return (Finding("torch_unpinned", {"libs": tuple(libs), "where": where, "requires": tuple(map(str, torch)),
                                       "series": series}),)


def torch_sonames(found: InputFindings) -> tuple[Finding, ...]:
    """torch's libraries needed under a distribution's versioned sonames (libc10.so.2.14): PyTorch's wheels
    name theirs libc10.so, libtorch_cpu.so, ..., so such an extension loads only beside that distribution's
    torch (a build-only torch gives the wheels' names: a build that links these went around it)."""
    own = {Path(f.path).name for f in found.files}
    for f in found.files:
        libs = sorted(n for n in f.info.needed if TORCH_LIB.match(n) and VERSIONED_SO.search(n) and n not in own)
        if libs:
            return (Finding("torch_distro_sonames", {"libs": tuple(libs), "where": f.path}),)
    return ()


def _is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


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


def judge(read: InputFindings, targets: list[TargetId], device_code_in: tuple[str, ...] = (),
          links: tuple[str, ...] = (), *, only: tuple[str, ...] = (), allow_cuda: bool = False, require: bool = True,
          built_with: int | None = None) -> InputFindings:
    """Every rule on one input, in order, their findings assembled into a new InputFindings. `only`:
    globs of the files to judge (the rest are listed); `built_with`: the ROCm major of the build."""
    marked = replace(read, files=tuple(replace(f, judged=not only or any(fnmatch.fnmatch(f.path, g) for g in only))
                                       for f in read.files))
    judged = [f for f in marked.files if f.judged]
    named = named_files(marked.files, device_code_in)
    linked = (named if device_code_in else [f for f in judged if f.info.has_device_code]) if links else []
    files = []
    for f in marked.files:
        of_file = judge_file(f, targets, allow_cuda=allow_cuda) + carries_named_code(f, device_code_in)
        if any(f is g for g in linked):
            of_file += files_link(f, links)
        files.append(replace(f, coverage=coverage(f, targets), found=f.found + of_file))
    of_input = (code_objects_cover(judged, targets) + device_code_present(marked, judged, targets, require=require)
                + unmatched_globs(marked.files, device_code_in) + judge_rocm_majors(marked, built_with)
                + built_against(marked) + torch_pinned(marked) + torch_sonames(marked))
    return replace(marked, files=tuple(files), found=marked.found + of_input)


def built_against(found: InputFindings) -> tuple[Finding, ...]:
    """What its provenance says it was built against that decides where it can run."""
    prov = found.provenance
    if prov is None:
        return ()
    said = (Finding("run_env", {"env": prov.run_env}),) if prov.run_env else ()
    if not prov.torch_build_only:
        return said
    return (Finding("build_only_torch", {"torch": prov.torch_version or "?", "hip": prov.torch_hip or "?"}), *said)


def judged_file(f: FileFindings, targets: list[TargetId], *, allow_cuda: bool = False) -> FileFindings:
    """One file judged on its own rules (doctor's check of the extensions installed in a Python)."""
    return replace(f, coverage=coverage(f, targets), found=f.found + judge_file(f, targets, allow_cuda=allow_cuda))


def judge_rocm_majors(found: InputFindings, built_with: int | None) -> tuple[Finding, ...]:
    """One ROCm major inside each library, and across the libraries loaded together; libraries named
    for a ROCm release (alternatives: the package loads the one that matches) each for their own.

    A wheel linking libamdhip64.so.6 that says +rocm7.2 was built from a stale build folder; one whose
    files link two majors cannot load either way. A wheel rocbuild built carries nothing for another
    ROCm than the one it was built with, alternatives included: there, another release's library is a
    stale one from an earlier build."""
    alternatives = {f.path: release_in_name(f.path) for f in found.files if f.info.rocm_majors}
    together: dict[int, list[str]] = {}
    out: list[Finding] = []
    for f in found.files:
        majors = f.info.rocm_majors
        if len(set(majors.values())) > 1:
            out.append(Finding("majors_in_library", {
                "path": f.path, "libs": tuple((lib, str(m)) for lib, m in sorted(majors.items()))}))
            continue
        release = alternatives.get(f.path)
        if release is not None and majors:
            out.append(_judge_alternative(f.path, release, majors))
            continue
        for lib, major in majors.items():
            together.setdefault(major, []).append(f"{f.path} links {lib}")
    if len(together) > 1:
        out.append(Finding("majors_mixed", {"by_major": tuple((str(m), *sorted(set(w))[:3])
                                                              for m, w in sorted(together.items()))}))
        return tuple(out)
    return (*out, *_judge_claims(found, built_with, together, {p: r for p, r in alternatives.items() if r is not None}))


def _judge_alternative(path: str, release: tuple[int, int], majors: dict[str, int]) -> Finding:
    (lib, major), *_ = sorted(majors.items())
    return Finding("alternative_wrong_major" if major != release[0] else "alternative_serves",
                   {"path": path, "release": f"{release[0]}.{release[1]}", "major": major, "lib": lib})


Claim = dict[str, str | int]  # who says which major: {"by": build | provenance | label, "claimed", "said"}


def _judge_claims(found: InputFindings, built_with: int | None, together: dict[int, list[str]],
                  alternatives: dict[str, tuple[int, int]]) -> tuple[Finding, ...]:
    """What the build says of itself (the ROCm it was built with, its provenance, its label) against
    what its libraries link. Alternatives answer to the build's own claims, not to a label."""
    own: list[Claim] = []
    if built_with is not None:
        own.append({"by": "build", "claimed": built_with})
    prov = found.provenance
    if prov is not None and prov.rocm_major is not None and built_with is None:
        own.append({"by": "provenance", "claimed": prov.rocm_major, "said": prov.rocm_version or ""})
    label: list[Claim] = []
    if found.kind == "wheel":
        name = _local_label(Path(found.path).name)
        m = LABEL_MAJOR.search(name)
        if m:
            label.append({"by": "label", "claimed": int(m.group(1)), "said": name})
    out: list[Finding] = []
    if together:
        (major, where), = together.items()
        out += [Finding("major_disagrees", {"major": major, "where": where[0], **claim})
                for claim in own + label if claim["claimed"] != major]
    for path, (major, minor) in sorted(alternatives.items()):
        out += [Finding("stale_alternative", {"path": path, "release": f"{major}.{minor}", **claim})
                for claim in own if claim["claimed"] != major]
    return tuple(out)


def coverage(f: FileFindings, targets: list[TargetId]) -> dict[str, str]:
    """Per wanted target, what covers it, or "missing"."""
    return {str(wanted): why if ok else "missing" for wanted, ok, why in _covering(f, targets)}


def _covering(f: FileFindings, targets: list[TargetId]) -> list[tuple[TargetId, bool, str]]:
    """Per wanted target: is it covered, and why (or why not). Only a judged file with device code of
    its own is judged by itself: code object files are judged together (code_objects_cover)."""
    if not f.judged or not f.info.has_device_code or f.info.machine == "EM_AMDGPU":
        return []
    return [(wanted, *covers(f.info.targets, wanted)) for wanted in targets]


def judge_file(f: FileFindings, targets: list[TargetId], *, allow_cuda: bool = False) -> tuple[Finding, ...]:
    """One ELF file's own rules: no CUDA library; its device code (if any) covers every target."""
    out: list[Finding] = []
    leaked = leaked_build_paths(f.info.runpath or f.info.rpath)
    if leaked:
        out.append(Finding("build_paths", {"which": "RUNPATH" if f.info.runpath else "RPATH", "paths": tuple(leaked)}))
    if not f.judged:
        return tuple(out)
    out += [Finding("cuda_allowed" if allow_cuda else "links_cuda", {"lib": lib}) for lib in f.info.cuda]
    out += [Finding("arch_missing", {"reason": why, "target": str(wanted)})
            for wanted, ok, why in _covering(f, targets) if not ok]
    return tuple(out)


def code_objects_cover(judged: list[FileFindings], targets: list[TargetId]) -> tuple[Finding, ...]:
    """One code object holds one target: a package ships one file per target, judged together (with any
    other device code of the package, which its loader may pick from as well)."""
    loose = [f for f in judged if f.info.machine == "EM_AMDGPU" and f.info.has_device_code]
    if not loose:
        return ()
    have = [t for f in judged for t in f.info.targets]
    out = []
    for wanted in targets:
        ok, why = covers(have, wanted)
        if not ok:
            out.append(Finding("code_objects_miss_arch", {"files": len(loose), "reason": why, "target": str(wanted)}))
    return tuple(out)


def device_code_present(found: InputFindings, judged: list[FileFindings], targets: list[TargetId], *,
                        require: bool) -> tuple[Finding, ...]:
    """Archs were asked for and nothing carries device code: a CPU-only build, or a runtime binding."""
    unreadable = any(x.code in UNREADABLE for f in judged for x in f.info.problems)
    if not targets or found.has_device_code or unreadable:  # an unreadable file is its own cause
        return ()
    runtime = sorted({lib for f in judged for lib in list(f.info.rocm) + f.info.loads if RUNTIME_LIB.match(lib)})
    wanted = tuple(map(str, targets))
    if runtime:
        how = "links" if any(f.info.rocm for f in judged) else "loads"
        code: Code = "runtime_only_unwanted" if require else "runtime_only"
        return (Finding(code, {"how": how, "runtime": tuple(runtime), "targets": wanted}),)
    return (Finding("cpu_only", {"kind": found.kind, "files": len(judged), "targets": wanted}),)


def named_files(files: Sequence[FileFindings], device_code_in: tuple[str, ...]) -> list[FileFindings]:
    """The files the recipe's globs name, in the order the globs name them."""
    named: list[FileFindings] = []
    for pattern in device_code_in:
        named += [f for f in files if fnmatch.fnmatch(f.path, pattern) and not any(f is g for g in named)]
    return named


def unmatched_globs(files: Sequence[FileFindings], device_code_in: tuple[str, ...]) -> tuple[Finding, ...]:
    """Each glob of the recipe's names some file."""
    return tuple(Finding("no_file_matches", {"pattern": pattern}) for pattern in device_code_in
                 if not any(fnmatch.fnmatch(f.path, pattern) for f in files))


def carries_named_code(f: FileFindings, device_code_in: tuple[str, ...]) -> tuple[Finding, ...]:
    """A file a glob of the recipe's names carries device code."""
    if f.info.has_device_code:
        return ()
    return tuple(Finding("named_file_no_code", {"pattern": pattern}) for pattern in device_code_in
                 if fnmatch.fnmatch(f.path, pattern))


def files_link(f: FileFindings, links: tuple[str, ...]) -> tuple[Finding, ...]:
    """A file with device code (or one the recipe names) needs (DT_NEEDED) every library of `links`:
    a ROCm build of the extension."""
    return tuple(Finding("missing_link", {"lib": lib, "needed": tuple(f.info.needed)}) for lib in links
                 if not any(n == lib or n.startswith(lib + ".so") for n in f.info.needed))


def _local_label(wheel_name: str) -> str:
    """The local version label of a wheel file name (`1.0+rocm7.2-...` -> rocm7.2), "" when none."""
    try:
        return parse_wheel_filename(wheel_name)[1].local or ""
    except InvalidWheelFilename:
        return ""
