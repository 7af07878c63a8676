"""A trap's fix written into a recipe's text where it belongs, with a comment naming the trap and its
evidence: the wheel step's env, patches:, requires:, verify:. The text is edited, not re-dumped, so the
recipe's own comments and order survive; the caller loads the result with the recipe loader, which
refuses anything this got wrong. A fix already in the recipe leaves the text as it was."""

from __future__ import annotations

import json
import re

from rocbuild.compat import assert_never
from rocbuild.draft.fixes import (
    BUILD_OPTION,
    BuildOption,
    CopyFile,
    Edits,
    Expect,
    Fix,
    HipOpenMP,
    MemoryPerJob,
    RemoveFile,
    ReplaceText,
    Require,
    RocmTorch,
    RunFirst,
    SetEnv,
    quote,
)

TOP_KEY = re.compile(r"^([A-Za-z_][\w-]*):")
ORDER = ("schema", "name", "version", "summary", "homepage", "source", "extra-sources", "requires", "options",
         "unsupported", "patches", "env", "steps", "verify")  # where a missing block goes: after the last of those before it


def apply_fix(text: str, fix: Fix, comment: str) -> str:
    """`text` with `fix` written in, `comment` (one line, no '#') above what was added."""
    lines = text.splitlines()
    note = comment.replace("\n", " ")
    match fix:
        case SetEnv():
            lines = _set_env(lines, fix, note)
        case ReplaceText():
            lines = _append_entry(lines, "patches", fix.entry(), note, present=_present(lines, fix))
        case Edits():
            said = note
            for edit in fix.edits:  # the comment once, above the first edit the recipe lacks
                before = lines
                lines = _append_entry(lines, "patches", edit.entry(), note, present=_present(lines, edit))
                note = note if lines is before else ""
            for env in fix.env:
                lines = _set_env(lines, env, said)
            if fix.first is not None:
                lines = _run_first(lines, fix.first, said)
            for source in fix.sources:
                lines = _set_in_block(lines, "extra-sources", source.name, source.entry(), said)
            for need in fix.requires:
                lines = _require(lines, need.key, need.names, said)
        case Require():
            lines = _require(lines, fix.key, fix.names, note)
        case MemoryPerJob():
            lines = _set_in_block(lines, "requires", "memory-per-job", fix.value, note)
        case BuildOption():
            lines = _set_config(lines, BUILD_OPTION, quote(fix.options), note)
        case HipOpenMP():
            lines = _set_in_block(lines, "requires", "openmp", "hip", note)
        case Expect():
            lines = _expect(lines, fix, note)
        case RocmTorch():
            lines = _set_in_block(lines, "requires", "torch", "rocm", note)
    return "\n".join(lines) + "\n"


def _blocks(lines: list[str]) -> dict[str, tuple[int, int]]:
    """Each top-level key: (its line, the index after its last indented content line)."""
    keys = [(i, m.group(1)) for i, line in enumerate(lines) for m in [TOP_KEY.match(line)] if m]
    found = {}
    for n, (start, key) in enumerate(keys):
        stop = keys[n + 1][0] if n + 1 < len(keys) else len(lines)
        end = start + 1
        for i in range(start + 1, stop):
            if lines[i].strip() and lines[i].startswith(" ") and not lines[i].lstrip().startswith("#"):
                end = i + 1
        found[key] = (start, end)
    return found


def _ensure_block(lines: list[str], key: str) -> list[str]:
    """A top-level `key:` block, added after the blocks that come before it in ORDER when missing."""
    blocks = _blocks(lines)
    if key in blocks:
        if lines[blocks[key][0]].rstrip().endswith(("{}", "[]")):  # `env: {}`: an empty flow value
            lines = [*lines[:blocks[key][0]], f"{key}:", *lines[blocks[key][0] + 1:]]
        return lines
    before = [k for k in ORDER[:ORDER.index(key)] if k in blocks]
    at = blocks[before[-1]][1] if before else len(lines)
    after = [""] if at < len(lines) and lines[at].strip() else []  # a blank line before the next block too
    return [*lines[:at], "", f"{key}:", *after, *lines[at:]]


