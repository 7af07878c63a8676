"""Read-only probes of the host (rocminfo, hipconfig --version, ...) used by detection."""

from __future__ import annotations

import json
import os
import shutil

from rocbuild.fsutil import write_text_atomically
from rocbuild.paths import cache_root
from rocbuild.process.runner import query

__all__ = ["query", "remembered_query"]


def remembered_query(argv: list[str], env: dict[str, str], *, salt: str = "") -> str | None:
    """query(), remembered in the cache while the tool's file, HIP/ROCm variables and `salt` stay the same.

    Distro layouts answer version questions only through hipcc/hipconfig, Perl
    scripts that take ~0.1 s each; a cached build should not pay that each time."""
    tool = shutil.which(argv[0], path=env.get("PATH"))
    if tool is None:
        return None
    try:
        st = os.stat(tool)
    except OSError:
        return query(argv, env)
    key = json.dumps([argv, os.path.realpath(tool), st.st_size, st.st_mtime_ns, salt,
                      sorted((k, v) for k, v in env.items() if k.startswith(("HIP_", "ROCM_", "HSA_")))])
    store = cache_root() / "probes.json"
    try:
        known = json.loads(store.read_text())
    except (OSError, ValueError):
        known = {}
    if isinstance(known.get(key), str):
        cached: str = known[key]
        return cached
    out = query(argv, env)
    if out is not None:
        known[key] = out
        try:
            store.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomically(store, json.dumps(known))
        except OSError:
            pass  # a read-only cache only costs time
    return out
