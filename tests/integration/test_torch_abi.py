"""A torch extension pins the torch it was built against, and a RUNPATH's build-machine folders are
named as such: real ELF files (gcc) in wheels this test makes, read by the real `rocbuild verify`,
and wheels relabelled by the real relabel step, installed by pip."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import zipfile
from email.parser import BytesHeaderParser
from pathlib import Path
from types import SimpleNamespace

import pytest

from rocbuild.engine.publish import finalize
from rocbuild.engine.relabel import rewrite_wheel
from rocbuild.verify.provenance import PROVENANCE

BUILD_FOLDER = "/opt/rh/gcc-toolset-9/root/usr/lib64"


def stub(folder: Path, soname: str) -> None:
    (folder / f"{soname}.c").write_text(f"int {soname.split('.')[0]}_fn(void) {{ return 1; }}\n")
    subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(folder / soname),
                    str(folder / f"{soname}.c")], check=True)


@pytest.fixture(scope="module")
def elves(tmp_path_factory) -> dict[str, Path]:
    """`ext`: an extension linking torch's libc10_hip.so (and the HIP runtime, so it is no CPU-only build);
    `runpath`: one whose RUNPATH (not RPATH: --enable-new-dtags) names /opt/rh's compiler, then /opt/rocm."""
    d = tmp_path_factory.mktemp("elves")
    stub(d, "libc10_hip.so")
    stub(d, "libamdhip64.so.7")
    (d / "ext.c").write_text("extern int libc10_hip_fn(void);\nextern int libamdhip64_fn(void);\n"
                             "int ext_entry(void) { return libc10_hip_fn() + libamdhip64_fn(); }\n")
    link = ["gcc", "-shared", "-fPIC", str(d / "ext.c"), f"-L{d}", "-l:libc10_hip.so", "-l:libamdhip64.so.7"]
    subprocess.run([*link, "-o", str(d / "_ext.so")], check=True)
    subprocess.run([*link, f"-Wl,--enable-new-dtags,-rpath,{BUILD_FOLDER}:/opt/rocm/lib", "-o", str(d / "_rp.so")],
                   check=True)
    return {"ext": d / "_ext.so", "runpath": d / "_rp.so", "c10": d / "libc10_hip.so"}


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def make_wheel(folder: Path, members: dict[str, Path], requires: list[str], name: str = "ext_demo") -> Path:
    """A wheel as a build backend writes it: the files, METADATA with these Requires-Dist, WHEEL, RECORD."""
    info = f"{name}-1.0.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires) + "\nA description.\n"
    files = {**{n: p.read_bytes() for n, p in members.items()}, f"{name}/__init__.py": b"",
             f"{info}/METADATA": metadata.encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-linux_x86_64\n"}
    record = [_record_line(n, d) for n, d in files.items()] + [f"{info}/RECORD,,"]
    wheel = folder / f"{name}-1.0-py3-none-linux_x86_64.whl"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel, "w") as zf:
        for n, data in files.items():
            zf.writestr(n, data)
        zf.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel


def torch_notes(cli, wheel: Path) -> list[dict]:
    code, out, err = cli("verify", "--json", "--arch", "gfx90a", str(wheel))
    report = json.loads(out)
    assert code == 0 and report["ok"], (err, report["problems"])  # a note: it never fails verify
    return [f for f in report["inputs"][0]["findings"] if f["code"] == "torch_unpinned"]


