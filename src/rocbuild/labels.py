"""PEP 440 local version labels as rocbuild accepts them (rocm6.1, g1234.rocm6.1): a leaf, for the
recipe loader, the planner and the wheel rewriter alike."""

from __future__ import annotations

import re

LOCAL_LABEL_RE = re.compile(r"^[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*$")
# The label goes into every wheel's file name, which (with the project's name, version and tags, and
# the temporary suffix a wheel is written under) must fit the file system's 255 bytes.
MAX_LOCAL_LABEL = 64
LOCAL_LABEL_ACCEPTED = (f"letters and digits separated by '.', '_' or '-', at most {MAX_LOCAL_LABEL} characters "
                        "(e.g. rocm6.1)")


def local_label_problem(label: str) -> str | None:
    """What is wrong with a local label, or None."""
    if not LOCAL_LABEL_RE.match(label):
        return "not a PEP 440 local version label"
    if len(label) > MAX_LOCAL_LABEL:
        return f"{len(label)} characters, more than a wheel's file name has room for"
    return None
