"""CI at scale: the build matrix (recipe x ROCm x python x arch set) and a GitHub Actions workflow for it.

The matrix is computed here, not by the CI system, so `rocbuild ci matrix
--json` gives other CI systems exactly what the workflow runs. Every build
job runs one fixed script (JOB_SCRIPT): inside the ROCm development image of
its release through `docker run`, started only after disk space was freed
(a `container:` key would pull the image before any step), or straight on a
runner that has ROCm (`--container none`, self-hosted runners). The matrix
values reach that script through `env:`, never spliced into it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml
from packaging.specifiers import SpecifierSet

import rocbuild.recipe.catalog as catalog
from rocbuild import __version__
from rocbuild.detect.arch import parse_arch_list
from rocbuild.detect.rocm import RocmVersion
from rocbuild.detect.torch import rocm_torch_index
from rocbuild.doctor.facts import supported_archs
from rocbuild.errors import UsageError
from rocbuild.recipe.catalog import NO_DIRS, RecipeDirs

ROCM_RE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")
PYTHON_RE = re.compile(r"^3\.\d{1,2}$")
RUNS_ON_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
DEFAULT_ROCM = ("6.4",)
DEFAULT_PYTHON = ("3.11",)
NO_CONTAINER = "none"
# AMD's ROCm development images on Docker Hub. Only the -complete tags hold the math and
# communication libraries (hipblas, hiprand, hipblaslt, rccl); ROCm 7 moved to Ubuntu 24.04.
CONTAINER_22 = "rocm/dev-ubuntu-22.04:{rocm}-complete"
CONTAINER_24 = "rocm/dev-ubuntu-24.04:{rocm}-complete"
# The newest patch release of each ROCm line that has such an image (as bitsandbytes' CI pins them).
LATEST_PATCH = {"6.1": "6.1.2", "6.2": "6.2.4", "6.3": "6.3.4", "6.4": "6.4.4", "7.0": "7.0.2", "7.1": "7.1.1",
                "7.2": "7.2.4"}
CACHE_DIR = ".rocbuild-cache"  # XDG_CACHE_HOME of the jobs, under the workspace
# What is worth carrying from run to run: downloaded sdists, compiler outputs, finished wheels. Not the
# work trees (the bulk of an entry, and rebuilt from the rest anyway).
CACHED = tuple(f"{CACHE_DIR}/rocbuild/{d}" for d in ("ccache", "sdists", "builds"))
BUILD_TIMEOUT = 300  # minutes; GitHub-hosted jobs stop at 360
ACTIONS = {  # the newest majors, all on node24
    "checkout": "actions/checkout@v7",
    "restore": "actions/cache/restore@v5",
    "save": "actions/cache/save@v5",
    "upload": "actions/upload-artifact@v7",
    "download": "actions/download-artifact@v8",
    "pages-upload": "actions/upload-pages-artifact@v5",
    "pages-deploy": "actions/deploy-pages@v5",
}
# Space on a GitHub-hosted runner (about 14 GB free) for a -complete image and a ROCm torch.
FREE_DISK = ("sudo rm -rf /usr/share/dotnet /usr/local/lib/android /opt/ghc /usr/local/.ghcup "
             "/opt/hostedtoolcache/CodeQL /usr/local/share/powershell /usr/local/share/chromium\n"
             "sudo docker image prune --all --force\ndf -h /")

# Where a runner may not (a self-hosted one without sudo), rocbuild builds unconfined and says why.
ALLOW_USERNS = ("command -v bwrap >/dev/null || sudo apt-get install -y --no-install-recommends bubblewrap || true\n"
                "if [ -e /proc/sys/kernel/apparmor_restrict_unprivileged_userns ]; then\n"
                "  sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 "
                "|| echo 'user namespaces stay restricted: build steps will run unconfined'\n"
                "fi")

# The build job, the same in a container and on a runner's own system. Its inputs are environment
# variables: RECIPE, ARCH, PYTHON_VERSION, ROCM (the release asked for), ROCBUILD_INSTALL,
# TORCH_INDEX, LOCAL_VERSION, and ROCBUILD_APT=1 where the job may install the build tools itself.
JOB_SCRIPT = r"""
if [ "${ROCBUILD_APT:-}" = 1 ]; then
  apt-get update
  apt-get install -y --no-install-recommends git cmake make ccache ca-certificates python3 python3-venv bubblewrap