@pytest.mark.parametrize("requires, pinned", [
    ([], False),
    (["numpy>=1.20", "torch>=2.0"], False),
    (['torch==2.14.*; extra == "gpu"'], False),  # not installed unless asked for
    (["torch==2.14.*"], True),
    (["torch>=2.14,<2.15"], True),
    (["torch~=2.14.1"], True),
])
def test_a_torch_extension_that_pins_no_torch_release_is_noted(cli, elves, tmp_path, requires, pinned):
    wheel = make_wheel(tmp_path, {"ext_demo/_ext.so": elves["ext"]}, requires)
    notes = torch_notes(cli, wheel)
    if pinned:
        assert notes == []
        return
    (note,) = notes
    assert not note["problem"] and note["data"]["libs"] == ["libc10_hip.so"]
    assert note["data"]["where"] == "ext_demo/_ext.so"
    assert "undefined symbol" in note["message"] and "torch==X.Y.*" in note["message"]
    assert ("requires no torch" in note["message"]) == (not any(r.startswith("torch") for r in requires))
    code, out, _ = cli("verify", "--arch", "gfx90a", str(wheel))
    assert code == 0 and "note: a torch extension (ext_demo/_ext.so needs libc10_hip.so)" in out


def test_torchs_own_libraries_and_a_library_without_torch_are_no_torch_extension(cli, elves, tmp_path):
    own = make_wheel(tmp_path / "own", {"torch/lib/libc10_hip.so": elves["c10"], "torch/lib/_ext.so": elves["ext"]},
                     [], name="torch")
    assert torch_notes(cli, own) == []
    code, out, _ = cli("verify", "--json", str(elves["ext"]))  # a bare library has no metadata to judge
    assert "torch_unpinned" not in out


def test_a_runpath_naming_the_build_machines_folders_is_noted_and_not_where_rocm_is_found(cli, elves, tmp_path):
    wheel = make_wheel(tmp_path, {"ext_demo/_rp.so": elves["runpath"]}, ["torch==2.14.*"])
    code, out, err = cli("verify", "--json", "--arch", "gfx90a", str(wheel))
    assert code == 0, err
    (f,) = json.loads(out)["inputs"][0]["files"]
    assert f["runpath"] == [BUILD_FOLDER, "/opt/rocm/lib"] and f["rpath"] == []
    (leak,) = [x for x in f["findings"] if x["code"] == "build_paths"]
    assert leak["data"] == {"which": "RUNPATH", "paths": [BUILD_FOLDER]} and not leak["problem"]
    assert f["finds_rocm"] == "/opt/rocm (/opt/rocm/lib)"
    code, out, _ = cli("verify", "--arch", "gfx90a", str(wheel))
    assert "finds ROCm: /opt/rocm (/opt/rocm/lib)" in out
    assert f"note: ext_demo/_rp.so: its RUNPATH holds build-machine paths ({BUILD_FOLDER})" in out


def test_torch_libraries_under_a_distributions_sonames_are_noted(cli, elves, tmp_path):
    """An extension linked against Debian's torch (libc10.so.2.14) loads only beside that torch."""
    d = tmp_path / "debian"
    d.mkdir()
    stub(d, "libc10.so.2.14")
    (d / "ext.c").write_text("extern int libc10_fn(void);\nint ext_entry(void) { return libc10_fn(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", str(d / "ext.c"), f"-L{d}", "-l:libc10.so.2.14", "-l:libamdhip64.so.7",
                    f"-L{elves['c10'].parent}", "-o", str(d / "_deb.so")], check=True)
    wheel = make_wheel(tmp_path / "w", {"ext_demo/_deb.so": d / "_deb.so"}, ["torch==2.14.*"])
    code, out, err = cli("verify", "--json", "--arch", "gfx90a", str(wheel))
    report = json.loads(out)
    (note,) = [f for f in report["inputs"][0]["findings"] if f["code"] == "torch_distro_sonames"]
    assert note["data"] == {"libs": ["libc10.so.2.14"], "where": "ext_demo/_deb.so"} and not note["problem"]
    plain = make_wheel(tmp_path / "p", {"ext_demo/_ext.so": elves["ext"]}, ["torch==2.14.*"])  # libc10_hip.so
    code, out, err = cli("verify", "--json", "--arch", "gfx90a", str(plain))
    assert "torch_distro_sonames" not in out


