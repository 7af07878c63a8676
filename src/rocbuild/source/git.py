"""Getting the source: git through a local mirror cache (GitPython), or a copied folder.

The mirror makes a second build of the same tag or commit download nothing;
branches are refreshed because they move. Every git command is reported to
`log` as `$ git ...` before it runs, so the prepare log shows what ran.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rocbuild.errors import StepFailed
from rocbuild.fsutil import exclusive, file_sha256
from rocbuild.source.spec import GitSource

if TYPE_CHECKING:  # GitPython costs ~40 ms to import; a build from a folder never needs it
    import git
    from git.exc import GitCommandError

Log = Callable[[str], None]


def _command(log: Log, argv: list[str]) -> None:
    log("$ " + shlex.join(argv))


def resolve_git(spec: GitSource, log: Log) -> tuple[str, bool]:
    """The commit the spec names, using (and filling) the mirror. Returns (sha, downloaded?).
    Builds that share a cache (CI cells on one runner) take turns on a mirror: one makes or updates
    it while the others wait, then find it made."""
    mirror = Path(spec.mirror)
    with exclusive(mirror.with_name(mirror.name + ".lock"),
                   lambda: log(f"waiting: another rocbuild is filling the mirror of {spec.url}")):
        return _resolve_in_mirror(spec, mirror, log)


def _make_mirror(spec: GitSource, mirror: Path, log: Log) -> None:
    import git
    from git.exc import GitCommandError

    log(f"mirroring {spec.url} into {mirror}")
    tmp = mirror.with_name(mirror.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    _command(log, ["git", "clone", "--mirror", spec.url, str(tmp)])
    try:
        git.Repo.clone_from(spec.url, tmp, mirror=True)
    except GitCommandError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StepFailed(f"cannot clone {spec.url}: {_git_message(exc)}") from None
    except BaseException:  # interrupted: no half-made mirror is left behind
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(mirror, ignore_errors=True)  # a folder without HEAD: what a killed clone left
    os.replace(tmp, mirror)


def _resolve_in_mirror(spec: GitSource, mirror: Path, log: Log) -> tuple[str, bool]:
    import git
    from git.exc import GitCommandError

    downloaded = False
    if not (mirror / "HEAD").is_file():
        _make_mirror(spec, mirror, log)
        downloaded = True
    repo = git.Repo(mirror)
    want = spec.ref or spec.commit or "HEAD"  # a pin without a ref is that commit, wherever a branch is now
    sha = _rev(repo, want)
    moving = spec.ref is None or f"refs/heads/{spec.ref}" in {r.path for r in repo.references}
    if not downloaded and (sha is None or (moving and spec.commit is None)):
        log(f"updating mirror of {spec.url}")
        _command(log, ["git", "-C", str(mirror), "fetch", "--prune", "origin"])
        try:
            repo.git.fetch("--prune", "origin")
        except GitCommandError as exc:
            if sha is None:
                raise StepFailed(f"cannot update the mirror of {spec.url}: {_git_message(exc)}") from None
            log(f"warning: could not update the mirror ({_git_message(exc)}); using what it has")
        else:
            downloaded = True
        sha = _rev(repo, want)
    if sha is None:
        raise StepFailed(f"{spec.url} has no branch, tag or commit {want!r}",
                         hint="check the recipe's source.ref or the --ref you gave")
    if not downloaded and spec.commit is None and spec.ref is not None and f"refs/tags/{spec.ref}" in \
            {r.path for r in repo.references}:
        _check_tag_unmoved(repo, spec, sha, log)
    if spec.commit is not None and sha != spec.commit:
        raise StepFailed(
            f"source.ref {want!r} of {spec.url} resolves to {sha}, but the recipe pins commit {spec.commit}",
            hint="upstream moved the ref (or the pin is wrong): check the tag, then fix `commit:` in the recipe",
        )
    return sha, downloaded


def _check_tag_unmoved(repo: git.Repo, spec: GitSource, sha: str, log: Log) -> None:
    """A tag the mirror already holds is not fetched again, so ask the remote (one ls-remote) whether it
    still points where the mirror says: a tag moved upstream builds something else under the same name."""
    from git.exc import GitCommandError

    tag = f"refs/tags/{spec.ref}"
    _command(log, ["git", "-C", str(spec.mirror), "ls-remote", "origin", tag, tag + "^{}"])
    try:
        answer = str(repo.git.ls_remote("origin", tag, tag + "^{}"))
    except GitCommandError as exc:
        log(f"warning: could not ask {spec.url} whether tag {spec.ref} moved ({_git_message(exc)}); "
            f"using the mirror's {sha[:12]}")
        return
    remote = {}
    for line in answer.splitlines():
        commit, _, name = line.partition("\t")
        remote[name] = commit
    there = remote.get(tag + "^{}") or remote.get(tag)
    if there is None:
        log(f"warning: {spec.url} no longer has tag {spec.ref}; using the mirror's {sha[:12]}")
    elif there != sha:
        raise StepFailed(
            f"tag {spec.ref} of {spec.url} moved: the mirror has {sha}, the remote now has {there}",
            hint="a moved tag builds other code under the same name. If the move is intended, remove the mirror "
                 f"{spec.mirror} (it is downloaded again); either way, pin the commit you trust with "
                 "`commit:` in the recipe or `rocbuild lock`")


def checkout_git(spec: GitSource, sha: str, dest: Path, log: Log) -> None:
    """A working tree of `sha` at `dest`, sharing the mirror's objects."""
    import git
    from git.exc import GitCommandError

    try:
        _command(log, ["git", "clone", "--shared", "--no-checkout", spec.mirror, str(dest)])
        repo = git.Repo.clone_from(spec.mirror, dest, shared=True, no_checkout=True)
        _command(log, ["git", "-C", str(dest), "checkout", "--detach", sha])
        repo.git.checkout("--detach", sha)
        if spec.submodules:
            _command(log, ["git", "-C", str(dest), "submodule", "update", "--init", "--recursive"])
            repo.git.submodule("update", "--init", "--recursive")
    except GitCommandError as exc:
        raise StepFailed(f"cannot check out {sha} of {spec.url}: {_git_message(exc)}") from None


