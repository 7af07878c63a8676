"""Recipe + host + options -> Plan: every action with its concrete values. Pure: runs nothing.

`rocbuild plan` prints this; the engine executes exactly this.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from rocbuild.detect.arch import parse_arch_list
from rocbuild.detect.gpu import GpuAccess
from rocbuild.detect.python import PythonInfo
from rocbuild.detect.rocm import Rocm
from rocbuild.detect.torch import probe_argv
from rocbuild.errors import RecipeError, UsageError
from rocbuild.paths import WorkDirs, cache_root, mirror_path
from rocbuild.recipe.lookup import patch_dirs_for
from rocbuild.recipe.load import SHA_RE
from rocbuild.recipe.model import Recipe
from rocbuild.render import PythonView, Renderer, RocmView
from rocbuild.wheels import LOCAL_LABEL_RE

PYTHON_ALIASES = ("python", "python3")
# A script the target python runs to report which build modules it lacks.
IMPORT_CHECK = (
    "import importlib.util, sys\n"
    "missing = [m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]\n"
    "print(' '.join(missing))\n"
    "sys.exit(1 if missing else 0)"
)
# A verify `import:` entry: import one module by name, from the scratch install.
IMPORT_ONE = "import importlib, sys; importlib.import_module(sys.argv[1]); print('imported', sys.argv[1])"


@dataclass(frozen=True)
class Host:
    """Everything about the build target that rendering needs."""

    archs: tuple[str, ...]
    rocm: Rocm
    python: PythonInfo
    jobs: int
    override: str | None = None  # HSA_OVERRIDE_GFX_VERSION in effect, recorded with the build
    gpu: GpuAccess = GpuAccess(False, "not checked")  # decides whether verify `import:` entries run
    ccache: str | None = None  # ccache's path when it is installed: compilers are launched through it


@dataclass(frozen=True)
class SourceSpec:
    kind: str  # "git" or "dir"
    url: str | None = None
    ref: str | None = None
    commit: str | None = None
    submodules: bool = False
    mirror: str | None = None
    directory: str | None = None
    ref_overridden: bool = False

    def commands(self, dest: str) -> list[list[str]]:
        """The git commands the fetch amounts to (run through GitPython), for display."""
        if self.kind == "dir":
            return []
        ref = self.commit or self.ref or "HEAD"
        cmds = [
            ["git", "clone", "--mirror", self.url, self.mirror],
            ["git", "-C", self.mirror, "fetch", "--prune", "origin"],
            ["git", "clone", "--shared", "--no-checkout", self.mirror, dest],
            ["git", "-C", dest, "checkout", "--detach", ref],
        ]
        if self.submodules:
            cmds.append(["git", "-C", dest, "submodule", "update", "--init", "--recursive"])
        return cmds


@dataclass(frozen=True)
class PatchAction:
    kind: str  # diff | replace | link
    params: dict[str, Any]
    where: str  # recipe position, for messages

    def describe(self) -> str:
        p = self.params
        if self.kind == "diff":
            return f"diff {p['name']} (sha256 {p['sha256'][:12]}): {shlex.join(p['argv'])}"
        if self.kind == "replace":
            mode = "regex" if p["regex"] else "text"
            count = f", expecting {p['count']}" if p["count"] else ""
            return f"replace in {p['file']} ({mode}{count}): {p['find']!r} -> {p['with']!r}"
        if self.kind == "copy":
            return f"copy {p['from']} to {p['to']} (in the tree; the original is only read)"
        return f"link {p['from']} into {p['into']}/ (replacing existing links)"

    def record(self) -> dict[str, Any]:
        """What identifies this patch in provenance and lock files: a diff by its file's sha256."""
        p = self.params
        if self.kind == "diff":
            return {"kind": "diff", "name": p["name"], "sha256": p["sha256"]}
        digest = hashlib.sha256(json.dumps(p, sort_keys=True).encode()).hexdigest()
        return {"kind": self.kind, "sha256": digest, "where": self.where}


@dataclass(frozen=True)
class Step:
    name: str
    kind: str
    argv: tuple[str, ...] | None
    cwd: str
    env: dict[str, str]
    shell: str | None = None
    where: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    def command_line(self) -> str:
        return self.shell if self.shell is not None else shlex.join(self.argv or ())

    def identity(self) -> dict[str, Any]:
        """What decides whether a finished step must run again."""
        return {"name": self.name, "kind": self.kind, "argv": self.argv, "shell": self.shell,
                "cwd": self.cwd, "env": self.env, "detail": self.detail}