fi
# Python $PYTHON_VERSION: the system's own when it has that version, else one that uv installs.
if command -v "python$PYTHON_VERSION" >/dev/null; then
  "python$PYTHON_VERSION" -m venv .rocbuild-venv
else
  python3 -m venv .rocbuild-uv
  .rocbuild-uv/bin/python -m pip install --disable-pip-version-check -q uv
  .rocbuild-uv/bin/uv venv --seed --python "$PYTHON_VERSION" .rocbuild-venv
fi
py="$PWD/.rocbuild-venv/bin/python"
"$py" -m pip install --disable-pip-version-check -q "$ROCBUILD_INSTALL"
if [ -n "${TORCH_INDEX:-}" ]; then
  "$py" -m pip install --disable-pip-version-check -q torch --index-url "$TORCH_INDEX"
fi
export XDG_CACHE_HOME="$PWD/.rocbuild-cache" ROCBUILD_RECIPES="$PWD/recipes"
# The ROCm this job really has must be the release its matrix cell names.
found="$("$py" -m rocbuild detect --json --arch "$ARCH" \
  | "$py" -c 'import json, sys; print(json.load(sys.stdin)["rocm"]["version"] or "")')"
case "$found" in
  "$ROCM"|"$ROCM".*) ;;
  *) echo "this job asked for ROCm $ROCM but has ROCm ${found:-none}" >&2; exit 2 ;;
esac
"$py" -m rocbuild "$RECIPE" --arch "$ARCH" --python "$py" --out wheelhouse --work .rocbuild-work \
  --local-version "$LOCAL_VERSION"
