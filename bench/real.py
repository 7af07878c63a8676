"""Benchmarks in a real ROCm build root (see run.py):

  (f) rocbuild building bitsandbytes (BNB_SRC=DIR: its tree) vs the three hand commands the plan
      holds (cmake configure, cmake --build, pip wheel), run in the same root as a plain script,
      ccache off; the hand script uses the build environment rocbuild made (a person's venv)
  (g) a ccache-warm rebuild after a version bump (a new work folder and tree, the same sources)
      vs the cold build, ccache on: bitsandbytes when BNB_SRC is given, else hello-hip
  (i) rocbuild building a small torch extension (one HIP kernel and its binding, as CUDAExtension builds
      them) against the root's build-only torch vs `pip wheel --no-build-isolation` run by hand in the same
      root, with the plan's environment and build environment, ccache off
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from pairs import interleaved, pair_figures

ROOT = Path(__file__).resolve().parent.parent


def _timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    result = subprocess.run(argv, env=env, check=False, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} exited with {result.returncode}:\n{result.stderr[-3000:]}")
    return time.perf_counter() - started


def have_root(rocbuild: list[str], root: str, env: dict[str, str]) -> bool:
    return subprocess.run(rocbuild + ["root", "path", root], env=env, capture_output=True).returncode == 0


def hand_script(plan: dict[str, Any], work: Path, hand: Path, tree: Path, buildenv: Path) -> str:
    """The plan's steps (planned for `work`) as a shell script in `hand`, with the build environment
    `buildenv` (made by an earlier build)."""
    lines = ["set -e", f"rm -rf {shlex.quote(str(hand))}", f"mkdir -p {shlex.quote(str(hand))}",
             f"cp -a {shlex.quote(str(tree))} {shlex.quote(str(hand / 'src'))}",
             f"ln -s {shlex.quote(str(buildenv))} {shlex.quote(str(hand / 'buildenv'))}"]
    # Every path into the planned work folder moves to the hand run's own. The plan's TMPDIR is made again:
    # rocbuild removes its steps' TMPDIR when they end, and CMake's compiler check then cannot make a
    # temporary file ("clang++: error: unable to make temporary file").
    lines += [f"export {k}={shlex.quote(v.replace(str(work), str(hand)))}" for k, v in plan["env"].items()]
    lines += ['mkdir -p "$TMPDIR"']
    for step in plan["steps"]:
        argv = [a.replace(str(work), str(hand)) for a in step["argv"]]
        envs = " ".join(f"{k}={shlex.quote(v.replace(str(work), str(hand)))}" for k, v in step["env"].items())
        cwd = step["cwd"].replace(str(work), str(hand))
        lines.append(f"(cd {shlex.quote(cwd)} && {envs} {shlex.join(argv)})".replace("&&  ", "&& "))
    return "\n".join(lines) + "\n"


def bnb_vs_hand(tmp: Path, rocbuild: list[str], env: dict[str, str], root: str, bnb_src: Path,
                pairs: int = 5) -> dict[str, Any]:
    tmp.mkdir(parents=True)
    tree = tmp / "bitsandbytes"  # under /tmp, which the root shares
    shutil.copytree(bnb_src, tree, symlinks=True)
    args = ["bitsandbytes", "--root", root, "--arch", "gfx1100", "--source-dir", str(tree)]
    plan, figures = _vs_hand(tmp, rocbuild, env, root, args, tree, pairs)
    wheels = list((tmp / f"hand{pairs}").rglob("*.whl"))
    return {**_hand_figures(figures, root), "hand_commands": [s["kind"] for s in plan["steps"]],
            "hand_wheel": [w.name for w in wheels],
            "note": "rocbuild's time includes entering the root, detection, prepare, the requirement checks, "
                    "labelling and verify; both sides use the same (shared) build environment"}


def _vs_hand(tmp: Path, rocbuild: list[str], env: dict[str, str], root: str, args: list[str], tree: Path,
             pairs: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """rocbuild building `args` against the plan's own commands run by hand as a script in the same root:
    the plan, and the figures of `pairs` interleaved pairs."""
    # Untimed: installs what the root lacks, makes the build environment both sides use, fills pip's cache
    # and the page cache.
    _timed(rocbuild + ["build", *args, "--no-cache", "--install-missing", "--work", str(tmp / "w0"),
                       "--out", str(tmp / "o0")], env)
    # Identical compiles differ by about 5% from run to run: interleaved pairs (bench/pairs.py).
    # One plan serves every hand run: hand_script moves its work folder to the run's own.
    plan = json.loads(subprocess.run(rocbuild + ["plan", *args, "--work", str(tmp / "w1"), "--json"],
                                     env=env, check=True, capture_output=True, text=True).stdout)

    def by_rocbuild(i: int) -> float:
        return _timed(rocbuild + ["build", *args, "--no-cache", "--work", str(tmp / f"w{i + 1}"),
                                  "--out", str(tmp / f"o{i + 1}")], env)

    def by_hand(i: int) -> float:
        script = tmp / f"hand{i + 1}.sh"
        # The build environment of the untimed build: the first pair runs by hand before rocbuild.
        script.write_text(hand_script(plan, tmp / "w1", tmp / f"hand{i + 1}", tree, tmp / "w0" / "buildenv"))
        return _timed(rocbuild + ["root", "run", root, "--", "bash", str(script)], env)

    rocbuild_runs, hand_runs = interleaved(pairs, by_rocbuild, by_hand)
    return plan, pair_figures(rocbuild_runs, hand_runs, digits=2)


def _hand_figures(figures: dict[str, Any], root: str) -> dict[str, Any]:
    return {"rocbuild_s": figures["median_s"], "hand_s": figures["other_median_s"], "ratio": figures["ratio"],
            "pair_ratios": figures["pair_ratios"], "ratio_of_medians": figures["ratio_of_medians"],
            "rocbuild_runs_s": figures["runs_s"], "hand_runs_s": figures["other_runs_s"], "root": root,
            "arch": "gfx1100"}


TORCH_EXT = {
    "kernel.cu": "#include <torch/extension.h>\n#include <ATen/cuda/CUDAContext.h>\n"
                 "__global__ void add_one(float* x, int n) {\n"
                 "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] += 1.0f;\n}\n"
                 "void add_one_cuda(torch::Tensor x) {\n  int n = x.numel();\n"
                 "  add_one<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), n);\n}\n",
    "binding.cpp": "#include <torch/extension.h>\nvoid add_one_cuda(torch::Tensor x);\n"
                   "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"add_one\", &add_one_cuda); }\n",
    "setup.py": "from setuptools import setup\nfrom torch.utils.cpp_extension import BuildExtension, CUDAExtension\n"
                "setup(name='addone', version='0.1', cmdclass={'build_ext': BuildExtension},\n"
                "      ext_modules=[CUDAExtension('addone_ext', ['binding.cpp', 'kernel.cu'])])\n",
}
TORCH_EXT_RECIPE = """\
schema: 1
name: addone
version: "0.1"
source: {path: addone}
requires:
  torch: rocm
  python: [setuptools, wheel, ninja]
