"""Which Debian suite carries which ROCm: read from a mirror's indexes (a real file tree laid out as
a Debian mirror, read through file:// URLs), never from a table."""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest

from rocbuild.errors import HostNotReady, UsageError
from rocbuild.roots.archive import Archive, apt_mirror, matches, parse_packages, upstream_version

SUITES = {  # suite -> (codename, {package: version})
    "experimental": ("rc-buggy", {"libamdhip64-dev": "7.2.4-1~exp2", "hipcc": "7.2.4+dfsg-1~exp1",
                                  "librccl-dev": "7.2.4-1~exp3"}),
    "unstable": ("sid", {"libamdhip64-dev": "6.4.3-5", "hipcc": "7.0.2+dfsg-3", "cmake": "4.3.4-1",
                         "libhipblas-dev": "6.4.4-2", "ninja-build": "1.13.2-1"}),
    "testing": ("forky", {"libamdhip64-dev": "6.4.3-5", "cmake": "4.3.4-1"}),
    "stable": ("trixie", {"libamdhip64-dev": "5.7.1-6+deb13u1", "cmake": "3.31.6-2"}),
    "oldstable": ("bookworm", {"libamdhip64-dev": "5.2.3-8", "cmake": "3.25.1-1"}),
}


def make_mirror(root: Path, suites=SUITES, date="Fri, 30 Oct 2026 08:08:01 UTC") -> str:
    for suite, (codename, packages) in suites.items():
        dists = root / "dists" / suite
        (dists / "main" / "binary-amd64").mkdir(parents=True, exist_ok=True)
        (dists / "Release").write_text(f"Origin: Debian\nSuite: {suite}\nCodename: {codename}\nDate: {date}\n"
                                       "Description: a test mirror\n")
        text = "".join(f"Package: {p}\nVersion: {v}\nArchitecture: amd64\nDescription: x\n\n"
                       for p, v in packages.items())
        (dists / "main" / "binary-amd64" / "Packages.xz").write_bytes(lzma.compress(text.encode()))
    return root.as_uri()


@pytest.fixture
def mirror(tmp_path) -> str:
    return make_mirror(tmp_path / "mirror")


def test_versions_upstream_part():
    assert upstream_version("7.2.4-1~exp2") == "7.2.4"
    assert upstream_version("1:21.1.8-14") == "21.1.8"
    assert upstream_version("7.2.4+dfsg-1~exp1") == "7.2.4"
    assert matches("7.2.4", "7.2") and matches("7.2.4", "7.2.4")
    assert not matches("7.20.1", "7.2") and not matches("6.4.3", "7.2")


def test_packages_index_parsed():
    assert parse_packages("Package: a\nVersion: 1-1\n\nPackage: b\nVersion: 2\nDepends: a\n") == {"a": "1-1", "b": "2"}


def test_rocm_release_picks_the_suite_that_carries_it(mirror, tmp_path):
    archive = Archive(mirror, cache=tmp_path / "cache")
    newest = archive.choose("7.2")
    assert (newest.name, newest.base, newest.rocm, newest.apt_target) == ("experimental", "sid", "7.2.4", "experimental")
    # experimental holds only what is newer: the rest comes from its base
    assert newest.packages["cmake"] == "4.3.4-1" and newest.packages["hipcc"] == "7.2.4+dfsg-1~exp1"
    six = archive.choose("6.4")
    assert (six.name, six.apt_target, six.rocm) == ("sid", None, "6.4.3")
    assert archive.choose("5.7.1").name == "trixie"
    assert [s.name for s in archive.suites()] == ["experimental", "sid", "forky", "trixie", "bookworm"]


def test_a_rocm_no_suite_carries_is_refused_naming_what_there_is(mirror, tmp_path):
    with pytest.raises(UsageError) as exc:
        Archive(mirror, cache=tmp_path / "cache").choose("6.3")
    text = exc.value.render()
    assert "--rocm 6.3" in text and "experimental 7.2.4" in text and "sid 6.4.3" in text and "bookworm 5.2.3" in text
    assert exc.value.exit_code == 2
    with pytest.raises(UsageError, match="not a ROCm release"):
        Archive(mirror, cache=tmp_path / "cache").choose("seven")


def test_suite_by_hand_must_carry_the_release(mirror, tmp_path):
    archive = Archive(mirror, cache=tmp_path / "cache")
    assert archive.choose("6.4", "testing").name == "forky"
    with pytest.raises(UsageError, match="carries ROCm 5.7.1, not 7.2"):
        archive.choose("7.2", "stable")


def test_index_read_once_while_release_unchanged(tmp_path):
    root = tmp_path / "mirror"
    url = make_mirror(root)
    Archive(url, cache=tmp_path / "cache").choose("6.4")
    # The index changes but its Release does not: the cached read stands.
    sid = root / "dists" / "unstable" / "main" / "binary-amd64" / "Packages.xz"
    sid.write_bytes(lzma.compress(b"Package: libamdhip64-dev\nVersion: 6.9.0-1\n\n"))
    assert Archive(url, cache=tmp_path / "cache").suite("unstable").rocm == "6.4.3"
    # A new Release (a new date) is read afresh.
    make_mirror(root, {"unstable": ("sid", {"libamdhip64-dev": "6.9.0-1"})}, date="Sat, 31 Oct 2026 08:00:00 UTC")
    assert Archive(url, cache=tmp_path / "cache").suite("unstable").rocm == "6.9.0"


def test_mirror_without_experimental_still_serves(tmp_path):
    url = make_mirror(tmp_path / "mirror", {k: v for k, v in SUITES.items() if k != "experimental"})
    archive = Archive(url, cache=tmp_path / "cache")
    assert archive.suites()[0].name == "sid"
    with pytest.raises(UsageError) as exc:
        archive.choose("7.2")
    assert "the archive carries now: sid 6.4.3, forky 6.4.3" in exc.value.render()


def test_unreachable_mirror_is_host_not_ready(tmp_path):
    with pytest.raises(HostNotReady, match="cannot read"):
        Archive((tmp_path / "nothing").as_uri(), cache=tmp_path / "cache").suites()


def test_mirror_read_from_apt_configuration(tmp_path):
    one_line = tmp_path / "sources.list"
    one_line.write_text("# comment\ndeb http://security.debian.org/debian-security bookworm-security main\n"
                        "deb [arch=amd64 signed-by=/x.gpg] http://ftp.example.org/debian/ bookworm main\n")
    assert apt_mirror([one_line]) == "http://ftp.example.org/debian"
    folder = tmp_path / "sources.list.d"
    folder.mkdir()
    (folder / "debian.sources").write_text("Types: deb\nURIs: http://deb.example.net/debian\nSuites: trixie\n"
                                           "Components: main\n")
    assert apt_mirror([tmp_path / "missing.list", folder]) == "http://deb.example.net/debian"
    assert apt_mirror([tmp_path / "missing.list"]) is None


@pytest.mark.network
def test_the_real_archive_carries_a_rocm():
    """Debian's archive itself (the mirror of this machine's apt): some suite carries ROCm >= 6."""
    from rocbuild.roots.archive import resolve_mirror

    suites = Archive(resolve_mirror(None)).suites()
    rocms = {s.name: s.rocm for s in suites if s.rocm}
    assert any(int(v.split(".")[0]) >= 6 for v in rocms.values()), rocms
