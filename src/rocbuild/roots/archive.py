"""What Debian's archive carries now: which suite holds which ROCm, read from the suites' package
indexes (never from a table that goes stale), and the package names a root can install."""

from __future__ import annotations

import json
import lzma
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from rocbuild.errors import HostNotReady, UsageError
from rocbuild.fsutil import write_text_atomically
from rocbuild.paths import cache_root, short_hash

ARCH = "amd64"
# The package whose version is the suite's ROCm (hipcc's own version follows ROCm's LLVM, not HIP).
ROCM_PACKAGE = "libamdhip64-dev"
# Suites in the order a ROCm release is looked for: newest first. experimental holds only what is
# newer than sid, so it is installed over a sid base.
SUITES = ("experimental", "unstable", "testing", "stable", "oldstable")
OVERLAYS = {"experimental": "unstable"}
# What every root gets: the HIP toolchain (hipcc pulls in clang, lld, clang-tools with
# clang-offload-bundler, llvm-objdump and the device libraries), and a build userland.
ROCM_BASE = ("hipcc", "libamdhip64-dev", "rocminfo")
# ccache: a build in a root (a --try retry that starts a fresh tree, say) compiles again only what changed.
BUILD_TOOLS = ("ca-certificates", "cmake", "make", "g++", "git", "file", "patch", "binutils", "python3", "python3-dev",
               "python3-venv", "python3-pip", "ccache")
INDEX_MAX_AGE = 6 * 3600  # seconds an index read is reused while its Release date is unchanged
APT_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))
DEB_LINE = re.compile(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)")


@dataclass(frozen=True)
class Suite:
    """A suite as a root installs it: `name` (what apt calls it), over `base` when it is an overlay."""

    name: str  # e.g. "experimental", "sid", "trixie"
    base: str  # the suite the userland comes from (sid for experimental; itself otherwise)
    rocm: str | None  # upstream version of libamdhip64-dev, e.g. "7.2.4"; None when it has none
    packages: dict[str, str]  # every package name -> version (an overlay's over its base's)

    @property
    def apt_target(self) -> str | None:
        """`apt-get install -t` for ROCm packages: the overlay's name, else none."""
        return self.name if self.name != self.base else None

    def has(self, package: str) -> bool:
        return package in self.packages


def upstream_version(debian_version: str) -> str:
    """'1:7.2.4+dfsg-1~exp1' -> '7.2.4'."""
    text = debian_version.split(":", 1)[-1]
    text = text.rsplit("-", 1)[0] if "-" in text else text
    return re.split(r"[+~]", text, maxsplit=1)[0]


def matches(rocm: str, wanted: str) -> bool:
    """ROCm '7.2.4' is what `--rocm 7.2` or `--rocm 7.2.4` ask for; '7.20.1' is not."""
    return rocm == wanted or rocm.startswith(wanted + ".")


def apt_mirror(sources: Iterable[Path] = APT_SOURCES) -> str | None:
    """The first Debian mirror this machine's apt uses (one-line or deb822 form), security excluded."""
    files: list[Path] = []
    for source in sources:
        if source.is_dir():
            files += sorted(p for p in source.iterdir() if p.suffix in (".list", ".sources"))
        elif source.is_file():
            files.append(source)
    for file in files:
        try:
            text = file.read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            line = line.strip()
            m = DEB_LINE.match(line)
            url = m.group(1) if m else (line.split(None, 1)[1] if line.startswith("URIs:") and " " in line else "")
            for candidate in url.split():
                if re.match(r"^https?://", candidate) and "security" not in candidate:
                    return candidate.rstrip("/")
    return None


def resolve_mirror(option: str | None) -> str:
    if option is not None:
        if not re.match(r"^(https?|file)://[^\s]+$", option):
            raise UsageError(f"--mirror {option!r}: not a mirror URL",
                             hint="give a Debian mirror such as http://deb.debian.org/debian")
        return option.rstrip("/")
    found = apt_mirror()
    if found is None:
        raise HostNotReady("no Debian mirror found in this machine's apt configuration",
                           hint="name one: --mirror http://deb.debian.org/debian")
    return found


Fetch = Callable[[str], bytes]


