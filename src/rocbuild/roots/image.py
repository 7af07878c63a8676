"""`rocbuild root create NAME --image IMAGE`: a root from a container image (AMD's rocm/dev-ubuntu-*, rocm/pytorch,
or any image holding ROCm), through podman or docker: the image's filesystem is exported from a container
that is created and never started, and unpacked into the root's tree, which rocbuild then enters as it
enters its Debian roots. What the image holds is read from its files and recorded: its ROCm (AMD's
/opt/rocm-X.Y.Z and the /opt/rocm link), its pythons, its glibc and its OS."""

from __future__ import annotations

import datetime
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

from rocbuild.errors import HostNotReady, StepFailed, UsageError
from rocbuild.fsutil import write_text_atomically
from rocbuild.progress import Progress
from rocbuild.roots.store import INFO, TREE, Root, check_name, remove_tree, roots_folder

ENGINES = ("podman", "docker")
GLIBC_RE = re.compile(rb"GNU C Library [^\n]*? version (\d+\.\d+)")
PYTHON_RE = re.compile(r"^python3\.(\d+)$")


def find_engine(asked: str | None) -> str:
    for engine in (asked,) if asked else ENGINES:
        path = shutil.which(engine) if engine else None
        if path:
            return path
    raise HostNotReady(f"a root from an image needs {asked or 'podman or docker'}, which is not installed",
                       hint="apt-get install podman (images are read locally; no registry is needed for a local one)")


def export_commands(engine: str, image: str, container: str, tar: Path) -> list[list[str]]:
    """Create a container (never started), export its filesystem, remove it."""
    return [[engine, "create", "--name", container, image, "/bin/true"],
            [engine, "export", "--output", str(tar), container],
            [engine, "rm", container]]


def create_from_image(name: str, image: str, engine: str, progress: Progress) -> Root:
    check_name(name)
    folder = roots_folder() / name
    if folder.exists():
        raise UsageError(f"root {name!r} exists already ({folder})", hint=f"remove it first: rocbuild root remove {name}")
    partial = roots_folder() / f"{name}.part"
    if partial.exists():
        remove_tree(partial)
    (partial / TREE).mkdir(parents=True)
    tar = partial / "image.tar"
    started = progress.start(f"root create {name}", f"from image {image} ({Path(engine).name})")
    try:
        # One inspect for both: the id, then the ENV as JSON (a list, or null for an image that sets none).
        image_id, _, env_json = _run([engine, "image", "inspect", "--format", "{{.Id}} {{json .Config.Env}}", image],
                                     f"no image {image} in {engine}").strip().partition(" ")
        env = json.loads(env_json or "null") or []
        for argv in export_commands(engine, image, f"rocbuild-export-{os.getpid()}", tar):
            progress.say("    $ " + shlex.join(argv))
            _run(argv, f"{Path(engine).name} could not export {image}")
        _run(["tar", "-xf", str(tar), "-C", str(partial / TREE), "--numeric-owner"], "the exported image did not unpack")
        tar.unlink()
        (partial / TREE / "etc" / "resolv.conf").unlink(missing_ok=True)  # the mount point entering binds over
        (partial / TREE / "etc").mkdir(exist_ok=True)
        (partial / TREE / "etc" / "resolv.conf").touch()
        # Its ENV (PATH with /opt/rocm/bin, ROCM_PATH, ...): entering the root sets it, as a container would.
        info = {"name": name, "image": image, "image_id": image_id, "engine": Path(engine).name, "env": env,
                **image_facts(partial / TREE), "mode": "image",
                "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        write_text_atomically(partial / INFO, json.dumps(info, indent=2) + "\n")
        os.replace(partial, folder)
    except BaseException:
        remove_tree(partial)
        raise
    progress.done(f"root create {name}", started, f"ROCm {info['rocm'] or 'none found'}, python "
                  f"{', '.join(info['pythons']) or 'none'}, glibc {info['glibc'] or '?'}")
    return Root(name, folder / TREE, info)


def image_facts(tree: Path) -> dict[str, Any]:
    """Read from the files: ROCm's version (/opt/rocm/.info/version), the python3.X in /usr/bin and
    /usr/local/bin, glibc's version (from its own banner), the OS (os-release)."""
    rocm = None
    version_file = tree / "opt" / "rocm" / ".info" / "version"
    if version_file.is_file():
        rocm = version_file.read_text(errors="replace").strip().split("-")[0] or None
    pythons = sorted({f"3.{m[1]}" for d in ("usr/bin", "usr/local/bin") if (tree / d).is_dir()
                      for n in os.listdir(tree / d) if (m := PYTHON_RE.match(n))}, key=lambda v: int(v.split(".")[1]))
    glibc = None
    for libc in (tree / "usr/lib/x86_64-linux-gnu/libc.so.6", tree / "lib/x86_64-linux-gnu/libc.so.6"):
        if libc.is_file():
            found = GLIBC_RE.search(libc.read_bytes())
            glibc = found.group(1).decode() if found else None
            break
    os_name = None
    release = tree / "etc" / "os-release"
    if release.is_file():
        pretty = re.search(r'^PRETTY_NAME="?([^"\n]*)', release.read_text(errors="replace"), re.MULTILINE)
        os_name = pretty.group(1) if pretty else None
    return {"rocm": rocm, "pythons": pythons, "glibc": glibc, "os": os_name}


def _run(argv: list[str], failed: str) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise StepFailed(f"{failed}: `{' '.join(argv)}` exited with {proc.returncode}: "
                         f"{proc.stderr.strip()[-500:] or 'no message'}")
    return proc.stdout