def _append_entry(lines: list[str], key: str, entry: list[str], note: str, *, present: bool) -> list[str]:
    if present:
        return lines
    lines = _ensure_block(lines, key)
    _, end = _blocks(lines)[key]
    return [*lines[:end], *([f"  # {note}"] if note else []), *entry, *lines[end:]]


def _present(lines: list[str], edit: ReplaceText | CopyFile | RemoveFile) -> bool:
    """Whether the recipe already has this patch: an edit of the same file with the same `find` (one find can
    serve several files), a copy to the same place, a removal of the same file."""
    match edit:
        case ReplaceText():
            pattern = rf"file:\s*{re.escape(edit.file)}\s*\n\s*find:\s*{_written(edit.find)}\s*$"
        case CopyFile():
            pattern = rf"^\s*to:\s*{_written(edit.to)}\s*$"
        case RemoveFile():
            pattern = rf"^\s*-\s*remove:\s*{_written(edit.file)}\s*$"
        case _:
            assert_never(edit)
    return re.search(pattern, "\n".join(lines), re.MULTILINE) is not None


def _written(value: str) -> str:
    """A regex for `value` as a recipe may write it: single-quoted, JSON's double quotes, or plain."""
    return "(?:" + "|".join(re.escape(q) for q in (quote(value), json.dumps(value), value)) + ")"


def _set_env(lines: list[str], fix: SetEnv, note: str) -> list[str]:
    """Into the wheel step's env (a torch extension's settings live there); else the recipe's env."""
    step = _wheel_step(lines)
    if step is None:
        return _set_in_block(lines, "env", fix.name, fix.written(), note)
    return _set_in_mapping(lines, step, "env", fix.name, fix.written(), note, json.dumps(fix.value))


def _set_config(lines: list[str], name: str, value: str, note: str) -> list[str]:
    """Into the wheel step's `wheel: config-settings:` (its `wheel: {}` opened up for it)."""
    step = _wheel_step(lines)
    if step is None:
        return lines
    w = next(i for i in range(step[0], step[2]) if re.match(r"^\s*(?:- )?wheel:", lines[i]))
    col = lines[w].index("wheel")
    lines = [*lines[:w], re.sub(r"wheel:\s*\{\}\s*$", "wheel:", lines[w]), *lines[w + 1:]]
    end = next((i for i in range(w + 1, step[2]) if lines[i].strip() and not lines[i].lstrip().startswith("#")
                and len(lines[i]) - len(lines[i].lstrip()) <= col), step[2])
    return _set_in_mapping(lines, (w, col + 2, end), "config-settings", name, value, note)


def _set_in_mapping(lines: list[str], within: tuple[int, int, int], block: str, name: str, value: str, note: str,
                    same: str | None = None) -> list[str]:
    """`name: value` into the mapping `block` at indent within[1] of lines within[0]..within[2], made there where
    it lacks one; a name there already is set anew, unless it holds `value` (or `same`, written another way)."""
    start, indent, end = within
    at = next((i for i in range(start, end) if re.match(rf"^{' ' * indent}{block}:\s*(?:\{{\}})?\s*$", lines[i])), None)
    if at is None:
        return [*lines[:end], f"{' ' * indent}{block}:", f"{' ' * (indent + 2)}# {note}",
                f"{' ' * (indent + 2)}{name}: {value}", *lines[end:]]
    lines = [*lines[:at], f"{' ' * indent}{block}:", *lines[at + 1:]]
    child = indent + 2
    stop = next((i for i in range(at + 1, end) if lines[i].strip() and not lines[i].lstrip().startswith("#")
                 and len(lines[i]) - len(lines[i].lstrip()) < child), end)
    for i in range(at + 1, stop):
        if re.match(rf"^\s*{re.escape(name)}:", lines[i]):
            if lines[i].split(":", 1)[1].split(" #")[0].strip() in (value, same):
                return lines
            return [*lines[:i], f"{' ' * child}# {note}", f"{' ' * child}{name}: {value}", *lines[i + 1:]]
    last = max([i + 1 for i in range(at + 1, stop) if lines[i].strip() and not lines[i].lstrip().startswith("#")]
               or [at + 1])
    return [*lines[:last], f"{' ' * child}# {note}", f"{' ' * child}{name}: {value}", *lines[last:]]


