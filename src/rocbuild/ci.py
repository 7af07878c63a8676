"""CI at scale: the build matrix (recipe x ROCm x python x arch set) and a GitHub Actions workflow for it.

The matrix is computed here, not by the CI system, so `rocbuild ci matrix
--json` gives other CI systems exactly what the workflow runs. Each entry
names the ROCm development container of its release; values reach the job's
shell through `env:`, never spliced into a script.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

import yaml
from packaging.specifiers import SpecifierSet

from rocbuild import __version__, catalog
from rocbuild.detect.arch import parse_arch_list
from rocbuild.detect.rocm import RocmVersion
from rocbuild.detect.torch import rocm_torch_index
from rocbuild.doctor.facts import supported_archs
from rocbuild.errors import UsageError

ROCM_RE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")
PYTHON_RE = re.compile(r"^3\.\d{1,2}$")
DEFAULT_ROCM = ("6.2",)
DEFAULT_PYTHON = ("3.11",)
# AMD's ROCm development images on Docker Hub: ROCm 7 moved to Ubuntu 24.04.
CONTAINER_22 = "rocm/dev-ubuntu-22.04:{rocm}"
CONTAINER_24 = "rocm/dev-ubuntu-24.04:{rocm}"
CACHE_DIR = ".rocbuild-cache"  # under the workspace; actions/cache saves and restores it


@dataclass(frozen=True)
class MatrixEntry:
    recipe: str
    rocm: str
    python: str
    arch: str  # comma-separated gfx targets, as `--arch` takes them
    slug: str  # the arch set without commas (artifact names and cache keys take no commas)
    container: str
    torch_index: str = ""  # a recipe that builds against torch: the ROCm torch wheels' index for this release


@dataclass(frozen=True)
class Matrix:
    entries: tuple[MatrixEntry, ...]
    excluded: tuple[dict[str, str], ...]  # combinations dropped, with the reason

    def to_json(self) -> dict[str, Any]:
        return {"include": [asdict(e) for e in self.entries], "excluded": list(self.excluded)}


def split_list(value: str | None, what: str, pattern: re.Pattern[str] | None, default: tuple[str, ...],
               accepted: str) -> tuple[str, ...]:
    if value is None:
        return default
    items = tuple(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
    if not items:
        raise UsageError(f"{what} {value!r}: empty list", hint=f"accepted: {accepted}")
    for item in items:
        if pattern is not None and not pattern.match(item):
            raise UsageError(f"{what}: {item!r} is not accepted", hint=f"accepted: {accepted}")
    return items


def container_for(rocm: str) -> str:
    major = int(rocm.split(".")[0])
    return (CONTAINER_24 if major >= 7 else CONTAINER_22).format(rocm=rocm)


def build_matrix(recipes: tuple[str, ...], rocms: tuple[str, ...], pythons: tuple[str, ...],
                 arch: str | None, split_arch: bool, extra_dirs: list[str] | None = None,
                 container: str | None = None) -> Matrix:
    """Every buildable (recipe, ROCm, python, arch set); a recipe's `requires.rocm` drops releases."""
    entries, excluded = [], []
    given_archs = parse_arch_list(arch) if arch else None
    for name in recipes:
        recipe = catalog.load(catalog.resolve(name, extra_dirs).path, extra_dirs)
        if recipe.output != "wheel":
            raise UsageError(f"recipe {name!r} makes a source tree, not a wheel: nothing for CI to publish",
                             hint="leave it out of --recipes")
        for rocm in rocms:
            if recipe.requires.rocm and not SpecifierSet(recipe.requires.rocm).contains(rocm, prereleases=True):
                excluded.append({"recipe": name, "rocm": rocm,
                                 "reason": f"{name} requires ROCm {recipe.requires.rocm}"})
                continue
            archs = given_archs or _default_archs(rocm)
            torch_index = (rocm_torch_index(RocmVersion(rocm)) or "") if recipe.requires.torch else ""
            sets = [(a,) for a in archs] if split_arch else [tuple(archs)]
            for python in pythons:
                for group in sets:
                    entries.append(MatrixEntry(
                        recipe=name, rocm=rocm, python=python, arch=",".join(group), slug="-".join(group),
                        container=container.replace("{rocm}", rocm) if container else container_for(rocm),
                        torch_index=torch_index))
    if not entries:
        raise UsageError("the matrix is empty: no recipe can build on the ROCm releases given",
                         hint="\n".join(f"- {e['recipe']} on ROCm {e['rocm']}: {e['reason']}" for e in excluded))
    return Matrix(tuple(entries), tuple(excluded))


def _default_archs(rocm: str) -> tuple[str, ...]:
    m = ROCM_RE.match(rocm)
    assert m is not None  # split_list admitted only releases that match
    version = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
    archs = supported_archs(version)
    if archs is None:
        raise UsageError(f"--rocm {rocm}: no table of supported GPUs for this release",
                         hint="name the targets with --arch, e.g. --arch gfx90a,gfx1030")
    return archs


