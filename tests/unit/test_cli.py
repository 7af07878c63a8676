"""The command-line contract: subcommands, exit codes, no tracebacks for user mistakes."""

from __future__ import annotations

import subprocess
import sys

from rocbuild import __version__
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


def test_module_entry_point():
    proc = subprocess.run([sys.executable, "-m", "rocbuild", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == f"rocbuild {__version__}"
