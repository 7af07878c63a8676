"""The errors in a failed step's log, first ones first: what `spack log-parse` does with CTest's patterns,
for the tools a ROCm build runs (gcc, clang/hipcc, ld and lld, CMake, a setup.py under pip).

The cause of a failed compile stands where the first error is, often hundreds of warning lines above
the log's tail: each error is found with a few lines of context, the same message from many files is
folded into one entry, and consequences (pip's `metadata-generation-failed`, ninja's `build stopped`,
setuptools' `command ... failed`) are kept apart from causes, so that they are listed after them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# A compiler's diagnostic at a place: gcc and clang both write `file:line:col: error: message`.
LOCATED = re.compile(r"^(?P<where>[^\s:][^:]*:\d+(?::\d+)?): (?P<sev>fatal error|error): (?P<msg>.*)$")
# A compiler driver's own error (no place): `clang: error: unknown argument: '-Xptxas'`, `hipcc: error: ...`.
DRIVER = re.compile(r"^(?P<tool>(?:\S*/)?(?:clang(?:\+\+)?|gcc|g\+\+|c\+\+|cc1plus|cc1|hipcc|amdclang(?:\+\+)?|nvcc)"
                    r"(?:-\d+)?): (?:fatal )?error: (?P<msg>.*)$")
LINKER = re.compile(r"(?P<what>undefined reference to|multiple definition of) [`'](?P<sym>[^']+)'"
                    r"|(?:ld(?:\.lld)?|lld): error: (?P<what2>undefined symbol|duplicate symbol): (?P<sym2>.+)")
LINKER_OTHER = re.compile(r"^(?:\S*/)?(?:ld(?:\.lld|\.bfd|\.gold)?|collect2)(?:-\d+)?: (?:fatal )?error: (?P<msg>.*)$")
# GNU ld and lld when a -l library is not found: `/usr/bin/x86_64-linux-gnu-ld.bfd: cannot find -lcuda: No such file
# or directory` (torch-lap-cuda links CUDA's driver library), `ld.lld: error: unable to find library -lcuda`, and a
# library named by its file (vision3d's `-l:libcudart_static.a`).
NO_LIBRARY = re.compile(r"^(?:\S*/)?(?:[\w.]+-)*ld(?:\.lld|\.bfd|\.gold)?(?:-\d+)?: (?:error: )?"
                        r"(?:cannot find|unable to find library) -l(?P<lib>:?[\w.+-]+)")
CMAKE = re.compile(r"^CMake Error(?: at (?P<where>\S+)(?: \((?P<cmd>\w+)\))?)?:\s*(?P<msg>.*)$")
TRACEBACK = re.compile(r"^(?P<indent>\s*)Traceback \(most recent call last\):\s*$")
EXCEPTION = re.compile(r"^(?P<exc>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|NotFound\w*)|KeyError|StopIteration)"
                       r"(?::\s?(?P<msg>.*))?$")
FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>\S+))?')
# A tool's own failure, as it says it: git, curl, wget, ninja (its build file), and pip (a requirement it could
# not get or install, a python it refuses).
TOOL = re.compile(r"^(?P<tool>fatal|curl|wget|ERROR|ninja: error): "
                  r"(?P<msg>(?:[\w./-]*build\.ninja:\d+: |unable to access|\(\d+\) |unable to resolve"
                  r"|Could not find a version|No matching distribution|Could not install packages"
                  r"|Package '[^']+' requires a different Python).*)$")
# A program a Makefile or a shell could not run (haste-pytorch's `make haste` calls nvcc): `make: nvcc: No such file
# or directory`, `/bin/sh: 1: nvcc: not found`; setup.py may go on past it, and fail far below.
NOT_RUN = re.compile(r"^(?P<tool>g?make(?:\[\d+\])?|(?:/bin/|/usr/bin/)?(?:ba|da)?sh(?:: (?:line )?\d+)?): "
                     r"(?P<msg>(?P<prog>[\w.+/-]+): (?:No such file or directory|[Cc]ommand not found|not found))$")
# Signal 9: the kernel's OOM killer (or a user) took a compiler.
KILLED = re.compile(r"Killed signal terminated program (?P<tool>\S+)|(?P<tool2>\S+): error: unable to execute command: Killed"
                    r"|(?P<tool3>\S+) frontend command failed due to signal 9|^\[exit (?:-9|137)\]$"
                    r"|^Killed$|: line \d+: +\d+ Killed")
# Outcomes of an earlier error: listed after the causes.
CONSEQUENCE = re.compile(r"^\s*(?:error: (?P<pip>metadata-generation-failed|subprocess-exited-with-error)"
                         r"|× (?P<stage>.+) did not run successfully\.?"
                         r"|ninja: build stopped: .*|FAILED: (?P<target>\S+)"
                         r"|error: command '(?P<cmd>[^']+)' failed with exit (?:code|status) (?P<code>-?\d+)"
                         r"|make(?:\[\d+\])?: \*\*\* .*|gmake(?:\[\d+\])?: \*\*\* .*"
                         r"|\S*collect2: error: ld returned \d+ exit status"
                         r"|(?:clang|clang\+\+)(?:-\d+)?: error: linker command failed.*"
                         r"|\S+: error: \S+ frontend command failed due to signal.*"
                         r"|ERROR: Failed building wheel for .*|ERROR: Failed to build .*"
                         r"|(?:\S+ )?error: .*(?:did not run successfully|exited with error).*)$")
# setuptools' (distutils') own refusal, at the start of a line: a package folder missing, a bad option.
# (Not the command line of a compile that failed, which cpp_extension repeats after the compiler's error.)
SETUPTOOLS = re.compile(r"^\s*error: (?!Command '\[)(?P<msg>\S.*)$")
CONTEXT_AFTER = 4  # lines of a diagnostic's source excerpt / CMake block kept
MAX_ERRORS = 200  # errors read from one log at most (a broken header repeats itself in every file)


@dataclass
class LogError:
    """One error, at its first appearance in the log; `count` how many times the same message came."""

    kind: str  # compiler, #error, linker, cmake, python, tool, killed, consequence
    line: int  # 1-based line of the log where it first stands
    text: str  # that line, as the tool wrote it (indentation stripped)
    message: str  # what is said, without the place: the key duplicates fold on
    where: str | None = None  # file:line[:col], or the last frame of a traceback
    context: list[tuple[int, str]] = field(default_factory=list)  # (log line, text) around it
    count: int = 1

    @property
    def cause(self) -> bool:
        return self.kind != "consequence"

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "line": self.line, "text": self.text, "message": self.message,
                "where": self.where, "count": self.count, "context": [list(c) for c in self.context]}


def scan(text: str) -> list[LogError]:
    """Every error in the log, folded, causes first then consequences, each group in log order."""
    lines = text.splitlines()
    found: dict[tuple[str, str], LogError] = {}
    i = 0
    while i < len(lines) and len(found) < MAX_ERRORS:
        error, i = _at(lines, i)
        if error is None:
            continue
        key = (error.kind if error.kind != "#error" else "compiler", error.message)
        if key in found:
            found[key].count += 1
        else:
            found[key] = error
    errors = list(found.values())
    return [e for e in errors if e.cause] + [e for e in errors if not e.cause]


# scikit-build (classic) tries CMake's generators in turn, each in a test project: a generator it then goes past
# (`CMake was unable to find a build program corresponding to "Ninja"`) fails inside such a block.
GENERATOR_TRIAL = re.compile(r"^-- Trying '(?P<name>[^']+)' generator$")


def _at(lines: list[str], i: int) -> tuple[LogError | None, int]:
    """The error that starts at line i, and where to go on reading."""
    raw = lines[i]
    line = raw.strip()
    trial = GENERATOR_TRIAL.match(line)
    if trial:  # past the trial, when it ends; an error in it is the trial's, not the build's
        end = f"-- Trying '{trial.group('name')}' generator - "
        return None, next((j + 1 for j in range(i + 1, len(lines)) if lines[j].strip().startswith(end)), i + 1)
    match = TRACEBACK.match(raw)
    if match:
        return _traceback(lines, i, len(match.group("indent")))
    match = CMAKE.match(line)
    if match:
        return _cmake(lines, i, match)
    match = KILLED.search(line)
    if match:
        tool = next((g for g in match.groups() if g), None)
        message = f"{tool.rsplit('/', 1)[-1]} killed by signal 9" if tool else "killed by signal 9"
        return LogError("killed", i + 1, line, message, context=_around(lines, i, 1, 1)), i + 1
    match = LOCATED.match(line)
    if match:
        return _compiler(lines, i, match.group("where"), match.group("msg")), i + 1
    match = NO_LIBRARY.match(line)
    if match:
        return LogError("linker", i + 1, line, f"cannot find -l{match.group('lib')}", context=_around(lines, i, 1, 1)), i + 1
    match = LINKER.search(line)
    if match:
        symbol = match.group("sym") or match.group("sym2")
        return LogError("linker", i + 1, line, f"{match.group('what') or match.group('what2')} {symbol}",
                        context=_around(lines, i, 1, 1)), i + 1
    match = NOT_RUN.match(line)
    if match:
        tool = "make" if "make" in match.group("tool") else "sh"
        return LogError("tool", i + 1, line, f"{tool}: {match.group('msg')}", context=_around(lines, i, 1, 1)), i + 1
    match = TOOL.match(line)
    if match:
        tool = {"fatal": "git", "ERROR": "pip"}.get(match.group("tool"), match.group("tool"))
        return LogError("tool", i + 1, line, f"{tool}: {match.group('msg')}", context=_around(lines, i, 1, 1)), i + 1
    match = CONSEQUENCE.match(line)
    if match:
        return LogError("consequence", i + 1, line, _fold_numbers(line)), i + 1
    match = DRIVER.match(line) or LINKER_OTHER.match(line)
    if match:
        return LogError("compiler", i + 1, line, match.group("msg"), context=_around(lines, i, 1, 1)), i + 1
    match = SETUPTOOLS.match(line)
    if match:
        return LogError("tool", i + 1, line, f"setuptools: {match.group('msg')}", context=_around(lines, i, 1, 1)), i + 1
    return None, i + 1


def _compiler(lines: list[str], i: int, where: str, message: str) -> LogError:
    """A located diagnostic, with the `In file included from` lines above it and the source excerpt below."""
    before = 0
    while before < 4 and i - before - 1 >= 0 and re.match(r"^\s*(?:In file included from|from) ", lines[i - before - 1]):
        before += 1
    after = 0
    while after < CONTEXT_AFTER and i + after + 1 < len(lines) and (
            _excerpt(lines[i + after + 1]) or (i + after + 2 < len(lines) and _caret(lines[i + after + 2]))):
        after += 1
    context = _around(lines, i, before, after)
    kind = "#error" if message.startswith("#error") or any("#error" in text for _, text in context) else "compiler"
    return LogError(kind, i + 1, lines[i].strip(), message.removeprefix("#error ").strip(), where, context)


def _excerpt(line: str) -> bool:
    """A line of a diagnostic's source excerpt: `   12 | code` or `      |  ^~~` (gcc, clang >= 17), or the
    caret under an older clang's bare copy of the source line (which _caret lets in above it)."""
    return bool(re.match(r"^\s*(?:\d+\s*)?\|", line)) or _caret(line)


