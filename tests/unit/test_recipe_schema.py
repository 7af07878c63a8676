"""The recipe JSON Schema: generated from the file format's declaration, shipped as the committed copy,
and in agreement with the loader on real and broken recipes."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

import rocbuild.recipe.keys as keys
from rocbuild.draft.starter import starter_recipe
from rocbuild.recipe.load import load_recipe_text
from rocbuild.recipe.model import PATCH_KINDS, STEP_KINDS, VERIFY_KINDS
from rocbuild.recipe.schema import recipe_schema, schema_file, schema_text

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted((REPO / "recipes").glob("*.yaml"))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = recipe_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_shipped_schema_is_the_generated_one():
    assert schema_file().read_text() == schema_text(), "run: rocbuild recipes schema -o docs/recipe.schema.json"


def test_every_entry_kind_of_the_model_is_declared():
    assert tuple(keys.STEP_BODIES) == STEP_KINDS
    assert tuple(keys.PATCH_BODIES) == PATCH_KINDS
    assert tuple(keys.VERIFY_BODIES) == VERIFY_KINDS


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_recipes_validate(validator, path):
    assert [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text()))] == []


def test_the_starter_names_the_schema_and_validates(validator, tmp_path):
    text = starter_recipe("mypkg")
    # A path beside the recipe (editors resolve it against the recipe's folder), never this install's file://
    # path, which means nothing where the recipe is shared; the header says how to write the file.
    assert text.splitlines()[0] == "# yaml-language-server: $schema=rocbuild-recipe.schema.json"
    assert "`rocbuild recipes schema -o rocbuild-recipe.schema.json` writes it beside this file" in text
    assert "file://" not in text and str(schema_file().parent) not in text
    assert list(validator.iter_errors(yaml.safe_load(text))) == []
    load_recipe_text(text, tmp_path / "mypkg.yaml")  # and the loader agrees


BASE = {"schema": 1, "name": "x", "version": "1.0", "source": {"git": "https://example.org/x.git"},
        "steps": [{"wheel": None}]}


@pytest.mark.parametrize("change", [
    {"sorce": {"git": "https://example.org/x.git"}},  # unknown top-level key
    {"steps": [{"cmake": {}, "make": {}}]},  # two kinds in one entry
    {"steps": [{"run": []}]},  # an empty argv
    {"source": {"git": "https://example.org/x.git", "path": "."}},  # two sources
    {"patches": [{"replace": {"file": "a", "find": "b"}}]},  # replace without `with`
    {"output": "folder"},
    {"requires": {"torch": "cuda"}},
    {"schema": 2},
])
def test_broken_recipes_fail_the_schema_and_the_loader(validator, tmp_path, change):
    doc = {**BASE, **change}
    assert list(validator.iter_errors(doc)), doc
    with pytest.raises(Exception) as failed:
        load_recipe_text(yaml.safe_dump(doc), tmp_path / "x.yaml")
    assert type(failed.value).__name__ == "RecipeError"


def test_an_extending_recipe_is_checked_for_its_keys_only(validator):
    assert list(validator.iter_errors({"extends": "hello-hip", "steps+": [{"run": ["true"]}]})) == []
    assert list(validator.iter_errors({"extends": "hello-hip", "stepz": []}))


def test_the_command_prints_it(tmp_path):
    from rocbuild.cli.app import main

    out = tmp_path / "schema.json"
    assert main(["recipes", "schema", "-o", str(out)]) == 0
    assert json.loads(out.read_text()) == recipe_schema()


def test_the_reference_field_lists_are_the_generated_ones():
    """docs/recipes.md lists every key from the model's classes: a field added, renamed or re-documented
    there and not regenerated into the docs fails here."""
    from rocbuild.recipe.schema import REFERENCE_END, REFERENCE_START, reference_text

    doc = (REPO / "docs" / "recipes.md").read_text()
    shown = doc[doc.index(REFERENCE_START):doc.index(REFERENCE_END) + len(REFERENCE_END)] + "\n"
    assert shown == reference_text(), "regenerate the field lists: rocbuild recipes schema --reference"


def test_every_key_the_loader_accepts_comes_from_a_model_field():
    """The loader's tables, the schema and the docs are read from the classes: each kind's keys are its
    fields, so a field the planner reads cannot be missing from the format, nor the other way round."""
    import dataclasses

    from rocbuild.recipe.model import CHECKS, PATCHES, STEPS

    for cls in (*PATCHES, *STEPS, *CHECKS):
        fields = {f.name for f in dataclasses.fields(cls)}
        declared = {**keys.PATCH_KEYS, **keys.STEP_KEYS, **keys.CHECK_KEYS}[cls.KIND]
        assert {k.field for k in declared.values()} <= fields
        assert all(k.doc for k in declared.values()), cls  # every key is documented by its field's docstring
