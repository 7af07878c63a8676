"""The failure report: what a failed step or check says first. The first errors of its log, each with a
few lines of context and duplicates folded (logscan.py), the known trap that explains them with its
evidence and the fix as recipe text to paste (traps.py), and only then the log's tail, if anything in
it was not recognised. `rocbuild diagnose LOG` prints the same report for any log."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rocbuild.draft.fixes import MemoryPerJob
from rocbuild.draft.logscan import LogError, scan
from rocbuild.draft.traps import CPU_ONLY, BuildFiles, Hit, in_findings, in_log

WARNING_HEADER = re.compile(r"\s*CMake (?:Deprecation )?Warning\b")
# What a build prints as it takes its CPU-only path (dynquant-kernels' CMake: "... is a CPU build ... Building
# CPU-only"; a setup.py's "CUDA not available, skipping the CUDA extension").
CPU_SAID = re.compile(r"(?i)\bcpu[- ]only\b|\bcpu (?:build|version|extension|fallback)\b"
                      r"|\b(?:building|compiling|build) (?:\w+ )?(?:for|on) (?:the )?cpu\b"
                      r"|\b(?:cuda|nvcc|gpu)\b[^.;]{0,40}\b(?:not (?:found|available|detected|enabled)|unavailable)\b"
                      r"|\b(?:skipping|skip|without|disabling|no) (?:the )?(?:cuda|gpu)\b(?!\s+arch)")
SAID_SHOWN = 3

SHOWN_CAUSES = 4  # errors shown after the first, a line each
TAIL_WHEN_UNKNOWN = 40  # the log's last lines, shown only when no error was recognised


@dataclass(frozen=True)
class Context:
    """What the report says beside the log: the tree (for the build-file detectors) and the jobs in force."""

    tree: Path | None = None
    jobs: int | None = None
    jobs_why: str = ""
    memory_per_job: str = "2GiB"  # the recipe's requires.memory-per-job, or the default


@dataclass(frozen=True)
class Report:
    errors: list[LogError]
    hits: list[Hit]
    tail: list[str]  # the log's last lines
    context: Context

    @property
    def killed(self) -> bool:
        return any(e.kind == "killed" for e in self.errors)

    def to_json(self) -> dict[str, object]:
        return {"errors": [e.to_json() for e in self.errors], "traps": [h.to_json() for h in self.hits],
                "killed": self.killed, "jobs": self.context.jobs, "memory_per_job": self.context.memory_per_job}

    def lines(self, log: Path | None = None) -> list[str]:
        """The report as text: the first cause, the trap, the other causes, the consequences, then the tail."""
        causes = [e for e in self.errors if e.cause]
        out: list[str] = []
        if causes:
            first = causes[0]
            more = f"; {len(causes) - 1} more below" if len(causes) > 1 else ""
            out += [f"cause ({first.kind}, log line {first.line}{_times(first)}{more}):", f"  {first.text}"]
            out += [f"  | {_short(text, 300)}" for _, text in first.context[:4]]
        elif self.errors:
            out.append("no compiler, linker, CMake or Python error found; what the tools said last:")
        out += _killed(self) + [line for hit in self.hits for line in _trap(hit)]
        for error in causes[1:1 + SHOWN_CAUSES]:
            out.append(f"then ({error.kind}, log line {error.line}{_times(error)}): {error.text}")
        out += [f"then: {e.text} (log line {e.line})" for e in self.errors if not e.cause][:3]
        if log is not None:
            out.append(f"full log: {log}")
        if not causes:  # nothing recognised: the tail is all there is to show
            tail = self.tail[-TAIL_WHEN_UNKNOWN:]
            out += [f"last {len(tail)} lines of the log:", *[f"  | {line}" for line in tail]]
        return out


def diagnose(text: str, context: Context) -> Report:
    errors = scan(text)
    lines = text.splitlines()
    # The errors' lines first (the evidence is then the error itself), then the rest of the log.
    shown = [(e.line, e.text) for e in errors] + [c for e in errors for c in e.context]
    everything = shown + [(n, line) for n, line in enumerate(lines, 1)]
    warned = _cmake_warnings(lines)
    hits = in_log([(n, line) for n, line in everything if n not in warned], _build_files(context))
    # In the log's order; of the traps one line shows, those with a fix first (the build files tell them apart)
    hits = [_with_memory(h, context) for h in sorted(hits, key=lambda h: (int(h.evidence.where.split(":")[1]),
                                                                          h.fix is None))]
    return Report(errors, hits, lines[-TAIL_WHEN_UNKNOWN:], context)


def _cmake_warnings(lines: list[str]) -> set[int]:
    """The log lines (1-based) of CMake's warning blocks: what CMake went on after is never the cause. (An
    optional package that was not found reads like a missing one: vLLM's configure names rocshmem so.)"""
    return {n for block in _warning_blocks(lines).values() for n in block}