@dataclass(frozen=True)
class Requirements:
    rocm: str | None
    tools: tuple[str, ...]
    python_modules: tuple[str, ...]
    cmake_packages: tuple[str, ...]
    python_check_argv: tuple[str, ...] | None
    torch: str | None = None  # "rocm": the target python's torch must be a ROCm build
    torch_check_argv: tuple[str, ...] | None = None  # reads torch/version.py without importing torch


@dataclass(frozen=True)
class Plan:
    recipe: Recipe
    host: Host
    options: dict[str, Any]
    work: WorkDirs
    out: Path
    source: SourceSpec
    requirements: Requirements
    base_env: dict[str, str]
    patches: tuple[PatchAction, ...]
    steps: tuple[Step, ...]
    verify: tuple[Step, ...]
    local_label: str = ""  # PEP 440 local version label added to every wheel ("" = none)
    cache_basis: dict[str, Any] | None = None  # the rendered recipe as the build cache key sees it

    @property
    def ccache_bin(self) -> Path | None:
        """The folder put first on PATH where `hipcc` is a link to ccache (ccache's masquerade mode)."""
        if not self.host.ccache or "CCACHE_DIR" not in self.base_env:
            return None
        return Path(self.base_env["CCACHE_DIR"]) / "bin"

    @property
    def output(self) -> str:
        return self.recipe.output

    @property
    def has_wheel_steps(self) -> bool:
        return any(s.kind == "wheel" for s in self.steps)

    def prepare_identity(self) -> dict[str, Any]:
        return {"source": asdict(self.source), "patches": [asdict(p) for p in self.patches]}

    def to_json(self) -> dict[str, Any]:
        r = self.host.rocm
        return {
            "recipe": {"name": self.recipe.name, "version": self.recipe.version, "path": str(self.recipe.path)},
            "archs": list(self.host.archs),
            "rocm": {"path": str(r.path), "version": str(r.version) if r.version else None, "layout": r.layout},
            "python": self.host.python.to_json(),
            "jobs": self.host.jobs,
            "hsa_override": self.host.override,
            "gpu": {"usable": self.host.gpu.usable, "reason": self.host.gpu.reason},
            "options": self.options,
            "work": str(self.work.root),
            "out": str(self.out),
            "requirements": asdict(self.requirements),
            "env": self.base_env,
            "source": {**asdict(self.source), "dest": str(self.work.src),
                       "commands": self.source.commands(str(self.work.src))},
            "patches": [{"kind": p.kind, **p.params} for p in self.patches],
            "steps": [_step_json(s) for s in self.steps],
            "verify": [_step_json(s) for s in self.verify],
            "local_version": self.local_label or None,
        }


def _step_json(step: Step) -> dict[str, Any]:
    out = {"name": step.name, "kind": step.kind, "argv": list(step.argv) if step.argv else None,
           "cwd": step.cwd, "env": step.env}
    if step.shell is not None:
        out["shell"] = step.shell
    if step.detail:
        out.update(step.detail)
    return out


