"""The command-line contract: subcommands, exit codes, no tracebacks for user mistakes."""

from __future__ import annotations

from tests.conftest import DATA, REPO


def test_recipes_show_prints_the_file(cli):
    code, out, _ = cli("recipes", "show", "horovod")
    assert code == 0
    assert out == (REPO / "recipes" / "horovod.yaml").read_text()


def test_recipes_show_unknown_suggests(cli):
    code, _, err = cli("recipes", "show", "bitsandbyte")
    assert code == 2 and "did you mean: bitsandbytes" in err


def test_lint_good_and_bad(cli):
    code, out, _ = cli("recipes", "lint", REPO / "recipes" / "horovod.yaml")
    assert code == 0 and "ok (horovod 0.28.1" in out
    code, out, err = cli("recipes", "lint", REPO / "recipes" / "horovod.yaml", DATA / "bad" / "misspelt_top_key.yaml")
    assert code == 2
    assert "horovod.yaml: ok" in out and "misspelt_top_key.yaml:7:1" in err


def test_argument_errors_exit_2_without_traceback(cli):
    for args in (["plan"], ["build", "horovod", "--jobs", "many"], ["recipes", "explode"], ["detect", "--bogus"]):
        code, _, err = cli(*args)
        assert code == 2, args
        assert err.startswith("error:") and "Traceback" not in err


def test_bad_local_version_exit_2(cli, rocm61, tmp_path):
    code, _, err = cli("plan", "hello-hip", "--arch", "gfx90a", "--rocm", rocm61, "--local-version", "rocm 6.1")
    assert code == 2 and "--local-version 'rocm 6.1': not a PEP 440 local version label" in err
    recipe = tmp_path / "demo.yaml"
    recipe.write_text("schema: 1\nname: demo\nversion: '1.0'\nsource: {path: .}\nsteps:\n  - wheel: {}\n"
                      "local-version: \"rocm ${{ rocm.version }}\"\n")
    code, _, err = cli("plan", recipe, "--arch", "gfx90a", "--rocm", rocm61)
    assert code == 2 and "local-version renders to something that is not a PEP 440 local label" in err
    assert str(recipe) in err and "'rocm 6.1.0'" in err


def test_each_command_is_parsed_by_its_own_family():
    """A command line that names a command builds that family's parsers alone: COMMANDS must say
    exactly which family registers each command (a missing one would be taken for a recipe name)."""
    import argparse

    from rocbuild.cli.app import COMMANDS, FAMILIES, build_parser

    registered = {}
    for family in FAMILIES:
        sub = next(a for a in build_parser(family)._actions if isinstance(a, argparse._SubParsersAction))
        registered.update(dict.fromkeys(sub.choices, family))
    assert COMMANDS == registered
    whole = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(whole.choices) == list(registered)
