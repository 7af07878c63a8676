"""What the oldest supported Python (3.10) lacks from the standard library, taken from the packages that
backport it (declared in pyproject.toml for 3.10 only), so no module tests the version itself."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if sys.version_info >= (3, 11):
    from typing import assert_never
else:  # Python 3.10
    from typing_extensions import assert_never

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
else:

    def __getattr__(name: str) -> object:
        """`tomllib` is imported when first asked for: most commands read no TOML (it costs ~5 ms)."""
        if name != "tomllib":
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        import importlib

        module = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")
        globals()["tomllib"] = module
        return module


__all__ = ["assert_never", "tomllib"]
