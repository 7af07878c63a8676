"""The JSON Schema of recipe files, generated from the file format's declaration (recipe/keys.py), so
editors complete and check recipes as people share them. Shipped as docs/recipe.schema.json (in the
wheel: rocbuild/data/recipe.schema.json); `rocbuild recipes schema` prints it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rocbuild.recipe import keys
from rocbuild.recipe.model import SCHEMA_VERSION

SCHEMA_FILE = "recipe.schema.json"


def recipe_schema() -> dict[str, Any]:
    """Draft 2020-12. A recipe with `extends:` holds only changes to another (keys may end in `+` to
    append), so it is checked for its top-level keys only; `rocbuild recipes lint` checks the merge."""
    full = keys.obj(keys.TOP)
    needed = full.pop("required")
    change_keys = [*keys.TOP, *(f"{k}+" for k in keys.TOP)]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"rocbuild-recipe-{SCHEMA_VERSION}.schema.json",
        "title": f"rocbuild recipe (schema {SCHEMA_VERSION})",
        "description": "A recipe that builds a ROCm-native Python extension with rocbuild. Templates "
                       "(${{ ... }}) may stand in any string; `rocbuild recipes lint FILE` checks the rest.",
        "type": "object",
        "if": {"required": ["extends"]},
        "then": {"propertyNames": {"enum": change_keys}},
        "else": {
            **full,
            "required": needed,
            # A recipe whose output is a prepared tree may have no steps; any other needs them.
            "if": {"properties": {"output": {"const": "tree"}}, "required": ["output"]},
            "else": {"required": ["steps"]},
        },
    }


def schema_text() -> str:
    return json.dumps(recipe_schema(), indent=2) + "\n"


def schema_file() -> Path:
    """The shipped copy: inside the installed package, else in this checkout's docs/."""
    here = Path(__file__).resolve()
    packaged = here.parent.parent / "data" / SCHEMA_FILE
    return packaged if packaged.is_file() else here.parents[3] / "docs" / SCHEMA_FILE
