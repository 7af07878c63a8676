"""PEP 440 local version labels as rocbuild accepts them (rocm6.1, g1234.rocm6.1): a leaf, for the
recipe loader, the planner and the wheel rewriter alike."""

from __future__ import annotations

import re

LOCAL_LABEL_RE = re.compile(r"^[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*$")
