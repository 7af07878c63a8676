"""What the oldest supported Python (3.10) lacks from the standard library, taken from the packages that
backport it (declared in pyproject.toml for 3.10 only), so no module tests the version itself."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from typing import assert_never

    import tomllib
else:  # Python 3.10
    import tomli as tomllib
    from typing_extensions import assert_never

__all__ = ["assert_never", "tomllib"]