def make_plan(
    recipe: Recipe,
    host: Host,
    options: dict[str, Any],
    work: WorkDirs,
    out: Path,
    *,
    ref: str | None = None,
    source_dir: Path | None = None,
    cache: Path | None = None,
    local_version: str | None = None,
) -> Plan:
    ctx = {
        "archs": list(host.archs),
        "arch": host.archs[0] if host.archs else "",
        "rocm": RocmView(host.rocm),
        "python": PythonView(host.python.executable, host.python.version),
        "jobs": host.jobs,
        "options": dict(options),
        "src": str(work.src),
        "build": str(work.build),
        "dist": str(work.dist),
        "ref": "",
        "recipe": {"name": recipe.name, "version": recipe.version},
    }
    r = Renderer(ctx)
    # The recipe's ref may be a template (an option picks it); `ref` in templates is the one built.
    recipe_ref = r.text(recipe.source.ref, None, "source.ref") if recipe.source.ref else None
    effective_ref = ref or recipe_ref
    ctx["ref"] = effective_ref or ""

    base_env = {"HIP_PLATFORM": "amd"}  # hipcc picks NVIDIA when it also sees nvcc
    if host.rocm.layout == "rocm":
        rocm_bin = str(host.rocm.path / "bin")
        path = os.environ.get("PATH", "")
        if rocm_bin not in path.split(os.pathsep):
            base_env["PATH"] = rocm_bin + os.pathsep + path
    if host.ccache:
        base_env.update(_ccache_env(host.ccache, (cache or cache_root()) / "ccache", work,
                                    base_env.get("PATH", os.environ.get("PATH", ""))))
    for name, cond in recipe.env:
        if r.condition(cond.when, cond.pos, f"{cond.pos.key}.when"):
            base_env[name] = r.text(cond.value, cond.pos, cond.pos.key)

    def names(items) -> tuple[str, ...]:
        return tuple(r.text(c.value, c.pos, c.pos.key) for c in items
                     if r.condition(c.when, c.pos, f"{c.pos.key}.when"))

    modules = names(recipe.requires.python)
    requirements = Requirements(
        rocm=recipe.requires.rocm,
        tools=names(recipe.requires.tools),
        python_modules=modules,
        cmake_packages=names(recipe.requires.cmake_packages),
        python_check_argv=(host.python.executable, "-c", IMPORT_CHECK, *modules) if modules else None,
        torch=recipe.requires.torch,
        torch_check_argv=probe_argv(host.python.executable) if recipe.requires.torch else None,
    )

    source = _source(recipe, effective_ref, ref is not None, source_dir, cache, r)
    patches = tuple(_patch(recipe, e, r) for e in recipe.patches if r.condition(e.when, e.pos, f"{e.pos.key}.when"))

    steps = []
    for entry in recipe.steps:
        if not r.condition(entry.when, entry.pos, f"{entry.pos.key}.when"):
            continue
        steps.append(_step(entry, r, host, work))
    entries = [e for e in recipe.verify if r.condition(e.when, e.pos, f"{e.pos.key}.when")]
    opted_out = [e for e in entries if e.kind == "code-objects" and not e.body["required"]]
    verify = []
    if any(s.kind == "wheel" for s in steps):
        # Every wheel: nothing links CUDA, and device code covers every arch unless the recipe says
        # it has none of its own (`code-objects: false`).
        archs = [] if opted_out else list(host.archs)
        where = f"built in; device code not required ({opted_out[0].pos.describe()})" if opted_out else "built in"
        verify.append(Step("device-code", "code-objects", None, str(work.src), {}, where=where,
                           detail={"archs": archs, "files": [], "built_in": True}))
    verify += [_verify_step(e, r, host, work) for e in entries if e not in opted_out]
    return Plan(recipe, host, dict(options), work, out, source, requirements, base_env, patches,
                tuple(steps), tuple(verify), _local_label(recipe, host, r, local_version))


def _ccache_env(ccache: str, ccache_dir: Path, work: WorkDirs, path: str) -> dict[str, str]:
    """CMake (steps and build backends alike) reads the launcher variables from the environment;
    a `hipcc` called by name from make, setup.py or a script finds the masquerade link first."""
    env = {"CCACHE_DIR": str(ccache_dir), "CCACHE_BASEDIR": str(work.root),
           "PATH": str(ccache_dir / "bin") + os.pathsep + path}
    for lang in ("C", "CXX", "HIP"):
        env[f"CMAKE_{lang}_COMPILER_LAUNCHER"] = ccache
    return env


# Where the canonical plan behind a cache key pretends to work: no real folder, the same everywhere.
CANONICAL_ROOT = Path("/rocbuild-canonical")


def cache_basis(recipe: Recipe, host: Host, options: dict[str, Any], *, ref: str | None = None,
                source_dir: Path | None = None, local_version: str | None = None) -> dict[str, Any]:
    """The plan rendered with everything that only says where or how fast a build runs held fixed
    (work folder, job count, ccache, GPU access, PATH, file locations), for the build cache key."""
    canonical = make_plan(recipe, replace(host, jobs=1, ccache=None, gpu=GpuAccess(False, "")), options,
                          WorkDirs(CANONICAL_ROOT / "work"), CANONICAL_ROOT / "out", ref=ref,
                          source_dir=source_dir, cache=CANONICAL_ROOT / "cache", local_version=local_version)
    data = canonical.to_json()
    for key in ("work", "out", "jobs", "gpu"):
        data.pop(key)
    data["recipe"].pop("path")
    data["env"].pop("PATH", None)
    # The resolved commit joins the key later; the ref's name and the pin only lead to it.
    for key in ("ref", "commit", "ref_overridden", "mirror", "dest", "commands"):
        data["source"].pop(key, None)
    for patch in data["patches"]:
        for key in ("path", "argv", "check_argv"):
            patch.pop(key, None)
    return data


