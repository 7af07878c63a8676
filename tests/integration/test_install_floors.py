"""A real wheel's stated floors against binutils' own reading of its symbols (objdump -T), and the
statement that this machine's python3 can install it, from verify and from the build itself."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile

import pytest

pytestmark = pytest.mark.hipcc


def test_floors_match_objdump_and_this_python_installs_it(cli, tmp_path):
    code, out, err = cli("build", "hello-hip", "--arch", "gfx90a", "--work", tmp_path / "w", "--out", tmp_path / "wh")
    assert code == 0, err
    (wheel,) = (tmp_path / "wh").glob("*.whl")
    assert f"{wheel.name}:\n  installs on: python cp{sys.version_info[0]}{sys.version_info[1]}" in err
    code, out, err = cli("verify", "--json", "--arch", "gfx90a", wheel)
    assert code == 0, err
    (entry,) = json.loads(out)["inputs"]
    with zipfile.ZipFile(wheel) as zf:
        (lib,) = [n for n in zf.namelist() if n.endswith(".so")]
        zf.extract(lib, tmp_path / "x")
    dump = subprocess.run(["objdump", "-T", str(tmp_path / "x" / lib)], capture_output=True, text=True, check=True)
    glibc = max(tuple(int(p) for p in v.split(".")) for v in re.findall(r"\bGLIBC_([\d.]+)", dump.stdout))
    glibcxx = [tuple(int(p) for p in v.split(".")) for v in re.findall(r"\bGLIBCXX_([\d.]+)", dump.stdout)]
    assert entry["installs"]["glibc"] == ".".join(map(str, glibc))
    assert entry["installs"]["glibcxx"] == (".".join(map(str, max(glibcxx))) if glibcxx else None)
    here = entry["installs_here"]
    tag_fits = here["python"] and subprocess.run(
        [here["python"], "-c", f"import sys; sys.exit(sys.version_info[:2] != {tuple(sys.version_info[:2])})"]).returncode == 0
    assert here["ok"] is bool(tag_fits), here


def test_this_machines_python3_is_remembered_only_when_it_is_a_binary(tmp_path, monkeypatch):
    """Every build says whether this machine's python3 installs its wheels: a python binary's answer is
    remembered while its file and the glibc stay; a script in its place (a pyenv shim, which picks its python by
    folder and variables) is asked every time."""
    import os
    from pathlib import Path

    from rocbuild.detect.python import INTERPRETER_QUERY, default_interpreter

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    real = Path(os.path.realpath(sys.executable))
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python3").symlink_to(real)
    found = default_interpreter(str(tmp_path / "bin"), os.environ)
    assert found is not None and found.version == sys.version_info[:2]
    store = tmp_path / "cache" / "rocbuild" / "probes.json"
    remembered = store.read_text()
    assert json.dumps(INTERPRETER_QUERY)[1:-1] in remembered
    assert default_interpreter(str(tmp_path / "bin"), os.environ) == found and store.read_text() == remembered
    (tmp_path / "shim").mkdir()
    shim = tmp_path / "shim" / "python3"
    shim.write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    shim.chmod(0o755)
    via_shim = default_interpreter(str(tmp_path / "shim"), os.environ)
    assert via_shim is not None and (via_shim.version, via_shim.glibc) == (found.version, found.glibc)
    assert store.read_text() == remembered  # nothing remembered for the script
