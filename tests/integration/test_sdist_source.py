"""`source: sdist: NAME==VERSION`: a release's sdist from the package index pip is configured with, read
from the index's page without building anything, pinned by sha256 (in the recipe or a lock file),
unpacked without letting anything out."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import sys
import tarfile
import textwrap
import threading
import zipfile
from pathlib import Path

import pytest

from rocbuild.errors import StepFailed
from rocbuild.source.sdist import unpack_sdist
from rocbuild.source.spec import SdistSource

REQUIREMENT = "tomli_w==1.2.0"


def write_recipe(folder: Path, source: str) -> Path:
    recipe = folder / "fromsdist.yaml"
    recipe.write_text('schema: 1\nname: fromsdist\nversion: "1.2.0"\noutput: tree\nsource:\n'
                      + textwrap.indent(source.strip(), "  ") + "\n")
    return recipe


@pytest.mark.network
def test_sdist_fetched_once_pinned_and_locked(cli, tmp_path):
    recipe = write_recipe(tmp_path, f"sdist: {REQUIREMENT}")
    code, out, err = cli("plan", recipe, "--arch", "gfx90a", "--json")
    assert code == 0, err
    source = json.loads(out)["source"]
    # The one command it runs names pip's index; the sdist is read from the index, nothing is built.
    assert source["kind"] == "sdist" and source["commands"] == [[sys.executable, "-m", "pip", "config", "list"]]
    code, out, err = cli("build", recipe, "--arch", "gfx90a", "--work", tmp_path / "w")
    assert code == 0, err
    tree = tmp_path / "w" / "src"
    assert (tree / "pyproject.toml").is_file() and (tree / "src" / "tomli_w" / "__init__.py").is_file()
    assert "(downloaded)" in err
    digest = err.split("sha256:")[1].split()[0]
    assert len(digest) == 64

    # `lock` pins the archive; the same bytes pass `--locked`, and the cached archive is reused.
    code, _, err = cli("lock", recipe, "--arch", "gfx90a", "--work", tmp_path / "w")
    assert code == 0, err
    lock = json.loads(recipe.with_suffix(".lock").read_text())
    assert lock["source"] == {"kind": "sdist", "requirement": REQUIREMENT, "sha256": digest}
    code, _, err = cli("build", recipe, "--arch", "gfx90a", "--work", tmp_path / "w", "--locked", "--clean")
    assert code == 0, err
    assert "(from the cache)" in err

    # A pin the archive does not match stops the build before anything is unpacked.
    recipe.with_suffix(".lock").unlink()
    pinned = write_recipe(tmp_path, f"sdist: {REQUIREMENT}\nsha256: {'0' * 64}")
    code, _, err = cli("build", pinned, "--arch", "gfx90a", "--work", tmp_path / "w2")
    assert code == 1
    assert f"has sha256 {digest}, the recipe pins {'0' * 64}" in err
    assert not (tmp_path / "w2" / "src").exists()
    right = write_recipe(tmp_path, f"sdist: {REQUIREMENT}\nsha256: {digest}")
    code, _, err = cli("build", right, "--arch", "gfx90a", "--work", tmp_path / "w2")
    assert code == 0, err


@pytest.mark.parametrize("source, message", [
    ("sdist: tomli_w>=1.0", "not NAME==VERSION"),
    ("sdist: tomli_w==one", "not NAME==VERSION"),
    ("sdist: tomli_w==1.2.0\nsha256: abc", "not a sha256 digest"),
    ("sdist: tomli_w==1.2.0\nref: v1", "ref applies to git sources only"),
    ("sdist: tomli_w==1.2.0\npath: x", "give exactly one of git, path or sdist"),
    ("path: x\nsha256: " + "0" * 64, "sha256 applies to sdist sources only"),
])
def test_bad_sdist_sources_are_refused_at_their_line(cli, tmp_path, source, message):
    recipe = write_recipe(tmp_path, source)
    code, _, err = cli("plan", recipe, "--arch", "gfx90a")
    assert code == 2
    assert message in err and f"{recipe}:" in err


def test_ref_cannot_override_an_sdist(cli, tmp_path):
    recipe = write_recipe(tmp_path, f"sdist: {REQUIREMENT}")
    code, _, err = cli("plan", recipe, "--arch", "gfx90a", "--ref", "v2")
    assert code == 2 and "comes from the sdist tomli_w==1.2.0, not from git" in err


def sdist_spec(folder: Path) -> SdistSource:
    return SdistSource("evil==1.0", str(folder), "python3")


def test_archive_members_that_leave_the_tree_are_refused(tmp_path):
    downloads = tmp_path / "dl"
    downloads.mkdir()
    with tarfile.open(downloads / "evil-1.0.tar.gz", "w:gz") as tar:
        for name, data in (("evil-1.0/setup.py", b"# x\n"), ("evil-1.0/../../outside.txt", b"gotcha\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(StepFailed, match="refused member"):
        unpack_sdist(sdist_spec(downloads), tmp_path / "w" / "src")
    assert not (tmp_path / "outside.txt").exists() and not (tmp_path / "w" / "src").exists()

    (downloads / "evil-1.0.tar.gz").unlink()
    with zipfile.ZipFile(downloads / "evil-1.0.zip", "w") as zf:
        zf.writestr("evil-1.0/setup.py", "# x\n")
        zf.writestr("../outside.txt", "gotcha\n")
    with pytest.raises(StepFailed, match="leaves the archive's folder"):
        unpack_sdist(sdist_spec(downloads), tmp_path / "w" / "src")
    assert not (tmp_path / "outside.txt").exists()


def test_a_well_formed_archive_becomes_the_tree(tmp_path):
    downloads = tmp_path / "dl"
    downloads.mkdir()
    with tarfile.open(downloads / "good-1.0.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("good-1.0/pkg/__init__.py")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"x=1"))
    (tmp_path / "w").mkdir()
    unpack_sdist(SdistSource("good==1.0", str(downloads), "python3"), tmp_path / "w" / "src")
    assert (tmp_path / "w" / "src" / "pkg" / "__init__.py").read_text() == "x=1"
    assert sorted(p.name for p in (tmp_path / "w").iterdir()) == ["src"]


@pytest.mark.network
def test_an_sdist_whose_build_needs_compiling_is_fetched_without_building(cli, tmp_path):
    """lightgbm 4.6.0 asks scikit-build-core for CMake >= 3.28: `pip download --no-binary :all:` compiled
    CMake from source for minutes before fetching anything. Read from the index, it is one download."""
    recipe = tmp_path / "lightgbm.yaml"
    recipe.write_text('schema: 1\nname: lightgbm\nversion: "4.6.0"\noutput: tree\nsource:\n  sdist: lightgbm==4.6.0\n')
    code, out, err = cli("prepare", recipe, "--arch", "gfx90a", "--work", tmp_path / "w")
    assert code == 0, err
    assert (tmp_path / "w" / "src" / "CMakeLists.txt").is_file()
    log = "\n".join(p.read_text() for p in (tmp_path / "w" / "logs").glob("*prepare*"))
    assert "reading the index page" in log and "lightgbm-4.6.0.tar.gz" in log
    assert "Installing build dependencies" not in log + err and "Preparing metadata" not in log + err


class Index(http.server.SimpleHTTPRequestHandler):
    """A package index on loopback, answering PEP 691 JSON or PEP 503 HTML as the test sets it up."""

    json_pages = True

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.startswith("/simple/demo/"):
            files = self.server.files  # type: ignore[attr-defined]
            if self.json_pages and "json" in self.headers.get("Accept", ""):
                body = json.dumps({"meta": {"api-version": "1.0"}, "name": "demo", "files": [
                    {"filename": n, "url": f"../../files/{n}", "hashes": {"sha256": h}, **({"yanked": True} if y else {})}
                    for n, h, y in files]}).encode()
                kind = "application/vnd.pypi.simple.v1+json"
            else:
                body = "".join(f'<a href="/files/{n}#sha256={h}"{" data-yanked" if y else ""}>{n}</a>'
                               for n, h, y in files).encode()
                kind = "text/html"
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()


@pytest.fixture
def index(tmp_path, monkeypatch):
    served = tmp_path / "served"
    (served / "files").mkdir(parents=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: Index(*a, directory=str(served)))
    server.files = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{server.server_address[1]}/simple")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    yield server, served
    server.shutdown()
    server.server_close()  # shutdown() only stops the loop: the listening socket stays open


def publish(index, version: str, *, sha256: str | None = None, yanked: bool = False) -> str:
    server, served = index
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        info = tarfile.TarInfo(f"demo-{version}/pyproject.toml")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"#\n"))
    (served / "files" / f"demo-{version}.tar.gz").write_bytes(data.getvalue())
    digest = hashlib.sha256(data.getvalue()).hexdigest()
    server.files.append((f"demo-{version}.tar.gz", sha256 or digest, yanked))
    return digest


@pytest.mark.parametrize("json_pages", [True, False], ids=["pep691-json", "pep503-html"])
def test_the_index_pip_is_configured_with_is_read(cli, tmp_path, index, monkeypatch, json_pages):
    monkeypatch.setattr(Index, "json_pages", json_pages)
    publish(index, "1.0", yanked=True)
    digest = publish(index, "2.0")
    publish(index, "3.0", sha256="0" * 64)  # the index says one thing, the file is another
    recipe = tmp_path / "demo.yaml"
    for version, expect in (("2.0", 0), ("3.0", 1), ("1.0", 1), ("9.9", 1)):
        recipe.write_text(f'schema: 1\nname: demo\nversion: "{version}"\noutput: tree\nsource:\n  sdist: demo=={version}\n')
        code, _, err = cli("prepare", recipe, "--arch", "gfx90a", "--work", tmp_path / f"w{version}")
        assert code == expect, err
        if version == "2.0":
            assert f"sha256:{digest}" in err or digest in err
        elif version == "3.0":
            assert "the index gave sha256 " + "0" * 64 in err
            assert not list((tmp_path / "cache").rglob("demo-3.0.tar.gz*"))  # nothing half-downloaded is kept
        else:
            assert f"lists no sdist of demo=={version}" in err and "sdists it lists: 2.0, 3.0" in err
