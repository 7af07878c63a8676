"""The recipe file format (schema 1) as key tables, read from the model's classes (recipe/model.py, with
recipe/fields.py): every mapping's keys, whether each is required, what it means and the shape of its
value. The loader takes its key tables from here (recipe/load.py), the JSON Schema editors check recipes
with is generated from here (recipe/schema.py), and so are the reference's field lists
(`rocbuild recipes schema --reference`): one source of truth, the classes."""

from __future__ import annotations

from rocbuild.recipe.fields import (
    CONDITIONAL_VALUE,
    NAMED,
    VERSIONED,
    Key,
    keys_of,
    kind_keys,
    obj,
    required,
)
from rocbuild.recipe.model import (
    CHECKS,
    PATCHES,
    SCHEMA_VERSION,
    STEPS,
    ArchList,
    CheckEntry,
    ExtraSource,
    Option,
    PatchEntry,
    Recipe,
    Refusal,
    Requires,
    Source,
    StepEntry,
)

__all__ = ["CONDITIONAL_VALUE", "NAMED", "VERSIONED", "Key", "obj", "required"]

Section = dict[str, Key]

SOURCE: Section = keys_of(Source)
EXTRA_SOURCE: Section = keys_of(ExtraSource)
REQUIRES: Section = keys_of(Requires)
OPTION: Section = keys_of(Option)
UNSUPPORTED: Section = keys_of(Refusal)
ARCH_LIST: Section = keys_of(ArchList)
# Each entry kind's own keys (inside its mapping), by kind.
PATCH_KEYS: dict[str, Section] = {cls.KIND: keys_of(cls) for cls in PATCHES}
STEP_KEYS: dict[str, Section] = {cls.KIND: keys_of(cls) for cls in STEPS}
CHECK_KEYS: dict[str, Section] = {cls.KIND: keys_of(cls) for cls in CHECKS}
# The kind keys, and the keys every entry of a list takes beside its kind key.
PATCH_BODIES: Section = kind_keys(PATCHES)
STEP_BODIES: Section = kind_keys(STEPS)
VERIFY_BODIES: Section = kind_keys(CHECKS)
PATCH_COMMON: Section = keys_of(PatchEntry, "beside")
STEP_COMMON: Section = keys_of(StepEntry, "beside")
# `expect:` goes beside `command:` only; the loader says so when it is beside another kind.
VERIFY_COMMON: Section = {**keys_of(CheckEntry, "beside"), **{k: v for cls in CHECKS
                                                              for k, v in keys_of(cls, "beside").items()}}
# The keys of the file format itself, which the loaded Recipe does not keep: its version, and what it extends.
FORMAT: Section = {
    "schema": Key("schema", True, "", {"const": SCHEMA_VERSION}, fixed_doc="the recipe format's version"),
    "extends": Key("extends", False, "", {"type": ["string", "number"]},
                   fixed_doc="another recipe (by name or path) this one changes"),
}
TOP: Section = {"schema": FORMAT["schema"], **keys_of(Recipe), "extends": FORMAT["extends"]}
