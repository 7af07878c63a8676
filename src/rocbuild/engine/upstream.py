"""Recipes that stay current (`rocbuild recipes check`): the newest upstream release of a recipe's
source (the package index for an sdist, the repository's tags for git), its tree fetched into the
cache, and every patch of the recipe tried on a scratch copy of it, in order, as a build would apply
them: applies, applies with an offset, already applied (upstream took it), or fails (with what no
longer matches). `--bump` then writes the new release into the recipe when every patch applies."""

from __future__ import annotations

import difflib
import re
import shlex
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from rocbuild.engine.patch import apply_patch, git_env
from rocbuild.errors import StepFailed
from rocbuild.fsutil import write_text_atomically
from rocbuild.paths import cache_root, mirror_path
from rocbuild.plan.model import DiffPatch, PatchAction
from rocbuild.process.runner import StepRunner, query_process
from rocbuild.source.git import checkout_git, resolve_git
from rocbuild.source.index import index_settings, project_files
from rocbuild.source.sdist import fetch_sdist
from rocbuild.source.spec import GitSource, SdistSource

Log = Callable[[str], None]
OK_VERDICTS = ("applies", "applies with an offset", "already applied")


@dataclass
class PatchTrial:
    patch: str  # as the recipe names it, and where
    verdict: str  # applies | applies with an offset | already applied | fails
    detail: str = ""


@dataclass
class UpstreamCheck:
    recipe: str
    path: str
    current: str
    kind: str  # sdist | git | folder
    newest: str | None = None  # a newer release, or None when current (or unknown)
    tag: str | None = None  # git: the tag of the newest release
    sha256: str | None = None  # sdist: the newest archive's digest
    commit: str | None = None  # git: the commit the newest tag names
    warning: str | None = None  # the index or remote could not be asked
    index_newest: str | None = None  # git, remote silent: a newer release the index lists for the recipe's name
    patches: list[PatchTrial] = field(default_factory=list)

    @property
    def behind(self) -> bool:
        return self.newest is not None

    @property
    def patches_apply(self) -> bool:
        return all(t.verdict in OK_VERDICTS for t in self.patches)

    def to_json(self) -> dict[str, Any]:
        return {"recipe": self.recipe, "path": self.path, "current": self.current, "kind": self.kind,
                "newest": self.newest, "behind": self.behind, "tag": self.tag, "warning": self.warning,
                "index_newest": self.index_newest,
                "patches": [t.__dict__ for t in self.patches], "patches_apply": self.patches_apply}


def newest_sdist(requirement: str, current: str, python: str, pre: bool, log: Log) -> tuple[str | None, str | None]:
    """(the newest release above `current` the index lists an sdist of, None), or (None, why not)."""
    name = requirement.partition("==")[0]
    try:
        return _newest_listed(name, current, python, pre, log, sdists_only=True), None
    except StepFailed as exc:
        return None, f"the package index did not answer for {name}: {exc.message}"


def newest_on_index(project: str, current: str, python: str, pre: bool, log: Log) -> str | None:
    """The newest release above `current` of the index's project `project` (sdists and wheels alike),
    or None: what a git recipe is told when its repository does not answer."""
    try:
        return _newest_listed(project, current, python, pre, log, sdists_only=False)
    except StepFailed:
        return None


def _newest_listed(project: str, current: str, python: str, pre: bool, log: Log, *, sdists_only: bool) -> str | None:
    """The newest release above `current` among the index's files of `project` that are not yanked
    (pre-releases only with `pre`). Raises StepFailed when no index answers."""
    _, files = project_files(project, index_settings(python, log), log)
    versions = {v for f in files if (v := f.sdist_version if sdists_only else f.release) is not None
                and not f.yanked and (pre or not v.is_prerelease)}
    return _newer(current, versions)


def newest_tag(url: str, current: str, pre: bool, log: Log,
               environ: Mapping[str, str]) -> tuple[tuple[str, str] | None, str | None]:
    """((version, tag), None) of the newest release tag above `current`, or (None, why not)."""
    argv = ["git", "ls-remote", "--tags", url]
    log("$ " + shlex.join(argv))
    # A remote that wants a password is a remote that does not answer, not a prompt.
    done = query_process(argv, env={**environ, "GIT_TERMINAL_PROMPT": "0"}, timeout=120)
    if isinstance(done, str):
        return None, f"git ls-remote {url}: {done}"
    if done.exit_code != 0:
        return None, f"git ls-remote {url} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}"
    tags: dict[Version, str] = {}
    for line in done.stdout.splitlines():
        name = line.partition("\t")[2].removeprefix("refs/tags/").removesuffix("^{}")
        try:
            version = Version(re.sub(r"^(?:v|release-|rel-)", "", name))
        except InvalidVersion:
            continue
        if pre or not version.is_prerelease:
            tags.setdefault(version, name)
    newest = _newer(current, set(tags))
    return ((newest, tags[Version(newest)]) if newest else None), None