# Publishable: manylinux-tagged by auditwheel, ROCm's and torch's libraries left to the user's install.
"$py" -m rocbuild repair wheelhouse/*.whl --out wheelhouse/manylinux
"$py" -m rocbuild cache prune --older-than 30
"""

# The index job: per-ROCm PEP 503 indexes over every wheel the build jobs made.
CHECK_SCRIPT = r"""
if [ "${ROCBUILD_APT:-}" = 1 ]; then
  apt-get update
  apt-get install -y --no-install-recommends git cmake make ca-certificates python3 python3-venv
fi
python3 -m venv .rocbuild-venv
.rocbuild-venv/bin/python -m pip install --disable-pip-version-check -q "$ROCBUILD_INSTALL"
set +e
.rocbuild-venv/bin/python -m rocbuild recipes check $RECIPES --json > recipes-check.json
echo $? > recipes-check.exit
"""
# The report as the job's summary: one row per recipe, what is newer, and how its patches fare.
SUMMARY_SCRIPT = r"""
import json, sys
rows = json.load(open("recipes-check.json"))
out = ["| recipe | recipe's release | newest | patches |", "| --- | --- | --- | --- |"]
for r in rows:
    verdicts = ", ".join(p["verdict"] for p in r["patches"]) or "-"
    out.append(f"| {r['recipe']} | {r['current']} | {r['newest'] or 'current'} | {verdicts} |")
    if r["warning"]:
        out.append(f"| {r['recipe']} | | | warning: {r['warning']} |")
with open(sys.argv[1], "a") as fh:  # the job's $GITHUB_STEP_SUMMARY
    fh.write("## rocbuild recipes check\n\n" + "\n".join(out) + "\n")
"""

INDEX_SCRIPT = r"""
if command -v "python$PYTHON_VERSION" >/dev/null; then
  "python$PYTHON_VERSION" -m venv .rocbuild-venv
else
  python3 -m venv .rocbuild-venv
fi
.rocbuild-venv/bin/python -m pip install --disable-pip-version-check -q "$ROCBUILD_INSTALL"
.rocbuild-venv/bin/python -m rocbuild index wheelhouse --by-rocm
"""


@dataclass(frozen=True)
class MatrixEntry:
    recipe: str  # what the job passes to rocbuild: a built-in name or a path inside the repository
    name: str  # the recipe's own name (artifact names and cache keys)
    rocm: str
    python: str
    arch: str  # comma-separated gfx targets, as `--arch` takes them
    slug: str  # the arch set without commas (artifact names and cache keys take no commas)
    container: str  # the image the job runs in; "none": the runner's own system
    torch_index: str = ""  # a recipe that builds against torch: the ROCm torch wheels' index for this release
    label: str = ""  # the wheels' local version label: rocmX.Y, plus the arch set when split by arch


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
    release = LATEST_PATCH.get(rocm, rocm)
    major = int(rocm.split(".")[0])
    return (CONTAINER_24 if major >= 7 else CONTAINER_22).format(rocm=release)


def runner_path(found: catalog.Found, repo: Path) -> str:
    """How a job on the runner names the recipe: built-in ones by name, the rest by their path in
    the repository (a recipe elsewhere would not exist there)."""
    if found.origin == "built-in":
        return found.name
    path = found.path.resolve()
    if not path.is_relative_to(repo):
        raise UsageError(f"recipe {found.name!r} ({found.path}) is outside this repository ({repo}): the runner "
                         "checks out the repository only and would not find it",
                         hint="put the recipe under the repository (recipes/ is searched by name) and run "
                              "`rocbuild ci github` from the repository's top folder")
    relative = path.relative_to(repo)
    return found.name if relative == Path("recipes") / path.name and path.stem == found.name else str(relative)


def build_matrix(recipes: tuple[str, ...], rocms: tuple[str, ...], pythons: tuple[str, ...],
                 arch: str | None, split_arch: bool, recipe_dirs: RecipeDirs = NO_DIRS,
                 container: str | None = None, repo: Path | None = None) -> Matrix:
    """Every buildable (recipe, ROCm, python, arch set); a recipe's `requires.rocm` drops releases.
    `repo`: the repository the workflow will run in (recipes outside it are refused)."""
    entries, excluded = [], []
    given_archs = parse_arch_list(arch) if arch else None
    top = (repo or Path.cwd()).resolve()
    for name in recipes:
        found = catalog.resolve(name, recipe_dirs)
        recipe = catalog.load(found.path, recipe_dirs)
        if recipe.output != "wheel":
            raise UsageError(f"recipe {name!r} makes a source tree, not a wheel: nothing for CI to publish",
                             hint="leave it out of --recipes")
        on_runner = runner_path(found, top)
        for rocm in rocms:
            if recipe.requires.rocm and not SpecifierSet(recipe.requires.rocm).contains(rocm, prereleases=True):
                excluded.append({"recipe": name, "rocm": rocm,
                                 "reason": f"{recipe.name} requires ROCm {recipe.requires.rocm}"})
                continue
            archs = given_archs or _default_archs(rocm)
            torch_index = (rocm_torch_index(RocmVersion(rocm)) or "") if recipe.requires.torch else ""
            sets = [(a,) for a in archs] if split_arch else [tuple(archs)]
            short = ".".join(rocm.split(".")[:2])
            for python in pythons:
                for group in sets:
                    entries.append(MatrixEntry(
                        recipe=on_runner, name=recipe.name, rocm=rocm, python=python, arch=",".join(group),
                        slug="-".join(group),
                        container=(NO_CONTAINER if container == NO_CONTAINER
                                   else container.replace("{rocm}", rocm) if container else container_for(rocm)),
                        torch_index=torch_index,
                        label=f"rocm{short}" + (f".{group[0]}" if split_arch else "")))
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


def github_workflow(matrix: Matrix, *, install: str, runs_on: tuple[str, ...] = ("ubuntu-latest",),
                    pages: bool = False, check: bool = False) -> str:
    """A workflow: one build job per matrix entry, then one job that puts every wheel that was made
    (also when some cells failed) into per-ROCm indexes. `check`: and a weekly job that runs
    `rocbuild recipes check` on the recipes and publishes its report (the builds do not run then)."""
    labels: str | list[str] = runs_on[0] if len(runs_on) == 1 else list(runs_on)
    jobs: dict[str, Any] = {"build": _build_job(matrix, install, runs_on, labels),
                            "index": _index_job(matrix, install, labels, pages)}
    if check:
        jobs["build"]["if"] = "github.event_name != 'schedule'"
        jobs["index"]["if"] = "${{ !cancelled() && github.event_name != 'schedule' }}"
        jobs["recipes-check"] = _check_job(matrix, install, labels)
    if pages:
        jobs["pages"] = {
            "needs": "index",
            "if": "github.ref == 'refs/heads/main'",
            "runs-on": "ubuntu-latest",
            "timeout-minutes": 15,
            "permissions": {"pages": "write", "id-token": "write"},
            "environment": {"name": "github-pages", "url": "${{ steps.deploy.outputs.page_url }}"},
            "steps": [{"id": "deploy", "uses": ACTIONS["pages-deploy"]}],
        }
    triggers: dict[str, Any] = {"workflow_dispatch": None, "push": {"branches": ["main"]}, "pull_request": None}
    if check:
        triggers["schedule"] = [{"cron": "17 5 * * 1"}]  # Mondays: upstream released something?
    workflow = {
        "name": "rocbuild wheels",
        "on": triggers,
        "permissions": {"contents": "read"},
        # A newer push to the same branch supersedes a running build.
        "concurrency": {"group": "${{ github.workflow }}-${{ github.ref }}", "cancel-in-progress": True},
        "jobs": jobs,
    }
    header = (f"# Generated by rocbuild {__version__}: `rocbuild ci github` writes this file again.\n"
              f"# {len(matrix.entries)} build job(s); the index job puts their wheels into one PEP 503 index per "
              "ROCm release\n# (wheelhouse/rocmX.Y/simple).\n")
    body = yaml.dump(workflow, Dumper=_BlockDumper, sort_keys=False, width=1000, default_flow_style=False)
    # PyYAML quotes the key `on` (a YAML 1.1 boolean); GitHub reads either form, people expect it bare.
    return header + body.replace("'on':", "on:", 1).replace(": null\n", ":\n")


def _build_job(matrix: Matrix, install: str, runs_on: tuple[str, ...], labels: str | list[str]) -> dict[str, Any]:
    """One cell per matrix entry: the job script in the release's image (or on the runner), cached and uploaded."""
    e = "${{ %s }}"
    in_container = any(x.container != NO_CONTAINER for x in matrix.entries)
    hosted = runs_on == ("ubuntu-latest",)
    cell = "${{ matrix.name }}-rocm${{ matrix.rocm }}-py${{ matrix.python }}-${{ matrix.slug }}"
    build_env = {"RECIPE": e % "matrix.recipe", "ARCH": e % "matrix.arch", "ROCM": e % "matrix.rocm",
                 "PYTHON_VERSION": e % "matrix.python", "TORCH_INDEX": e % "matrix.torch_index",
                 "LOCAL_VERSION": e % "matrix.label", "IMAGE": e % "matrix.container",
                 "ROCBUILD_INSTALL": install, "ROCBUILD_JOB": JOB_SCRIPT.lstrip()}
    run_job = ('if [ "$IMAGE" = none ]; then\n'
               '  bash -euo pipefail -c "$ROCBUILD_JOB"\n'
               'else\n'
               # bubblewrap confines each build step: as root in the container it needs CAP_SYS_ADMIN and
               # namespaces that Docker's default seccomp and AppArmor profiles refuse
               '  docker run --rm --user 0 --cap-add SYS_ADMIN --security-opt seccomp=unconfined \\\n'
               '    --security-opt apparmor=unconfined -v "$PWD:$PWD" -w "$PWD" -e ROCM_PATH=/opt/rocm -e ROCBUILD_APT=1 \\\n'
               '    -e RECIPE -e ARCH -e ROCM -e PYTHON_VERSION -e TORCH_INDEX -e LOCAL_VERSION -e ROCBUILD_INSTALL \\\n'
               '    -e ROCBUILD_JOB "$IMAGE" bash -euo pipefail -c "$ROCBUILD_JOB"\n'
               "fi")
    steps: list[dict[str, Any]] = [{"uses": ACTIONS["checkout"]}]
    if in_container and hosted:
        steps.append({"name": "Free disk space for the ROCm image", "if": "matrix.container != 'none'",
                      "run": FREE_DISK})
    if hosted:  # Ubuntu 24.04 lets no unprivileged user namespace through AppArmor: bubblewrap needs one
        steps.append({"name": "Allow bubblewrap's user namespaces (confined build steps)",
                      "if": "matrix.container == 'none'", "run": ALLOW_USERNS})
    steps += [
        {"name": "Restore the rocbuild cache (sdists, ccache, build cache)", "id": "cache",
         "uses": ACTIONS["restore"],
         "with": {"path": "\n".join(CACHED), "key": f"rocbuild-{cell}-${{{{ github.run_id }}}}",
                  "restore-keys": f"rocbuild-{cell}-"}},
        {"name": "Build", "run": run_job},
        # Saved whatever the outcome: a build that failed or ran out of time still keeps its progress.
        {"name": "Save the rocbuild cache", "if": "always()", "uses": ACTIONS["save"],
         "with": {"path": "\n".join(CACHED), "key": e % "steps.cache.outputs.cache-primary-key"}},
        {"uses": ACTIONS["upload"],
         "with": {"name": f"wheels-{cell}", "path": "wheelhouse/manylinux/*.whl", "if-no-files-found": "error"}},
    ]
    return {
        "name": "${{ matrix.name }} rocm${{ matrix.rocm }} py${{ matrix.python }} ${{ matrix.slug }}",
        "runs-on": labels,
        "timeout-minutes": BUILD_TIMEOUT,
        "strategy": {"fail-fast": False, "matrix": {"include": [asdict(x) for x in matrix.entries]}},
        "env": build_env,
        "steps": steps,
    }


def _check_job(matrix: Matrix, install: str, labels: str | list[str]) -> dict[str, Any]:
    """`rocbuild recipes check` in the first cell's ROCm image (it renders the recipes' patches), its
    JSON report uploaded and summarised; the job fails when a recipe is behind or a patch fails."""
    first = matrix.entries[0]
    recipes = " ".join(dict.fromkeys(e.recipe for e in matrix.entries))
    run = ('if [ "$IMAGE" = none ]; then\n'
           '  bash -euo pipefail -c "$ROCBUILD_CHECK"\n'
           'else\n'
           '  docker run --rm --user 0 -v "$PWD:$PWD" -w "$PWD" -e ROCM_PATH=/opt/rocm -e ROCBUILD_APT=1 \\\n'
           '    -e RECIPES -e ROCBUILD_INSTALL -e ROCBUILD_CHECK "$IMAGE" bash -euo pipefail -c "$ROCBUILD_CHECK"\n'
           "fi")
    return {
        "if": "github.event_name == 'schedule' || github.event_name == 'workflow_dispatch'",
        "runs-on": labels,
        "timeout-minutes": 60,
        "env": {"RECIPES": recipes, "IMAGE": first.container, "ROCBUILD_INSTALL": install,
                "ROCBUILD_CHECK": CHECK_SCRIPT.lstrip(), "ROCBUILD_SUMMARY": SUMMARY_SCRIPT.lstrip()},
        "steps": [
            {"uses": ACTIONS["checkout"]},
            {"name": "rocbuild recipes check", "run": run},
            {"name": "Report (step summary)", "if": "always()",
             "run": 'python3 -c "$ROCBUILD_SUMMARY" "$GITHUB_STEP_SUMMARY"'},
            {"uses": ACTIONS["upload"], "if": "always()",
             "with": {"name": "recipes-check", "path": "recipes-check.json", "if-no-files-found": "error"}},
            {"name": "Fail when a recipe is behind or a patch no longer applies",
             "run": 'exit "$(cat recipes-check.exit)"'},
        ],
    }


def _index_job(matrix: Matrix, install: str, labels: str | list[str], pages: bool) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [
        {"uses": ACTIONS["checkout"]},
        {"uses": ACTIONS["download"], "with": {"pattern": "wheels-*", "merge-multiple": True, "path": "wheelhouse"}},
        {"name": "Per-ROCm indexes (wheelhouse/rocmX.Y/simple)", "run": 'bash -euo pipefail -c "$ROCBUILD_INDEX"'},
        {"uses": ACTIONS["upload"], "with": {"name": "wheelhouse-index", "path": "wheelhouse",
                                             "if-no-files-found": "error"}},
    ]
    if pages:
        steps.append({"uses": ACTIONS["pages-upload"], "with": {"path": "wheelhouse"}})
    return {
        "needs": "build",
        # The wheels of the cells that passed are published even when others failed.
        "if": "${{ !cancelled() }}",
        "runs-on": labels,
        "timeout-minutes": 30,
        "env": {"ROCBUILD_INSTALL": install, "PYTHON_VERSION": matrix.entries[0].python,
                "ROCBUILD_INDEX": INDEX_SCRIPT.lstrip()},
        "steps": steps,
    }


class _BlockDumper(yaml.SafeDumper):
    """Scripts and path lists as YAML block literals (`|`), as a person would write them; no anchors
    (GitHub refuses an alias where it wants a sequence)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_BlockDumper.add_representer(str, _str)


def check_runs_on(value: str | None) -> tuple[str, ...]:
    return split_list(value, "--runs-on", RUNS_ON_RE, ("ubuntu-latest",),
                      "runner labels, comma-separated, e.g. self-hosted,linux,rocm")


def default_install(repo: Path) -> str:
    """What the jobs `pip install` to get this rocbuild, from how it was installed here (PEP 610's
    direct_url.json): the same git commit, the same https archive, or `.` when it was installed from
    the repository the workflow runs in. rocbuild is on no package index, so a version pin would fail."""
    import importlib.metadata
    import json

    try:
        text = importlib.metadata.distribution("rocbuild").read_text("direct_url.json")
        direct = json.loads(text) if text else {}
    except (importlib.metadata.PackageNotFoundError, ValueError):
        direct = {}
    url = str(direct.get("url", ""))
    vcs = direct.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs") == "git" and vcs.get("commit_id"):
        return f"rocbuild @ git+{url}@{vcs['commit_id']}"
    if "archive_info" in direct and url.startswith("https://"):
        return f"rocbuild @ {url}"
    if "dir_info" in direct and url.startswith("file://"):
        source = Path(url.removeprefix("file://")).resolve()
        if source == repo.resolve():
            return "."
    raise UsageError(
        f"--install: say how the jobs install rocbuild {__version__}: it is on no package index, and this "
        f"copy was installed from {url or 'an unknown place'}, which a runner cannot reach",
        hint="pass a pip requirement the runner can install, e.g.\n"
             "  --install 'rocbuild @ git+https://github.com/OWNER/rocbuild@vX.Y.Z'\n"
             "  --install .   (the workflow's own repository is a rocbuild checkout)\n"
             "  --install ./tools/rocbuild   (a copy inside the repository)")
