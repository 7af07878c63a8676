"""The package index, read the way pip is configured to read it, without building anything: a project's
files from its simple page (PEP 691 JSON, else the PEP 503 HTML page), each with the sha256 the index
gives, and one of them downloaded and checked. `pip download` cannot do this for an sdist: it prepares
the package's metadata first, which installs (and, with --no-binary, compiles) its build requirements
and runs its setup.py."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import ssl
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from rocbuild.errors import StepFailed

PYPI = "https://pypi.org/simple"
ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
Log = Callable[[str], None]


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str
    sha256: str | None
    yanked: bool = False

    @property
    def sdist_version(self) -> Version | None:
        try:
            return parse_sdist_filename(self.filename)[1]
        except (InvalidSdistFilename, InvalidVersion):
            return None

    @property
    def release(self) -> Version | None:
        """The version of a release file, an sdist or a wheel."""
        if self.filename.endswith(".whl"):
            try:
                return parse_wheel_filename(self.filename)[1]
            except (InvalidWheelFilename, InvalidVersion):
                return None
        return self.sdist_version


@dataclass(frozen=True)
class IndexSettings:
    """pip's configuration: the index, the extra indexes, and the CA bundle to trust."""

    urls: tuple[str, ...]
    cert: str | None = None


def config_argv(python: str) -> list[str]:
    """How the index is found: the target python's pip says what it is configured with."""
    return [python, "-m", "pip", "config", "list"]


def index_settings(python: str, log: Log) -> IndexSettings:
    """pip's index-url (default PyPI), extra-index-urls and cert, from `pip config list` (pip.conf files
    and PIP_* variables alike), in pip's order: the index first."""
    argv = config_argv(python)
    log("$ " + shlex.join(argv))
    done = subprocess.run(argv, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    values: dict[str, str] = {}
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        m = re.match(r"^(:env:|global|user|site)\.([\w-]+)='(.*)'$", line.strip())
        if m and (m.group(2) not in values or m.group(1) == ":env:"):
            values[m.group(2)] = m.group(3)
    urls = [values.get("index-url") or PYPI] + values.get("extra-index-url", "").split()
    return IndexSettings(tuple(u.rstrip("/") for u in urls if u), values.get("cert"))


def project_files(project: str, settings: IndexSettings, log: Log) -> tuple[str, list[IndexFile]]:
    """(the index page read, the files it lists) from the first index that knows the project."""
    name = canonicalize_name(project)
    problems = []
    for base in settings.urls:
        page = f"{base}/{name}/"
        if not page.startswith(("https://", "http://")):
            continue  # a file:// index has no JSON API; pip's find-links folders are not indexes
        log(f"reading the index page {page}")
        try:
            body, content_type, final = _get(page, settings.cert, accept=ACCEPT)
        except urllib.error.HTTPError as exc:
            problems.append(f"{page}: HTTP {exc.code}")
            continue
        except (urllib.error.URLError, OSError) as exc:
            problems.append(f"{page}: {getattr(exc, 'reason', exc)}")
            continue
        files = _parse(body, content_type, final)
        return final, files
    raise StepFailed(f"no package index answered for {project}", hint="\n".join(problems)
                     + "\nthe package index is pip's: PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, pip.conf")


def project_summary(project: str, settings: IndexSettings) -> tuple[str, str | None] | None:
    """(the newest release with an sdist, its one-line Summary) from the index, building nothing: the
    Summary comes from the metadata file the index serves beside the sdist (PEP 658), when it serves one.
    None when no index knows the project."""
    try:
        _, files = project_files(project, settings, lambda _: None)
    except StepFailed:
        return None
    sdists = sorted((f for f in files if f.sdist_version is not None and not f.yanked),
                    key=lambda f: f.sdist_version or Version("0"))
    if not sdists:
        return None
    newest = sdists[-1]
    for url in (newest.url + ".metadata", f"https://pypi.org/pypi/{canonicalize_name(project)}/json"):
        if "pypi.org/pypi/" in url and PYPI not in settings.urls:
            continue  # PyPI's own JSON API, asked only where PyPI is the index
        try:
            body, _, _ = _get(url, settings.cert, accept="*/*")
        except (urllib.error.URLError, OSError):
            continue
        text = body.decode("utf-8", errors="replace")
        summary = re.search(r"^Summary: (.*)$", text, re.MULTILINE) if url.endswith(".metadata") else None
        said = summary.group(1) if summary else _json_summary(text)
        if said:
            return str(newest.sdist_version), said.strip()
    return str(newest.sdist_version), None


def _json_summary(text: str) -> str | None:
    try:
        info = json.loads(text).get("info") or {}
    except (ValueError, AttributeError):
        return None
    summary = info.get("summary") if isinstance(info, dict) else None
    return summary if isinstance(summary, str) and summary else None


def download(file: IndexFile, dest: Path, settings: IndexSettings) -> str:
    """Download `file` to `dest` (written under a temporary name, renamed when whole) and check the
    sha256 the index gave; returns the sha256."""
    tmp = dest.with_name(dest.name + f".part-{os.getpid()}")
    digest = hashlib.sha256()
    try:
        with _open(file.url, settings.cert, accept="*/*") as got, open(tmp, "wb") as out:
            while chunk := got.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
    except (urllib.error.URLError, OSError) as exc:
        tmp.unlink(missing_ok=True)
        raise StepFailed(f"cannot download {file.url}: {getattr(exc, 'reason', exc)}") from None
    if file.sha256 is not None and digest.hexdigest() != file.sha256:
        tmp.unlink(missing_ok=True)
        raise StepFailed(f"{file.filename}: the index gave sha256 {file.sha256}, the download has {digest.hexdigest()}",
                         hint="a proxy or mirror served other bytes; run the same command again")
    tmp.replace(dest)
    return digest.hexdigest()


def _open(url: str, cert: str | None, *, accept: str) -> urllib.response.addinfourl:
    context = ssl.create_default_context(cafile=cert) if cert and url.startswith("https://") else None
    request = urllib.request.Request(url, headers={"Accept": accept, "User-Agent": "rocbuild"})
    response: urllib.response.addinfourl = urllib.request.urlopen(request, timeout=120, context=context)
    return response


def _get(url: str, cert: str | None, *, accept: str) -> tuple[bytes, str, str]:
    with _open(url, cert, accept=accept) as got:
        return got.read(64 << 20), got.headers.get("Content-Type", ""), got.geturl()


def _parse(body: bytes, content_type: str, page: str) -> list[IndexFile]:
    if "json" in content_type:
        data = json.loads(body)
        return [IndexFile(f["filename"], urllib.parse.urljoin(page, f["url"]), (f.get("hashes") or {}).get("sha256"),
                          bool(f.get("yanked"))) for f in data.get("files", []) if isinstance(f, dict)]
    links = _Links()
    links.feed(body.decode("utf-8", errors="replace"))
    out = []
    for href, yanked in links.found:
        url, _, fragment = urllib.parse.urljoin(page, href).partition("#")
        digest = fragment.split("=", 1)[1] if fragment.startswith("sha256=") else None
        out.append(IndexFile(urllib.parse.unquote(url.rsplit("/", 1)[-1]), url, digest, yanked))
    return out


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "a" and named.get("href"):
            self.found.append((str(named["href"]), "data-yanked" in named))
