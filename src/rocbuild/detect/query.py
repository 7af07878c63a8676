"""Read-only probes of the host (rocminfo, hipconfig --version, ...) used by detection."""

from __future__ import annotations

import shutil
import subprocess


def query(argv: list[str], env: dict[str, str] | None = None, timeout: float = 60) -> str | None:
    """A probe's stdout; None when the tool is missing, fails or hangs."""
    path = env.get("PATH") if env is not None else None
    if shutil.which(argv[0], path=path) is None:
        return None
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                              stdin=subprocess.DEVNULL, errors="replace")
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None