def _local_label(recipe: Recipe, host: Host, r: Renderer, override: str | None) -> str:
    """`+rocm6.1` by default; the recipe's `local-version` or --local-version change or drop it."""
    if override is not None:
        return override
    if recipe.local_version is None:
        v = host.rocm.version
        return f"rocm{v.major}.{v.minor}" if v is not None else ""
    label = r.text(recipe.local_version, None, "local-version")
    if label and not LOCAL_LABEL_RE.match(label):
        raise RecipeError("local-version renders to something that is not a PEP 440 local label",
                          file=str(recipe.path), key="local-version", value=label,
                          accepted="letters and digits separated by '.', '_' or '-', e.g. rocm6.1")
    return label


def _verify_step(entry, r: Renderer, host: Host, work: WorkDirs) -> Step:
    name, where, env, body = entry.name or "verify", entry.pos.describe(), _entry_env(entry, r), entry.body
    key = f"{entry.pos.key}.{entry.kind}"
    if entry.kind == "command":
        argv = _python_alias([r.text(a, entry.pos, key) for a in body["argv"]], host)
        expect = [r.text(p, entry.pos, f"{entry.pos.key}.expect") for p in body["expect"]]
        return Step(name, "command", tuple(argv), str(work.src), env, where=where, detail={"expect": expect})
    if entry.kind == "import":
        module = r.text(body["module"], entry.pos, key)
        argv = (host.python.executable, "-c", IMPORT_ONE, module)
        return Step(name, "import", argv, str(work.src), env, where=where, detail={"module": module, "needs_gpu": True})
    if entry.kind == "wheel-contains":
        return Step(name, "wheel-contains", None, str(work.src), env, where=where,
                    detail={"glob": r.text(body["glob"], entry.pos, key)})
    archs = [r.text(a, entry.pos, key) for a in body["archs"]] if body["archs"] is not None else list(host.archs)
    try:
        archs = parse_arch_list(",".join(archs))
    except UsageError as exc:
        raise RecipeError(exc.message, file=entry.pos.file, line=entry.pos.line, column=entry.pos.column,
                          key=f"{key}.archs", value=archs, accepted="gfx targets such as gfx90a") from None
    return Step(name, "code-objects", None, str(work.src), env, where=where,
                detail={"archs": archs, "files": [r.text(f, entry.pos, key) for f in body["files"]],
                        "links": list(body["links"])})


def _source(recipe: Recipe, ref: str | None, overridden: bool, source_dir: Path | None,
            cache: Path | None, r: Renderer) -> SourceSpec:
    if source_dir is not None:
        return SourceSpec("dir", directory=str(Path(source_dir).resolve()))
    src = recipe.source
    if src.path is not None:
        return SourceSpec("dir", directory=str((recipe.directory / src.path).resolve()))
    if ref is not None and not overridden:
        from rocbuild.steps.fetch import check_ref  # fetch imports this module

        try:
            check_ref(ref, "source.ref")
        except UsageError as exc:
            raise RecipeError(exc.message, file=str(recipe.path), key="source.ref", value=ref,
                              accepted="a branch, tag or commit id") from None
    commit = None if overridden or not src.commit else r.text(src.commit, None, "source.commit").lower()
    if commit is not None and not SHA_RE.match(commit):
        raise RecipeError("source.commit renders to something that is not a commit id", file=str(recipe.path),
                          key="source.commit", value=commit, accepted="7 to 40 hexadecimal digits")
    return SourceSpec(
        "git", url=src.git, ref=ref, commit=commit,
        submodules=src.submodules, mirror=str(mirror_path(src.git, cache)), ref_overridden=overridden,
    )


