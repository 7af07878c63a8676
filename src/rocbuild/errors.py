"""Error types. Each carries the exit code the CLI turns it into; only cli.main exits."""

from __future__ import annotations


class RocbuildError(Exception):
    """Base class: a failure explained to the user, never shown as a traceback."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def render(self) -> str:
        text = f"error: {self.message}"
        if self.hint:
            text += "\n" + "\n".join(f"  {line}" for line in self.hint.splitlines())
        return text


class StepFailed(RocbuildError):
    """An external command or a build action failed (exit 1). `report`: the failure report (draft/report.py)
    of a failed step or check, for `--try` to act on; `log`: the step's log."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None, report: object = None, log: object = None):
        super().__init__(message, hint=hint)
        self.report = report
        self.log = log


class UsageError(RocbuildError):
    """Bad command line or bad value (exit 2)."""

    exit_code = 2


class RecipeError(UsageError):
    """An invalid recipe; located at file:line:column when the position is known."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
        key: str | None = None,
        value: object = None,
        accepted: str | None = None,
        suggestion: str | list[str] | None = None,
        source_line: str | None = None,
    ):
        super().__init__(message)
        self.file = file
        self.line = line
        self.column = column
        self.key = key
        self.value = value
        self.accepted = accepted
        self.suggestion = suggestion
        self.source_line = source_line

    def render(self) -> str:
        where = self.file or "<recipe>"
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        head = f"{where}: error: "
        if self.key:
            head += f"{self.key}: "
        out = [head + self.message]
        if self.value is not None:
            out.append(f"  value: {self.value!r}")
        if self.accepted:
            out.append(f"  accepted: {self.accepted}")
        if self.suggestion:
            options = [self.suggestion] if isinstance(self.suggestion, str) else self.suggestion
            out.append("  did you mean " + " or ".join(repr(o) for o in options) + "?")
        if self.source_line is not None and self.line is not None:
            gutter = f"{self.line:>5} | "
            out.append(gutter + self.source_line)
            if self.column is not None:
                out.append(" " * (len(gutter) + self.column - 1) + "^")
        return "\n".join(out)


class HostNotReady(RocbuildError):
    """The machine lacks something the build needs: ROCm, a GPU or --arch, a tool (exit 3)."""

    exit_code = 3
