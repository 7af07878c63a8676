"""The human-readable form of a Verdict (the JSON form is Verdict.to_json)."""

from __future__ import annotations

from typing import Any

from rocbuild.verify.check import FileFindings, Verdict


def format_verdict(verdict: Verdict, *, quiet_files: bool = True) -> str:
    lines = []
    if verdict.archs:
        lines.append(f"archs: {', '.join(verdict.archs)} (from {verdict.archs_from})")
    else:
        lines.append(f"archs: none to check against ({verdict.archs_from}); device code is listed, not judged")
    for found in verdict.inputs:
        lines.append(f"{found.path}  [{found.kind}]")
        if found.provenance:
            lines.append("  " + _provenance_line(found.provenance))
        shown = [f for f in found.files if not quiet_files or _interesting(f)]
        for f in shown:
            if f.path != found.path:
                lines.append(f"  {f.path}")
            lines += ["    " + line for line in _file_lines(f)]
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
        n = sum(1 for i in verdict.inputs for f in i.files if f.info.bundles)
        lines.append(f"ok: {n} file(s) with device code"
                     + (f" covering {', '.join(verdict.archs)}" if verdict.archs else "")
                     + "; nothing links CUDA")
    return "\n".join(lines)


def _provenance_line(p: dict[str, Any]) -> str:
    identity = p.get("identity") or {}
    src = identity.get("source") or {}
    recipe = identity.get("recipe") or {}
    toolchain = identity.get("toolchain") or {}
    origin = f"commit {str(src.get('identity'))[:12]}" if src.get("kind") == "git" else "a source folder"
    return (f"built by rocbuild {p.get('rocbuild')} from recipe {recipe.get('name')} {recipe.get('version')} "
            f"({origin}) for {', '.join(identity.get('archs') or [])} with ROCm {toolchain.get('rocm_version')} "
            f"at {toolchain.get('rocm_path')}, {p.get('built_at')} (build key {str(p.get('build_key'))[:16]})")


def _interesting(f: FileFindings) -> bool:
    return bool(f.info.bundles or f.info.cuda or f.info.rocm or f.problems)


def _file_lines(f: FileFindings) -> list[str]:
    i = f.info
    out = []
    rocm = ", ".join(f"{name} (soname version {v})" if v else name for name, v in i.rocm.items())
    out.append(f"ROCm libraries: {rocm or 'none'}")
    if i.cuda:
        out.append(f"CUDA libraries: {', '.join(i.cuda)}")
    for section, bundle in i.bundles:
        how = f"{bundle.compression}-compressed (CCOB v{bundle.compressed_version})" if bundle.compression else "uncompressed"
        out.append(f"offload bundle in {section} at {bundle.offset:#x}, {how}:")
        for e in bundle.entries:
            out.append(f"  {e.id}  ({e.size} bytes)")
    if not i.bundles:
        out.append("device code: none")
    for arch, how in f.coverage.items():
        out.append(f"{arch}: {'MISSING' if how == 'missing' else 'ok (' + how + ')'}")
    return out
