"""The provenance file rocbuild writes into every wheel it labels (.dist-info/rocbuild-provenance.json),
read back by verify to compare the wheel with the ROCm it says it was built with."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

PROVENANCE = "rocbuild-provenance.json"


def read_provenance(wheel: Path) -> dict[str, Any] | None:
    try:
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if name.count("/") == 1 and name.endswith(f".dist-info/{PROVENANCE}"):
                    data = json.loads(zf.read(name))
                    return data if isinstance(data, dict) else None
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    return None
