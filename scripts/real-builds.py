"""Real builds in real ROCm toolchains: recipes built in Debian build roots (one per ROCm release),
each wheel's device code checked twice, by rocbuild verify and by LLVM's own tools from the root
(llvm-objcopy pulls out .hip_fatbin, clang-offload-bundler --list names its entries). The results
go to a JSON file, one record per recipe and ROCm: recipe, ROCm, archs, verdict, times.

    python scripts/real-builds.py --rocm 6.4,7.2 --recipes hello-hip,bitsandbytes \\
        --source-dir bitsandbytes=~/src/bitsandbytes --results real-builds/results.json

Sources: a recipe's own (git, or the repository's examples), `--source-dir NAME=DIR`, or
`--sdist NAME=REQUIREMENT` (an sdist from the package index, unpacked). `--torch-kit NAME,...`: those
recipes build against the root's build-only ROCm torch (`rocbuild root torch`, made first, timed). Exit 1 when a build that is
not named by --expect-fail fails, or when either check disagrees with the archs asked for.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

KEPT_LOGS = Path(__file__).resolve().parents[1] / "real-builds" / "logs"  # ignored by git
ROCBUILD = [sys.executable, "-m", "rocbuild"]
ROCBUILD_VERSION = subprocess.run([*ROCBUILD, "--version"], capture_output=True, text=True,
                                  check=False).stdout.split()[-1]
# Run by the root's python3 (FILE, SCRATCH): llvm-objcopy pulls out .hip_fatbin; clang-offload-bundler --list
# names the entries of each bundle in it. A section of compressed bundles (CCOB, one per translation unit, as
# vLLM's --compress-mode=size makes) is cut at each one's own total size first: the bundler reads one at a time.
LLVM_CHECK = """\
import glob, struct, subprocess, sys
P = sorted(glob.glob("/usr/lib/llvm-*/bin"))[-1]
member, scratch = sys.argv[1], sys.argv[2]
subprocess.run([P + "/llvm-objcopy", "--dump-section", ".hip_fatbin=" + scratch, member], check=True)
data = open(scratch, "rb").read()
parts, at = [], data.find(b"CCOB")
while at >= 0:
    version = struct.unpack_from("<H", data, at + 4)[0]
    size = struct.unpack_from("<I" if version == 2 else "<Q", data, at + 8)[0]
    parts.append(data[at:at + size])
    at = data.find(b"CCOB", at + size)
seen = []
for part in parts or [data]:
    open(scratch, "wb").write(part)
    listed = subprocess.run([P + "/clang-offload-bundler", "--list", "--type=o", "--input=" + scratch],
                            capture_output=True, text=True, check=True).stdout.split()
    seen += [e for e in listed if e not in seen]
print("\\n".join(seen))
"""
LLVM_AR_X = 'set -e; for b in /usr/lib/llvm-*/bin; do P=$b; done; "$P/llvm-ar" x "$1"'


def run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    print("$ " + " ".join(argv), file=sys.stderr, flush=True)
    return subprocess.run(argv, text=True, check=False, **kw)


# Cold builds: no compiler cache either (the cache folder is shared with every other build).
BUILD_ENV = dict(os.environ, ROCBUILD_CCACHE="0")


def run_measured(argv: list[str], scratch: Path) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run `argv`; its result and the peak resident memory (KiB) of the largest process in its tree
    (a compiler, mostly). wait4's rusage covers every descendant that was waited for, but not what ran in a
    confined step: bubblewrap's monitor leaves as soon as the sandbox's init reports the exit status,
    without waiting for that init, so nothing below it reaches the rusage. The tree is therefore also read
    from /proc four times a second (each process's own high-water mark, VmHWM), and the larger figure kept;
    what a process reaches in its last quarter second before it exits can be missed."""
    print("$ " + " ".join(argv), file=sys.stderr, flush=True)
    out, err = scratch / "build.out", scratch / "build.err"
    stop, polled = threading.Event(), [0]
    with open(out, "w") as fo, open(err, "w") as fe:
        proc = subprocess.Popen(argv, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, env=BUILD_ENV)
        watcher = threading.Thread(target=_watch_tree, args=(proc.pid, stop, polled), daemon=True)
        watcher.start()
        _, status, usage = os.wait4(proc.pid, 0)
        stop.set()
        watcher.join()
    code = proc.returncode = os.waitstatus_to_exitcode(status)
    return subprocess.CompletedProcess(argv, code, out.read_text(), err.read_text()), max(usage.ru_maxrss, polled[0])


def _watch_tree(top: int, stop: threading.Event, peak: list[int]) -> None:
    """The largest VmHWM (KiB) among `top`'s descendants, read until `stop` is set."""
    while not stop.wait(0.25):
        parents: dict[int, list[int]] = {}
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    ppid = int(Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
                parents.setdefault(ppid, []).append(int(entry.name))
        todo = list(parents.get(top, []))
        while todo:
            pid = todo.pop()
            todo += parents.get(pid, [])
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            hwm = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), 0)
            peak[0] = max(peak[0], hwm)


