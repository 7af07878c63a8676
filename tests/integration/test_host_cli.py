"""Moved from tests/unit/test_cli.py: these run real host probes (hipconfig, rocminfo, a python)."""

from __future__ import annotations

import subprocess
import sys

from rocbuild import __version__


def test_module_entry_point():
    proc = subprocess.run([sys.executable, "-m", "rocbuild", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == f"rocbuild {__version__}"


def test_verify_bad_inputs_exit_2(cli, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a library\n")
    broken = tmp_path / "broken.whl"
    broken.write_bytes(b"PK\x03\x04 truncated")
    for args, fragment in (
        ([tmp_path / "missing.whl"], "missing.whl: no such file or folder"),
        ([text], "notes.txt: not a wheel, an ELF file, a Windows DLL, a folder, an offload bundle, a code object or a"),
        ([broken], "broken.whl: not a wheel, an ELF file, a Windows DLL, a folder, an offload bundle, a code object or a"),
        ([text, "--arch", "gfx90a;gfx1030"], "not a gfx target: 'gfx90a;gfx1030'"),
    ):
        code, out, err = cli("verify", *args)
        assert code == 2, (args, err)
        assert fragment in err and "Traceback" not in err
        assert out == ""