def http_get(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            return bytes(response.read())
    except (urllib.error.URLError, OSError) as exc:
        raise HostNotReady(f"cannot read {url}: {getattr(exc, 'reason', exc)}",
                           hint="check the network or name another mirror with --mirror") from None


def parse_release(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if line[:1].isspace() or ":" not in line:
            continue
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def parse_packages(text: str) -> dict[str, str]:
    """A Packages index -> {package: version} (a suite lists each package once per architecture)."""
    out: dict[str, str] = {}
    for stanza in text.split("\n\n"):
        name = version = None
        for line in stanza.splitlines():
            if line.startswith("Package: "):
                name = line[9:].strip()
            elif line.startswith("Version: "):
                version = line[9:].strip()
        if name and version:
            out[name] = version
    return out


class Archive:
    """One mirror's suites, each index read once and kept in the cache while its Release is unchanged."""

    def __init__(self, mirror: str, fetch: Fetch = http_get, cache: Path | None = None):
        self.mirror = mirror
        self.fetch = fetch
        self.cache = cache or cache_root() / "debian-archive" / short_hash(mirror)
        self._read: dict[str, tuple[str, dict[str, str]]] = {}

    def index(self, suite: str) -> tuple[str, dict[str, str]]:
        """(codename, {package: version}) of `suite`'s main component for amd64."""
        if suite in self._read:
            return self._read[suite]
        release = parse_release(self.fetch(f"{self.mirror}/dists/{suite}/Release").decode("utf-8", "replace"))
        codename = release.get("Codename") or suite
        stamp = release.get("Date", "")
        cached = self.cache / f"{suite}.json"
        try:
            data = json.loads(cached.read_text())
            if data["date"] == stamp and time.time() - cached.stat().st_mtime < INDEX_MAX_AGE:
                self._read[suite] = (codename, dict(data["packages"]))
                return self._read[suite]
        except (OSError, ValueError, KeyError, TypeError):
            pass
        raw = self.fetch(f"{self.mirror}/dists/{suite}/main/binary-{ARCH}/Packages.xz")
        try:
            packages = parse_packages(lzma.decompress(raw).decode("utf-8", "replace"))
        except lzma.LZMAError:
            raise HostNotReady(f"{self.mirror}/dists/{suite}/main/binary-{ARCH}/Packages.xz is not an xz file",
                               hint="check the mirror URL") from None
        cached.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(cached, json.dumps({"date": stamp, "codename": codename, "packages": packages}))
        self._read[suite] = (codename, packages)
        return self._read[suite]

    def suite(self, name: str) -> Suite:
        codename, packages = self.index(name)
        base_name = OVERLAYS.get(name)
        if base_name is not None:
            base_codename, base = self.index(base_name)
            merged = dict(base)
            merged.update(packages)
            rocm = packages.get(ROCM_PACKAGE)
            return Suite(name, base_codename, upstream_version(rocm) if rocm else None, merged)
        rocm = packages.get(ROCM_PACKAGE)
        return Suite(codename, codename, upstream_version(rocm) if rocm else None, packages)

    def suites(self) -> list[Suite]:
        seen: set[str] = set()
        out = []
        for name in SUITES:
            try:
                suite = self.suite(name)
            except HostNotReady:
                if name in OVERLAYS:  # a mirror without experimental still serves the rest
                    continue
                raise
            if suite.name not in seen:
                seen.add(suite.name)
                out.append(suite)
        return out

    def choose(self, rocm: str, suite: str | None = None) -> Suite:
        """The suite that carries ROCm `rocm` (X.Y or X.Y.Z); exit 2 naming what there is when none does."""
        if not re.fullmatch(r"\d+\.\d+(\.\d+)?", rocm):
            raise UsageError(f"--rocm {rocm!r}: not a ROCm release", hint="give MAJOR.MINOR, e.g. --rocm 7.2")
        if suite is not None:
            chosen = self.suite(suite)
            if chosen.rocm is None or not matches(chosen.rocm, rocm):
                raise UsageError(f"--suite {suite}: carries ROCm {chosen.rocm or 'none'}, not {rocm}",
                                 hint="leave out --suite to let rocbuild pick the suite that carries it")
            return chosen
        found = self.suites()
        for candidate in found:
            if candidate.rocm is not None and matches(candidate.rocm, rocm):
                return candidate
        there = ", ".join(f"{s.name} {s.rocm}" for s in found if s.rocm) or "no ROCm at all"
        raise UsageError(f"--rocm {rocm}: no Debian suite on {self.mirror} carries it",
                         hint=f"the archive carries now: {there}")