def pairs(items: list[str], flag: str) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            sys.exit(f"{flag} {item!r}: give NAME=VALUE")
        out[name] = value
    return out


def ensure_root(rocm: str, prefix: str) -> tuple[str, float]:
    name = f"{prefix}{rocm}"
    listed = json.loads(run([*ROCBUILD, "root", "list", "--json"], capture_output=True).stdout or "[]")
    if any(r["name"] == name for r in listed):
        return name, 0.0
    started = time.monotonic()
    if run([*ROCBUILD, "root", "create", name, "--rocm", rocm]).returncode != 0:
        sys.exit(f"could not make a ROCm {rocm} root")
    return name, time.monotonic() - started


def root_info(name: str) -> dict[str, Any]:
    listed = json.loads(run([*ROCBUILD, "root", "list", "--json"], capture_output=True).stdout or "[]")
    return next(r for r in listed if r["name"] == name)


def unpack_sdist(requirement: str, into: Path) -> Path:
    """The release's sdist, unpacked, as a recipe's `source: sdist:` gets it: from the index, into rocbuild's
    cache, running nothing of it (`pip download` prepares metadata, which fails for a setup.py that imports
    torch: mamba-ssm, causal-conv1d)."""
    from rocbuild.errors import RocbuildError
    from rocbuild.paths import cache_root
    from rocbuild.source.sdist import fetch_sdist
    from rocbuild.source.spec import SdistSource

    dest = into / "src"
    try:
        fetch_sdist(SdistSource.in_cache(requirement, cache_root(), sys.executable), dest, print)
    except RocbuildError as exc:
        sys.exit(f"cannot fetch the sdist {requirement}: {exc}")
    return dest


def llvm_targets(root: str, wheel: Path, scratch: Path) -> dict[str, list[str]]:
    """{file in the wheel: offload bundle entries}, as the root's LLVM tools list them."""
    unpacked = scratch / wheel.stem
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(unpacked)
    return llvm_bundles(root, [p for p in sorted(unpacked.rglob("*.so*")) if p.is_file()], unpacked, scratch)


def llvm_bundles(root: str, files: list[Path], top: Path, scratch: Path) -> dict[str, list[str]]:
    """{file (relative to `top`; an archive's members as ARCHIVE(MEMBER)): offload bundle entries}."""
    found: dict[str, list[str]] = {}
    for path in files:
        members = [(str(path.relative_to(top)), path)]
        if path.suffix == ".a":  # a static library: its objects, taken out by the root's llvm-ar
            into = scratch / f"members-{path.stem}"
            into.mkdir(exist_ok=True)
            run([*ROCBUILD, "root", "run", root, "--", "sh", "-c", LLVM_AR_X, "sh", str(path)],
                capture_output=True, cwd=into)
            members = [(f"{path.relative_to(top)}({m.name})", m) for m in sorted(into.iterdir())]
        for name, member in members:
            if b".hip_fatbin" not in member.read_bytes():
                continue
            result = run([*ROCBUILD, "root", "run", root, "--", "python3", "-c", LLVM_CHECK, str(member),
                          str(member) + ".fatbin"], capture_output=True, cwd=scratch)
            entries = [line.strip() for line in result.stdout.splitlines() if line.strip()]
            found[name] = entries if result.returncode == 0 else [f"error: {result.stderr}"]
    return found


def covers(entries: list[str], arch: str) -> bool:
    return any(e.split("--")[-1].split(":")[0] == arch for e in entries)


def torch_kit(root: str) -> tuple[str, float]:
    """The root's build-only ROCm torch (made when missing or out of date, else kept): its python."""
    started = time.monotonic()
    made = run([*ROCBUILD, "root", "torch", root], capture_output=True)
    sys.stderr.write(made.stderr[-3000:])
    if made.returncode != 0:
        sys.exit(f"could not make a build-only torch in {root}")
    return made.stdout.strip().splitlines()[-1], time.monotonic() - started