def requires_dist(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        return BytesHeaderParser().parsebytes(zf.read(name)).get_all("Requires-Dist") or []


TORCH = {"version": "2.14.1+rocm7.2", "hip": "7.2.53211", "cuda": None}


def test_a_relabelled_torch_extension_pins_the_torch_it_was_built_against(cli, elves, tmp_path):
    src = make_wheel(tmp_path / "dist", {"ext_demo/_ext.so": elves["ext"]},
                     ['numpy>=1.20; python_version >= "3.10"', "torch>=2.0", 'torch[opt]; extra == "fast"'])
    assert len(torch_notes(cli, src)) == 1
    provenance = {"rocbuild": "0", "identity": {"python": {"torch": TORCH}, "toolchain": {"rocm_version": "7.2.0"}}}
    out = rewrite_wheel(src, tmp_path / "final", "rocm7.2", provenance, torch=TORCH["version"])
    # torch's unconditional requirement is the pin now; the others are as the project wrote them
    assert requires_dist(out) == ['numpy>=1.20; python_version >= "3.10"', "torch==2.14.*", 'torch[opt]; extra == "fast"']
    assert torch_notes(cli, out) == []
    site = tmp_path / "site"  # pip checks every member against RECORD: the rewritten METADATA included
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check",
                    "--target", str(site), str(out)], check=True, capture_output=True)
    installed = (site / "ext_demo-1.0+rocm7.2.dist-info" / "METADATA").read_bytes()
    assert BytesHeaderParser().parsebytes(installed).get_all("Requires-Dist")[1] == "torch==2.14.*"
    assert json.loads((site / "ext_demo-1.0+rocm7.2.dist-info" / PROVENANCE).read_text()) == provenance
    code, text, _ = cli("verify", "--arch", "gfx90a", str(out))
    assert code == 0 and "against torch 2.14.1+rocm7.2 (HIP 7.2.53211)" in text


@pytest.mark.parametrize("declared, torch, expected", [
    ([], "2.14.1+rocm7.2.buildonly", ["torch==2.14.*"]),
    (["numpy"], "2.14.1", ["numpy", "torch==2.14.*"]),  # after the project's own requirements
    (["torch==2.14.1", "numpy"], "2.14.1", ["torch==2.14.1", "numpy"]),  # tighter, kept as written
    (["torch[opt]<3", "numpy", "torch!=2.13.0"], "2.14.1", ["torch[opt]==2.14.*", "numpy"]),
    (["torch==2.13.*"], "2.14.1", ["torch==2.14.*"]),  # what it was built against wins
    (["torch>=2.0"], None, ["torch>=2.0"]),  # no torch to pin to (a recipe not built against torch)
])
def test_the_pin_replaces_looser_torch_requirements_and_keeps_a_tighter_one(elves, tmp_path, declared, torch,
                                                                             expected):
    src = make_wheel(tmp_path / "dist", {"ext_demo/_ext.so": elves["ext"]}, declared)
    out = rewrite_wheel(src, tmp_path / "final", "rocm7.2", {}, torch=torch)
    assert requires_dist(out) == expected
    with zipfile.ZipFile(out) as zf:
        metadata = zf.read("ext_demo-1.0+rocm7.2.dist-info/METADATA").decode()
    assert metadata.endswith("\nA description.\n") and "\nVersion: 1.0+rocm7.2\n" in metadata


def test_finalize_pins_torch_for_recipes_built_against_it(elves, tmp_path):
    """The build's relabel step passes the torch of the build identity (recorded for `requires: torch`)."""
    src = make_wheel(tmp_path / "dist", {"ext_demo/_ext.so": elves["ext"]}, ["torch"])
    plan = SimpleNamespace(work=SimpleNamespace(final=tmp_path / "final", root=tmp_path), local_label="rocm7.2", run_env={},
                           recipe=SimpleNamespace(runpath=None, path=tmp_path / "r.yaml"))
    for torch, expected in ((TORCH, ["torch==2.14.*"]), (None, ["torch"])):
        identity = SimpleNamespace(key=lambda: "k" * 64, to_json=lambda: {}, python=SimpleNamespace(torch=torch))
        (out,) = finalize(plan, identity, [src])
        assert requires_dist(out) == expected