def copy_tree(source: Path, dest: Path) -> list[str]:
    """Copy a user's tree (the engine checked it exists); the original is never modified. FIFOs,
    sockets and devices are left out (reading a FIFO would block forever): returns their paths."""
    skipped: list[str] = []

    def special(folder: str, names: list[str]) -> set[str]:
        out = set()
        for name in names:
            path = os.path.join(folder, name)
            if _special(path):
                out.add(name)
                skipped.append(os.path.relpath(path, source))
        return out

    try:
        shutil.copytree(source, dest, symlinks=True, ignore=special)
    except shutil.Error as exc:
        failed = "; ".join(f"{a}: {why}" for a, _, why in exc.args[0][:3])
        raise StepFailed(f"cannot copy the source folder {source}: {failed}") from None
    except OSError as exc:
        raise StepFailed(f"cannot copy the source folder {source}: {exc.filename}: {exc.strerror}") from None
    return skipped


def _special(path: str) -> bool:
    """Neither a regular file, a folder nor a symbolic link."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def tree_fingerprint(root: Path) -> str:
    """The identity of a folder's contents: each file's path, executable bit and bytes (a link's
    target), so a fresh checkout of the same files gives the same value (the build cache keys on it)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            p = Path(dirpath, name)
            rel = p.relative_to(root).as_posix()
            try:
                if p.is_symlink():
                    h.update(f"L\0{rel}\0{os.readlink(p)}\n".encode())
                    continue
                if _special(str(p)):  # not copied either
                    continue
                mode = "x" if os.access(p, os.X_OK) else "f"
                digest = file_sha256(p)
            except OSError:
                continue
            h.update(f"{mode}\0{rel}\0{digest}\n".encode())
    return "tree:" + h.hexdigest()


def _rev(repo: git.Repo, ref: str) -> str | None:
    from git.exc import GitCommandError

    try:
        sha: str = repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
        return sha
    except GitCommandError:
        return None


def _git_message(exc: GitCommandError) -> str:
    text = str(exc.stderr or "").strip().replace("stderr: ", "").strip("'\n ")
    return text.splitlines()[-1] if text else str(exc)
