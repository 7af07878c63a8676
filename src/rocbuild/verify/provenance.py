"""The provenance file rocbuild writes into every wheel it labels (.dist-info/rocbuild-provenance.json),
read back by verify to compare the wheel with the ROCm it says it was built with."""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROVENANCE = "rocbuild-provenance.json"


@dataclass(frozen=True)
class Provenance:
    """What verify uses of a wheel's provenance. A field the file lacks, or holds in another shape (a
    hand-made or older wheel), is None (or empty); `raw` is the file as read, shown by `verify --json`."""

    raw: Mapping[str, Any] = field(default_factory=dict, hash=False)
    rocbuild: str | None = None  # the version that built it
    built_at: str | None = None
    build_key: str | None = None
    recipe: str | None = None
    recipe_version: str | None = None
    source_kind: str | None = None  # git | sdist | folder
    source: str | None = None  # the commit, or the sdist and its sha256
    archs: tuple[str, ...] = ()
    rocm_version: str | None = None
    rocm_path: str | None = None
    torch_version: str | None = None  # the target python's torch it was built against
    torch_hip: str | None = None
    torch_build_only: bool = False  # a build-only ROCm torch (`rocbuild root torch`): it cannot be imported
    run_env: tuple[tuple[str, str], ...] = ()  # what the package needs set at run time (its recipe's run-env)

    @property
    def rocm_major(self) -> int | None:
        m = re.match(r"[0-9]+", self.rocm_version or "")
        return int(m.group()) if m else None


def parse_provenance(data: Mapping[str, Any]) -> Provenance:
    identity = _mapping(data.get("identity"))
    source, recipe, toolchain = (_mapping(identity.get(k)) for k in ("source", "recipe", "toolchain"))
    torch = _mapping(_mapping(identity.get("python")).get("torch"))
    archs = identity.get("archs")
    return Provenance(
        raw=data, rocbuild=_text(data.get("rocbuild")), built_at=_text(data.get("built_at")),
        build_key=_text(data.get("build_key")), recipe=_text(recipe.get("name")),
        recipe_version=_text(recipe.get("version")), source_kind=_text(source.get("kind")),
        source=_text(source.get("identity")),
        archs=tuple(str(a) for a in archs) if isinstance(archs, list) else (),
        rocm_version=_text(toolchain.get("rocm_version")), rocm_path=_text(toolchain.get("rocm_path")),
        torch_version=_text(torch.get("version")), torch_hip=_text(torch.get("hip")),
        torch_build_only=torch.get("build_only") in (True, "true"),
        run_env=tuple((str(k), str(v)) for k, v in _mapping(data.get("run_env")).items()))


def read_provenance(wheel: Path) -> Provenance | None:
    try:
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if name.count("/") == 1 and name.endswith(f".dist-info/{PROVENANCE}"):
                    data = json.loads(zf.read(name))
                    return parse_provenance(data) if isinstance(data, dict) else None
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    return None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    # JSON's true and false are no version (a bool is an int to Python)
    return str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