def build_one(recipe: str, rocm: str, root: str, archs: str, source: Path | None, origin: str, sets: list[str],
              scratch: Path, until: str | None = None, built: str | None = None,
              python: str | None = None, no_code: bool = False) -> dict[str, Any]:
    """`until`: stop after that step; `built`: the glob (in the work folder) of what it made, whose
    device code is then checked instead of a wheel's. `no_code`: the build is meant to carry no device
    code (flash-attn's Triton backend): LLVM must then find none."""
    name = Path(recipe).stem if recipe.endswith((".yaml", ".yml")) else recipe  # a recipe file (a draft, say)
    out = scratch / f"wheelhouse-{name}-{rocm}"
    # A work folder of its own, no build cache and no ccache (BUILD_ENV): every record is a cold build.
    work = scratch / f"work-{name}-{rocm}"
    argv = [*ROCBUILD, "build", recipe, "--root", root, "--arch", archs, "--out", str(out), "--install-missing",
            "--no-cache", "--work", str(work)]
    if until is not None:
        argv += ["--until", until]
    if python is not None:
        argv += ["--python", python]
    if source is not None:
        argv += ["--source-dir", str(source)]
    for s in sets:
        argv += ["--set", s]
    started = time.monotonic()
    result, peak_kib = run_measured(argv, scratch)
    seconds = round(time.monotonic() - started, 1)
    sys.stderr.write(result.stderr[-4000:])
    disk = sum(p.lstat().st_blocks * 512 for p in work.rglob("*")) if work.is_dir() else 0
    record: dict[str, Any] = {"recipe": recipe, "rocm": rocm, "archs": archs.split(","), "build_seconds": seconds,
                              "rocbuild_version": ROCBUILD_VERSION,
                              "exit_code": result.returncode, "sets": sets,
                              "peak_process_mib": round(peak_kib / 1024), "disk_mib": round(disk / (1 << 20)),
                              "source": origin, **({"until": until} if until else {})}
    wheels = [Path(line) for line in result.stdout.splitlines() if line.endswith(".whl")]
    record["wheels"] = [w.name for w in wheels]
    if result.returncode != 0:
        err = result.stderr.splitlines()
        at = max((i for i, line in enumerate(err) if line.startswith("error:")), default=None)
        why = err[at] if at is not None else f"exit {result.returncode}"
        if at is not None and why.endswith(":"):  # "cannot build yet:" and the list of what is missing
            why += " " + "; ".join(line.strip().removeprefix("- ") for line in err[at + 1:]
                                   if line.startswith("  - "))
        record["verdict"] = "fail"
        # The reason without this run's scratch folder (a path of no use to a later reader).
        record["why"] = why.replace(str(scratch), "<scratch>")
        # The scratch folder goes when the run ends: a failed build's step logs are kept (not committed).
        kept = KEPT_LOGS / f"{name}-{rocm}"
        if (work / "logs").is_dir():
            shutil.rmtree(kept, ignore_errors=True)
            shutil.copytree(work / "logs", kept)
            print(f"{recipe} on ROCm {rocm}: its step logs are kept in {kept}", flush=True)
        return record
    llvm: dict[str, list[str]] = {}
    if built is not None:  # stopped early: what the last step made, found in the work folder
        made = sorted(p for p in work.glob(built) if p.is_file())
        record["built"] = [str(p.relative_to(work)) for p in made]
        checked = run([*ROCBUILD, "verify", "--json", "--arch", archs, *map(str, made)], capture_output=True) \
            if made else subprocess.CompletedProcess([], 1)
        llvm = llvm_bundles(root, made, work, scratch)
    else:
        # A build meant to carry no device code is verified for none (with --arch, verify wants code for it).
        judged = [] if no_code else ["--arch", archs]
        checked = run([*ROCBUILD, "verify", "--json", *judged, *map(str, wheels)], capture_output=True)
        for wheel in wheels:
            llvm.update(llvm_targets(root, wheel, scratch))
    record["rocbuild_verify"] = "ok" if checked.returncode == 0 else f"exit {checked.returncode}"
    record["llvm_offload_entries"] = llvm
    device_files = [entries for entries in llvm.values() if entries]
    if no_code:
        llvm_ok = not device_files
        record["llvm_check"] = "ok: no device code, as meant" if llvm_ok else "device code where none was meant"
    else:
        llvm_ok = bool(device_files) and all(covers(e, a) for e in device_files for a in archs.split(","))
        record["llvm_check"] = "ok" if llvm_ok else "missing archs or no device code"
    record["verdict"] = "pass" if checked.returncode == 0 and llvm_ok else "fail"
    if record["verdict"] == "fail":
        record["why"] = f"rocbuild verify: {record['rocbuild_verify']}; LLVM: {record['llvm_check']}"
    return record


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rocm", default="7.2", help="ROCm releases, comma-separated (default 7.2)")
    p.add_argument("--recipes", default="hello-hip", help="recipes, comma-separated (default hello-hip)")
    p.add_argument("--arch", default="gfx1100,gfx942,gfx1201")
    p.add_argument("--recipe-arch", action="append", default=[], metavar="NAME=ARCHS",
                   help="another arch set for one recipe (a heavy build, say)")
    p.add_argument("--source-dir", action="append", default=[], metavar="NAME=DIR")
    p.add_argument("--sdist", action="append", default=[], metavar="NAME=REQUIREMENT")
    p.add_argument("--set", action="append", default=[], metavar="NAME:OPTION=VALUE", help="a recipe's option")
    p.add_argument("--until", action="append", default=[], metavar="NAME=STEP",
                   help="build a recipe only up to a step (rocbuild build --until)")
    p.add_argument("--check-built", action="append", default=[], metavar="NAME=GLOB",
                   help="with --until: the files (a glob in the work folder) whose device code is checked")
    p.add_argument("--expect-fail", action="append", default=[], metavar="NAME",
                   help="a recipe known not to build yet: its failure is recorded, not fatal")
    p.add_argument("--no-device-code", default="", metavar="NAME,...",
                   help="recipes (or options of them) meant to carry no device code: LLVM must find none")
    p.add_argument("--torch-kit", default="", metavar="NAME,...",
                   help="recipes built against the root's build-only ROCm torch (rocbuild root torch)")
    p.add_argument("--root-prefix", default="real-rocm", help="roots are named PREFIX<rocm> (made when missing)")
    p.add_argument("--root", help="build in this root instead (one made from an image, say); its ROCm is its own")
    p.add_argument("--python", help="rocbuild build --python for the recipes not built against a torch kit "
                                    "(3.13,3.14 or all: one wheel per python)")
    p.add_argument("--results", default="real-builds/results.json")
    args = p.parse_args()
    sources = {k: Path(v).expanduser().resolve() for k, v in pairs(args.source_dir, "--source-dir").items()}
    sdists = pairs(args.sdist, "--sdist")
    # Where each tree came from, as the results say it (never a folder of this machine).
    origins = {name: "a --source-dir tree" for name in sources}
    origins.update({name: f"sdist {requirement}" for name, requirement in sdists.items()})
    recipe_archs = pairs(args.recipe_arch, "--recipe-arch")
    untils, built = pairs(args.until, "--until"), pairs(args.check_built, "--check-built")
    sets: dict[str, list[str]] = {}
    for item in args.set:
        name, _, setting = item.partition(":")
        sets.setdefault(name, []).append(setting)
    records = []
    with tempfile.TemporaryDirectory(prefix="real-builds-") as tmp:
        scratch = Path(tmp)
        for name, requirement in sdists.items():
            sources[name] = unpack_sdist(requirement, scratch / f"sdist-{name}")
        for rocm in args.rocm.split(",") if args.root is None else [str(root_info(args.root).get("rocm"))]:
            root, made_in = ensure_root(rocm, args.root_prefix) if args.root is None else (args.root, 0.0)
            kit_users = [r for r in args.torch_kit.split(",") if r]
            kit, kit_seconds = torch_kit(root) if kit_users else (None, 0.0)
            info = root_info(root)
            for recipe in args.recipes.split(","):
                python = kit if recipe in kit_users else args.python
                record = build_one(recipe, rocm, root, recipe_archs.get(recipe, args.arch), sources.get(recipe),
                                   origins.get(recipe, "the recipe's source"), sets.get(recipe, []), scratch,
                                   untils.get(recipe), built.get(recipe), python,
                                   no_code=recipe in args.no_device_code.split(","))
                if recipe in kit_users:
                    record.update(torch="a build-only ROCm torch (rocbuild root torch)",
                                  torch_kit_seconds=round(kit_seconds, 1))
                record.update({"root": root, "suite": info.get("suite"), "root_id": info.get("id"),
                               **({"image": info["image"], "image_os": info.get("os"), "pythons": args.python}
                                  if info.get("image") else {}),
                               "rocm_packages": {k: v for k, v in info.get("versions", {}).items()
                                                 if k in ("hipcc", "libamdhip64-dev")},
                               "root_create_seconds": round(made_in, 1),
                               "expected_fail": recipe in args.expect_fail,
                               "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")})
                records.append(record)
                print(f"{recipe} on ROCm {rocm}: {record['verdict']} in {record['build_seconds']}s"
                      + (f" ({record.get('why')})" if record["verdict"] != "pass" else ""), flush=True)
    results = Path(args.results)
    results.parent.mkdir(parents=True, exist_ok=True)
    # The file keeps the latest record of every recipe, ROCm release, arch set and kind of root (Debian's,
    # or one from an image): this run's replace their own.
    def key(r: dict[str, Any]) -> tuple[Any, Any, Any, bool]:
        return r.get("recipe"), r.get("rocm"), tuple(r.get("archs") or ()), "image" in r

    done = {key(r) for r in records}
    kept = [r for r in json.loads(results.read_text()) if key(r) not in done] if results.is_file() else []
    results.write_text(json.dumps(kept + records, indent=2) + "\n")
    print(f"results: {results}")
    bad = [r for r in records if r["verdict"] != "pass" and not r["expected_fail"]]
    return 1 if bad else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
