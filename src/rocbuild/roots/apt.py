"""Changing a root and running in it: apt-get installs as the owner of its files, and commands in the
current folder."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import rocbuild.roots.enter as enter
from rocbuild.errors import StepFailed, UsageError
from rocbuild.progress import Progress
from rocbuild.roots.store import Root


def install_argv(packages: Sequence[str], apt_target: str | None) -> list[str]:
    target = ["-t", apt_target] if apt_target else []
    return ["apt-get", "install", "-y", "--no-install-recommends", *target, *packages]


def apt_commands(packages: Sequence[str], apt_target: str | None) -> list[list[str]]:
    """What installing `packages` into a root runs: the indexes, then the packages."""
    return [["apt-get", "update", "-qq"], install_argv(packages, apt_target)]


def install_packages(root: Root, packages: Sequence[str], progress: Progress, environ: Mapping[str, str]) -> int:
    """`apt-get install` inside the root (entered the way builds enter it)."""
    for name in packages:
        if not name or name.startswith("-") or not all(c.isalnum() or c in "+-.:~" for c in name):
            raise UsageError(f"root install: {name!r} is not a Debian package name")
    commands = apt_commands(packages, root.apt_target)
    label = f"root install {root.name}"
    started = progress.start(label, " ".join(commands[-1]))
    code = 0
    for argv in commands:
        code = enter.run_as_owner(root, argv, environ)
        if code != 0:
            break
    if code != 0:
        raise StepFailed(f"{label}: apt-get exited with {code}", hint="its messages are above")
    progress.done(label, started)
    return 0


def run_in(root: Root, command: Sequence[str], environ: Mapping[str, str]) -> int:
    """A command inside the root, in the current folder (shared read-write, as builds share it)."""
    cwd = Path.cwd()
    share = enter.Share(cwd, True, "the current folder")
    try:
        enter.check_share(share)
    except UsageError:
        return enter.run_command(root, command, environ)
    return enter.run_command(root, command, environ, [share], cwd)
