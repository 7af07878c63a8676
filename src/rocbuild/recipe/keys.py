"""The recipe file format (schema 1) as data: every mapping's keys, whether each is required, what it
means and the shape of its value. The loader takes its key tables from here (recipe/load.py), and the
JSON Schema editors check recipes with is generated from here (recipe/schema.py): one source of truth.

A shape is a JSON Schema fragment for the key's value; the loader's own checks go further (templates,
PEP 440 versions, paths that stay in the tree) and say where a value is wrong and what would do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rocbuild.recipe.model import SCHEMA_VERSION

Shape = dict[str, Any]


@dataclass(frozen=True)
class Key:
    required: bool
    doc: str
    shape: Shape


Section = dict[str, Key]


def required(section: Section) -> dict[str, bool]:
    """The loader's form of a section: key -> required."""
    return {name: key.required for name, key in section.items()}


def _opt(doc: str, shape: Shape) -> Key:
    return Key(False, doc, shape)


def _req(doc: str, shape: Shape) -> Key:
    return Key(True, doc, shape)


def obj(section: Section, doc: str = "") -> Shape:
    """A mapping of exactly the section's keys."""
    shape: Shape = {"type": "object", "additionalProperties": False,
                    "properties": {k: {**v.shape, "description": v.doc} for k, v in section.items()}}
    needed = [k for k, v in section.items() if v.required]
    if needed:
        shape["required"] = needed
    if doc:
        shape["description"] = doc
    return shape


# Leaf shapes. A recipe's strings may hold ${{ ... }} templates; numbers are read as written (1.10 stays 1.10).
TEXT: Shape = {"type": ["string", "number"]}
WHEN: Shape = {"type": ["string", "boolean"]}
FLAG: Shape = {"type": "boolean"}
TEXTS: Shape = {"type": "array", "items": TEXT}
ARGV: Shape = {"type": "array", "items": TEXT, "minItems": 1}
POSITIVE: Shape = {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "string"}]}
NAME_PATTERN = "^[a-z0-9][a-z0-9._-]*$"
ENV_NAME_PATTERN = "^[A-Za-z_][A-Za-z0-9_]*$"
CONDITIONAL_VALUE: Section = {"value": _req("the value", TEXT), "when": _opt("applies when this renders true", WHEN)}
ENV: Shape = {"type": "object", "propertyNames": {"pattern": ENV_NAME_PATTERN},
              "additionalProperties": {"anyOf": [TEXT, obj(CONDITIONAL_VALUE)]}}
NAMED: Section = {"name": _req("the name", TEXT), "when": _opt("needed when this renders true", WHEN)}
VERSIONED: Section = {**NAMED, "version": _opt("a PEP 440 specifier its `--version` must satisfy", TEXT)}


def names(section: Section) -> Shape:
    return {"type": "array", "items": {"anyOf": [TEXT, obj(section)]}}


