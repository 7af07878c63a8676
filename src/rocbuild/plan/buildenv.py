"""The build environment of wheel steps, as the plan describes it: a venv layered on the target python.

Everything the target python sees stays visible (torch above all, which must be the target's own
ROCm build): the venv's site folder holds a .pth file that adds the target's own site folders
after the venv's (`venv --system-site-packages` would not do: on a target that is itself a venv it
shows the base interpreter's packages, not the venv's). The venv adds what the build needs: the
recipe's `requires.python` and the project's `build-system.requires` (torch never: it must come
from the target python). pip runs from the target python's installation, so the venv needs no pip
of its own. The venv is reused while the list of what it holds is unchanged.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover - Python 3.10
    pass

# Import names whose distribution is called something else.
# The distribution that brings a module of another name. setuptools 82 removed pkg_resources (FastGeodis's setup.py
# imports it); 81 is the last that has it.
MODULE_DISTRIBUTIONS = {
    "yaml": "PyYAML", "skbuild": "scikit-build", "PIL": "Pillow", "cv2": "opencv-python", "attr": "attrs",
    "pkg_resources": "setuptools<82", "sklearn": "scikit-learn", "dateutil": "python-dateutil",
    "OpenSSL": "pyOpenSSL", "google.protobuf": "protobuf", "Cython": "cython",
}
# Never installed into the build environment: an extension must build against the target python's own.
FROM_TARGET_ONLY = frozenset({"torch"})
# What pip assumes for a project without a [build-system] table (PEP 517, PEP 518).
LEGACY_BUILD_REQUIRES = ("setuptools>=40.8.0", "wheel")
STATE_FILE = "rocbuild-env.json"
# Run by a python with module names: prints those it cannot import, exit 1 when there are any. The
# requirement check (without a build environment) and the build environment both ask it.
IMPORT_CHECK = (
    "import importlib.util, sys\n"
    "missing = [m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]\n"
    "print(' '.join(missing))\n"
    "sys.exit(1 if missing else 0)"
)
LAYER_FILE = "rocbuild-target.pth"
# Run by the target python: the site folders it imports from, in order, as JSON.
SITE_FOLDERS = ("import json, site, sys; "
                "print(json.dumps([p for p in sys.path if p.rstrip('/').endswith(('site-packages', 'dist-packages'))]))")


def distribution_of(module: str) -> str:
    return MODULE_DISTRIBUTIONS.get(module) or MODULE_DISTRIBUTIONS.get(module.split(".")[0]) or module.split(".")[0]


@dataclass(frozen=True)
class BuildEnv:
    folder: str
    target: str  # the target python it is layered on
    version: str  # its "X.Y"
    modules: tuple[str, ...]  # requires.python, torch left out: installed when the target lacks them

    @property
    def python(self) -> str:
        return str(Path(self.folder) / "bin" / "python")

    @property
    def site(self) -> Path:
        return Path(self.folder) / "lib" / f"python{self.version}" / "site-packages"

    @property
    def create_argv(self) -> tuple[str, ...]:
        return (self.target, "-m", "venv", "--without-pip", self.folder)

    @property
    def site_argv(self) -> tuple[str, ...]:
        """Asks the target python for its site folders, which the venv then imports from too."""
        return (self.target, "-c", SITE_FOLDERS)

    @property
    def check_argv(self) -> tuple[str, ...]:
        """Which of `modules` the layered venv still lacks (printed, space-separated)."""
        return (self.python, "-c", IMPORT_CHECK, *self.modules)

    def install_argv(self, requirements: Sequence[str]) -> tuple[str, ...]:
        return (self.python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", *requirements)

    def to_json(self) -> dict[str, Any]:
        return {"folder": self.folder, "python": self.python, "create": list(self.create_argv),
                "target_site": list(self.site_argv),
                "check": list(self.check_argv),
                "install": list(self.install_argv(["<the missing modules' distributions>", "<build-system.requires>"]))}


def make_build_env(folder: Path, target: str, version: str, modules: Iterable[str]) -> BuildEnv:
    kept = [m for m in dict.fromkeys(modules) if m.split(".")[0] not in FROM_TARGET_ONLY]
    return BuildEnv(str(folder), target, version, tuple(kept))
