"""Patch actions on a prepared source tree: diff, replace, link and copy. Each is safe to repeat."""

from __future__ import annotations

import glob
import os
import re
import shutil
from pathlib import Path

from rocbuild.errors import StepFailed
from rocbuild.plan import PatchAction
from rocbuild.runner import Runner


def inside(root: Path, relative: str, what: str) -> Path:
    """A path under `root`; anything escaping it (../, absolute) is refused."""
    path = (root / relative).resolve()
    if path != root.resolve() and root.resolve() not in path.parents:
        raise StepFailed(f"{what} {relative!r} points outside the source tree")
    return path


def apply_replace(params: dict, root: Path) -> str:
    """Replace `find` by `with`; already-applied is fine, no match at all is an error."""
    path = inside(root, params["file"], "replace.file")
    if not path.is_file():
        raise StepFailed(f"replace: no file {params['file']} in the source tree ({root})")
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    find, repl = params["find"], params["with"]
    pattern = re.compile(find if params["regex"] else re.escape(find), re.MULTILINE)

    # Occurrences of the replacement text mark spots done by an earlier run; a
    # match inside one of them is not new (this is what makes `rccl.h` ->
    # `rccl/rccl.h` safe to run twice, unlike the often-copied sed).
    done = [(m.start(), m.end()) for m in re.finditer(re.escape(repl), text)] if repl else []
    fresh = [m for m in pattern.finditer(text)
             if not any(s <= m.start() and m.end() <= e for s, e in done)]
    if not fresh:
        if done:
            return f"{params['file']}: already applied"
        raise StepFailed(
            f"replace: {params['file']} has no match for {find!r}"
            + (" (regular expression)" if params["regex"] else ""),
            hint="upstream changed this file: update the recipe's patch (or its `when:`)",
        )
    expected = params.get("count")
    if expected is not None and len(fresh) != expected:
        raise StepFailed(
            f"replace: {params['file']} has {len(fresh)} matches for {find!r}, the recipe expects {expected}",
            hint="upstream changed this file: check the matches and update `count:`",
        )
    out, last = [], 0
    for m in fresh:
        out.append(text[last:m.start()])
        out.append(m.expand(repl) if params["regex"] else repl)
        last = m.end()
    out.append(text[last:])
    path.write_text("".join(out), encoding="utf-8", errors="surrogateescape")
    return f"{params['file']}: replaced {len(fresh)}"


def apply_link(params: dict, root: Path) -> str:
    """Symlink every match of the `from` glob into `into/`, replacing earlier links."""
    pattern = params["from"]
    matches = sorted(glob.glob(pattern))
    if not matches:
        raise StepFailed(f"link: nothing matches {pattern!r}",
                         hint="the file it names is missing from this ROCm: `rocbuild detect` shows what was found")
    into = inside(root, params["into"], "link.into")
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
    return f"linked {', '.join(made)} into {params['into']}/"


def apply_copy(params: dict, root: Path) -> str:
    """Copy a file from outside (a ROCm header, say) into the tree, where later patches may edit it:
    the original is only read."""
    source = Path(params["from"])
    if not source.is_file():
        raise StepFailed(f"copy: {source} does not exist or is not a file",
                         hint="`rocbuild detect` shows the ROCm found; the recipe's `when:` may need a condition")
    dest = inside(root, params["to"], "copy.to")
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, dest)
    return f"copied {source} to {params['to']}"


def apply_diff(params: dict, root: Path, runner: Runner, log: Path) -> str:
    env = _git_env(root)
    check = runner.run(params["check_argv"], cwd=root, env=env, log=log)
    if check.exit_code != 0:
        reverse = ["git", "apply", "--reverse", "--check", "-p1", params["path"]]
        if runner.run(reverse, cwd=root, env=env, log=log).exit_code == 0:
            return f"{params['name']}: already applied"
        raise StepFailed(f"patch {params['name']} does not apply to this source tree",
                         hint=f"git apply says:\n{check.output.strip()[-2000:]}")
    result = runner.run(params["argv"], cwd=root, env=env, log=log)
    if result.exit_code != 0:
        raise StepFailed(f"patch {params['name']} failed to apply", hint=result.output.strip()[-2000:])
    return f"{params['name']}: applied"


def _git_env(root: Path) -> dict[str, str]:
    # Stop git from discovering an enclosing repository, where `git apply`
    # would resolve paths against that repository's top and skip our files.
    return {"GIT_CEILING_DIRECTORIES": str(root.resolve().parent)}


def apply_patch(action: PatchAction, root: Path, runner: Runner, log: Path) -> str:
    try:
        if action.kind == "diff":
            return apply_diff(action.params, root, runner, log)
        if action.kind == "replace":
            return apply_replace(action.params, root)
        if action.kind == "copy":
            return apply_copy(action.params, root)
        return apply_link(action.params, root)
    except StepFailed as exc:
        exc.message = f"{exc.message} [recipe {action.where}]"
        raise
