"""The documentation builds, strictly, and names only what exists: a broken link, a page left out of the
navigation, or a file or folder of the source that is gone fails here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted((REPO / "docs").glob("*.md"))


def test_the_site_builds_strictly(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                          cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "architecture" / "index.html").is_file()


def test_readme_links_lead_to_pages():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", (REPO / "README.md").read_text())
    assert links, "the README links to the reference"
    assert [link for link in links if not link.startswith("http") and not (REPO / link).exists()] == []


def test_the_paths_the_docs_name_exist():
    named = set()
    for page in [REPO / "README.md", *PAGES]:
        named |= set(re.findall(r"`((?:src/rocbuild|tests|scripts|bench|recipes|patches|examples)/[\w./-]*)`",
                                page.read_text()))
    assert named, "the pages name files of the repository"
    assert sorted(p for p in named if not (REPO / p).exists()) == []


def test_the_architecture_names_every_stage_folder():
    text = (REPO / "docs" / "architecture.md").read_text()
    folders = {p.name for p in (REPO / "src" / "rocbuild").iterdir() if (p / "__init__.py").is_file()}
    assert {f for f in folders if f"`src/rocbuild/{f}/`" not in text} == set()
