"""Where a build's source tree comes from, as plain values: a git repository at a ref, a folder, or
an sdist from the package index.

A leaf module: the recipe loader, the planner, the fetcher and the recipe
registry all speak these types, and none of them is imported here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rocbuild.errors import UsageError

# A commit id as --ref may name it (abbreviated or whole).
SHA_RE = re.compile(r"^[0-9a-f]{7,40}$")
# A commit id as a recipe pins it: whole (SHA-1, or SHA-256 repositories), compared for equality; an
# abbreviation can be matched by a crafted commit in minutes.
FULL_SHA_RE = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
# The transports a recipe may fetch from: web, ssh (URL or scp-like user@host:path), git, local files.
# Compiled on first use (by re's cache), not at import: ~3 ms that a recipe without git never needs.
GIT_URL_PATTERN = (
    r"^(?:(?:https?|ssh|git)://(?:[A-Za-z0-9_][^@/\s]*@)?[A-Za-z0-9[][A-Za-z0-9.:\[\]-]*(?:/\S*)?"
    r"|file://\S+|[A-Za-z0-9_][A-Za-z0-9._-]*@[A-Za-z0-9][A-Za-z0-9.-]*:\S+|/\S*)$")
GIT_URLS_ACCEPTED = "https://, http://, ssh://, git://, file:// URLs, user@host:path, or an absolute path"


def git_url_problem(url: str) -> str | None:
    """Why git must not be given `url` (transport helpers such as ext:: and fd:: run commands), or None."""
    if re.match(r"^[A-Za-z0-9+._-]*::", url):
        return "git transport helpers (NAME::ADDRESS, such as ext:: or fd::) are not accepted"
    if not re.match(GIT_URL_PATTERN, url, re.IGNORECASE):
        return "not a git URL rocbuild fetches from"
    return None
# What git refuses in a ref name, plus a leading '-' (git would read it as an option).
_BAD_REF = re.compile(r"(^-)|\.\.|[\x00-\x20\x7f~^:?*\[\\]|@\{|\.lock$|/$|^/|//")


def check_ref(ref: str, what: str = "--ref") -> str:
    """Refuse refs git would reject or read as an option (a ref starting with '-')."""
    if not ref or _BAD_REF.search(ref):
        raise UsageError(
            f"{what} {ref!r} is not a valid git ref",
            hint="accepted: a branch, tag or commit id, e.g. v0.28.1, main or 1d217b5",
        )
    return ref


@dataclass(frozen=True)
class GitSource:
    """A git repository, fetched through a local mirror, checked out at `commit` or `ref`."""

    url: str
    mirror: str  # the local bare mirror the checkout shares objects with
    ref: str | None = None
    commit: str | None = None  # a pin: the build fails when `ref` resolves elsewhere
    submodules: bool = False
    ref_overridden: bool = False  # --ref replaced the recipe's ref (its pin no longer applies)

    def commands(self, dest: str) -> list[list[str]]:
        """The git commands the fetch amounts to, for `plan` and the prepare log."""
        ref = self.commit or self.ref or "HEAD"
        cmds = [
            ["git", "clone", "--mirror", self.url, self.mirror],
            ["git", "-C", self.mirror, "fetch", "--prune", "origin"],
        ]
        if self.ref is not None and self.commit is None:  # a tag the mirror has: did it move upstream?
            cmds.append(["git", "-C", self.mirror, "ls-remote", "origin", f"refs/tags/{self.ref}",
                         f"refs/tags/{self.ref}^{{}}"])
        cmds += [
            ["git", "clone", "--shared", "--no-checkout", self.mirror, dest],
            ["git", "-C", dest, "checkout", "--detach", ref],
        ]
        if self.submodules:
            cmds.append(["git", "-C", dest, "submodule", "update", "--init", "--recursive"])
        return cmds

    def describe(self) -> str:
        return f"{self.url} @ {self.commit or self.ref or 'HEAD'}"


@dataclass(frozen=True)
class DirSource:
    """A folder on this machine, copied into the work folder and never modified."""

    directory: str

    def commands(self, dest: str) -> list[list[str]]:
        return []

    def describe(self) -> str:
        return f"copy {self.directory}"


# An sdist as a recipe names it: one exact release (PEP 508 name, PEP 440 version).
SDIST_RE = re.compile(r"^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)==([0-9][A-Za-z0-9.+!_-]*)$")
SDIST_ACCEPTED = "NAME==VERSION: one release, e.g. horovod==0.28.1"
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


def sdist_problem(requirement: str) -> str | None:
    """Why `requirement` is not one release's sdist, or None."""
    from packaging.version import InvalidVersion, Version

    m = SDIST_RE.match(requirement)
    if m is None:
        return "not NAME==VERSION"
    try:
        Version(m.group(2))
    except InvalidVersion:
        return f"{m.group(2)!r} is not a PEP 440 version"
    return None


@dataclass(frozen=True)
class SdistSource:
    """One release's sdist from the package index (pip's configuration decides which), downloaded once
    into a cache folder and unpacked into the work folder; `sha256` pins the archive."""

    requirement: str  # NAME==VERSION
    download_dir: str  # this release's folder in the cache
    python: str  # whose pip downloads it (the target python)
    sha256: str | None = None

    @classmethod
    def in_cache(cls, requirement: str, cache: Path, python: str, sha256: str | None = None) -> SdistSource:
        """The release's sdist in its own folder of the cache, where every build and check finds it."""
        folder = cache / "sdists" / requirement.replace("==", "-").lower()
        return cls(requirement, str(folder), python, sha256)

    def commands(self, dest: str) -> list[list[str]]:
        """The one command the fetch runs: the target python's pip names its index (the download itself
        is an HTTPS request for the index's page and the file it lists, not a command)."""
        return [[self.python, "-m", "pip", "config", "list"]]

    def describe(self) -> str:
        pin = f" (sha256 {self.sha256[:12]})" if self.sha256 else ""
        return f"sdist {self.requirement}{pin}"


SourceSpec = GitSource | DirSource | SdistSource
