"""A container image laid out as AMD's rocm/dev-ubuntu images are, made from one of rocbuild's Debian
build roots and imported into podman (no registry is reachable from the machines rocbuild is tested on,
so AMD's own images cannot be pulled there):

    python scripts/amd-like-image.py --root amd-src72 --image localhost/rocbuild/amd-like:7.2

What it holds, as AMD's images do: the ROCm release under /opt/rocm-X.Y.Z with the /opt/rocm link, its
files in AMD's places (bin/, lib/ with lib/cmake/, include/, share/, llvm/, .info/version), and the
pythons in /usr/bin. `rocbuild root create NAME --image IMAGE` then makes a root of it.

What differs from AMD's images (write it beside any result made in one):
- The userland is Debian's (sid), not Ubuntu's: glibc, libstdc++ and the pythons are sid's.
- /opt/rocm-X.Y.Z holds links to Debian's ROCm files under /usr, not files of its own: every file of
  the root's ROCm-family packages (as dpkg lists them) is linked at its place under the prefix.
- The HIP compiler is Debian's hipcc with Debian's LLVM (/usr/lib/llvm-N); hipcc run with
  ROCM_PATH set looks for clang at $ROCM_PATH/lib/llvm-N, so lib/llvm-N links there too (AMD's
  is llvm/ and lib/llvm); its device libraries are in clang's resource folder, linked as amdgcn/.
- Debian's ROCm version numbering: .info/version is made from /usr/share/hip/version.
- apt's sources are Debian's, not repo.radeon.com; package names are Debian's (librocblas-dev, not
  rocblas-dev).
- Its ENV sets ROCM_PATH=/opt/rocm (AMD's dev images set none): Debian's ROCm under /usr is still
  there, and would be found first otherwise."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from rocbuild.roots.store import rocm_packages  # noqa: E402  (the ROCm family, as root list names it)

ROCBUILD = [sys.executable, "-m", "rocbuild"]
MULTIARCH = "usr/lib/x86_64-linux-gnu/"
# Where a Debian file of the ROCm family goes under /opt/rocm-X.Y.Z: the first matching prefix wins.
PLACES = ((MULTIARCH, "lib/"), ("usr/lib/", "lib/"), ("usr/include/", "include/"), ("usr/bin/", "bin/"),
          ("usr/share/", "share/"), ("usr/libexec/", "libexec/"))


def rocm_release(tree: Path) -> str:
    """X.Y.Z from /usr/share/hip/version (HIP's own patch number is a build number, not ROCm's)."""
    text = (tree / "usr/share/hip/version").read_text()
    fields = dict(re.findall(r"^(\w+)=(\S*)$", text, re.MULTILINE))
    return f"{fields['HIP_VERSION_MAJOR']}.{fields['HIP_VERSION_MINOR']}.0"


def package_files(tree: Path, package: str) -> list[str]:
    info = tree / "var/lib/dpkg/info"
    for name in (f"{package}.list", f"{package}:amd64.list"):
        if (info / name).is_file():
            return [line.strip().lstrip("/") for line in (info / name).read_text().splitlines() if line.strip()]
    return []


def layout(tree: Path, overlay: Path, release: str) -> int:
    """Links under overlay/opt/rocm-RELEASE to every file of the root's ROCm family; their count."""
    prefix = overlay / "opt" / f"rocm-{release}"
    count = 0
    for package in sorted(rocm_packages(tree)):
        for path in package_files(tree, package):
            if not (tree / path).is_file() and not (tree / path).is_symlink():
                continue  # folders come from their files
            if path.startswith("usr/lib/llvm-"):
                continue  # LLVM's folder is linked whole (below)
            place = next((dest + path[len(src):] for src, dest in PLACES if path.startswith(src)), None)
            if place is None or (prefix / place).exists():
                continue
            (prefix / place).parent.mkdir(parents=True, exist_ok=True)
            (prefix / place).symlink_to("/" + path)
            count += 1
    for llvm in sorted((tree / "usr/lib").glob("llvm-[0-9]*")):
        (prefix / "lib" / llvm.name).symlink_to(f"/usr/lib/{llvm.name}")  # Debian's hipcc under ROCM_PATH
        if not (prefix / "llvm").exists():
            (prefix / "llvm").symlink_to(f"/usr/lib/{llvm.name}")
        # The device libraries, where clang given --rocm-path (hipcc passes $ROCM_PATH) looks: AMD's
        # amdgcn/bitcode. Debian keeps them in clang's resource folder.
        for bitcode in sorted(llvm.glob("lib/clang/*/amdgcn")):
            if not (prefix / "amdgcn").exists():
                (prefix / "amdgcn").symlink_to("/" + str(bitcode.relative_to(tree)))
    (prefix / ".info").mkdir(parents=True, exist_ok=True)
    (prefix / ".info" / "version").write_text(f"{release}-debian\n")
    (overlay / "opt" / "rocm").symlink_to(f"rocm-{release}")
    return count


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", required=True, help="a rocbuild root (rocbuild root create NAME --rocm X.Y)")
    p.add_argument("--image", required=True, help="the image's name in podman (localhost/...)")
    args = p.parse_args()
    found = subprocess.run([*ROCBUILD, "root", "path", args.root], capture_output=True, text=True, check=False)
    if found.returncode != 0:
        sys.exit(found.stderr.strip())
    tree = Path(found.stdout.strip())
    release = rocm_release(tree)
    with tempfile.TemporaryDirectory(prefix="amd-like-") as tmp:
        overlay = Path(tmp)
        links = layout(tree, overlay, release)
        for entry in (tree / "opt").iterdir():  # podman takes no path twice: /opt comes from the overlay
            if entry.name.startswith("rocm"):
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.copytree(entry, overlay / "opt" / entry.name, symlinks=True)
            else:
                shutil.copy2(entry, overlay / "opt" / entry.name, follow_symlinks=False)
        # One stream, no copy of the root on disk: the root's tree but /opt, then the overlay's /opt (named
        # `opt`, not `./opt`, which the exclusion would also drop).
        tar = subprocess.Popen(["tar", "-cf", "-", "--numeric-owner", "-C", str(tree), "--anchored",
                                "--exclude=./opt", ".", "-C", str(overlay), "opt"], stdout=subprocess.PIPE)
        # AMD's dev images set no ENV, and their /usr holds no ROCm; this one's /usr holds Debian's, so the
        # image says ROCM_PATH=/opt/rocm (a root from an image is entered with the image's ENV).
        imported = subprocess.run(["podman", "import", "--change", "CMD=/bin/bash", "--change",
                                   "ENV=ROCM_PATH=/opt/rocm", "-", args.image],
                                  stdin=tar.stdout, capture_output=True, text=True, check=False)
        if tar.stdout is not None:
            tar.stdout.close()
        if tar.wait() != 0 or imported.returncode != 0:
            sys.exit(f"podman import failed: {imported.stderr.strip()[-1000:]}")
    print(json.dumps({"image": args.image, "from_root": args.root, "rocm": release, "links": links}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