def _patch(recipe: Recipe, entry, r: Renderer) -> PatchAction:
    key = f"{entry.pos.key}.{entry.kind}"
    where = entry.pos.describe()
    if entry.kind == "diff":
        dirs = recipe.patch_dirs or patch_dirs_for(recipe.path)
        path = next((d / entry.body for d in dirs if (d / entry.body).is_file()), None)
        if path is None:  # the loader checked; the file went away since
            raise RecipeError("patch file not found", file=entry.pos.file, line=entry.pos.line,
                              column=entry.pos.column, key=key, value=entry.body)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        return PatchAction("diff", {
            "name": entry.body, "path": str(path), "sha256": digest,
            "check_argv": ["git", "apply", "--check", "-p1", str(path)],
            "argv": ["git", "apply", "-p1", str(path)],
        }, where)
    params = r.tree(dict(entry.body), entry.pos, key)
    return PatchAction(entry.kind, params, where)


def _python_alias(argv: list[str], host: Host) -> list[str]:
    """`python` in an argv means the target python, never whatever is first on PATH."""
    if argv and argv[0] in PYTHON_ALIASES:
        argv[0] = host.python.executable
    return argv


def _entry_env(entry, r: Renderer) -> dict[str, str]:
    env = {}
    for name, cond in entry.env:
        if r.condition(cond.when, cond.pos, f"{cond.pos.key}.when"):
            env[name] = r.text(cond.value, cond.pos, cond.pos.key)
    return env


def _step(entry, r: Renderer, host: Host, work: WorkDirs) -> Step:
    key = f"{entry.pos.key}.{entry.kind}"
    src = str(work.src)

    def path_in_src(value: str | None, default: str) -> str:
        if not value:
            return default
        return value if os.path.isabs(value) else os.path.normpath(os.path.join(src, value))

    cwd = path_in_src(r.text(entry.cwd, entry.pos, f"{entry.pos.key}.cwd") if entry.cwd else None, src)
    env = _entry_env(entry, r)
    where = entry.pos.describe()
    kind = entry.kind
    if kind == "shell":
        script = r.text(entry.body, entry.pos, key, shell=True)
        return Step(entry.name, kind, None, cwd, env, shell=script, where=where)
    if kind == "run":
        argv = _python_alias([r.text(a, entry.pos, f"{key}[{i}]") for i, a in enumerate(entry.body)], host)
        return Step(entry.name, kind, tuple(argv), cwd, env, where=where)

    body = r.tree(dict(entry.body), entry.pos, key)
    if kind == "cmake":
        source = path_in_src(body.get("source"), src)
        build = path_in_src(body.get("build"), str(work.build))
        argv = ["cmake", "-S", source, "-B", build]
        if body.get("generator"):
            argv += ["-G", body["generator"]]
        defines = dict(body.get("defines", {}))
        # CMake's HIP language cannot find clang on distro layouts by itself; say it always.
        if host.rocm.hip_compiler:
            defines.setdefault("CMAKE_HIP_COMPILER", str(host.rocm.hip_compiler))
            defines.setdefault("CMAKE_HIP_COMPILER_ROCM_ROOT", str(host.rocm.path))
        argv += [f"-D{k}={v}" for k, v in defines.items()]
        argv += list(body.get("args", []))
        return Step(entry.name, kind, tuple(argv), cwd, env, where=where)
    if kind == "cmake-build":
        argv = ["cmake", "--build", path_in_src(body.get("dir"), str(work.build))]
        if body.get("target"):
            argv += ["--target", body["target"]]
        if body.get("config"):
            argv += ["--config", body["config"]]
        argv += ["--parallel", str(body.get("jobs") or host.jobs)]
        return Step(entry.name, kind, tuple(argv), cwd, env, where=where)
    if kind == "make":
        argv = ["make", "-C", path_in_src(body.get("dir"), src), f"-j{body.get('jobs') or host.jobs}"]
        if body.get("target"):
            argv.append(body["target"])
        argv += list(body.get("args", []))
        return Step(entry.name, kind, tuple(argv), cwd, env, where=where)
    if kind == "wheel":
        project = path_in_src(body.get("dir"), src)
        outdir = str(work.dist / entry.name)
        argv = [host.python.executable, "-m", "pip", "wheel", project, "--no-deps", "--no-build-isolation",
                "--disable-pip-version-check", "-w", outdir]
        argv += [f"--config-settings={k}={v}" for k, v in body.get("config-settings", {}).items()]
        argv += list(body.get("args", []))
        return Step(entry.name, kind, tuple(argv), cwd, env, where=where, detail={"wheel_dir": outdir})
    raise AssertionError(f"unknown step kind {kind}")  # pragma: no cover - the loader admits no other
