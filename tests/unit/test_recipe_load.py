"""Loader errors: each bad file names file:line:column, key, value, what is accepted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rocbuild.errors import RecipeError
from rocbuild.recipe.files import data_dir
from rocbuild.recipe.load import load_recipe
from rocbuild.recipe.model import CMake

BAD = Path(__file__).parent.parent / "data" / "bad"

CASES = {
    # file: (line, column, fragments that must all be in the message)
    "misspelt_top_key.yaml": (7, 1, ["stpes: unknown key", "did you mean 'steps'", "accepted: schema, name"]),
    "misspelt_nested_key.yaml": (10, 7, ["steps[1].cmake.defins: unknown key", "did you mean 'defines'"]),
    "unknown_step_kind.yaml": (8, 5, ["steps[0].cmak: unknown key", "did you mean 'cmake'", "one of cmake"]),
    "broken_yaml.yaml": (9, None, ["invalid YAML"]),
    "undefined_name.yaml": (8, 17, ["undefined name 'archz'", "'archs'", "steps[0].run[1]"]),
    "template_syntax.yaml": (8, 17, ["template syntax error", "steps[0].run[1]"]),
    "bool_env.yaml": (8, 12, ["env.USE_HIP: expected a string", "quote the value", "value: True"]),
    "run_string.yaml": (8, 10, ["not a string", "[python, setup.py, bdist_wheel]", "shell"]),
    "duplicate_key.yaml": (9, 1, ["duplicate key", "first given at line 7", "steps"]),
    "bad_schema.yaml": (1, 9, ["schema: unsupported schema version", "value: 2", "accepted: 1"]),
    "bad_version.yaml": (3, 10, ["not a PEP 440 version", "one-point-oh"]),
    "missing_patch.yaml": (8, 11, ["patches[0].diff: patch file not found", "demo/0001-missing.patch"]),
    "option_default.yaml": (9, 14, ["options.backend.default", "not one of the choices", "accepted: hip, cpu"]),
    "bad_specifier.yaml": (8, 9, ["requires.rocm: not a version specifier", "six or newer", ">=6.1"]),
    "bad_memory_per_job.yaml": (8, 19, ["requires.memory-per-job: not a size", "value: 'lots'", "9GiB"]),
    "bad_commit.yaml": (7, 11, ["source.commit: not a whole commit id", "hexadecimal"]),
    "replace_missing_with.yaml": (8, 14, ["patches[0].replace", "missing required key 'with'"]),
    "two_kinds.yaml": (8, 5, ["more than one kind key (run, cmake)", "accepted: one of cmake"]),
    "bad_regex.yaml": (8, 32, ["invalid regular expression", "patches[0].replace.find"]),
    "not_a_mapping.yaml": (1, 1, ["a recipe is a YAML mapping"]),
    "expect_with_import.yaml": (10, 5, ["verify[0].expect: expect only goes with command"]),
    "misspelt_code_objects.yaml": (10, 7, ["verify[0].code-objects.archz: unknown key", "did you mean 'archs'"]),
    "bad_import_module.yaml": (9, 13, ["verify[0].import: not a module name", "'hello-hip'"]),
    "bad_local_version.yaml": (8, 16, ["local-version: not a PEP 440 local version label", "'rocm 6.1'"]),
    "misspelt_verify_kind.yaml": (9, 5, ["verify[0].wheel-contain: unknown key", "did you mean 'wheel-contains'"]),
    "tree_with_wheel_step.yaml": (8, 5, ["steps[1].wheel: a wheel step in a recipe whose output is a tree",
                                         "accepted: cmake, cmake-build, make, run, shell"]),
    "tree_with_import_check.yaml": (9, 5, ["verify[0]: a import check needs a wheel", "accepted: command"]),
    "bad_output.yaml": (5, 9, ["output: unknown output kind", "value: 'trees'", "did you mean 'tree'"]),
    "bad_torch_flavour.yaml": (7, 10, ["requires.torch: unknown torch flavour", "value: 'cuda'", "accepted: rocm"]),
    "bad_torch_when_flavour.yaml": (7, 12, ["requires.torch.value: unknown torch flavour", "value: 'cuda'",
                                            "{value: rocm, when: TEMPLATE}"]),
    "unsupported_unknown_step.yaml": (7, 11, ["unsupported[0].step: names no step of this recipe", "value: 'wheels'",
                                              "accepted: configure, wheel", "did you mean 'wheel'"]),
    "bad_links.yaml": (11, 11, ["verify[0].code-objects.links[0]: not a library name", "'amdhip64.so'"]),
    "wheel_recipe_without_steps.yaml": (1, 1, ["missing required key 'steps'", "output: tree"]),
    "nul_in_string.yaml": (7, 19, ["steps[0].run[1]: contains a NUL character"]),
    "date_value.yaml": (6, 8, ["source.ref: expected a string, not a date", "value: '2024-01-01'", "quote it"]),
    "shell_value_in_quotes.yaml": (9, 12, ["steps[0].shell:", "inside double quotes could become code"]),
    "env_runs_code.yaml": (7, 3, ["env.BASH_ENV: this variable makes a shell", "run code"]),
    "git_transport_helper.yaml": (5, 8, ["source.git: git transport helpers", "accepted: https://"]),
    "patch_leaves_tree.yaml": (7, 21, ["patches[0].replace.file: leaves the source tree"]),
    "template_statement.yaml": (7, 19, ["statements (${% ... %}) are not available"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_recipe_message(name):
    line, column, fragments = CASES[name]
    with pytest.raises(RecipeError) as info:
        load_recipe(BAD / name)
    text = info.value.render()
    where = f"{BAD / name}:{line}" + (f":{column}" if column else "")
    assert text.startswith(where), text
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in:\n{text}"
    assert info.value.exit_code == 2


def test_every_bad_file_has_a_case():
    assert sorted(p.name for p in BAD.glob("*.yaml")) == sorted(CASES)


def test_caret_points_at_column():
    with pytest.raises(RecipeError) as info:
        load_recipe(BAD / "misspelt_nested_key.yaml")
    lines = info.value.render().splitlines()
    source, caret = lines[-2], lines[-1]
    assert source.endswith("defins: {A: b}")
    assert source[caret.index("^"):].startswith("defins")


@pytest.mark.parametrize("recipe", sorted(data_dir("recipes").glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_recipes_load(recipe):
    loaded = load_recipe(recipe)
    assert loaded.name == recipe.stem
    assert loaded.steps or loaded.output == "tree"
    assert loaded.output in ("wheel", "tree")


def test_missing_file():
    with pytest.raises(RecipeError, match="recipe file not found"):
        load_recipe(BAD / "nope.yaml")


def test_yaml_booleans_become_cmake_switches(tmp_path):
    f = tmp_path / "r.yaml"
    f.write_text("schema: 1\nname: r\nversion: '1'\nsource: {path: .}\n"
                 "steps:\n  - cmake:\n      defines: {USE_X: ON, USE_Y: off, N: 3}\n")
    step = load_recipe(f).steps[0]
    assert isinstance(step, CMake)
    assert dict(step.defines) == {"USE_X": "ON", "USE_Y": "OFF", "N": "3"}


def test_numbers_keep_their_written_form(tmp_path):
    f = tmp_path / "r.yaml"
    f.write_text("schema: 1\nname: r\nversion: 1.10\nsource:\n  git: https://example.invalid/r.git\n"
                 "  ref: 1.10\n  commit: 0123456789012345678901234567890123456789\nsteps:\n  - run: [python, -V]\n")
    r = load_recipe(f)
    assert (r.version, r.source.ref, r.source.commit) == ("1.10", "1.10", "0123456789012345678901234567890123456789")


def test_a_shipped_step_that_reaches_the_network_says_why():
    """`network: true` lifts a confined step's network: a shipped recipe says why, in a comment just above."""
    for path in sorted((Path(__file__).resolve().parents[2] / "recipes").glob("*.yaml")):
        lines = path.read_text().splitlines()
        for n, line in enumerate(lines):
            if re.match(r"^\s*(?:-\s+)?network:\s*true\b", line):
                above = [text for text in lines[max(0, n - 3):n] if text.strip().startswith("#")]
                assert above or "#" in line, f"{path.name}:{n + 1}: network: true without a comment saying why"


def test_a_remove_patch_names_a_file_in_the_tree(tmp_path):
    from rocbuild.recipe.load import load_recipe_text
    from rocbuild.recipe.model import Remove

    base = "schema: 1\nname: r\nversion: '1'\nsource: {path: .}\npatches:\n  - remove: %s\nsteps:\n  - run: [echo]\n"
    recipe = load_recipe_text(base % "src/x_cuda.cu", tmp_path / "r.yaml")
    assert recipe.patches == (Remove(file="src/x_cuda.cu", pos=recipe.patches[0].pos),)
    with pytest.raises(RecipeError) as caught:
        load_recipe_text(base % "../x", tmp_path / "r.yaml")
    assert "patches[0].remove" in caught.value.render() and caught.value.line == 6
