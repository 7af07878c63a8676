"""The human-readable form of a Verdict (the JSON form is Verdict.to_json)."""

from __future__ import annotations

from rocbuild.detect.python import Interpreter
from rocbuild.verify.floors import Floors, installs_on, what_it_takes
from rocbuild.verify.pe import is_windows_code
from rocbuild.verify.provenance import Provenance
from rocbuild.verify.verdict import FileFindings, Verdict


def format_verdict(verdict: Verdict, *, quiet_files: bool = True, verbose: bool = True,
                   here: Interpreter | None = None) -> str:
    """`verbose`: every bundle entry and where each file finds ROCm; otherwise one line per file.
    `here`: this machine's python3, which each wheel is said to install into, or not."""
    lines = []
    if verdict.archs:
        lines.append(f"archs: {', '.join(verdict.archs)} (from {verdict.archs_from})")
    else:
        lines.append(f"archs: none to check against ({verdict.archs_from}); device code is listed, not judged")
    for found in verdict.inputs:
        lines.append(f"{found.path}  [{found.kind}]")
        if found.provenance is not None and found.provenance.raw:
            lines.append("  " + _provenance_line(found.provenance))
        shown = [f for f in found.files if not quiet_files or _interesting(f)]
        for f in shown:
            if not verbose:
                lines.append(f"  {_file_summary(f)}")
                continue
            if f.path != found.path:
                lines.append(f"  {f.path}")
            lines += ["    " + line for line in _file_lines(f)]
        lines += install_lines(found.floors, here, "  ")
        lines += [f"  note: {n}" for n in found.notes]
        lines += [f"  note: {f.path}: {n}" for f in found.files for n in f.notes]
        hidden = len(found.files) - len(shown)
        if hidden:
            lines.append(f"  ({hidden} more ELF file(s) with no device code and no ROCm or CUDA library)")
        if not found.files:
            lines.append("  (no ELF files)")
    problems = verdict.problems
    if problems:
        lines.append(f"FAILED: {len(problems)} problem(s)")
        lines += [f"  - {p}" for p in problems]
    else:
        with_code = [f for i in verdict.inputs for f in i.files if f.info.has_device_code]
        windows = [f.path for f in with_code if is_windows_code(f.info)]
        if with_code:
            head = (f"ok: {len(with_code)} file(s) with device code"
                    + (f" covering {', '.join(verdict.archs)}" if verdict.archs else "")
                    + (f" (Windows code: {', '.join(windows)})" if windows else ""))
        else:
            head = "ok: no device code to check (see the notes)"
        lines.append(head + "; nothing links CUDA")
    return "\n".join(lines)


def install_lines(floors: Floors | None, here: Interpreter | None, indent: str) -> list[str]:
    """Where a wheel installs, and whether `here` (this machine's python3) can install it."""
    if floors is None:
        return []
    lines = [f"{indent}installs on: {floors.describe()}"]
    if here is not None:
        why = installs_on(floors, here)
        lines.append(f"{indent}this machine's python3 ({here.executable}, CPython {here.version[0]}.{here.version[1]}): "
                     + ("can install it" if why is None else f"cannot install it: {why}; {what_it_takes(floors, here)}"))
    return lines


def _provenance_line(p: Provenance) -> str:
    origin = (f"commit {str(p.source)[:12]}" if p.source_kind == "git" else
              f"the sdist {str(p.source).split(' sha256:')[0]}" if p.source_kind == "sdist" else "a source folder")
    # The torch (and the HIP release it was built with) decides which torch the wheel imports with.
    hip = f" (HIP {p.torch_hip})" if p.torch_hip else ""
    torch = f", against torch {p.torch_version}{hip}" if p.torch_version else ""
    return (f"built by rocbuild {p.rocbuild} from recipe {p.recipe} {p.recipe_version} "
            f"({origin}) for {', '.join(p.archs) or 'no GPU target'} with ROCm {p.rocm_version} "
            f"at {p.rocm_path}{torch}, {p.built_at} (build key {str(p.build_key)[:16]})")


def _interesting(f: FileFindings) -> bool:
    return bool(f.info.has_device_code or f.info.cuda or f.info.rocm or f.info.loads or f.problems or f.notes)


def _targets_by_count(f: FileFindings) -> str:
    counts: dict[str, int] = {}
    for t in f.info.targets:
        counts[str(t)] = counts.get(str(t), 0) + 1
    return ", ".join(f"{t}" + (f" x{n}" if n > 1 else "") for t, n in sorted(counts.items()))


def _file_summary(f: FileFindings) -> str:
    """One line: device code by target, ROCm libraries (and their major), how ROCm is found."""
    i = f.info
    parts = []
    if i.has_device_code:
        where = sorted({s for s, _ in i.bundles} | {s for s, _ in i.code_objects})
        windows = ", Windows code" if is_windows_code(i) else ""
        parts.append(f"device code {_targets_by_count(f)} (in {', '.join(where)}{windows})")
    else:
        parts.append("no device code")
    if i.runtime_kernels:
        parts.append(f"{i.runtime_kernels} runtime helper kernels (not counted)")
    if i.rocm:
        majors = sorted(set(i.rocm_majors.values()))
        parts.append(f"links {', '.join(i.rocm)}" + (f" (ROCm {', '.join(map(str, majors))})" if majors else ""))
    if i.loads:
        parts.append(f"loads {', '.join(i.loads)}")
    if i.cuda:
        parts.append(f"CUDA: {', '.join(i.cuda)}")
    if i.rocm or i.loads or i.has_device_code:
        parts.append(f"finds ROCm: {f.finds_rocm}")
    if not f.judged:
        parts.append("not judged (outside --files)")
    return f"{f.path}: " + "; ".join(parts)


def _file_lines(f: FileFindings) -> list[str]:
    i = f.info
    out = [f"{i.machine}: a Windows library"] if is_windows_code(i) else []
    rocm = ", ".join(f"{name} (soname version {v})" if v else name for name, v in i.rocm.items())
    out.append(f"ROCm libraries: {rocm or 'none'}")
    if i.cuda:
        out.append(f"CUDA libraries: {', '.join(i.cuda)}")
    if i.rpath or i.runpath:
        out.append(f"{'RUNPATH' if i.runpath else 'RPATH'}: {':'.join(i.runpath or i.rpath)}")
    if i.rocm or i.loads or i.has_device_code:
        out.append(f"finds ROCm: {f.finds_rocm}")
    if i.loads:
        out.append(f"loads at run time (dlopen): {', '.join(i.loads)}")
    for section, bundle in i.bundles:
        how = f"{bundle.compression}-compressed (CCOB v{bundle.compressed_version})" if bundle.compression else "uncompressed"
        out.append(f"offload bundle in {section} at {bundle.offset:#x}, {how}:")
        for e in bundle.entries:
            out.append(f"  {e.id}  ({e.size} bytes)")
    by_place: dict[str, list[str]] = {}
    for section, co in i.code_objects:
        by_place.setdefault(section, []).append(co.describe())
    for section, names in by_place.items():
        counts = {n: names.count(n) for n in sorted(set(names))}
        out.append(f"code objects in {section}: " + ", ".join(f"{n}" + (f" x{c}" if c > 1 else "")
                                                               for n, c in counts.items()))
    if i.runtime_kernels:
        out.append(f"{i.runtime_kernels} code objects of the ROCm runtime's own (helper kernels; not counted)")
    if not i.has_device_code:
        out.append("device code: none")
    for arch, how in f.coverage.items():
        out.append(f"{arch}: {'MISSING' if how == 'missing' else 'ok (' + how + ')'}")
    return out
