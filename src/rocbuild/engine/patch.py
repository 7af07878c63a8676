"""Patch actions on a prepared source tree: diff, replace, link and copy. Each is safe to repeat."""

from __future__ import annotations

import glob
import os
import re
import shutil
from pathlib import Path

from rocbuild.compat import assert_never
from rocbuild.errors import StepFailed
from rocbuild.fsutil import within
from rocbuild.plan.model import CopyPatch, DiffPatch, LinkPatch, PatchAction, RemovePatch, ReplacePatch
from rocbuild.process.runner import StepRunner


def inside(root: Path, relative: str, what: str) -> Path:
    """A path under `root`; anything escaping it (../, absolute) is refused."""
    path = (root / relative).resolve()
    if not within(path, root, follow_links=True):
        raise StepFailed(f"{what} {relative!r} points outside the source tree")
    return path


def readable(path: str, folders: tuple[str, ...], what: str) -> None:
    """With links followed, `path` must still be under one of `folders` (the plan checked its text)."""
    real = os.path.realpath(path)
    if folders and not any(within(real, f, follow_links=True) for f in folders):
        raise StepFailed(f"{what} {path!r} leads (through a link) to {real}, outside the source tree, "
                         "the ROCm prefix and the recipe's folders")


def apply_replace(patch: ReplacePatch, root: Path) -> str:
    """Replace `find` by `with`; already-applied is fine, no match at all is an error."""
    path = inside(root, patch.file, "replace.file")
    if not path.is_file():
        raise StepFailed(f"replace: no file {patch.file} in the source tree ({root})")
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    find, repl = patch.find, patch.replacement
    pattern = re.compile(find if patch.regex else re.escape(find), re.MULTILINE)

    # Occurrences of the replacement text mark spots done by an earlier run; a
    # match inside one of them is not new (this is what makes `rccl.h` ->
    # `rccl/rccl.h` safe to run twice, unlike the often-copied sed).
    # A regex replacement without group references puts in its text with escapes undone (`\\.` becomes `\.`).
    written = _literal(repl) if patch.regex else repl
    done = [(m.start(), m.end()) for m in re.finditer(re.escape(written), text)] if written else []
    fresh = [m for m in pattern.finditer(text)
             if not any(s <= m.start() and m.end() <= e for s, e in done)]
    # A regex replacement that wraps what it matched (`GUARD\n\g<def>\n#endif`) is found by its text before
    # the first group; the pattern itself must then not match a wrapped one (a look-behind does it).
    lead = re.split(r"\\g<|\\\d", repl)[0] if patch.regex else ""
    if not fresh:
        if done or (lead and lead in text):
            return f"{patch.file}: already applied"
        raise StepFailed(
            f"replace: {patch.file} has no match for {find!r}"
            + (" (regular expression)" if patch.regex else ""),
            hint="upstream changed this file: update the recipe's patch (or its `when:`)",
        )
    expected = patch.count
    if expected is not None and len(fresh) != expected:
        raise StepFailed(
            f"replace: {patch.file} has {len(fresh)} matches for {find!r}, the recipe expects {expected}",
            hint="upstream changed this file: check the matches and update `count:`",
        )
    out, last = [], 0
    for m in fresh:
        out.append(text[last:m.start()])
        out.append(m.expand(repl) if patch.regex else repl)
        last = m.end()
    out.append(text[last:])
    path.write_text("".join(out), encoding="utf-8", errors="surrogateescape")
    return f"{patch.file}: replaced {len(fresh)}"


def _literal(repl: str) -> str:
    """What a regex replacement writes, where it refers to no group (else `repl` as it is)."""
    try:
        return re.match("", "").expand(repl)  # type: ignore[union-attr]
    except (re.error, IndexError):
        return repl


def apply_link(patch: LinkPatch, root: Path) -> str:
    """Symlink every match of the `from` glob into `into/`, replacing earlier links."""
    pattern = patch.source_glob
    matches = sorted(glob.glob(pattern))
    if not matches:
        raise StepFailed(f"link: nothing matches {pattern!r}",
                         hint="the file it names is missing from this ROCm: `rocbuild detect` shows what was found")
    for match in matches:
        readable(match, patch.readable, "link.from")
    into = inside(root, patch.into, "link.into")
    into.mkdir(parents=True, exist_ok=True)
    made = []
    for match in matches:
        dest = into / os.path.basename(match.rstrip("/"))
        # Replace the link itself: `ln -sf SRC DIR/` would follow an existing
        # link to a folder and create DIR/FindHIP/FindHIP inside it.
        if dest.is_symlink():
            dest.unlink()
        elif dest.exists():
            raise StepFailed(f"link: {dest} exists and is not a link; refusing to replace it")
        os.symlink(match, dest)
        made.append(dest.name)
    return f"linked {', '.join(made)} into {patch.into}/"


def apply_copy(patch: CopyPatch, root: Path) -> str:
    """Copy a file from outside (a ROCm header, say) into the tree, where later patches may edit it:
    the original is only read."""
    source = Path(patch.source)
    readable(patch.source, patch.readable, "copy.from")
    if not source.is_file():
        raise StepFailed(f"copy: {source} does not exist or is not a file",
                         hint="`rocbuild detect` shows the ROCm found; the recipe's `when:` may need a condition")
    dest = inside(root, patch.to, "copy.to")
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, dest)
    return f"copied {source} to {patch.to}"


def apply_remove(patch: RemovePatch, root: Path) -> str:
    """Remove a file from the (fresh) tree: missing, the recipe names the wrong file."""
    inside(root, patch.file, "remove")  # refuses a path that leads out of the tree
    path = root / patch.file  # a link is removed itself, never what it points at
    if not path.is_file() and not path.is_symlink():
        raise StepFailed(f"remove: {patch.file} is not a file of the source tree",
                         hint="check the path, relative to the tree; an earlier patch may have moved it")
    path.unlink()
    return f"removed {patch.file}"


def apply_diff(patch: DiffPatch, root: Path, runner: StepRunner, log: Path) -> str:
    env = git_env(root)
    check = runner.run(patch.check_argv, cwd=root, env=env, log=log)
    if check.exit_code != 0:
        if runner.run(patch.reverse_check_argv, cwd=root, env=env, log=log).exit_code == 0:
            return f"{patch.name}: already applied"
        raise StepFailed(f"patch {patch.name} does not apply to this source tree",
                         hint=f"git apply says:\n{check.output.strip()[-2000:]}")
    result = runner.run(patch.argv, cwd=root, env=env, log=log)
    if result.exit_code != 0:
        raise StepFailed(f"patch {patch.name} failed to apply", hint=result.output.strip()[-2000:])
    return f"{patch.name}: applied"


def git_env(root: Path) -> dict[str, str]:
    # Stop git from discovering an enclosing repository, where `git apply`
    # would resolve paths against that repository's top and skip our files.
    return {"GIT_CEILING_DIRECTORIES": str(root.resolve().parent)}


def apply_patch(action: PatchAction, root: Path, runner: StepRunner, log: Path) -> str:
    try:
        match action:
            case DiffPatch():
                return apply_diff(action, root, runner, log)
            case ReplacePatch():
                return apply_replace(action, root)
            case CopyPatch():
                return apply_copy(action, root)
            case LinkPatch():
                return apply_link(action, root)
            case RemovePatch():
                return apply_remove(action, root)
            case _:
                assert_never(action)
    except StepFailed as exc:
        exc.message = f"{exc.message} [recipe {action.where}]"
        raise