def _warning_blocks(lines: list[str]) -> dict[int, list[int]]:
    """CMake's warning blocks, by the line of each header: a block is its header and every line below that is
    blank or indented deeper."""
    blocks: dict[int, list[int]] = {}
    header: int | None = None
    indent = 0
    for n, line in enumerate(lines, 1):
        depth = len(line) - len(line.lstrip())
        if WARNING_HEADER.match(line):
            header, indent = n, depth
            blocks[header] = []
        elif header is not None and line.strip() and depth <= indent:
            header = None
        if header is not None:
            blocks[header].append(n)
    return blocks


def cpu_path_said(codes: list[tuple[str, str]], logs: list[Path]) -> list[str]:
    """For a device-code check that found a CPU-only build: what the build's own output said about taking its
    CPU path (a CMake warning block, a line setup.py printed), with the log and line, the first few. Where no
    trap matched, these are the cause's words."""
    if not any(code in CPU_ONLY for code, _ in codes):
        return []
    said: list[tuple[str, str]] = []
    for log in logs:
        lines = read_log(log).splitlines()
        blocks = _warning_blocks(lines)
        inside = {n for block in blocks.values() for n in block}
        texts = [(n, " ".join(lines[i - 1].strip() for i in block if lines[i - 1].strip()))
                 for n, block in blocks.items()]
        texts += [(n, line.strip()) for n, line in enumerate(lines, 1) if n not in inside and len(line) < 400]
        said += [(f"{log.name}:{n}", text) for n, text in sorted(texts) if CPU_SAID.search(text)]
    firsts: dict[str, str] = {}  # the same words twice (a warning per pass) once, where first said
    for where, text in said:
        firsts.setdefault(text, where)
    return [f"the build said ({where}): {_short(text, 300)}" for text, where in firsts.items()][:SAID_SHOWN]


def diagnose_findings(codes: list[tuple[str, str]], context: Context) -> list[Hit]:
    """The traps a failed check's findings point at, where the build files show them too."""
    return in_findings(codes, _build_files(context))


def _build_files(context: Context) -> BuildFiles | None:
    return BuildFiles.read(context.tree) if context.tree is not None and context.tree.is_dir() else None


def read_log(log: Path) -> str:
    try:
        return log.read_text(errors="replace")
    except OSError:
        return ""


def trap_lines(hits: list[Hit]) -> list[str]:
    return [line for hit in hits for line in _trap(hit)]


def _times(error: LogError) -> str:
    return f", {error.count} times" if error.count > 1 else ""


def _trap(hit: Hit) -> list[str]:
    trap = hit.trap
    out = [f"known trap {trap.id}: {trap.title}", f"  why: {trap.why}", f"  evidence ({hit.evidence.where}): "
           f"{_short(hit.evidence.text)}"]
    if trap.names and hit.evidence.value:
        out.append(f"  {trap.names}: {hit.evidence.value}")
    if hit.files is not None and hit.files is not hit.evidence:
        out.append(f"  in the build files ({hit.files.where}): {_short(hit.files.text)}")
    if hit.fix is None and trap.fixes == "by hand":
        out.append("  fix: by hand (see why): no recipe data fixes it")
        return out
    if hit.fix is None:
        out.append("  fix: none that can be written for you: the build files do not show where (see why)")
        return out
    out.append(f"  fix ({hit.fix.describe()}), to paste into the recipe (--try applies it):")
    return out + [f"    {line}" for line in hit.fix.yaml()]


def _killed(report: Report) -> list[str]:
    if not report.killed:
        return []
    ctx = report.context
    jobs = f"{ctx.jobs} parallel job(s)" + (f" ({ctx.jobs_why})" if ctx.jobs_why else "") if ctx.jobs else \
        "the jobs in force"
    return [f"a compiler was killed by signal 9: most often out of memory. In force: {jobs}, "
            f"{ctx.memory_per_job} per job.",
            "  set requires.memory-per-job higher (fewer jobs run), or pass --jobs N or --memory SIZE"]


def _with_memory(hit: Hit, context: Context) -> Hit:
    """The killed compiler's fix: twice the memory per job in force (the log cannot say what it was)."""
    if hit.trap.id != "compiler-killed":
        return hit
    number = float("".join(c for c in context.memory_per_job if c.isdigit() or c == ".") or 2)
    unit = "MiB" if "m" in context.memory_per_job.lower() else "GiB"
    value = max(4.0, number * 2 / (1024 if unit == "MiB" else 1))
    return Hit(hit.trap, hit.evidence, hit.files, MemoryPerJob(f"{value:g}GiB"))


def _short(text: str, width: int = 160) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def write_report(log: Path, report: Report) -> Path | None:
    """The report as JSON beside the log (NN-step.report.json), for --try and for tools; None if it cannot
    be written (the report is still shown)."""
    import json

    path = log.with_name(log.stem + ".report.json")
    try:
        path.write_text(json.dumps(report.to_json(), indent=2) + "\n")
    except OSError:
        return None
    return path