def _run_first(lines: list[str], step: RunFirst, note: str) -> list[str]:
    """`step` put just before the wheel step, unless a step of its name is there."""
    found = _wheel_step(lines)
    if found is None or any(re.match(rf"^\s*-?\s*name:\s*{re.escape(step.name)}\s*$", line) for line in lines):
        return lines
    dash = found[0]
    pad = " " * (len(lines[dash]) - len(lines[dash].lstrip()) - 2)
    return [*lines[:dash], f"{pad}  # {note}", *(pad + line for line in step.entry()), *lines[dash:]]


def _wheel_step(lines: list[str]) -> tuple[int, int, int] | None:
    """The first wheel step: (its '- ' line, the indent of its keys, the index after its last line)."""
    blocks = _blocks(lines)
    if "steps" not in blocks:
        return None
    start, end = blocks["steps"]
    items = [i for i in range(start + 1, end) if re.match(r"^\s*- ", lines[i])
             and len(lines[i]) - len(lines[i].lstrip()) == len(lines[start + 1]) - len(lines[start + 1].lstrip())]
    for n, i in enumerate(items):
        stop = items[n + 1] if n + 1 < len(items) else end
        if any(re.match(r"^\s*(?:- )?wheel:", lines[j]) for j in range(i, stop)):
            indent = len(lines[i]) - len(lines[i].lstrip()) + 2
            last = max(j + 1 for j in range(i, stop) if lines[j].strip() and not lines[j].lstrip().startswith("#"))
            return i, indent, last
    return None


def _set_in_block(lines: list[str], block: str, key: str, value: str, note: str) -> list[str]:
    lines = _ensure_block(lines, block)
    start, end = _blocks(lines)[block]
    for i in range(start + 1, end):
        if re.match(rf"^  {re.escape(key)}:", lines[i]):
            if lines[i].split(":", 1)[1].split("#")[0].strip() == value:
                return lines
            return [*lines[:i], f"  # {note}", f"  {key}: {value}", *lines[i + 1:]]
    return [*lines[:end], f"  # {note}", f"  {key}: {value}", *lines[end:]]


def _require(lines: list[str], key: str, names: tuple[str, ...], note: str) -> list[str]:
    lines = _ensure_block(lines, "requires")
    start, end = _blocks(lines)["requires"]
    for i in range(start + 1, end):
        if re.match(rf"^  {re.escape(key)}:\s*(?:#.*)?$", lines[i]):  # a block list: `  python:` then `    - x`
            return _block_list(lines, i, end, names, note)
        match = re.match(rf"^  {re.escape(key)}:\s*\[(.*)\](.*)$", lines[i])
        if match:
            have = [n.strip() for n in match.group(1).split(",") if n.strip()]
            new = [n for n in names if n not in have]
            if not new:
                return lines
            return [*lines[:i], f"  # {note}", f"  {key}: [{', '.join(have + new)}]{match.group(2)}", *lines[i + 1:]]
    return [*lines[:end], f"  # {note}", f"  {key}: [{', '.join(names)}]", *lines[end:]]


def _block_list(lines: list[str], key: int, end: int, names: tuple[str, ...], note: str) -> list[str]:
    """Names appended to a block list (its items at indent 4, `- x` or `- name: x`) that does not hold them."""
    last, have = key, set()
    for i in range(key + 1, end):
        if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) < 4:
            break
        item = re.match(r"^    - (?:name:\s*)?([^\s#]+)", lines[i])
        if item:
            have.add(item.group(1).strip("'\""))
        if lines[i].strip():
            last = i
    new = [n for n in names if n not in have]
    if not new:
        return lines
    return [*lines[:last + 1], f"    # {note}", *[f"    - {n}" for n in new], *lines[last + 1:]]


def _expect(lines: list[str], fix: Expect, note: str) -> list[str]:
    entries = ["  - code-objects: false"] + [f"  - wheel-contains: {quote('*/' + s)}" for s in fix.detail[:8]]
    return _append_entry(lines, "verify", entries, note, present=any("code-objects: false" in line for line in lines))
