"""mamba-ssm, causal-conv1d and gpt-sovits recipes, and doctor on real HIP extensions.

No ROCm torch can be installed here, so the builds themselves are not run:
plans are checked against stand-in ROCm trees and torches, the torch gate
against real venvs, and the patch steps against source trees shaped like
upstream's (the lines the patches match are upstream's own).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import make_rocm_tree, tree_digest
from tests.pyenv_trees import EXT_SUFFIX, compile_hip, make_machine, make_venv

S1_LINE = '        strategy=DDPStrategy(process_group_backend="nccl" if platform.system() != "Windows" else "gloo")\n'
S2_LINE = '        backend="gloo" if os.name == "nt" or not torch.cuda.is_available() else "nccl",\n'


def plan_json(cli, *args) -> dict:
    code, out, err = cli("plan", "--json", *args)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("recipe, force, module", [
    ("mamba-ssm", "MAMBA_FORCE_BUILD", "selective_scan_cuda"),
    ("causal-conv1d", "CAUSAL_CONV1D_FORCE_BUILD", "causal_conv1d_cuda"),
])
def test_plan_builds_against_the_target_torch(cli, tmp_path, rocm61, recipe, force, module):
    python, _ = make_venv(tmp_path / "venv", "rocm6.1")
    plan = plan_json(cli, recipe, "--arch", "gfx90a,gfx1100", "--rocm", rocm61, "--python", python)
    (step,) = plan["steps"]
    # The wheel is built in a build environment layered on the target python, whose torch it sees.
    env = plan["build_env"]
    assert env["create"][0] == str(python.absolute()) and env["target_site"][0] == str(python.absolute())
    assert step["argv"][:4] == [env["python"], "-m", "pip", "wheel"]
    assert "torch" not in " ".join(env["install"])
    assert "--no-build-isolation" in step["argv"]
    assert step["env"][force] == "TRUE"
    assert step["env"]["HIP_ARCHITECTURES"] == "gfx90a,gfx1100"
    req = plan["requirements"]
    assert req["torch"] == "rocm" and req["torch_check_argv"][0] == str(python.absolute())
    assert plan["env"]["ROCM_PATH"] == str(rocm61)
    # ROCm 6.1 needs no header fix; mamba's metadata loses what would pull CUDA-only packages
    assert [p["file"] for p in plan["patches"]] == (["pyproject.toml", "setup.py"] if recipe == "mamba-ssm" else [])
    links = next(v for v in plan["verify"] if v["name"] == "kernels-are-rocm")
    # causal-conv1d's module calls nothing of libtorch_hip (seen in a real build): --as-needed drops it
    assert links["links"] == ["libamdhip64", "libc10_hip"]
    assert links["files"] == [f"{module}*.so"]


@pytest.mark.parametrize("recipe, pins, ref, commit", [
    ("mamba-ssm", "current", "v2.3.2.post1", "a14b1dff0454a3bc27d9eb31355dc01e4b2490ec"),
    ("mamba-ssm", "torch2.4", "v2.2.4", "95d8aba8a8c75aedcaa6143713b11e745e7cd0d9"),
])
def test_pins_option_picks_the_release(cli, tmp_path, rocm61, recipe, pins, ref, commit):
    plan = plan_json(cli, recipe, "--arch", "gfx90a", "--rocm", rocm61, "--set", f"pins={pins}")
    assert (plan["source"]["ref"], plan["source"]["commit"]) == (ref, commit)


def test_causal_conv1d_builds_its_pinned_sdist_with_torchs_arch_and_rocm_home(cli, tmp_path, rocm61):
    """From PyPI's 1.7.0 sdist (no git hosting needed), PYTORCH_ROCM_ARCH set (torch >= 2.14 passes an empty
    --offload-arch= without it when no GPU is visible), and ROCM_HOME the ROCm prefix."""
    plan = plan_json(cli, "causal-conv1d", "--arch", "gfx90a,gfx1100", "--rocm", rocm61)
    assert plan["source"]["kind"] == "sdist" and plan["source"]["requirement"] == "causal-conv1d==1.7.0"
    assert plan["source"]["sha256"] == "3202758494eaa7b597ce1c282dfa188889506bfcb92cad3c407d26736bfcd32b"
    assert plan["env"]["PYTORCH_ROCM_ARCH"] == "gfx90a;gfx1100" and plan["env"]["ROCM_HOME"] == str(rocm61)


def test_rocm60_header_fix_goes_into_the_tree_never_the_install(cli, tmp_path):
    rocm60 = make_rocm_tree(tmp_path / "opt", "6.0.2")
    detail = rocm60 / "include" / "hip" / "amd_detail"
    detail.mkdir(parents=True)
    # Shaped like ROCm 6.0's header: functions defined without `inline`, quoted sibling includes.
    (detail / "amd_hip_bf16.h").write_text(
        '#include "amd_hip_vector_types.h"\n'
        "#define __HOST_DEVICE__ __host__ __device__\n"
        "__HOST_DEVICE__ inline float __bfloat162float(__hip_bfloat16 a) { return 0; }\n"
        "__HOST_DEVICE__ __hip_bfloat16 __float2bfloat16(float f) { return {}; }\n"
        "__HOST_DEVICE__ float __low2float(const __hip_bfloat162 a) { return 0; }\n")
    before = tree_digest(rocm60)
    src = tmp_path / "mamba"
    (src / "csrc" / "selective_scan").mkdir(parents=True)
    (src / "setup.py").write_text("# stand-in\n")
    # pins=torch2.4 (v2.2.4): the release for the torch of ROCm 6.0's days, whose metadata needs no fix
    plan = plan_json(cli, "mamba-ssm", "--arch", "gfx90a", "--rocm", rocm60, "--set", "pins=torch2.4")
    assert [p["kind"] for p in plan["patches"]] == ["copy", "replace", "replace"]
    code, out, err = cli("prepare", "mamba-ssm", "--arch", "gfx90a", "--rocm", rocm60, "--source-dir", src,
                         "--work", tmp_path / "work", "--set", "pins=torch2.4")
    assert code == 0, err
    fixed = (Path(out.strip().splitlines()[-1]) / "csrc/selective_scan/hip/amd_detail/amd_hip_bf16.h").read_text()
    assert fixed.splitlines() == [
        "#include <hip/amd_detail/amd_hip_vector_types.h>",
        "#define __HOST_DEVICE__ __host__ __device__",
        "__HOST_DEVICE__ inline float __bfloat162float(__hip_bfloat16 a) { return 0; }",
        "__HOST_DEVICE__ static inline __hip_bfloat16 __float2bfloat16(float f) { return {}; }",
        "__HOST_DEVICE__ static inline float __low2float(const __hip_bfloat162 a) { return 0; }",
    ]
    assert tree_digest(rocm60) == before


@pytest.mark.parametrize("flavour", ["cuda", "cpu", None])
def test_non_rocm_torch_stops_the_build_before_compiling(cli, tmp_path, rocm61, flavour):
    python, site = make_venv(tmp_path / "venv", flavour)
    for module in ("setuptools", "wheel", "packaging", "ninja"):  # so only the torch gate can refuse
        (site / module).mkdir(exist_ok=True)
        (site / module / "__init__.py").write_text("")
    src = tmp_path / "causal"
    src.mkdir()
    (src / "setup.py").write_text("raise SystemExit('must not run')\n")
    code, out, err = cli("build", "causal-conv1d", "--arch", "gfx90a", "--rocm", rocm61, "--python", python,
                         "--source-dir", src, "--work", tmp_path / "work", "--out", tmp_path / "wh")
    assert code == 3, err
    assert "a ROCm torch" in err or "not ROCm" in err
    assert "--index-url https://download.pytorch.org/whl/rocm6.1" in err
    assert not (tmp_path / "work" / "src").exists() and not (tmp_path / "wh").exists()


def _sovits_tree(root: Path, s2_line: str = S2_LINE) -> Path:
    gs = root / "GPT_SoVITS"
    gs.mkdir(parents=True)
    (gs / "s1_train.py").write_text(
        "import os\nimport platform\nimport torch\n\n\ndef trainer(DDPStrategy):\n    return dict(\n"
        + S1_LINE + "    )\n")
    for name in ("s2_train.py", "s2_train_v3.py", "s2_train_v3_lora.py"):
        (gs / name).write_text(
            "import os\nimport torch\nimport torch.distributed as dist\n\n\ndef run(n_gpus, rank):\n"
            "    dist.init_process_group(\n" + s2_line
            + '        init_method="env://?use_libuv=False",\n        world_size=n_gpus,\n        rank=rank,\n    )\n')
    return root


def test_gpt_sovits_tree_is_prepared_twice_and_printed(cli, tmp_path):
    src = _sovits_tree(tmp_path / "upstream")
    before = tree_digest(src)
    for _ in range(2):
        code, out, err = cli("gpt-sovits", "--source-dir", src, "--work", tmp_path / "work")
        assert code == 0, err
        tree = Path(out.strip())
        assert tree == tmp_path / "work" / "src"
        assert "prepared tree is" in err and "verify trainers-compile" in err
    assert tree_digest(src) == before  # the user's tree is never touched
    s1 = (tree / "GPT_SoVITS/s1_train.py").read_text()
    assert 'os.environ.get("GPT_SOVITS_DIST_BACKEND") or ("nccl" if platform.system() != "Windows" and not ' \
           'torch.version.hip else "gloo")' in s1
    for name in ("s2_train.py", "s2_train_v3.py", "s2_train_v3_lora.py"):
        text = (tree / "GPT_SoVITS" / name).read_text()
        assert text.count("GPT_SOVITS_DIST_BACKEND") == 1 and "torch.version.hip" in text
    code, out, err = cli("prepare", "gpt-sovits", "--source-dir", src, "--work", tmp_path / "work")
    assert code == 0 and Path(out.strip().splitlines()[-1]) == tree


def test_gpt_sovits_patched_backend_choice(cli, tmp_path):
    """The patched expression picks gloo on ROCm, nccl on CUDA, and the variable wins."""
    src = _sovits_tree(tmp_path / "upstream")
    code, out, _ = cli("prepare", "gpt-sovits", "--source-dir", src, "--work", tmp_path / "work")
    assert code == 0
    text = (Path(out.strip().splitlines()[-1]) / "GPT_SoVITS/s2_train.py").read_text()
    expr = next(line for line in text.splitlines() if "backend=" in line).strip()[len("backend="):].rstrip(",")

    class Cuda:
        @staticmethod
        def is_available():
            return True

    def pick(hip, env):
        torch = type("torch", (), {"cuda": Cuda, "version": type("v", (), {"hip": hip})})
        os_ = type("os", (), {"name": "posix", "environ": env})
        return eval(expr, {"torch": torch, "os": os_})

    assert pick("6.1.40091", {}) == "gloo"
    assert pick(None, {}) == "nccl"
    assert pick("6.1.40091", {"GPT_SOVITS_DIST_BACKEND": "nccl"}) == "nccl"


def test_gpt_sovits_fails_loudly_when_upstream_changed(cli, tmp_path):
    changed = S2_LINE.replace('"gloo" if os.name == "nt"', '"gloo" if sys.platform == "win32"')
    src = _sovits_tree(tmp_path / "upstream", changed)
    code, out, err = cli("prepare", "gpt-sovits", "--source-dir", src, "--work", tmp_path / "work")
    assert code == 1
    assert "GPT_SoVITS/s2_train.py has no match" in err and "upstream changed this file" in err
    assert "gpt-sovits.yaml" in err


@pytest.mark.hipcc
def test_doctor_judges_real_hip_extensions_against_this_hosts_gpus(cli, tmp_path, rocm61):
    root = make_machine(tmp_path / "root", [100300])  # gfx1030
    python, site = make_venv(tmp_path / "venv", "rocm6.1")
    good = compile_hip(site, f"good_ext{EXT_SUFFIX}", ["gfx1030"], tmp_path / "b1")
    code, out, err = cli("doctor", "--json", "--sysfs", root, "--rocm", rocm61, "--python", python)
    checks = {c["id"]: c for c in json.loads(out)["checks"]}
    assert checks["extensions"]["status"] == "ok" and checks["extensions"]["details"]["scanned"] == 1
    wrong = compile_hip(site, f"hello_hip/_core{EXT_SUFFIX}", ["gfx90a"], tmp_path / "b2")
    code, out, err = cli("doctor", "--json", "--sysfs", root, "--rocm", rocm61, "--python", python)
    ext = {c["id"]: c for c in json.loads(out)["checks"]}["extensions"]
    assert code == 1 and ext["status"] == "fail"
    assert f"{wrong}: no code object for gfx1030" in ext["message"] and str(good) not in ext["message"]
    assert ext["fix"].startswith(f"rocbuild hello-hip --python {python} --arch gfx1030")


@pytest.mark.hipcc
def test_links_rule_reads_dt_needed(tmp_path):
    from rocbuild.verify.verdict import verify_paths

    folder = tmp_path / "site"
    compile_hip(folder, f"kern{EXT_SUFFIX}", ["gfx90a"], tmp_path / "b")
    ok = verify_paths([folder], ["gfx90a"], device_code_in=("kern*.so",), links=("libamdhip64",))
    assert ok.ok, ok.problems
    torch_built = verify_paths([folder], ["gfx90a"], device_code_in=("kern*.so",),
                               links=("libamdhip64", "libc10_hip"))
    assert not torch_built.ok
    assert "does not link libc10_hip" in torch_built.problems[0] and "libamdhip64.so" in torch_built.problems[0]


MAMBA_SDIST = "mamba_ssm-2.3.2.post1.tar.gz"


def _index_sdist(project: str, filename: str, into: Path) -> Path:
    """An sdist straight from the package index's simple page (PEP 503), checked against the sha256
    the page gives: `pip download` would first run its setup.py, which imports torch."""
    import hashlib
    import re
    import urllib.request

    with urllib.request.urlopen(f"https://pypi.org/simple/{project}/", timeout=60) as page:
        html = page.read().decode()
    url, digest = re.search(r'href="([^"#]*/' + re.escape(filename) + r')#sha256=([0-9a-f]{64})"', html).groups()
    with urllib.request.urlopen(url, timeout=120) as got:
        data = got.read()
    assert hashlib.sha256(data).hexdigest() == digest
    archive = into / filename
    archive.write_bytes(data)
    return archive


@pytest.mark.network
def test_mamba_wheel_metadata_pulls_nothing_cuda_only(cli, tmp_path, rocm61):
    """On the real v2.3.2.post1 sdist: triton (ROCm's comes with torch as pytorch-triton-rocm) and
    the CUDA-only kernel packages leave both places setuptools reads dependencies from; for torch
    2.14, both compilers get C++20."""
    import tarfile

    with tarfile.open(_index_sdist("mamba-ssm", MAMBA_SDIST, tmp_path)) as tar:
        tar.extractall(tmp_path, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    src = tmp_path / "mamba_ssm-2.3.2.post1"
    before = tree_digest(src)
    assert '"triton>=3.5.0"' in (src / "pyproject.toml").read_text()
    python, _ = make_venv(tmp_path / "venv", "rocm7.2")  # torch 2.14: its headers need C++20
    code, out, err = cli("prepare", "mamba-ssm", "--arch", "gfx90a", "--rocm", rocm61, "--source-dir", src,
                         "--work", tmp_path / "work", "--python", python)
    assert code == 0, err
    tree = Path(out.strip().splitlines()[-1])
    for name in ("pyproject.toml", "setup.py"):
        text = (tree / name).read_text()
        for gone in ("triton", "tilelang", "apache-tvm-ffi", "quack-kernels"):
            assert f'"{gone}' not in text, (name, gone)
        for kept in ("torch", "einops", "transformers", "packaging"):
            assert f'"{kept}"' in text, (name, kept)
    setup = (tree / "setup.py").read_text()
    assert setup.count('"-std=c++20"') == 4 and '"-std=c++17"' not in setup
    assert tree_digest(src) == before


@pytest.mark.parametrize("recipe, count", [("mamba-ssm", 4), ("causal-conv1d", 2)])
@pytest.mark.parametrize("torch, cxx20", [("rocm6.1", False), ("rocm6.2", False), ("rocm7.2", True)])
def test_cxx20_for_a_torch_that_needs_it(cli, tmp_path, rocm61, recipe, count, torch, cxx20):
    python, _ = make_venv(tmp_path / "venv", torch)
    plan = plan_json(cli, recipe, "--arch", "gfx90a", "--rocm", rocm61, "--python", python)
    std = [p for p in plan["patches"] if p["find"] == '"-std=c++17"']
    assert bool(std) == cxx20
    if cxx20:
        assert std[0]["with"] == '"-std=c++20"' and std[0]["count"] == count and std[0]["file"] == "setup.py"


@pytest.mark.parametrize("torch, rocm, refused", [("rocm6.1", "7.2.0", True), ("rocm6.2", "6.1.0", False)])
def test_a_torch_for_another_rocm_major_stops_the_build(cli, tmp_path, torch, rocm, refused):
    """torch never compares its HIP release with the toolchain's: rocbuild refuses another major (the
    extension would link two HIP runtimes), before anything compiles; another minor of the same major loads."""
    python, site = make_venv(tmp_path / "venv", torch)
    for module in ("setuptools", "wheel", "packaging", "ninja"):  # so only the torch gate can refuse
        (site / module).mkdir(exist_ok=True)
        (site / module / "__init__.py").write_text("")
    toolchain = make_rocm_tree(tmp_path / "opt", rocm)
    src = tmp_path / "causal"
    src.mkdir()
    (src / "setup.py").write_text("raise SystemExit('the build ran')\n")
    code, _, err = cli("build", "causal-conv1d", "--arch", "gfx90a", "--rocm", toolchain, "--python", python,
                       "--source-dir", src, "--work", tmp_path / "work", "--out", tmp_path / "wh")
    if refused:
        assert code == 3, err
        assert "built for ROCm 6.1, but this toolchain is ROCm 7.2" in err
        assert not (tmp_path / "work" / "src").exists()
    else:  # past the gate: the tree is prepared (the stand-in venv, without pip, then stops the build env)
        assert "toolchain is ROCm" not in err and (tmp_path / "work" / "src" / "setup.py").is_file(), err


@pytest.mark.parametrize("flavour, tag", [("rocm6.1", "v0.19.0"), ("rocm7.2", "v0.29.0"), ("rocm6.2", "v0.20.1")])
def test_torchvision_builds_the_tag_made_with_the_target_torch(cli, tmp_path, rocm61, flavour, tag):
    """The recipe's table takes the target python's torch (2.4.0, 2.14.0, 2.5.1 here) to the torchvision tag
    released with it; the wheel's version is the tag's, its GPU ops forced without a GPU."""
    python, _ = make_venv(tmp_path / "venv", flavour)
    plan = plan_json(cli, "torchvision", "--arch", "gfx1100", "--rocm", rocm61, "--python", python)
    assert plan["source"]["ref"] == tag
    (step,) = plan["steps"]
    assert step["env"]["BUILD_VERSION"] == tag[1:] and step["env"]["FORCE_CUDA"] == "1"
    assert step["env"]["TORCHVISION_USE_JPEG"] == "1" and step["env"]["TORCHVISION_USE_ROCJPEG"] == "0"


def test_torchvision_refuses_a_torch_its_table_does_not_name(cli, tmp_path, rocm61):
    python, _ = make_venv(tmp_path / "venv", "rocm5.6")  # torch 2.0.1
    code, _, err = cli("plan", "torchvision", "--arch", "gfx1100", "--rocm", rocm61, "--python", python)
    assert code == 2 and "names no torchvision tag" in err and "--set tag=" in err
    plan = plan_json(cli, "torchvision", "--arch", "gfx1100", "--rocm", rocm61, "--python", python, "--set", "tag=v0.15.2")
    assert plan["source"]["ref"] == "v0.15.2" and plan["steps"][0]["env"]["BUILD_VERSION"] == "0.15.2"