SOURCE: Section = {
    "git": _opt("a git URL (https, ssh, git, file) or an absolute path", TEXT),
    "path": _opt("a local folder, relative to the recipe file: copied, never modified", TEXT),
    "sdist": _opt("NAME==VERSION: that release's sdist from the package index", TEXT),
    "ref": _opt("git: the branch, tag or commit to build", TEXT),
    "commit": _opt("git: the whole commit id the ref must resolve to", TEXT),
    "submodules": _opt("git: check out submodules recursively", FLAG),
    "sha256": _opt("sdist: the archive's sha256", TEXT),
}
REQUIRES: Section = {
    "rocm": _opt("a PEP 440 specifier the ROCm version must satisfy, e.g. >=6.1", TEXT),
    "tools": _opt("programs that must be on PATH", names(VERSIONED)),
    "python": _opt("modules the build imports (installed into the build environment)", names(NAMED)),
    "cmake-packages": _opt("CMake config packages that must be found under the ROCm prefix", names(NAMED)),
    "headers": _opt("headers of ROCm components without a CMake package, under the ROCm include folder "
                    "(e.g. roctracer/roctx.h)", names(NAMED)),
    "libraries": _opt("shared libraries of ROCm components without a CMake package, by name (roctx64 is "
                      "libroctx64.so)", names(NAMED)),
    "openmp": _opt("hip: OpenMP (omp.h, libomp) for the HIP compiler's clang, for host code it compiles",
                   {"const": "hip"}),
    "torch": _opt("rocm: the target python's torch must be a ROCm build",
                  {"anyOf": [{"const": "rocm"}, obj({"value": _req("rocm", {"const": "rocm"}),
                                                     "when": _opt("needed when this renders true", WHEN)})]}),
}
OPTION: Section = {
    "default": _req("the value when no --set NAME=VALUE is given", TEXT),
    "choices": _opt("the values accepted", TEXTS),
    "multi": _opt("comma-separated values, each one of the choices; renders as a list", FLAG),
    "help": _opt("one line for `rocbuild plan` and --set errors", TEXT),
}
UNSUPPORTED: Section = {
    "when": _req("the combination (ROCm, options, targets) that cannot build", WHEN),
    "why": _req("the reason, shown when the build is refused", TEXT),
    "step": _opt("refuse only builds that would run this step", TEXT),
}
REPLACE: Section = {
    "file": _req("the file in the source tree", TEXT),
    "find": _req("the text (or regex) to find", TEXT),
    "with": _req("what replaces it", TEXT),
    "count": _opt("how many matches are expected (0 matches that are not already replaced is an error)",
                  {"type": "integer", "minimum": 1}),
    "regex": _opt("find is a Python regular expression", FLAG),
}
COPY: Section = {"from": _req("a file in the tree, the ROCm prefix or the recipe's folders", TEXT),
                 "to": _req("its place in the source tree", TEXT)}
LINK: Section = {"from": _req("a glob in the tree, the ROCm prefix or the recipe's folders", TEXT),
                 "into": _req("a folder in the source tree", TEXT)}
CMAKE: Section = {
    "source": _opt("the source folder (default: the tree)", TEXT),
    "build": _opt("the build folder (default: the work folder's build/)", TEXT),
    "defines": _opt("-DNAME=value for each entry; YAML booleans become ON/OFF",
                    {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}}),
    "generator": _opt("-G", TEXT),
    "args": _opt("more arguments", ARGV),
}
CMAKE_BUILD: Section = {
    "dir": _opt("the build folder", TEXT), "target": _opt("--target", TEXT),
    "jobs": _opt("--parallel (default: the host's jobs)", POSITIVE), "config": _opt("--config", TEXT),
}
MAKE: Section = {
    "dir": _opt("the folder make runs in (-C)", TEXT), "target": _opt("the make target", TEXT),
    "args": _opt("more arguments", ARGV), "jobs": _opt("-j (default: the host's jobs)", POSITIVE),
}
WHEEL: Section = {
    "dir": _opt("the project folder (default: the tree)", TEXT),
    "args": _opt("more arguments for pip wheel", ARGV),
    "config-settings": _opt("--config-settings=KEY=value for each entry",
                            {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}}),
}
CODE_OBJECTS: Section = {
    "archs": _opt("the gfx targets required (default: the build's)", TEXTS),
    "files": _opt("globs of wheel paths that must carry device code", {"anyOf": [TEXT, TEXTS]}),
    "links": _opt("libraries those files must need (DT_NEEDED), e.g. libamdhip64",
                  {"type": "array", "items": {"type": "string", "pattern": "^lib[A-Za-z0-9_+.-]+$"}}),
}
STEP_BODIES: dict[str, Key] = {
    "cmake": _req("configure with CMake (CMAKE_HIP_COMPILER and its ROCm root are added)", obj(CMAKE)),
    "cmake-build": _req("cmake --build", {"anyOf": [{"type": "null"}, obj(CMAKE_BUILD)]}),
    "make": _req("make -C DIR -jN", {"anyOf": [{"type": "null"}, obj(MAKE)]}),
    "run": _req("a command as an argv list (python means the target python)", ARGV),
    "shell": _req("a bash script, shown in plan; template values are passed as variables", TEXT),
    "wheel": _req("pip wheel --no-deps --no-build-isolation, in the build environment",
                  {"anyOf": [{"type": "null"}, obj(WHEEL)]}),
}
PATCH_BODIES: dict[str, Key] = {
    "diff": _req("a patch file under patches/ (beside the recipe, its parent, or rocbuild's own)", TEXT),
    "replace": _req("replace text in a file of the tree", obj(REPLACE)),
    "link": _req("symlink files into a folder of the tree (replacing earlier links)", obj(LINK)),
    "copy": _req("copy a file into the tree (the original is only read)", obj(COPY)),
}
VERIFY_BODIES: dict[str, Key] = {
    "command": _req("run a command from the scratch install of the wheels", ARGV),
    "wheel-contains": _req("a glob that some path in the wheel must match", TEXT),
    "code-objects": _req("device code for the archs (true), in named files, or false: none of its own",
                         {"anyOf": [{"type": ["boolean", "null"]}, obj(CODE_OBJECTS)]}),
    "import": _req("import this module from the scratch install (skipped without a usable GPU)", TEXT),
}
STEP_COMMON: Section = {
    "when": _opt("run only when this renders true", WHEN),
    "name": _opt("the step's name (--until NAME), lower-case", {"type": "string", "pattern": NAME_PATTERN}),
    "env": _opt("environment for this step", ENV),
    "cwd": _opt("the folder it runs in, relative to the tree", TEXT),
}
PATCH_COMMON: Section = {"when": _opt("apply only when this renders true", WHEN)}
VERIFY_COMMON: Section = {
    "expect": _opt("command: regular expressions its output must match", TEXTS),
    "when": _opt("check only when this renders true", WHEN),
    "env": _opt("environment for the check", ENV),
    "name": _opt("the check's name", TEXT),
}