def _newer(current: str, versions: set[Version]) -> str | None:
    try:
        mine = Version(current)
    except InvalidVersion:
        return None
    above = sorted(v for v in versions if v > mine)
    return str(above[-1]) if above else None


def fetch_tree(source: SdistSource | GitSource, check: UpstreamCheck, dest: Path, log: Log) -> None:
    """The newest release's tree at `dest`, through the same caches a build uses."""
    if isinstance(source, SdistSource):
        requirement = f"{source.requirement.partition('==')[0]}=={check.newest}"
        check.sha256 = fetch_sdist(SdistSource.in_cache(requirement, cache_root(), source.python), dest, log)
        return
    git = GitSource(source.url, str(mirror_path(source.url)), ref=check.tag, submodules=source.submodules)
    sha, _ = resolve_git(git, log)
    check.commit = sha
    checkout_git(git, sha, dest, log)


def try_patches(patches: tuple[PatchAction, ...], tree: Path, runner: StepRunner, log: Path) -> list[PatchTrial]:
    """Each patch applied in order to `tree` (a scratch copy), as the build would; none stops the others."""
    trials = []
    for action in patches:
        name = f"{action.name if isinstance(action, DiffPatch) else action.describe()} [{action.where}]"
        try:
            said = apply_patch(action, tree, runner, log)
        except StepFailed as exc:
            trials.append(PatchTrial(name, "fails", f"{exc.message}\n{exc.hint or ''}".strip()))
            continue
        if "already applied" in said:
            trials.append(PatchTrial(name, "already applied", "upstream took it: the patch can go"))
        elif isinstance(action, DiffPatch) and _offset(action, tree, runner, log):
            trials.append(PatchTrial(name, "applies with an offset", said))
        else:
            trials.append(PatchTrial(name, "applies", said))
    return trials


def _offset(action: DiffPatch, tree: Path, runner: StepRunner, log: Path) -> bool:
    """Whether git placed a hunk elsewhere than the patch says (asked in reverse, on the patched tree)."""
    argv = ("git", "apply", "--reverse", "--check", "-v", "-p1", action.path)
    result = runner.run(argv, cwd=tree, env=git_env(tree), log=log)
    return "offset" in result.output


def bumped_text(text: str, check: UpstreamCheck) -> str:
    """The recipe with its release moved to the newest: version, the sdist pin and digest, or the git
    tag and the commit it names (a pin that no longer holds is replaced by the one that does)."""
    assert check.newest is not None
    out = re.sub(r'(?m)^(version:\s*)(["\']?)[^"\'\s#]+\2', lambda m: f"{m.group(1)}{m.group(2)}{check.newest}{m.group(2)}",
                 text, count=1)
    if check.kind == "sdist":
        out = re.sub(r"(?m)^(\s+sdist:\s*[\"']?[A-Za-z0-9._-]+==)[^\"'\s#]+", rf"\g<1>{check.newest}", out, count=1)
        if check.sha256:
            out = re.sub(r"(?m)^(\s+sha256:\s*[\"']?)[0-9a-fA-F]{64}", rf"\g<1>{check.sha256}", out, count=1)
    elif check.kind == "git" and check.tag:
        out = re.sub(r"(?m)^(\s+ref:\s*[\"']?)[^\"'\s#]+", rf"\g<1>{check.tag}", out, count=1)
        if check.commit:
            out = re.sub(r"(?m)^(\s+commit:\s*[\"']?)[0-9a-fA-F]{40}", rf"\g<1>{check.commit}", out, count=1)
    return out


def bump(path: Path, check: UpstreamCheck) -> str:
    """Write the bumped recipe; the unified diff of the change."""
    text = path.read_text()
    new = bumped_text(text, check)
    write_text_atomically(path, new)
    return "".join(difflib.unified_diff(text.splitlines(keepends=True), new.splitlines(keepends=True),
                                        f"a/{path.name}", f"b/{path.name}"))


def scratch_tree(root: Path) -> Path:
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    return root / "src"