env:
  ROCM_HOME: "${{ torch.rocm_home or rocm.path }}"
  PYTORCH_ROCM_ARCH: "${{ archs | join(';') }}"
steps:
  - wheel: {}
verify:
  - code-objects: {files: "addone_ext*.so"}
"""


def torchext_vs_hand(tmp: Path, rocbuild: list[str], env: dict[str, str], root: str, pairs: int = 3) -> dict[str, Any]:
    tmp.mkdir(parents=True)
    made = subprocess.run(rocbuild + ["root", "torch", root], env=env, check=True, capture_output=True, text=True)
    kit = made.stdout.strip().splitlines()[-1]
    tree = tmp / "recipes" / "addone"  # under /tmp, which the root shares
    tree.mkdir(parents=True)
    for name, text in TORCH_EXT.items():
        (tree / name).write_text(text)
    recipe = tmp / "recipes" / "addone.yaml"
    recipe.write_text(TORCH_EXT_RECIPE)
    args = [str(recipe), "--root", root, "--python", kit, "--arch", "gfx1100"]
    _, figures = _vs_hand(tmp, rocbuild, env, root, args, tree, pairs)
    return {**_hand_figures(figures, root), "torch": kit,
            "note": "rocbuild's time includes entering the root, detection, prepare, the torch and requirement "
                    "checks, the step's sandbox, labelling and verify; the hand side runs the plan's pip wheel "
                    "command with the plan's environment, unconfined"}


def ccache_rebuild(tmp: Path, rocbuild: list[str], env: dict[str, str], root: str,
                   bnb_src: Path | None) -> dict[str, Any]:
    tmp.mkdir(parents=True)
    env = {k: v for k, v in env.items() if k != "ROCBUILD_CCACHE"}
    env["XDG_CACHE_HOME"] = str(tmp / "cache")  # an empty ccache for the cold build
    _timed(rocbuild + ["root", "install", root, "ccache"], env)
    name = "bitsandbytes" if bnb_src is not None else "hello-hip"
    tree = tmp / name
    shutil.copytree(bnb_src if bnb_src is not None else ROOT / "examples" / "hello-hip", tree, symlinks=True)
    text = (ROOT / "recipes" / f"{name}.yaml").read_text()
    times = {}
    for label, version in (("cold", None), ("bumped", "9.9.9")):
        folder = tmp / f"recipe-{label}"
        folder.mkdir()
        recipe = folder / f"{name}.yaml"
        recipe.write_text(text if version is None else _bump(text, version))
        times[label] = _timed(rocbuild + ["build", str(recipe), "--root", root, "--arch", "gfx1100", "--source-dir",
                                          str(tree), "--install-missing", "--no-cache", "--out", str(folder / "wh")],
                              env)
    return {"recipe": name, "cold_s": round(times["cold"], 2), "ccache_warm_after_bump_s": round(times["bumped"], 2),
            "ratio": round(times["bumped"] / times["cold"], 3), "root": root, "arch": "gfx1100"}


def _bump(text: str, version: str) -> str:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("version:"):
            lines[i] = f'version: "{version}"'
            break
    return "\n".join(lines) + "\n"