def _caret(line: str) -> bool:
    return bool(re.match(r"^\s*\^[~^]*\s*$", line))


def _traceback(lines: list[str], i: int, indent: int) -> tuple[LogError, int]:
    """A Python traceback (as pip shows setup.py's, indented): its last frame and the exception."""
    j = i + 1
    last_frame: tuple[int, str] | None = None
    code_line: tuple[int, str] | None = None
    while j < len(lines):
        text = lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j].strip()
        if FRAME.match(text):
            last_frame, code_line = (j + 1, text.strip()), None
        elif text.startswith(" ") and last_frame is not None and code_line is None:
            code_line = (j + 1, text.strip())
        elif text and not text.startswith(" "):
            break
        j += 1
    exception = lines[j].strip() if j < len(lines) else "(the traceback ends the log)"
    match = EXCEPTION.match(exception)
    context = [c for c in (last_frame, code_line) if c is not None]
    frame = FRAME.match(last_frame[1]) if last_frame else None
    where = f"{frame.group('file')}:{frame.group('line')}" if frame else None
    message = exception if match else f"a traceback ending in: {exception}"
    return LogError("python", min(j, len(lines) - 1) + 1, exception, message, where, context), j + 1


def _cmake(lines: list[str], i: int, match: re.Match[str]) -> tuple[LogError, int]:
    """`CMake Error at FILE:LINE (CMD):` and its indented block, up to the blank line that ends it."""
    j = i + 1
    block: list[tuple[int, str]] = []
    while j < len(lines) and (lines[j].startswith(" ") or (not lines[j].strip() and not block)):
        if lines[j].strip():
            block.append((j + 1, lines[j].rstrip()))
        j += 1
    said = " ".join(text.strip() for _, text in block[:CONTEXT_AFTER * 2])
    message = (match.group("msg") + " " + said).strip()
    return LogError("cmake", i + 1, lines[i].strip(), message, match.group("where"), block[:CONTEXT_AFTER * 2]), j


# What rocbuild's runner writes into a step's log around a command's output: never context.
RUNNER_LINE = re.compile(r"^(?:\$ |  \(in |\[exit -?\d+\]$|\[rocbuild\] |\[interrupted)")


def _around(lines: list[str], i: int, before: int, after: int) -> list[tuple[int, str]]:
    return [(n + 1, lines[n].rstrip()) for n in range(max(0, i - before), min(len(lines), i + after + 1))
            if n != i and not RUNNER_LINE.match(lines[n])]


def _fold_numbers(line: str) -> str:
    return re.sub(r"\d+", "N", line)
