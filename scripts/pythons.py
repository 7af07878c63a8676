"""The CPython interpreters this machine has that rocbuild supports (requires-python), oldest first:
pyenv's builds (PYENV_ROOT, else ~/.pyenv) and the system's python3.X. One path per minor version.

    python scripts/pythons.py            # every one, a line each: VERSION PATH
    python scripts/pythons.py --ends     # only the oldest and the newest

Runs on any python3 (standard library only), so the Makefile can ask before any venv exists."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

OLDEST = (3, 10)  # pyproject.toml's requires-python
MINOR = re.compile(r"^python3\.(\d+)$")


def candidates() -> list[Path]:
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    found = sorted(pyenv.glob("3.*/bin/python3.*")) if pyenv.is_dir() else []
    for folder in ("/usr/bin", "/usr/local/bin"):
        found += sorted(Path(folder).glob("python3.*"))
    return [p for p in found if MINOR.match(p.name) and os.access(p, os.X_OK)]


def version(python: Path) -> tuple[int, int] | None:
    """What the interpreter says it is (a pyenv folder name or a link can mislead)."""
    try:
        out = subprocess.run([str(python), "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = out.stdout.split()
    return (int(parts[0]), int(parts[1])) if out.returncode == 0 and len(parts) == 2 else None


def supported() -> dict[tuple[int, int], Path]:
    out: dict[tuple[int, int], Path] = {}
    for python in candidates():
        v = version(python)
        if v is not None and v >= OLDEST and v not in out:
            out[v] = python
    return dict(sorted(out.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ends", action="store_true", help="only the oldest and the newest")
    args = parser.parse_args()
    found = supported()
    if not found:
        print("no supported CPython (3.10 or newer) found", file=sys.stderr)
        return 1
    picked = list(found.items())
    if args.ends:
        picked = [picked[0], picked[-1]] if len(picked) > 1 else picked
    for (major, minor), path in picked:
        print(f"{major}.{minor} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
