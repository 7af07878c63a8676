"""Load a recipe file: YAML with positions -> validated Recipe (templates left unevaluated), section by
section (the keys from recipe/keys.py, the generic checks from recipe/shapes.py).

Every problem is a RecipeError naming file:line:column, the key path, the
bad value and what is accepted; misspelt keys get a "did you mean".
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

import rocbuild.recipe.keys as keys
import rocbuild.recipe.templating as templating
from rocbuild.errors import RecipeError, UsageError
from rocbuild.labels import LOCAL_LABEL_ACCEPTED, local_label_problem
from rocbuild.recipe.extends import MergeError, merge
from rocbuild.recipe.files import (
    SOURCE_FILE_ACCEPTED,
    TREE_PATH_ACCEPTED,
    find_patch_file,
    patch_dirs_for,
    tree_path_problem,
)
from rocbuild.recipe.model import (
    CHECKS,
    OUTPUTS,
    PATCHES,
    RUNPATHS,
    SCHEMA_VERSION,
    STEP_KINDS,
    STEPS,
    ArchList,
    CheckSpec,
    CodeObjects,
    Command,
    Conditional,
    Copy,
    Diff,
    ExtraSource,
    Import,
    Link,
    Option,
    Output,
    PatchSpec,
    Position,
    Recipe,
    Refusal,
    Remove,
    Replace,
    Requires,
    Run,
    Runpath,
    Shell,
    Source,
    StepKind,
    StepSpec,
    WheelContains,
)
from rocbuild.recipe.read import is_path, read_recipe_text, same_folder
from rocbuild.recipe.shapes import CONDITIONAL_KEYS, IDENT_RE, NAME_RE, ShapeReader, _show
from rocbuild.recipe.yamlpos import Mark, YMap
from rocbuild.source.spec import (
    FULL_SHA_RE,
    GIT_URLS_ACCEPTED,
    SDIST_ACCEPTED,
    SHA256_RE,
    check_ref,
    git_url_problem,
    sdist_problem,
)

# Finds the recipe an `extends: NAME` means, searching `beside` first; raises UsageError (with a
# "did you mean" hint) when there is none. The catalog provides the real one.
RecipeFinder = Callable[[str, Path], Path]
ChoiceT = TypeVar("ChoiceT", bound=str)

# The key tables of each mapping (key -> required), read from the model's classes (recipe/keys.py).
TOP_KEYS = keys.required(keys.TOP)
UNSUPPORTED_KEYS = keys.required(keys.UNSUPPORTED)
ARCH_LIST_KEYS = keys.required(keys.ARCH_LIST)
TREE_VERIFY_KINDS = ("command",)
SOURCE_KEYS = keys.required(keys.SOURCE)
EXTRA_SOURCE_KEYS = keys.required(keys.EXTRA_SOURCE)
GIT_ONLY_KEYS = ("ref", "commit", "submodules")
REQUIRES_KEYS = keys.required(keys.REQUIRES)
TORCH_FLAVOURS = ("rocm",)
OPTION_KEYS = keys.required(keys.OPTION)
BODY_KEYS = {kind: keys.required(section) for kind, section in {**keys.PATCH_KEYS, **keys.STEP_KEYS,
                                                                 **keys.CHECK_KEYS}.items()}
# The field each YAML key of a step's mapping fills (config-settings: config_settings).
STEP_FIELDS = {kind: {k: key.field for k, key in section.items()} for kind, section in keys.STEP_KEYS.items()}
STEP_BESIDE = tuple(keys.STEP_COMMON)
PATCH_BESIDE = tuple(keys.PATCH_COMMON)
VERIFY_BESIDE = tuple(keys.VERIFY_COMMON)
PATCH_CLASSES = {cls.KIND: cls for cls in PATCHES}
STEP_CLASSES = {cls.KIND: cls for cls in STEPS}
CHECK_CLASSES = {cls.KIND: cls for cls in CHECKS}
LIB_RE = re.compile(r"^lib[A-Za-z0-9_+.-]+$")
CMAKE_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
CMAKE_VAR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]*$")
CONFIG_KEY_RE = re.compile(r"^(?:--)?[A-Za-z0-9_][A-Za-z0-9_.-]*$")  # setuptools' own start with -- (--build-option)
MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
HEADER_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.+-]*)*$")


def load_recipe(path: str | Path, find_recipe: RecipeFinder | None = None) -> Recipe:
    path = Path(path)
    return load_recipe_text(read_recipe_text(path), path, find_recipe)


def load_recipe_text(text: str, path: str | Path, find_recipe: RecipeFinder | None = None) -> Recipe:
    return _Loader(text, Path(path), find_recipe or same_folder).load()


class _Loader(ShapeReader):
    """The sections of a recipe, read through the generic shape checks (recipe/shapes.py)."""

    def __init__(self, text: str, path: Path, find_recipe: RecipeFinder):
        super().__init__(text, path)
        self.find_recipe = find_recipe
        self.bases: list[tuple[Path, str]] = []

    # -- extends ------------------------------------------------------------

    def extend(self, data: YMap, chain: list[Path]) -> YMap:
        """Follow `extends:` down to a recipe that extends nothing, merging on the way back."""
        if "extends" not in data:
            return data
        mark = data.value_marks["extends"]
        name = self.string(data["extends"], "extends", mark)
        base_path = self.find_base(name, chain[-1], mark)
        if base_path.resolve() in [p.resolve() for p in chain]:
            cycle = " -> ".join(p.name for p in chain + [base_path])
            raise self.error("recipes extend each other in a circle", "extends", mark, value=name,
                             accepted=f"a recipe that does not lead back here ({cycle})")
        try:
            text = read_recipe_text(base_path)
        except RecipeError as exc:
            raise self.error(f"cannot read the recipe it extends ({base_path}): {exc.message}", "extends", mark,
                             value=name, accepted=exc.accepted) from None
        self.texts[str(base_path)] = text
        self.bases.append((base_path, text))
        base = self.parse(text, base_path)
        if not isinstance(base, YMap):
            raise self.error("the recipe it extends is not a YAML mapping", "extends", mark, value=name)
        base = self.extend(base, chain + [base_path])
        child = YMap(data)
        child.mark, child.key_marks, child.value_marks = data.mark, dict(data.key_marks), dict(data.value_marks)
        del child["extends"]
        try:
            return merge(base, child)
        except MergeError as exc:
            raise self.error(exc.message, exc.key, exc.mark, accepted=exc.accepted) from None

    def find_base(self, name: str, beside: Path, mark: Mark) -> Path:
        """A recipe of the same folder, any known recipe, or a path (relative to the extending file)
        to a recipe file inside a recipe folder: the finder decides, and refuses anything else."""
        try:
            return self.find_recipe(name, beside.parent)
        except UsageError as exc:
            if is_path(name):
                raise self.error(f"cannot extend {name!r}: {exc.message}", "extends", mark, value=name,
                                 accepted="a recipe name, or the path of a .yaml recipe inside this recipe's "
                                          "folder or another recipe folder") from None
            raise self.error(f"no recipe named {name!r} to extend", "extends", mark, value=name,
                             accepted="a recipe name (`rocbuild recipes`) or a path to a .yaml file",
                             suggestion=exc.hint.split("\n")[0] if exc.hint and "did you mean" in exc.hint
                             else None) from None

    # -- sections -----------------------------------------------------------

    def load(self) -> Recipe:
        data = self.parse(self.text, self.path)
        if not isinstance(data, YMap):
            raise self.error("a recipe is a YAML mapping", None, Mark(1, 1), value=_show(data),
                             accepted="keys " + ", ".join(TOP_KEYS))
        data = self.extend(data, [self.path])
        top = self.mapping(data, "", data.mark, TOP_KEYS)
        vm = top.value_marks

        schema = top["schema"]
        if schema != SCHEMA_VERSION or isinstance(schema, bool):
            raise self.error("unsupported schema version", "schema", vm["schema"], value=schema,
                             accepted=str(SCHEMA_VERSION))
        name = self.string(top["name"], "name", vm["name"])
        if not NAME_RE.match(name):
            raise self.error("invalid recipe name", "name", vm["name"], value=name,
                             accepted="lower-case letters, digits, '.', '_' and '-', starting with a letter or digit")
        version = self.string(top["version"], "version", vm["version"])
        try:
            Version(version)
        except InvalidVersion:
            raise self.error("not a PEP 440 version", "version", vm["version"], value=version,
                             accepted="a version such as 0.50.1 or 2.2.4.post1") from None

        options = self.options(top.get("options"), vm.get("options"))
        output = self.output(top, vm)
        steps = self.steps(top["steps"], vm["steps"], output) if "steps" in top else ()
        if not steps and output == "wheel":
            raise self.error("missing required key 'steps'" if "steps" not in top else
                             "a recipe needs at least one step", "steps", vm.get("steps", top.mark),
                             accepted=", ".join(STEP_KINDS) + " (a recipe with `output: tree` may have none)")
        verify = self.verify(top.get("verify"), vm.get("verify"))
        if output == "tree":
            for entry in verify:
                if entry.KIND not in TREE_VERIFY_KINDS:
                    raise self.error(f"a {entry.KIND} check needs a wheel; this recipe's output is a tree",
                                     entry.pos.key, Mark(entry.pos.line, entry.pos.column), value=entry.KIND,
                                     accepted="command: [...] (with expect:), run in the prepared tree")
        return Recipe(
            path=self.path,
            text=self.text,
            name=name,
            version=version,
            summary=self.string(top.get("summary", ""), "summary", vm.get("summary", top.mark)),
            homepage=self.string(top.get("homepage", ""), "homepage", vm.get("homepage", top.mark)),
            source=self.source(top["source"], vm["source"]),
            extra_sources=self.extra_sources(top.get("extra-sources"), vm.get("extra-sources")),
            requires=self.requires(top.get("requires"), vm.get("requires")),
            options=options,
            env=self.env_map(top["env"], "env", vm["env"]) if "env" in top else (),
            run_env=self.env_map(top["run-env"], "run-env", vm["run-env"]) if "run-env" in top else (),
            patches=self.patches(top.get("patches"), vm.get("patches")),
            steps=steps,
            verify=verify,
            local_version=self.local_version(top, vm),
            output=output,
            runpath=self.runpath(top, vm),
            unsupported=self.unsupported(top.get("unsupported"), vm.get("unsupported"),
                                         tuple(e.name for e in steps)),
            bases=tuple(self.bases),
            patch_dirs=tuple(self.patch_dirs()),
            positions=self.positions(top),
        )

    def positions(self, top: YMap) -> dict[str, Position]:
        out = {}
        if "local-version" in top:
            out["local-version"] = self.pos("local-version", top.value_marks["local-version"])
        source = top["source"]
        for key in ("ref", "commit"):
            if isinstance(source, YMap) and key in source:
                out[f"source.{key}"] = self.pos(f"source.{key}", source.value_marks[key])
        return out

    def unsupported(self, value: Any, mark: Mark | None, step_names: tuple[str, ...]) -> tuple[Refusal, ...]:
        """Combinations (of ROCm, options, targets) the recipe knows cannot build: each a `when:` and a
        `why:`, refused before anything is fetched; with `step:`, only builds that would run that step
        are (one stopped before it with --until is not)."""
        if value is None:
            return ()
        items = self.seq(value, "unsupported", mark or Mark(1, 1), "entries {when: TEMPLATE, why: TEXT}")
        out = []
        for i, item in enumerate(items):
            key, imark = f"unsupported[{i}]", items.item_marks[i]
            entry = self.mapping(item, key, imark, UNSUPPORTED_KEYS)
            why = self.string(entry["why"], f"{key}.why", entry.value_marks["why"])
            step = self.string(entry["step"], f"{key}.step", entry.value_marks["step"]) if "step" in entry else None
            if step is not None and step not in step_names:
                raise self.error("names no step of this recipe", f"{key}.step", entry.value_marks["step"],
                                 value=step, accepted=", ".join(step_names),
                                 suggestion=difflib.get_close_matches(step, step_names, n=1) or None)
            if ("when" in entry) == ("archs-not-in" in entry):
                raise self.error("needs exactly one of `when:` and `archs-not-in:`", key, imark,
                                 accepted="when: TEMPLATE (a combination that cannot build), or archs-not-in: "
                                          "{file: CMakeLists.txt, set: VARIABLE} (the source's own arch list)")
            if "archs-not-in" in entry and step is not None:
                raise self.error("`archs-not-in:` refuses the whole build; `step:` does not go with it",
                                 f"{key}.step", entry.value_marks["step"], value=step,
                                 accepted="archs-not-in: without step:, or a `when:` entry with it")
            listed = self.arch_list(entry["archs-not-in"], f"{key}.archs-not-in",
                                    entry.value_marks["archs-not-in"]) if "archs-not-in" in entry else None
            out.append(Refusal(when=self.when(entry, key), archs_not_in=listed, why=why, step=step,
                               pos=self.pos(key, imark), when_pos=self.when_at(entry, key)))
        return tuple(out)

    def arch_list(self, value: Any, key: str, mark: Mark) -> ArchList:
        """`archs-not-in: {file: PATH, set: VARIABLE}`: a file of the source tree and a CMake variable name."""
        m = self.mapping(value, key, mark, ARCH_LIST_KEYS)
        file = self.string(m["file"], f"{key}.file", m.value_marks["file"])
        if (problem := tree_path_problem(file)) is not None:
            raise self.error(problem, f"{key}.file", m.value_marks["file"], value=file, accepted=TREE_PATH_ACCEPTED)
        name = self.string(m["set"], f"{key}.set", m.value_marks["set"])
        if not CMAKE_NAME_RE.match(name):
            raise self.error("not a CMake variable name", f"{key}.set", m.value_marks["set"], value=name,
                             accepted="letters, digits and _ (HIP_SUPPORTED_ARCHS)")
        return ArchList(file=file, set_=name)

    def output(self, top: YMap, vm: dict[str, Any]) -> Output:
        return self.choice(top, vm, "output", OUTPUTS, "unknown output kind",
                           "wheel (the default: verified wheels in the wheelhouse) or tree "
                           "(a prepared, patched source tree)")

    def runpath(self, top: YMap, vm: dict[str, Any]) -> Runpath:
        return self.choice(top, vm, "runpath", RUNPATHS, "unknown runpath choice",
                           "as-built (the default: the wheel's libraries keep the RUNPATH the build gave "
                           "them) or relative (entries into the work folder become $ORIGIN-relative)")

    def choice(self, top: YMap, vm: dict[str, Any], key: str, choices: tuple[ChoiceT, ...], problem: str,
               accepted: str) -> ChoiceT:
        """A top-level key that takes one of `choices` (typed as the member it names); the first is its default."""
        if key not in top:
            return choices[0]
        value = self.string(top[key], key, vm[key])
        for choice in choices:
            if choice == value:
                return choice
        raise self.error(problem, key, vm[key], value=value, accepted=accepted,
                         suggestion=difflib.get_close_matches(value, choices, n=1) or None)

    def local_version(self, top: YMap, vm: dict[str, Any]) -> str | None:
        if "local-version" not in top:
            return None
        raw = top["local-version"]
        if raw is None:
            return ""
        value = self.tstring(raw, "local-version", vm["local-version"])
        problem = local_label_problem(value) if value and not templating.is_template(value) else None
        if problem is not None:
            raise self.error(problem, "local-version", vm["local-version"],
                             value=value, accepted=LOCAL_LABEL_ACCEPTED + ", or \"\" for none")
        return value

    def extra_sources(self, value: Any, mark: Mark | None) -> tuple[ExtraSource, ...]:
        if value is None:
            return ()
        if not isinstance(value, YMap):
            raise self.error("expected a mapping of source names", "extra-sources", mark, value=_show(value),
                             accepted="NAME: {git: URL, commit: ...} (or sdist:, path:), one per tree")
        out = []
        for name, body in value.items():
            key = f"extra-sources.{name}"
            if not isinstance(name, str) or not IDENT_RE.match(name):
                raise self.error("invalid source name", key, value.key_marks[name], value=name,
                                 accepted="letters, digits and _ (it is used as sources.NAME in templates)")
            src = self.source(body, value.value_marks[name], key, EXTRA_SOURCE_KEYS)
            fields = {f.name: getattr(src, f.name) for f in dataclasses.fields(Source)}
            out.append(ExtraSource(**fields, when=self.when(body, key), name=name,
                                   pos=self.pos(key, value.value_marks[name]), when_pos=self.when_at(body, key)))
        return tuple(out)

    def source(self, value: Any, mark: Mark, key: str = "source", allowed: dict[str, bool] | None = None) -> Source:
        src = self.mapping(value, key, mark, allowed or SOURCE_KEYS)
        vm = src.value_marks
        if sum(k in src for k in ("git", "path", "sdist")) != 1:
            raise self.error("give exactly one of git, path or sdist", key, mark, value=sorted(src),
                             accepted="git: URL (with ref/commit/submodules), path: a local folder, or "
                                      "sdist: NAME==VERSION (with sha256)")
        for only in GIT_ONLY_KEYS:
            if only in src and "git" not in src:
                raise self.error(f"{only} applies to git sources only", f"{key}.{only}", vm[only], value=src[only],
                                 accepted="ref, commit and submodules beside git:; sha256 beside sdist:")
        if "sha256" in src and "sdist" not in src:
            raise self.error("sha256 applies to sdist sources only", f"{key}.sha256", vm["sha256"],
                             value=src["sha256"], accepted="sha256 beside sdist: NAME==VERSION")
        if "sdist" in src:
            return self.sdist_source(src, vm, key)
        commit = None
        if "commit" in src:
            commit = self.tstring(src["commit"], f"{key}.commit", vm["commit"])
            if not templating.is_template(commit):
                commit = commit.lower()
            if not templating.is_template(commit) and not FULL_SHA_RE.match(commit):
                raise self.error("not a whole commit id", f"{key}.commit", vm["commit"], value=src["commit"],
                                 accepted="the commit's full 40 hexadecimal digits (an abbreviation can be "
                                          "matched by a crafted commit)")
        # ref and commit may be templates (e.g. picked by an option); they are rendered when planning.
        ref = self.tstring(src["ref"], f"{key}.ref", vm["ref"]) if "ref" in src else None
        if ref is not None and not templating.is_template(ref):
            try:
                check_ref(ref, f"{key}.ref")
            except UsageError as exc:
                raise self.error(exc.message, f"{key}.ref", vm["ref"], value=ref,
                                 accepted="a branch, tag or commit id, e.g. v0.28.1") from None
        git = self.string(src["git"], f"{key}.git", vm["git"]) if "git" in src else None
        if git is not None and (problem := git_url_problem(git)) is not None:
            raise self.error(problem, f"{key}.git", vm["git"], value=git, accepted=GIT_URLS_ACCEPTED)
        return Source(
            git=git,
            path=self.source_path(src, vm, key) if "path" in src else None,
            ref=ref,
            commit=commit,
            submodules=self.boolean(src["submodules"], f"{key}.submodules", vm["submodules"])
            if "submodules" in src else False,
        )

    def sdist_source(self, src: YMap, vm: dict[str, Any], key: str) -> Source:
        requirement = self.string(src["sdist"], f"{key}.sdist", vm["sdist"])
        if (problem := sdist_problem(requirement)) is not None:
            raise self.error(problem, f"{key}.sdist", vm["sdist"], value=requirement, accepted=SDIST_ACCEPTED)
        sha256 = None
        if "sha256" in src:
            sha256 = self.string(src["sha256"], f"{key}.sha256", vm["sha256"]).lower()
            if not SHA256_RE.match(sha256):
                raise self.error("not a sha256 digest", f"{key}.sha256", vm["sha256"], value=src["sha256"],
                                 accepted="64 hexadecimal digits, as `sha256sum` prints them")
        return Source(sdist=requirement, sha256=sha256)

    def source_path(self, src: YMap, vm: dict[str, Any], key: str) -> str:
        """Relative to the file that says it: a base recipe's folder stays its own when extended."""
        path = self.string(src["path"], f"{key}.path", vm["path"])
        written_in = vm["path"].file
        if written_in and Path(written_in) != self.path:
            return str(Path(written_in).parent / path)
        return path

    def requires(self, value: Any, mark: Mark | None) -> Requires:
        if value is None:
            return Requires()
        req = self.mapping(value, "requires", mark, REQUIRES_KEYS)
        vm = req.value_marks
        rocm = None
        if "rocm" in req:
            rocm = self.string(req["rocm"], "requires.rocm", vm["rocm"])
            try:
                SpecifierSet(rocm)
            except InvalidSpecifier:
                raise self.error("not a version specifier", "requires.rocm", vm["rocm"], value=rocm,
                                 accepted="a PEP 440 specifier such as '>=6.1' or '>=5.7,<7'") from None
        torch = self.torch_requirement(req["torch"], vm["torch"]) if "torch" in req else None
        tool_versions: dict[str, str] = {}
        return Requires(
            torch=torch,
            rocm=rocm,
            tools=self.names(req["tools"], "requires.tools", vm["tools"], versions=tool_versions)
            if "tools" in req else (),
            tool_versions=tuple(sorted(tool_versions.items())),
            python=self.names(req["python"], "requires.python", vm["python"], MODULE_RE,
                              "an importable module name such as setuptools or torch.utils") if "python" in req else (),
            cmake_packages=self.names(req["cmake-packages"], "requires.cmake-packages", vm["cmake-packages"])
            if "cmake-packages" in req else (),
            headers=self.names(req["headers"], "requires.headers", vm["headers"], HEADER_RE,
                               "a header path under the ROCm include folder, e.g. roctracer/roctx.h")
            if "headers" in req else (),
            libraries=self.names(req["libraries"], "requires.libraries", vm["libraries"])
            if "libraries" in req else (),
            openmp=self.openmp(req["openmp"], vm["openmp"]) if "openmp" in req else None,
            memory_per_job=self.size(req["memory-per-job"], "requires.memory-per-job", vm["memory-per-job"])
            if "memory-per-job" in req else None,
        )

    def size(self, raw: Any, key: str, mark: Mark) -> int:
        from rocbuild.detect.jobs import SIZE_ACCEPTED, parse_size

        text = self.string(raw, key, mark)
        size = parse_size(text)
        if size is None or size <= 0:
            raise self.error("not a size", key, mark, value=text, accepted=SIZE_ACCEPTED)
        return size

    def openmp(self, raw: Any, mark: Mark) -> str:
        value = self.string(raw, "requires.openmp", mark)
        if value != "hip":
            raise self.error("unknown OpenMP requirement", "requires.openmp", mark, value=value,
                             accepted="hip (OpenMP for the clang the HIP compiler is: omp.h and libomp)")
        return value

    def torch_requirement(self, raw: Any, mark: Mark) -> Conditional:
        """`torch: rocm`, or `torch: {value: rocm, when: TEMPLATE}` where only some options need torch."""
        key, when, when_pos = "requires.torch", None, None
        if isinstance(raw, YMap):
            self.mapping(raw, key, mark, CONDITIONAL_KEYS)
            when, when_pos = self.when(raw, key), self.when_at(raw, key)
            mark, raw, key = raw.value_marks["value"], raw["value"], "requires.torch.value"
        flavour = self.string(raw, key, mark)
        if flavour not in TORCH_FLAVOURS:
            raise self.error("unknown torch flavour", key, mark, value=flavour,
                             accepted="rocm (the target python's torch must be a ROCm build), or "
                                      "{value: rocm, when: TEMPLATE}")
        return Conditional(flavour, when, self.pos(key, mark), when_pos)

    def options(self, value: Any, mark: Mark | None) -> tuple[Option, ...]:
        if value is None:
            return ()
        if not isinstance(value, YMap):
            raise self.error("expected a mapping of option names", "options", mark, value=_show(value),
                             accepted="NAME: {default: ..., choices: [...], help: ...}")
        out = []
        for name, body in value.items():
            key = f"options.{name}"
            if not isinstance(name, str) or not IDENT_RE.match(name):
                raise self.error("invalid option name", key, value.key_marks[name], value=name,
                                 accepted="letters, digits and _ (it is used as options.NAME in templates)")
            body = self.mapping(body, key, value.value_marks[name], OPTION_KEYS)
            vm = body.value_marks
            multi = self.boolean(body["multi"], f"{key}.multi", vm["multi"]) if "multi" in body else False
            choices = None
            if "choices" in body:
                items = self.seq(body["choices"], f"{key}.choices", vm["choices"], "strings")
                choices = tuple(self.string(c, f"{key}.choices[{i}]", items.item_marks[i])
                                for i, c in enumerate(items))
            default = self.string(body["default"], f"{key}.default", vm["default"])
            parts = tuple(p.strip() for p in default.split(",") if p.strip()) if multi else (default,)
            if choices is not None:
                for part in parts:
                    if part not in choices:
                        raise self.error("default is not one of the choices", f"{key}.default", vm["default"],
                                         value=part, accepted=", ".join(choices))
            out.append(Option(
                name=name,
                default=parts if multi else default,
                choices=choices,
                multi=multi,
                help=self.string(body.get("help", ""), f"{key}.help", vm.get("help", body.mark)),
            ))
        return tuple(out)

    def patches(self, value: Any, mark: Mark | None) -> tuple[PatchSpec, ...]:
        if value is None:
            return ()
        items = self.seq(value, "patches", mark, "patch entries")
        out: list[PatchSpec] = []
        for i, item in enumerate(items):
            key, imark = f"patches[{i}]", items.item_marks[i]
            kind, entry = self.entry_kind(item, key, imark, tuple(PATCH_CLASSES), PATCH_BESIDE)
            bkey, bmark = f"{key}.{kind}", entry.value_marks[kind]
            placed: dict[str, Any] = {"when": self.when(entry, key), "pos": self.pos(key, imark),
                                      "when_pos": self.when_at(entry, key)}
            if kind == "diff":
                out.append(Diff(file=self.diff_file(entry[kind], bkey, bmark), **placed))
                continue
            if kind == "remove":
                out.append(Remove(file=self.tree_path(entry[kind], bkey, bmark), **placed))
                continue
            m = self.mapping(entry[kind], bkey, bmark, BODY_KEYS[kind])
            vm = m.value_marks
            if kind == "replace":
                out.append(self.replace(m, bkey, placed))
            elif kind == "copy":
                out.append(Copy(from_=self.source_file(m["from"], f"{bkey}.from", vm["from"]),
                                to=self.tree_path(m["to"], f"{bkey}.to", vm["to"]), **placed))
            else:
                out.append(Link(from_=self.source_file(m["from"], f"{bkey}.from", vm["from"]),
                                into=self.tree_path(m["into"], f"{bkey}.into", vm["into"]), **placed))
        return tuple(out)

    def diff_file(self, raw: Any, key: str, mark: Mark) -> str:
        name = self.string(raw, key, mark)
        if templating.is_template(name):
            raise self.error("a diff file name cannot be a template", key, mark, value=name,
                             accepted="a path under patches/, e.g. horovod/0001-fix.patch")
        if self.find_patch(name) is None:
            raise self.error("patch file not found", key, mark, value=name,
                             accepted="a file under " + " or ".join(str(d) for d in self.patch_dirs()))
        return name

    def replace(self, m: YMap, bkey: str, placed: dict[str, Any]) -> Replace:
        vm = m.value_marks
        find = self.tstring(m["find"], f"{bkey}.find", vm["find"])
        regex = self.boolean(m["regex"], f"{bkey}.regex", vm["regex"]) if "regex" in m else False
        count = None
        if "count" in m:
            count = m["count"]
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise self.error("expected a positive whole number", f"{bkey}.count", vm["count"],
                                 value=count, accepted="1, 2, ... (how many matches are expected)")
        if regex and not templating.is_template(find):
            try:
                re.compile(find, re.MULTILINE)
            except re.error as exc:
                raise self.error(f"invalid regular expression: {exc}", f"{bkey}.find", vm["find"],
                                 value=find, accepted="a Python regular expression") from None
        if not find:
            raise self.error("find is empty", f"{bkey}.find", vm["find"], accepted="a non-empty string")
        return Replace(file=self.tree_path(m["file"], f"{bkey}.file", vm["file"]), find=find,
                       with_=self.tstring(m["with"], f"{bkey}.with", vm["with"]), regex=regex, count=count, **placed)

    def tree_path(self, value: Any, key: str, mark: Mark) -> str:
        """A path in the source tree that a patch changes: relative, and staying inside the tree."""
        text = self.tstring(value, key, mark)
        if not templating.is_template(text) and (problem := tree_path_problem(text)) is not None:
            raise self.error(problem, key, mark, value=text, accepted=TREE_PATH_ACCEPTED)
        return text

    def source_file(self, value: Any, key: str, mark: Mark) -> str:
        """What copy/link read: relative to the source tree (and inside it), or an absolute path that
        the plan checks against the ROCm prefix and the recipe's folders."""
        text = self.tstring(value, key, mark)
        if not templating.is_template(text) and not os.path.isabs(text) and tree_path_problem(text) is not None:
            raise self.error("leaves the source tree", key, mark, value=text, accepted=SOURCE_FILE_ACCEPTED)
        return text

    def patch_dirs(self) -> list[Path]:
        """Beside this recipe first, then beside each recipe it extends, then the built-in patches."""
        dirs: list[Path] = []
        for path in [self.path] + [p for p, _ in self.bases]:
            dirs += [d for d in patch_dirs_for(path) if d not in dirs]
        return dirs

    def find_patch(self, name: str) -> Path | None:
        return find_patch_file(name, self.patch_dirs())

    def steps(self, value: Any, mark: Mark, output: str) -> tuple[StepSpec, ...]:
        items = self.seq(value, "steps", mark, "step entries")
        out = []
        names: set[str] = set()
        for i, item in enumerate(items):
            key, imark = f"steps[{i}]", items.item_marks[i]
            kind, entry = self.entry_kind(item, key, imark, tuple(STEP_CLASSES), STEP_BESIDE)
            if kind == "wheel" and output == "tree":
                raise self.error("a wheel step in a recipe whose output is a tree", f"{key}.wheel",
                                 entry.key_marks["wheel"], value="wheel",
                                 accepted="cmake, cmake-build, make, run, shell (or drop `output: tree`)")
            name = self.step_name(entry, key, kind, names)
            names.add(name)
            cwd = self.tstring(entry["cwd"], f"{key}.cwd", entry.value_marks["cwd"]) if "cwd" in entry else None
            env = self.env_map(entry["env"], f"{key}.env", entry.value_marks["env"]) if "env" in entry else ()
            network = self.boolean(entry["network"], f"{key}.network", entry.value_marks["network"]) \
                if "network" in entry else False
            placed = {"name": name, "env": env, "cwd": cwd, "when": self.when(entry, key), "network": network,
                      "pos": self.pos(key, imark), "when_pos": self.when_at(entry, key)}
            out.append(self.step(kind, entry[kind], f"{key}.{kind}", entry.value_marks[kind], placed))
        return tuple(out)

    def step_name(self, entry: YMap, key: str, kind: str, taken: set[str]) -> str:
        """The step's `name:`, else its kind (numbered when the kind comes again); unique in the recipe."""
        name = None
        if "name" in entry:
            name = self.string(entry["name"], f"{key}.name", entry.value_marks["name"])
            if not NAME_RE.match(name):
                raise self.error("invalid step name", f"{key}.name", entry.value_marks["name"], value=name,
                                 accepted="lower-case letters, digits, '.', '_' and '-'")
        name = name or _unique(kind, taken)
        if name in taken:
            raise self.error("duplicate step name", f"{key}.name", entry.value_marks.get("name", entry.mark),
                             value=name, accepted="a name not used by another step")
        return name

    def step(self, kind: StepKind, body: Any, key: str, mark: Mark, placed: dict[str, Any]) -> StepSpec:
        if kind == "run":
            return Run(argv=self.argv(body, key, mark), **placed)
        if kind == "shell":
            script = self.tstring(body, key, mark)
            try:
                templating.check_shell_template(script)
            except templating.ShellQuoting as exc:
                raise self.error(str(exc), key, mark, value=script, accepted="${{ ... }} as a word of its own "
                                 "outside quotes, e.g. echo ${{ options.msg }}") from None
            return Shell(script=script, **placed)
        if body is None:
            body = YMap()
            body.mark, body.key_marks, body.value_marks = mark, {}, {}
        m = self.mapping(body, key, mark, BODY_KEYS[kind])
        fields = {STEP_FIELDS[kind][name]: self.step_value(name, raw, f"{key}.{name}", m.value_marks[name])
                  for name, raw in m.items()}
        return STEP_CLASSES[kind](**fields, **placed)

    def step_value(self, name: str, raw: Any, k: str, mark: Mark) -> Any:
        """One key of a cmake, cmake-build, make or wheel step, checked for what it holds."""
        if name == "config-settings":
            return tuple(self.string_map(raw, k, mark, CONFIG_KEY_RE, "build backend settings",
                                         "KEY: value (passed as --config-settings=KEY=value)",
                                         "letters, digits, _ . -, after a leading -- for setuptools' "
                                         "(e.g. cmake.define.FOO, --build-option)").items())
        if name == "defines":
            return tuple(self.string_map(raw, k, mark, CMAKE_VAR_RE, "CMake variables", "NAME: value",
                                         "letters, digits, _ . : -").items())
        if name == "args":
            return self.argv(raw, k, mark)
        if name == "jobs" and (isinstance(raw, bool) or not (isinstance(raw, int) and raw > 0 or isinstance(raw, str))):
            raise self.error("expected a positive whole number", k, mark, value=raw,
                             accepted="1, 2, ... or a template such as ${{ jobs }}")
        return self.tstring(raw, k, mark)

    def verify(self, value: Any, mark: Mark | None) -> tuple[CheckSpec, ...]:
        if value is None:
            return ()
        items = self.seq(value, "verify", mark, "verify entries")
        out = []
        for i, item in enumerate(items):
            key, imark = f"verify[{i}]", items.item_marks[i]
            kind, entry = self.entry_kind(item, key, imark, tuple(CHECK_CLASSES), VERIFY_BESIDE)
            if "expect" in entry and kind != "command":
                raise self.error("expect only goes with command", f"{key}.expect", entry.key_marks["expect"],
                                 value="expect", accepted="command: [...] with expect: [regex, ...]")
            env = self.env_map(entry["env"], f"{key}.env", entry.value_marks["env"]) if "env" in entry else ()
            name = self.string(entry["name"], f"{key}.name", entry.value_marks["name"]) if "name" in entry else None
            placed = {"name": name or f"verify-{i + 1}", "env": env, "when": self.when(entry, key),
                      "pos": self.pos(key, imark), "when_pos": self.when_at(entry, key)}
            out.append(self.check(kind, entry, key, placed))
        return tuple(out)

    def check(self, kind: str, entry: YMap, key: str, placed: dict[str, Any]) -> CheckSpec:
        k, mark, raw = f"{key}.{kind}", entry.value_marks[kind], entry[kind]
        if kind == "command":
            return Command(argv=self.argv(raw, k, mark), expect=self.expect(entry, key), **placed)
        if kind == "wheel-contains":
            return WheelContains(glob=self.tstring(raw, k, mark), **placed)
        if kind == "import":
            module = self.tstring(raw, k, mark)
            if not templating.is_template(module) and not MODULE_RE.match(module):
                raise self.error("not a module name", k, mark, value=module, accepted="a dotted name such as pkg.sub")
            return Import(module=module, **placed)
        # code-objects: true/empty (the build's archs, every ELF), {archs: [...], files: [globs]}, or
        # false: the wheel has no device code of its own (a wrapper over rocBLAS, say); CUDA is still checked.
        if raw is None or raw is True or raw is False:
            return CodeObjects(required=raw is not False, **placed)
        m = self.mapping(raw, k, mark, BODY_KEYS[kind])
        archs = None
        if "archs" in m:
            seq = self.seq(m["archs"], f"{k}.archs", m.value_marks["archs"], "gfx targets")
            archs = tuple(self.tstring(a, f"{k}.archs[{j}]", seq.item_marks[j]) for j, a in enumerate(seq))
        return CodeObjects(archs=archs, files=self.globs(m, k), links=self.links(m, k), **placed)

    def globs(self, m: YMap, k: str) -> tuple[str, ...]:
        if "files" not in m:
            return ()
        fv, fm = m["files"], m.value_marks["files"]
        if isinstance(fv, str):
            return (self.tstring(fv, f"{k}.files", fm),)
        seq = self.seq(fv, f"{k}.files", fm, "globs of paths inside the wheel")
        return tuple(self.tstring(g, f"{k}.files[{j}]", seq.item_marks[j]) for j, g in enumerate(seq))

    def links(self, m: YMap, k: str) -> tuple[str, ...]:
        if "links" not in m:
            return ()
        links: tuple[str, ...] = ()
        seq = self.seq(m["links"], f"{k}.links", m.value_marks["links"], "library names such as libamdhip64")
        for j, lib in enumerate(seq):
            lib = self.string(lib, f"{k}.links[{j}]", seq.item_marks[j])
            if not LIB_RE.match(lib):
                raise self.error("not a library name", f"{k}.links[{j}]", seq.item_marks[j], value=lib,
                                 accepted="a shared library name without .so, e.g. libamdhip64 or libc10_hip")
            links += (lib,)
        return links

    def expect(self, entry: YMap, key: str) -> tuple[str, ...]:
        if "expect" not in entry:
            return ()
        ekey, emark = f"{key}.expect", entry.value_marks["expect"]
        items = self.seq(entry["expect"], ekey, emark, "regular expressions")
        pats = []
        for j, pat in enumerate(items):
            pk, pm = f"{ekey}[{j}]", items.item_marks[j]
            pat = self.tstring(pat, pk, pm)
            if not templating.is_template(pat):
                try:
                    re.compile(pat, re.MULTILINE)
                except re.error as exc:
                    raise self.error(f"invalid regular expression: {exc}", pk, pm, value=pat,
                                     accepted="a Python regular expression") from None
            pats.append(pat)
        return tuple(pats)


def _unique(kind: str, taken: set[str]) -> str:
    if kind not in taken:
        return kind
    n = 2
    while f"{kind}-{n}" in taken:
        n += 1
    return f"{kind}-{n}"