def github_workflow(matrix: Matrix, *, install: str, pages: bool = False) -> str:
    """A workflow: one build job per matrix entry, then one job that merges the wheels into an index."""
    e = "${{ %s }}"
    build_env = {"RECIPE": e % "matrix.recipe", "ARCH": e % "matrix.arch", "ROCBUILD_INSTALL": install}
    cache_key = "rocbuild-${{ matrix.recipe }}-rocm${{ matrix.rocm }}-py${{ matrix.python }}-${{ matrix.slug }}"
    build_steps = [
        {"uses": "actions/checkout@v4"},
        {"name": "Build tools", "run": "apt-get update\n"
         "apt-get install -y --no-install-recommends git cmake make ccache ca-certificates"},
        {"uses": "actions/setup-python@v5", "with": {"python-version": e % "matrix.python"}},
        {"name": "Install rocbuild and build backends",
         "run": 'python -m pip install "$ROCBUILD_INSTALL" setuptools wheel'},
        {"name": "ROCm torch (the recipe builds against it)", "if": "matrix.torch_index != ''",
         "env": {"TORCH_INDEX": e % "matrix.torch_index"},
         "run": 'python -m pip install torch --index-url "$TORCH_INDEX"'},
        # In a container job the workspace path differs from ${{ github.workspace }}: ask the shell.
        {"name": "rocbuild folders: the cache, and this repository's recipes/ if it has one",
         "run": f'echo "XDG_CACHE_HOME=$PWD/{CACHE_DIR}" >> "$GITHUB_ENV"\n'
                'echo "ROCBUILD_RECIPES=$PWD/recipes" >> "$GITHUB_ENV"'},
        {"name": "Restore the rocbuild cache (mirrors, ccache, build cache)", "uses": "actions/cache@v4",
         "with": {"path": CACHE_DIR, "key": cache_key + "-${{ github.run_id }}",
                  "restore-keys": cache_key + "-"}},
        {"name": "Build", "run": 'rocbuild "$RECIPE" --arch "$ARCH" --rocm /opt/rocm --python "$(command -v python)" '
         "--out wheelhouse"},
        {"name": "Trim the cache before it is saved", "if": "always()",
         "run": "rocbuild cache prune --older-than 30"},
        {"uses": "actions/upload-artifact@v4",
         "with": {"name": "wheels-${{ matrix.recipe }}-rocm${{ matrix.rocm }}-py${{ matrix.python }}-${{ matrix.slug }}",
                  "path": "wheelhouse/*.whl", "if-no-files-found": "error"}},
    ]
    index_steps = [
        {"uses": "actions/setup-python@v5", "with": {"python-version": "3.11"}},
        {"name": "Install rocbuild", "run": 'python -m pip install "$ROCBUILD_INSTALL"'},
        {"uses": "actions/download-artifact@v4",
         "with": {"pattern": "wheels-*", "merge-multiple": True, "path": "wheelhouse"}},
        {"name": "PEP 503 index", "run": "rocbuild index wheelhouse"},
        {"uses": "actions/upload-artifact@v4",
         "with": {"name": "wheelhouse-index", "path": "wheelhouse", "if-no-files-found": "error"}},
    ]
    if pages:
        index_steps.append({"uses": "actions/upload-pages-artifact@v3", "with": {"path": "wheelhouse"}})
    jobs: dict[str, Any] = {
        "build": {
            "name": "${{ matrix.recipe }} rocm${{ matrix.rocm }} py${{ matrix.python }} ${{ matrix.slug }}",
            "runs-on": "ubuntu-latest",
            "container": {"image": e % "matrix.container"},
            "strategy": {"fail-fast": False, "matrix": {"include": [asdict(x) for x in matrix.entries]}},
            "env": build_env,
            "steps": build_steps,
        },
        "index": {
            "needs": "build",
            "runs-on": "ubuntu-latest",
            "env": {"ROCBUILD_INSTALL": install},
            "steps": index_steps,
        },
    }
    if pages:
        jobs["pages"] = {
            "needs": "index",
            "if": "github.ref == 'refs/heads/main'",
            "runs-on": "ubuntu-latest",
            "permissions": {"pages": "write", "id-token": "write"},
            "environment": {"name": "github-pages", "url": e % "steps.deploy.outputs.page_url"},
            "steps": [{"id": "deploy", "uses": "actions/deploy-pages@v4"}],
        }
    workflow = {
        "name": "rocbuild wheels",
        "on": {"workflow_dispatch": None, "push": {"branches": ["main"]}, "pull_request": None},
        "permissions": {"contents": "read"},
        "jobs": jobs,
    }
    header = (f"# Generated by rocbuild {__version__}: `rocbuild ci github` writes this file again.\n"
              f"# {len(matrix.entries)} build job(s); the index job merges their wheels into a PEP 503 index.\n")
    body = yaml.safe_dump(workflow, sort_keys=False, width=1000, default_flow_style=False)
    # PyYAML quotes the key `on` (a YAML 1.1 boolean); GitHub reads either form, people expect it bare.
    return header + body.replace("'on':", "on:", 1).replace(": null\n", ":\n")
