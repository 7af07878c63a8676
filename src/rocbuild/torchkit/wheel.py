"""A build-only ROCm torch as a wheel (`rocbuild root torch NAME --wheel DIR`): its torch package, for a
package index that `--install-missing --torch-index URL` installs from into a virtual environment of the
same root (whose Debian torch libraries and ROCm its torch still needs). It declares no dependencies:
the root's Debian packages provide them. Its version says build-only, as the kit's torch does."""

from __future__ import annotations

import base64
import hashlib
import os
import zipfile
from pathlib import Path

from rocbuild.torchkit.kit import KitInfo

SUMMARY = ("A build-only ROCm torch made by rocbuild from Debian's torch {torch} and ROCm {rocm}: headers and "
           "link-only libraries for compiling torch extensions; nothing built against it can be imported")


def pack_kit(torch: Path, info: KitInfo, python_tag: str, out: Path) -> Path:
    """`torch` (the kit's package folder) zipped as torch-VERSION-TAG-TAG-linux_x86_64.whl in `out`."""
    tag = f"{python_tag}-{python_tag}-linux_{os.uname().machine}"
    info_dir = f"torch-{info.version}.dist-info"
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"torch-{info.version}-{tag}.whl"
    part = wheel.with_name(wheel.name + ".part")
    records: list[str] = []
    with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for path in sorted(p for p in torch.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            name = path.relative_to(torch.parent).as_posix()
            records.append(_add(zf, name, path.read_bytes(), executable=os.access(path, os.X_OK)))
        for name, text in _dist_info(info, tag).items():
            records.append(_add(zf, f"{info_dir}/{name}", text.encode()))
        zf.writestr(f"{info_dir}/RECORD", "".join(records) + f"{info_dir}/RECORD,,\n")
    part.replace(wheel)
    return wheel


def _dist_info(info: KitInfo, tag: str) -> dict[str, str]:
    return {"METADATA": (f"Metadata-Version: 2.1\nName: torch\nVersion: {info.version}\n"
                         f"Summary: {SUMMARY.format(torch=info.torch, rocm=info.rocm)}\n"),
            "WHEEL": f"Wheel-Version: 1.0\nGenerator: rocbuild\nRoot-Is-Purelib: false\nTag: {tag}\n"}


def _add(zf: zipfile.ZipFile, name: str, data: bytes, *, executable: bool = False) -> str:
    """One member, and its RECORD line (PEP 376: urlsafe base64 sha256 without padding, and size)."""
    member = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    member.compress_type = zipfile.ZIP_DEFLATED
    member.external_attr = (0o755 if executable else 0o644) << 16
    zf.writestr(member, data)
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}\n"
