"""rocbuild's benchmark: figures go to a JSON file and a table; nothing is asserted.

  (a) orchestration overhead: rocbuild building a small CMake project vs a
      plain shell script running the same commands (taken from `rocbuild plan --json`)
  (b) cached rebuild vs cold build of the bundled hello-hip wheel
  (c) second fetch of a git repository (from the mirror) vs the first clone
  (d) `rocbuild --help` start-up time
  (e) `rocbuild verify` of a library-sized zstd-compressed offload bundle (CCOB v3, 8 targets, 2 GiB
      when decompressed, as a multi-arch MinSizeRel build makes): wall time and peak memory, and the
      same with --deep, which decompresses everything
  (f), (g) in a real ROCm build root (bench/real.py; --root NAME, made by `make demo` or
      `rocbuild root create`): bitsandbytes by rocbuild vs by the three hand commands (BNB_SRC=DIR),
      and a ccache-warm rebuild after a version bump vs cold
  (h) a no-op rebuild (`rocbuild build hello-hip` again: answered from its no-op stamp, nothing runs),
      the same served by the build cache (`--clean`: planned, verified again, no step runs) and
      `rocbuild plan hello-hip`, each against `python -m pip --version`: the median of seven runs of
      each, the order alternating from round to round, as a ratio to pip's
  (i) in the same root: a small torch extension by rocbuild vs `pip wheel --no-build-isolation` by hand
      (bench/real.py), against the root's build-only torch, ccache off: interleaved pairs

(a) and (f) interleave pairs of runs (three and five) and take the median of the
pairs' ratios (bench/pairs.py), start-up the median of five runs, (h) medians of seven;
the others are measured once. ccache is off for (a) and (b) so
the compiler really compiles. `--only noop` (or any of SECTIONS) measures those alone and merges
them into the results file, keeping every other figure in it as it was.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pairs import interleaved, pair_figures

ROOT = Path(__file__).resolve().parent.parent
ROCBUILD = [sys.executable, "-m", "rocbuild"]
ROCBUILD_EXE = [str(Path(sys.executable).parent / "rocbuild")]  # the console script users run
TARGETS = {"overhead_ratio": ("<=", 1.02), "cached_rebuild_s": ("<", 0.3), "mirror_speedup": (">=", 10.0),
           "startup_ms": ("<", 150.0), "verify_big_bundle_s": ("<", 1.0), "bnb_vs_hand_ratio": ("<=", 1.02),
           "noop_rebuild_vs_pip": ("<=", 1.0), "torchext_vs_hand_ratio": ("<=", 1.02)}
# What --only can pick; each is one or more sections of the results file.
SECTIONS = ("overhead", "cached_rebuild", "mirror", "startup", "verify_big", "in_root", "noop", "torchext")
BIG_TARGETS = ("gfx908", "gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1100", "gfx1101", "gfx1201")
BIG_ENTRY = 256 << 20  # bytes of each decompressed entry


def timed(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def cmake_project(folder: Path, files: int = 64, functions: int = 160) -> None:
    """A plain C library: 64 generated files, about 15-20 s of compiling on 2 cores."""
    (folder / "src").mkdir(parents=True)
    names = []
    for i in range(files):
        body = "\n".join(
            f"double f{i}_{j}(double x) {{ double s = 0; for (int k = 0; k < {j + 3}; k++) "
            f"s += x * k / (k + {j + 1}.0) - s / (k + 2.0); return s; }}" for j in range(functions))
        (folder / "src" / f"part{i}.c").write_text(body + "\n")
        names.append(f"src/part{i}.c")
    (folder / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(benchlib C)\n"
        f"add_library(benchlib SHARED {' '.join(names)})\n"
        "target_compile_options(benchlib PRIVATE -O2)\n")


def overhead(tmp: Path, env: dict[str, str], files: int = 64, functions: int = 160, pairs: int = 3) -> dict:
    project = tmp / "project"
    cmake_project(project, files, functions)
    recipe = tmp / "benchlib.yaml"
    recipe.write_text("schema: 1\nname: benchlib\nversion: '1'\noutput: tree\nsource:\n  path: project\n"
                      "requires:\n  tools: [cmake]\nsteps:\n  - cmake:\n      defines: {CMAKE_BUILD_TYPE: Release}\n"
                      "  - cmake-build: {}\n")
    work = tmp / "work-rocbuild"
    # --arch: neither side detects GPUs (the shell script could not).
    plan = json.loads(subprocess.run(ROCBUILD + ["plan", str(recipe), "--work", str(work), "--arch", "gfx90a",
                                                 "--json"], env=env,
                                     check=True, capture_output=True, text=True).stdout)
    # The same commands as a shell script: copy the tree, then each step's argv in its cwd with its env.
    shell_work = tmp / "work-shell"
    lines = ["set -e", f"rm -rf {shlex.quote(str(shell_work))}", f"mkdir -p {shlex.quote(str(shell_work))}",
             f"cp -a {shlex.quote(str(project))} {shlex.quote(str(shell_work / 'src'))}"]
    for k, v in plan["env"].items():
        lines.append(f"export {k}={shlex.quote(v)}")
    for step in plan["steps"]:
        argv = [a.replace(str(work), str(shell_work)) for a in step["argv"]]
        envs = " ".join(f"{k}={shlex.quote(v)}" for k, v in step["env"].items())
        cwd = step["cwd"].replace(str(work), str(shell_work))
        lines.append(f"(cd {shlex.quote(cwd)} && {envs} {shlex.join(argv)})".replace("&&  ", "&& "))
    script = tmp / "build.sh"
    script.write_text("\n".join(lines) + "\n")
    timed(["bash", str(script)], env)  # untimed: both measured runs then find the compiler in the page cache
    # Interleaved pairs: single runs of the same compile differ by ~5% on a small VM (bench/pairs.py).
    rocbuild_runs, shell_runs = interleaved(
        pairs, lambda _: timed(ROCBUILD_EXE + ["build", str(recipe), "--work", str(work), "--arch", "gfx90a",
                                               "--clean"], env),
        lambda _: timed(["bash", str(script)], env))
    figures = pair_figures(rocbuild_runs, shell_runs)
    return {"rocbuild_s": figures["median_s"], "shell_s": figures["other_median_s"],
            "overhead_ratio": figures["ratio"], "pair_ratios": figures["pair_ratios"],
            "ratio_of_medians": figures["ratio_of_medians"],
            "overhead_s": round(figures["median_s"] - figures["other_median_s"], 3),
            "rocbuild_runs_s": figures["runs_s"], "shell_runs_s": figures["other_runs_s"], "steps": len(plan["steps"])}


def cached_rebuild(tmp: Path, env: dict[str, str], arch: str) -> dict:
    tmp.mkdir(parents=True, exist_ok=True)
    out1, out2 = tmp / "wh-cold", tmp / "wh-cached"
    cold = timed(ROCBUILD_EXE + ["hello-hip", "--arch", arch, "--out", str(out1)], env)
    cached = timed(ROCBUILD_EXE + ["hello-hip", "--arch", arch, "--out", str(out2)], env)
    same = [p.read_bytes() for p in sorted(out1.glob("*.whl"))] == [p.read_bytes() for p in sorted(out2.glob("*.whl"))]
    return {"cold_s": round(cold, 3), "cached_rebuild_s": round(cached, 3), "ratio": round(cached / cold, 4),
            "same_wheel": same, "arch": arch}


def mirror(tmp: Path, env: dict[str, str]) -> dict:
    url = os.environ.get("BENCH_GIT_URL")
    ref = os.environ.get("BENCH_GIT_REF")
    if not url:
        repo = tmp / "upstream"
        repo.mkdir(parents=True)
        genv = dict(env, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@example.invalid", GIT_COMMITTER_NAME="b",
                    GIT_COMMITTER_EMAIL="b@example.invalid")
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True, env=genv)
        for c in range(60):
            for f in range(40):
                p = repo / f"dir{f % 8}" / f"file{f}.txt"
                p.parent.mkdir(exist_ok=True)
                p.write_text(f"commit {c} file {f}\n" + os.urandom(2048).hex() + "\n")
            subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=genv)
            subprocess.run(["git", "commit", "-qm", f"c{c}"], cwd=repo, check=True, env=genv)
        subprocess.run(["git", "tag", "v1"], cwd=repo, check=True, env=genv)
        url, ref = repo.as_uri(), "v1"
    code = ("import sys, time; from rocbuild.source.spec import GitSource; from rocbuild.paths import mirror_path; "
            "from rocbuild.source.git import resolve_git; url, ref = sys.argv[1], sys.argv[2] or None; "
            "spec = GitSource(url=url, ref=ref, mirror=str(mirror_path(url))); "
            "t = time.perf_counter(); resolve_git(spec, lambda m: None); print(time.perf_counter() - t)")
    first = float(subprocess.run([sys.executable, "-c", code, url, ref or ""], env=env, check=True,
                                 capture_output=True, text=True).stdout)
    second = float(subprocess.run([sys.executable, "-c", code, url, ref or ""], env=env, check=True,
                                  capture_output=True, text=True).stdout)
    return {"url": "generated local repository (60 commits x 40 files)" if not os.environ.get("BENCH_GIT_URL")
            else url, "ref": ref, "first_clone_s": round(first, 4), "mirror_fetch_s": round(second, 4),
            "mirror_speedup": round(first / second, 1)}


def startup(env: dict[str, str]) -> dict:
    timed(ROCBUILD_EXE + ["--help"], env)  # warm the page cache
    runs = [timed(ROCBUILD_EXE + ["--help"], env) * 1000 for _ in range(5)]
    return {"startup_ms": round(statistics.median(runs), 1), "runs_ms": [round(r, 1) for r in runs]}



def noop_rebuild(tmp: Path, env: dict[str, str], arch: str, runs: int = 7) -> dict:
    """(h): the same hello-hip build again with nothing changed (answered from its no-op stamp: nothing is
    planned, run or verified), the same from the build cache (`--clean`: planned, its wheel verified
    again and placed, no step runs), `rocbuild plan` of it, and `python -m pip --version` as the
    yardstick: a command that does next to nothing in the same interpreter. One real build first fills
    the cache; then `runs` rounds of the four, the order reversed every other round."""
    tmp.mkdir(parents=True, exist_ok=True)
    args = ["hello-hip", "--arch", arch, "--work", str(tmp / "work"), "--out", str(tmp / "wheelhouse")]
    commands = {"pip": [sys.executable, "-m", "pip", "--version"], "plan": ROCBUILD_EXE + ["plan", *args],
                "noop_rebuild": ROCBUILD_EXE + ["build", *args],
                # Its own folders: placing its wheel again would change the file the no-op stamp watches.
                "cache_hit": ROCBUILD_EXE + ["build", *args[:3], "--work", str(tmp / "work-hit"), "--out",
                                             str(tmp / "wheelhouse-hit"), "--clean"]}
    cold = timed(commands["noop_rebuild"], env)  # the real build: afterwards the build cache serves it
    served = {name: subprocess.run(commands[name], env=env, capture_output=True, text=True, check=True).stderr
              for name in ("cache_hit", "noop_rebuild")}
    for argv in commands.values():  # bytecode written, files in the page cache
        timed(argv, env)
    runs_s: dict[str, list[float]] = {name: [] for name in commands}
    for i in range(runs):
        for name in list(commands) if i % 2 == 0 else list(commands)[::-1]:
            runs_s[name].append(timed(commands[name], env))
    median = {name: statistics.median(times) for name, times in runs_s.items()}
    return {"pip_s": round(median["pip"], 3), "plan_s": round(median["plan"], 3),
            "noop_rebuild_s": round(median["noop_rebuild"], 3), "cache_hit_s": round(median["cache_hit"], 3),
            "plan_vs_pip": round(median["plan"] / median["pip"], 3),
            "noop_rebuild_vs_pip": round(median["noop_rebuild"] / median["pip"], 3),
            "cache_hit_vs_pip": round(median["cache_hit"] / median["pip"], 3),
            "from_stamp": "==> up to date" in served["noop_rebuild"],
            "from_cache": "from the build cache" in served["cache_hit"], "cold_build_s": round(cold, 3),
            "runs_s": {name: [round(t, 3) for t in times] for name, times in runs_s.items()},
            "arch": arch, "runs": runs}


def big_bundle(path: Path) -> int:
    """Write a CCOB v3 zstd bundle of len(BIG_TARGETS) entries of BIG_ENTRY bytes each, streaming (the
    decompressed bundle is never in memory); returns its decompressed size."""
    import struct

    import zstandard

    magic = b"__CLANG_OFFLOAD_BUNDLE__"
    ids = [f"hipv4-amdgcn-amd-amdhsa--{t}".encode() for t in BIG_TARGETS]
    header = len(magic) + 8 + sum(24 + len(i) for i in ids)
    head = bytearray(magic + struct.pack("<Q", len(ids)))
    for n, ident in enumerate(ids):
        head += struct.pack("<QQQ", header + n * BIG_ENTRY, BIG_ENTRY, len(ident)) + ident
    raw_size = header + len(ids) * BIG_ENTRY
    with open(path, "wb") as fh:
        fh.write(b"\0" * 32)  # the CCOB v3 header, written last
        with zstandard.ZstdCompressor(level=1).stream_writer(fh, closefd=False) as z:
            z.write(bytes(head))
            # Each MiB: 16 KiB that does not compress and the rest that does, about 1:60 like device code.
            for _ in range(len(ids) * BIG_ENTRY // (1 << 20)):
                z.write(os.urandom(16 << 10) + b"\0" * ((1 << 20) - (16 << 10)))
        total = fh.tell()
        fh.seek(0)
        fh.write(b"CCOB" + struct.pack("<HHQQQ", 3, 1, total, raw_size, 0))
    return raw_size


def verify_big(tmp: Path, env: dict[str, str]) -> dict:
    tmp.mkdir(parents=True)
    path = tmp / "libbig.co"
    raw = big_bundle(path)
    out: dict = {"compressed_mib": round(path.stat().st_size / (1 << 20), 1), "decompressed_mib": raw >> 20,
                 "entries": len(BIG_TARGETS)}
    for name, extra in (("verify", []), ("verify_deep", ["--deep"])):
        argv = ROCBUILD + ["verify", str(path), "--arch", "gfx90a,gfx1100", *extra]
        started = time.perf_counter()
        done = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], env=env, capture_output=True, text=True)
        out[f"{name}_s"] = round(time.perf_counter() - started, 3)
        out[f"{name}_peak_mib"] = round(int(done.stderr.strip().splitlines()[-1]) / 1024, 1)
        out[f"{name}_exit"] = done.returncode
    return out


def in_root(tmp: Path, env: dict[str, str], root: str, bnb_src: Path | None) -> dict:
    from real import bnb_vs_hand, ccache_rebuild, have_root

    if not have_root(ROCBUILD_EXE, root, env):
        why = f"no build root {root} (make demo, or rocbuild root create {root} --rocm 7.2)"
        return {"bnb_vs_hand": {"measured": False, "why": why}, "ccache_bump": {"measured": False, "why": why}}
    out: dict = {}
    if bnb_src is None:
        out["bnb_vs_hand"] = {"measured": False, "why": "no bitsandbytes tree (BNB_SRC=DIR)"}
    else:
        out["bnb_vs_hand"] = bnb_vs_hand(tmp / "f", ROCBUILD_EXE, env, root, bnb_src)
    out["ccache_bump"] = ccache_rebuild(tmp / "g", ROCBUILD_EXE, env, root, bnb_src)
    return out


def torchext(tmp: Path, env: dict[str, str], root: str) -> dict:
    from real import have_root, torchext_vs_hand

    if not have_root(ROCBUILD_EXE, root, env):
        return {"measured": False, "why": f"no build root {root} (rocbuild root create {root} --rocm 7.2)"}
    return torchext_vs_hand(tmp, ROCBUILD_EXE, env, root)


# Each figure: the section of the results it is read from, and its key there.
FIGURES = {"overhead_ratio": ("overhead", "overhead_ratio"), "cached_rebuild_s": ("cached_rebuild", "cached_rebuild_s"),
           "mirror_speedup": ("mirror", "mirror_speedup"), "startup_ms": ("startup", "startup_ms"),
           "verify_big_bundle_s": ("verify_big", "verify_s"), "bnb_vs_hand_ratio": ("bnb_vs_hand", "ratio"),
           "noop_rebuild_vs_pip": ("noop", "noop_rebuild_vs_pip"),
           "torchext_vs_hand_ratio": ("torchext_vs_hand", "ratio")}


def measure(only: set[str], args: argparse.Namespace) -> dict:
    """The sections named in `only`, measured with a fresh cache folder that goes afterwards."""
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="rocbuild-bench-") as t:
        tmp = Path(t)
        env = dict(os.environ, XDG_CACHE_HOME=str(tmp / "cache"), ROCBUILD_CCACHE="0")
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as users run it: bytecode cached after the first run
        if "overhead" in only:
            out["overhead"] = overhead(tmp / "a", env)
            # The same on a 2-file project: what rocbuild adds is then nearly all of the difference.
            tiny = overhead(tmp / "a-tiny", env, files=2, functions=4)
            out["overhead"]["fixed_overhead_s"] = tiny["overhead_s"]
        if "cached_rebuild" in only:
            out["cached_rebuild"] = cached_rebuild(tmp / "b", env, args.arch)
        if "mirror" in only:
            out["mirror"] = mirror(tmp / "c", env)
        if "startup" in only:
            out["startup"] = startup(env)
        if "verify_big" in only:
            out["verify_big"] = verify_big(tmp / "e", env)
        if "in_root" in only:
            out.update(in_root(tmp, env, args.root, Path(args.bnb_src) if args.bnb_src else None))
        if "noop" in only:
            out["noop"] = noop_rebuild(tmp / "h", env, args.arch)
        if "torchext" in only:
            out["torchext_vs_hand"] = torchext(tmp / "i", env, args.root)
    return out


def detail(name: str, results: dict) -> str:
    r = results
    if name == "overhead_ratio":
        o = r["overhead"]
        return f"rocbuild {o['rocbuild_s']}s vs shell {o['shell_s']}s; fixed cost {o.get('fixed_overhead_s')}s"
    if name == "cached_rebuild_s":
        return f"cold {r['cached_rebuild']['cold_s']}s, ratio {r['cached_rebuild']['ratio']}"
    if name == "mirror_speedup":
        return f"first {r['mirror']['first_clone_s']}s, mirror {r['mirror']['mirror_fetch_s']}s"
    if name == "startup_ms":
        return "median of 5 `rocbuild --help`"
    if name == "verify_big_bundle_s":
        v = r["verify_big"]
        return (f"{v['compressed_mib']} MiB -> {v['decompressed_mib']} MiB; peak {v['verify_peak_mib']} MiB; "
                f"--deep {v['verify_deep_s']}s, peak {v['verify_deep_peak_mib']} MiB")
    if name == "bnb_vs_hand_ratio":
        return "bitsandbytes for gfx1100 in the ROCm 7.2 root vs the three hand commands"
    if name == "torchext_vs_hand_ratio":
        t = r["torchext_vs_hand"]
        return (f"a torch extension for gfx1100 against the build-only torch: rocbuild {t['rocbuild_s']}s vs "
                f"pip wheel by hand {t['hand_s']}s; median of {len(t['pair_ratios'])} pairs' ratios")
    n = r["noop"]
    return (f"no-op rebuild {n['noop_rebuild_s']}s (from its stamp: {'yes' if n.get('from_stamp') else 'NO'}); "
            f"from the build cache {n.get('cache_hit_s')}s ({n.get('cache_hit_vs_pip')}x; "
            f"{'yes' if n['from_cache'] else 'NO'}), plan {n['plan_s']}s ({n['plan_vs_pip']}x), "
            f"pip --version {n['pip_s']}s; medians of {n['runs']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    parser.add_argument("--arch", default="gfx90a", help="target for the hello-hip builds (b) and (h)")
    parser.add_argument("--root", default="real-rocm7.2", help="the build root for (f) and (g)")
    parser.add_argument("--bnb-src", default=os.environ.get("BNB_SRC") or None,
                        help="a bitsandbytes tree for (f) and (g) (default: $BNB_SRC)")
    parser.add_argument("--only", metavar="SECTION[,SECTION...]",
                        help=f"measure only these ({', '.join(SECTIONS)}) and merge them into --out, "
                             "keeping its other figures as they are")
    args = parser.parse_args()
    only = set(SECTIONS) if args.only is None else set(args.only.split(","))
    if only - set(SECTIONS):
        parser.error(f"--only: no section {', '.join(sorted(only - set(SECTIONS)))} (sections: {', '.join(SECTIONS)})")
    out_file = Path(args.out)
    machine = {"python": platform.python_version(), "cores": os.cpu_count(), "system": platform.platform(),
               # 1, 5 and 15 minute load averages: other work on the machine skews every figure
               "load_before": [round(x, 2) for x in os.getloadavg()]}
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    measured = measure(only, args)
    machine["load_after"] = [round(x, 2) for x in os.getloadavg()]
    if args.only is None or not out_file.is_file():
        results: dict = {"machine": machine, "when": when, **measured}
    else:  # a partial run: its sections say when and on what they were measured; the rest stays
        results = json.loads(out_file.read_text())
        for name, section in measured.items():
            results[name] = {**section, "run": {**machine, "when": when}}
    figures = {name: results[section][key] for name, (section, key) in FIGURES.items()
               if isinstance(results.get(section), dict) and key in results[section]}
    results.pop("targets", None)
    results["targets"] = {}
    for name, value in figures.items():
        op, target = TARGETS[name]
        met = {"<=": value <= target, "<": value < target, ">=": value >= target}[op]
        results["targets"][name] = {"value": value, "target": f"{op} {target:g}", "met": met}
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(json.dumps(results, indent=2) + "\n")
    print(f"{'measure':<22} {'value':>10}  {'target':<10} met")
    for name, row in results["targets"].items():
        fresh = "" if args.only is None or FIGURES[name][0] in measured else "  (kept from the file)"
        print(f"{name:<22} {row['value']:>10}  {row['target']:<10} {'yes' if row['met'] else 'NO '}  "
              f"{detail(name, results)}{fresh}")
    for name in ("bnb_vs_hand", "ccache_bump"):
        row = results.get(name)
        if row is None:
            continue
        if row.get("measured") is False:
            print(f"{name:<22} not measured: {row['why']}")
        elif name == "bnb_vs_hand":
            print(f"{name:<22} {row['ratio']:>10}  rocbuild {row['rocbuild_s']}s vs hand {row['hand_s']}s ({row['root']})")
        else:
            print(f"{name:<22} {row['ratio']:>10}  {row['recipe']}: cold {row['cold_s']}s, ccache-warm after a version "
                  f"bump {row['ccache_warm_after_bump_s']}s ({row['root']})")
    print(f"load averages: {machine['load_before']} before, {machine['load_after']} after")
    print(f"figures written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
