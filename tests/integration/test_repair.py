"""`rocbuild repair`: real auditwheel (and patchelf) on real ELF files: ROCm's and torch's libraries
stay outside the wheel, anything else it needs is copied in, and the tag says what it satisfies."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import zipfile
from pathlib import Path

import pytest


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def stub(folder: Path, soname: str) -> None:
    (folder / "stub.c").write_text(f"int {soname.split('.')[0]}_fn(void) {{ return 1; }}\n")
    subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(folder / soname),
                    str(folder / "stub.c")], check=True)


def make_wheel(tmp_path: Path) -> Path:
    """An extension wheel (as a build would make it) that links a torch library and one of its own."""
    libs = tmp_path / "libs"
    libs.mkdir()
    stub(libs, "libc10.so")
    stub(libs, "libextra.so.1")
    (libs / "ext.c").write_text("extern int libc10_fn(void);\nextern int libextra_fn(void);\n"
                                "int ext_entry(void) { return libc10_fn() + libextra_fn(); }\n")
    ext = libs / "_ext.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(ext), str(libs / "ext.c"), f"-L{libs}", "-l:libc10.so",
                    "-l:libextra.so.1"], check=True)
    files = {"demo/__init__.py": b"", "demo/_ext.so": ext.read_bytes(),
             "demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
             "demo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n"
                                         b"Tag: py3-none-linux_x86_64\n"}
    record = [_record_line(n, d) for n, d in files.items()] + ["demo-1.0.dist-info/RECORD,,"]
    wheel = tmp_path / "wh" / "demo-1.0-py3-none-linux_x86_64.whl"
    wheel.parent.mkdir()
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        zf.writestr("demo-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return wheel


def test_repair_leaves_torch_out_and_copies_the_rest_in(cli, tmp_path, monkeypatch):
    wheel = make_wheel(tmp_path)
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path / "libs"))  # where auditwheel finds the two libraries
    code, out, err = cli("repair", str(wheel), "--json")
    assert code == 0, err
    (report,) = json.loads(out)
    repaired = Path(report["wheel"])
    assert repaired.parent == wheel.parent / "repaired" and repaired.is_file()
    assert report["platforms"] and all(p.startswith("manylinux_") or p.startswith("manylinux1") for p in
                                       report["platforms"])
    assert report["external"] == ["libc10.so"]  # torch provides it
    assert [Path(g).name.split("-")[0] for g in report["grafted"]] == ["libextra"]
    assert "--exclude" in report["argv"] and "libtorch*.so*" in report["argv"]
    with zipfile.ZipFile(repaired) as zf:
        assert not any("libc10" in n for n in zf.namelist())
    assert list(wheel.parent.iterdir()) == [wheel, wheel.parent / "repaired"]  # the original stays


@pytest.mark.hipcc
def test_repaired_hip_wheel_keeps_its_device_code(cli, tmp_path):
    code, out, err = cli("hello-hip", "--arch", "gfx90a,gfx1030", "--out", str(tmp_path / "wh"), "--work",
                         str(tmp_path / "work"))
    assert code == 0, err
    (wheel,) = (tmp_path / "wh").glob("*.whl")
    code, out, err = cli("repair", str(wheel), "--json")
    assert code == 0, err
    (report,) = json.loads(out)
    assert any(x.startswith("libamdhip64.so") for x in report["external"]) and report["grafted"] == []
    assert "linux_x86_64" not in report["platforms"]
    code, out, _ = cli("verify", "--json", "--arch", "gfx90a,gfx1030", report["wheel"])
    assert code == 0 and json.loads(out)["ok"]


def test_repair_bad_input(cli, tmp_path):
    code, _, err = cli("repair", str(tmp_path / "missing.whl"))
    assert code == 2 and "not a wheel file" in err
    code, _, err = cli("repair", str(make_wheel(tmp_path)), "--plat", "windows")
    assert code == 2 and "--plat 'windows'" in err
