"""Build roots on disk: XDG_DATA_HOME/rocbuild/roots/NAME holds `tree/` (the Debian userland) and
`root.json` (how it was made). `--root` also takes any folder holding a Debian tree."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocbuild.errors import HostNotReady, UsageError
from rocbuild.paths import data_root, short_hash

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
NAME_ACCEPTED = "letters, digits, '.', '_' and '-', starting with a letter or digit (at most 64)"
INFO = "root.json"
TREE = "tree"
# The packages whose versions make a root's identity and are shown by `root list`.
ROCM_TEAM = "Debian ROCm Team"
ROCM_PACKAGE = re.compile(r"^(?:lib)?(?:rocm|rocblas|rocprim|rocthrust|rocrand|rocfft|rocsparse|rocsolver|rocalution"
                          r"|rocwmma|roctx|roctracer|rocprofiler|rocdecode|rocjpeg|hip|amdhip|amd-comgr|hsa|rccl"
                          r"|miopen|migraphx|composable-kernel)[\w.+-]*$")
SHOWN_PACKAGES = ("hipcc", "libamdhip64-dev", "libhipblas-dev", "libhipblaslt-dev", "librocblas-dev", "librccl-dev",
                  "librocm-core-dev", "cmake", "g++", "python3", "libc6")


def roots_folder() -> Path:
    return data_root() / "roots"


def check_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise UsageError(f"root name {name!r}: not accepted", hint=f"accepted: {NAME_ACCEPTED}")
    return name


def installed_packages(tree: Path) -> dict[str, str]:
    """{package: version} of what dpkg has installed in `tree`."""
    return _versions(_installed(tree))


def _versions(installed: list[dict[str, str]]) -> dict[str, str]:
    return {fields["Package"]: fields["Version"] for fields in installed}


def rocm_packages(tree: Path) -> dict[str, str]:
    return _rocm_family(_installed(tree))


def _rocm_family(installed: list[dict[str, str]]) -> dict[str, str]:
    """{package: version} of the ROCm family: what Debian's ROCm team maintains, and packages named like
    ROCm's libraries (librocprim-dev, libhipcub-dev, ...) whoever maintains them."""
    return _versions([fields for fields in installed
                      if ROCM_TEAM in fields.get("Maintainer", "") or ROCM_PACKAGE.match(fields["Package"])])


def _installed(tree: Path) -> list[dict[str, str]]:
    try:
        text = (tree / "var" / "lib" / "dpkg" / "status").read_text(errors="replace")
    except OSError:
        return []
    out = []
    for stanza in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line[:1].isspace())
        if fields.get("Status", "").endswith(" installed") and "Package" in fields and "Version" in fields:
            out.append(fields)
    return out


@dataclass(frozen=True)
class Root:
    name: str
    tree: Path  # the userland's /
    info: dict[str, Any] = field(default_factory=dict)  # root.json; empty for a bare tree given as --root DIR

    @property
    def folder(self) -> Path:
        return self.tree.parent if self.info else self.tree

    def packages(self) -> dict[str, str]:
        return installed_packages(self.tree)

    def identity(self) -> dict[str, Any]:
        """What a build in this root depends on: its suite and the versions of its toolchain packages."""
        stanzas = _installed(self.tree)  # dpkg's status read once for both
        installed = _versions(stanzas)
        versions = {p: installed[p] for p in SHOWN_PACKAGES if p in installed}
        rocm = _rocm_family(stanzas)
        image = self.info.get("image_id")  # a root from an image: the image it was made from, too
        return {"suite": self.info.get("suite"), "id": short_hash([versions, rocm, *([image] if image else [])], 12),
                "versions": versions, "components": rocm}

    @property
    def apt_target(self) -> str | None:
        value = self.info.get("apt_target")
        return value if isinstance(value, str) else None

    def to_json(self) -> dict[str, Any]:
        ident = self.identity()
        image = ({k: self.info.get(k) for k in ("image", "image_id", "pythons", "glibc", "os", "env")}
                 if self.info.get("image") else {})
        return {"name": self.name, "path": str(self.tree), "suite": self.info.get("suite"),
                "rocm": self.info.get("rocm"), "mirror": self.info.get("mirror"), "created": self.info.get("created"),
                "mode": self.info.get("mode"), "id": ident["id"], "versions": ident["versions"], **image}


def is_tree(path: Path) -> bool:
    return (path / "usr" / "bin" / "dpkg").is_file() and (path / "var" / "lib" / "dpkg" / "status").is_file()


def read_info(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / INFO).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def all_roots() -> list[Root]:
    folder = roots_folder()
    if not folder.is_dir():
        return []
    out = []
    for sub in sorted(folder.iterdir()):
        info = read_info(sub)
        if info is not None and NAME_RE.match(sub.name) and is_tree(sub / TREE):
            out.append(Root(sub.name, sub / TREE, info))
    return out


def find_root(ref: str) -> Root:
    """`--root NAME` (a root rocbuild made) or `--root DIR` (a root folder, or any Debian tree)."""
    if "/" in ref or ref in (".", ".."):
        path = Path(ref).resolve()
        info = read_info(path)
        if info is not None and is_tree(path / TREE):
            return Root(str(info.get("name") or path.name), path / TREE, info)
        if is_tree(path):
            return Root(path.name, path, {})
        raise UsageError(f"--root {ref}: not a build root",
                         hint="give a root's name (see `rocbuild root list`), or a folder holding a Debian tree "
                              "(usr/bin/dpkg, var/lib/dpkg/status)")
    check_name(ref)
    folder = roots_folder() / ref
    info = read_info(folder)
    if info is None or not is_tree(folder / TREE):
        names = ", ".join(r.name for r in all_roots()) or "none yet"
        raise UsageError(f"--root {ref}: no such root",
                         hint=f"roots: {names}; make one with `rocbuild root create {ref} --rocm 7.2`")
    return Root(ref, folder / TREE, info)


def remove_tree(folder: Path) -> None:
    """Remove a root's folder. A root made without root privileges belongs partly to this user's
    subordinate ids (mmdebstrap's unshare mode): only a user namespace mapping them can remove it."""
    try:
        shutil.rmtree(folder)
        return
    except PermissionError:
        if os.geteuid() == 0:
            raise
    result = subprocess.run(["unshare", "--map-root-user", "--map-auto", "rm", "-rf", "--", str(folder)],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0 or folder.exists():
        raise HostNotReady(f"cannot remove {folder}: {result.stderr.strip() or 'permission denied'}",
                           hint="it holds files of this user's subordinate ids; remove it as root")


def remove_root(name: str) -> Path:
    root = find_root(check_name(name))
    remove_tree(root.folder)
    return root.folder
