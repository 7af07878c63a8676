"""Recipe sources: recipe repositories (git, through the mirror cache) and folders registered by name.

`rocbuild recipes add` writes them to XDG_CONFIG_HOME/rocbuild/recipe-sources.json;
a git source is checked out at the commit its ref resolved to, under the
cache, and only `rocbuild recipes update` moves it. Recipe lookup reads the
registry (no git, no network) to find each source's recipe folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from rocbuild.errors import UsageError
from rocbuild.fsutil import write_text_atomically
from rocbuild.paths import cache_root, config_root, mirror_path
from rocbuild.source.git import Log, checkout_git, resolve_git
from rocbuild.source.spec import GIT_URLS_ACCEPTED, GitSource, check_ref, git_url_problem

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
URL_RE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|[^/\s]+@[^/\s]+:)", re.IGNORECASE)


@dataclass(frozen=True)
class RecipeSource:
    name: str
    kind: str  # "git" or "dir"
    location: str  # the URL, or the folder's absolute path
    ref: str | None = None
    commit: str | None = None
    checkout: str | None = None  # where a git source's tree is
    added: str = ""
    updated: str = ""

    @property
    def root(self) -> Path:
        return Path(self.checkout) if self.kind == "git" and self.checkout else Path(self.location)

    @property
    def recipe_dir(self) -> Path:
        """A repository's recipes/ folder when it has one (patches/ then sits beside it), else its top."""
        return self.root / "recipes" if (self.root / "recipes").is_dir() else self.root

    def describe(self) -> str:
        if self.kind == "git":
            return f"{self.location} @ {self.ref or 'HEAD'} ({(self.commit or '?')[:12]})"
        return self.location


def registry_path() -> Path:
    return config_root() / "recipe-sources.json"


def load_sources() -> list[RecipeSource]:
    try:
        data = json.loads(registry_path().read_text())
        return [RecipeSource(**item) for item in data.get("sources", [])]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, TypeError) as exc:
        raise UsageError(f"cannot read {registry_path()}: {exc}",
                         hint="fix or delete that file, then add the sources again") from None


def save_sources(sources: list[RecipeSource]) -> None:
    path = registry_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, json.dumps({"sources": [asdict(s) for s in sources]}, indent=2) + "\n")


def is_url(text: str) -> bool:
    """Looks like a URL (then it must be one git may fetch: see source.git_url_problem)."""
    return bool(URL_RE.match(text) or re.match(r"^[A-Za-z0-9+._-]*::", text))


def add_source(location: str, *, ref: str | None, name: str | None, log: Log) -> RecipeSource:
    """Register a folder in place, or clone a repository (a URL, or a path given with --ref)."""
    sources = load_sources()
    as_git = is_url(location) or ref is not None
    if not as_git:
        folder = Path(location)
        if not folder.is_dir():
            raise UsageError(f"{location}: no such folder and not a URL",
                             hint="give a git URL (https://, ssh://, git@host:, file://), "
                                  "a folder of recipes, or a local repository path with --ref")
        location = str(folder.resolve())
    name = name or _default_name(location)
    if not NAME_RE.match(name):
        raise UsageError(f"--name {name!r}: not a valid source name",
                         hint="lower-case letters, digits, '.', '_' and '-'")
    if any(s.name == name for s in sources):
        raise UsageError(f"a recipe source named {name!r} is already registered",
                         hint="`rocbuild recipes update` refreshes it; give another --name to add a second one")
    now = _now()
    if as_git:
        if not is_url(location) and Path(location).exists():
            location = str(Path(location).resolve())
        if (problem := git_url_problem(location)) is not None:
            raise UsageError(f"{location}: {problem}", hint=f"accepted: {GIT_URLS_ACCEPTED}")
        source = RecipeSource(name, "git", location, ref=ref, added=now, updated=now)
        source = _checkout(source, log)
    else:
        source = RecipeSource(name, "dir", location, added=now, updated=now)
    save_sources(sources + [source])
    return source


def update_sources(names: list[str], log: Log) -> list[tuple[RecipeSource, RecipeSource]]:
    """Fetch each git source again and check out where its ref now points; (before, after) pairs."""
    sources = load_sources()
    known = {s.name for s in sources}
    for n in names:
        if n not in known:
            raise UsageError(f"no recipe source named {n!r}",
                             hint="registered: " + (", ".join(sorted(known)) or "(none)"))
    changed, out = [], []
    for source in sources:
        picked = not names or source.name in names
        new = _checkout(source, log) if picked and source.kind == "git" else source  # a folder is read in place
        out.append(new)
        if picked:
            changed.append((source, new))
    save_sources(out)
    return changed


def remove_source(name: str) -> RecipeSource:
    sources = load_sources()
    found = next((s for s in sources if s.name == name), None)
    if found is None:
        raise UsageError(f"no recipe source named {name!r}",
                         hint="registered: " + (", ".join(s.name for s in sources) or "(none)"))
    save_sources([s for s in sources if s.name != name])
    if found.checkout:
        shutil.rmtree(found.checkout, ignore_errors=True)
    return found


def _checkout(source: RecipeSource, log: Log) -> RecipeSource:
    if source.ref is not None:
        check_ref(source.ref)
    # resolve_git fetches again for a branch or HEAD (they move); a tag or commit stays put.
    spec = GitSource(url=source.location, ref=source.ref, mirror=str(mirror_path(source.location)))
    sha, _ = resolve_git(spec, log)
    dest = cache_root() / "recipe-sources" / f"{source.name}-{sha[:12]}"
    if not dest.is_dir():
        tmp = dest.with_name(dest.name + f".tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        checkout_git(spec, sha, tmp, log)
        os.replace(tmp, dest)
    if source.checkout and Path(source.checkout) != dest:
        shutil.rmtree(source.checkout, ignore_errors=True)
    return RecipeSource(source.name, "git", source.location, ref=source.ref, commit=sha, checkout=str(dest),
                        added=source.added, updated=_now())


def _default_name(location: str) -> str:
    tail = location.rstrip("/").replace(":", "/").split("/")[-1].removesuffix(".git").lower()
    return re.sub(r"[^a-z0-9._-]+", "-", tail).strip("-") or "recipes"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