def entries(bodies: dict[str, Key], common: Section) -> Shape:
    """A list of entries, each a mapping with exactly one kind key and the keys every kind takes."""
    return {"type": "array", "items": {"oneOf": [obj({kind: body, **common}) for kind, body in bodies.items()]}}


TOP: Section = {
    "schema": _req("the recipe format's version", {"const": SCHEMA_VERSION}),
    "name": _req("the recipe's name: lower-case letters, digits, '.', '_' and '-'",
                 {"type": "string", "pattern": NAME_PATTERN}),
    "version": _req("the PEP 440 version this recipe builds", TEXT),
    "summary": _opt("one line saying what it builds", TEXT),
    "homepage": _opt("the project's home", TEXT),
    "source": _req("where the source tree comes from: exactly one of git, path and sdist",
                   {**obj(SOURCE), "oneOf": [{"required": ["git"]}, {"required": ["path"]}, {"required": ["sdist"]}]}),
    "requires": _opt("what the host must provide, checked before anything runs", obj(REQUIRES)),
    "options": _opt("knobs set with --set NAME=VALUE, seen as options.NAME in templates",
                    {"type": "object", "propertyNames": {"pattern": ENV_NAME_PATTERN},
                     "additionalProperties": obj(OPTION)}),
    "env": _opt("environment for every step (a value may be {value, when})", ENV),
    "patches": _opt("changes to the source tree, applied after every fresh checkout",
                    entries(PATCH_BODIES, PATCH_COMMON)),
    "steps": _opt("the build, in order (required unless output is tree)", entries(STEP_BODIES, STEP_COMMON)),
    "verify": _opt("checks of the built wheels, after the built-in device-code check",
                   entries(VERIFY_BODIES, VERIFY_COMMON)),
    "local-version": _opt("the PEP 440 local label of the wheels (default rocmX.Y; empty for none)",
                          {"type": ["string", "null"]}),
    "output": _opt("wheel (verified wheels) or tree (a prepared source tree)", {"enum": ["wheel", "tree"]}),
    "runpath": _opt("as-built, or relative: RUNPATH entries into the work folder become $ORIGIN-relative",
                    {"enum": ["as-built", "relative"]}),
    "extends": _opt("another recipe (by name or path) this one changes", TEXT),
    "unsupported": _opt("combinations that cannot build, refused before anything runs",
                        {"type": "array", "items": obj(UNSUPPORTED)}),
}
