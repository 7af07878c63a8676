"""Rendering recipe templates against a concrete host: sandboxed, strict, positioned errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jinja2
from jinja2.exceptions import SecurityError

import rocbuild.recipe.templating as templating
from rocbuild.detect.rocm import Rocm, RocmVersion
from rocbuild.detect.torch import TorchInfo
from rocbuild.errors import RecipeError
from rocbuild.recipe.model import Position


class RocmView:
    """What templates see as `rocm`: strings and a version, no live objects."""

    def __init__(self, rocm: Rocm):
        self.path = str(rocm.path)
        self.version = rocm.version or RocmVersion("0")
        self.layout = rocm.layout
        self.cmake_hip_dir = str(rocm.cmake_hip_dir or "")
        self.hip_lang_dir = str(rocm.hip_lang_dir or "")
        self.hip_compiler = str(rocm.hip_compiler or "")
        self.hipcc = str(rocm.hipcc or "")
        self.hip_clang_dir = str(rocm.hip_compiler.parent) if rocm.hip_compiler else ""
        self.include_dir = str(rocm.include_dir or "")
        self.device_lib_dir = str(rocm.device_lib_dir or "")
        self._rocm = rocm

    def has_header(self, name: str) -> bool:
        return self._rocm.has_header(str(name))

    def __str__(self) -> str:
        return self.path


@dataclass(frozen=True)
class PythonView:
    executable: str
    version: str

    def __str__(self) -> str:
        return self.executable


class TorchView:
    """What templates see as `torch`: the target python's torch as the host found it (from its
    torch/version.py, never imported). `torch.version >= '2.1'` compares as a version; with no torch,
    `found` is false, `version` is 0 and `flavour` is 'none'."""

    def __init__(self, torch: TorchInfo | None):
        self._torch = torch

    def _info(self) -> TorchInfo | None:
        return self._torch

    @property
    def found(self) -> bool:
        return self._info() is not None

    @property
    def version(self) -> RocmVersion:
        info = self._info()
        return RocmVersion(info.version if info is not None and info.version else "0")

    @property
    def build_only(self) -> bool:
        """A build-only ROCm torch (`rocbuild root torch`): wheels built against it cannot be imported."""
        info = self._info()
        return info is not None and info.build_only

    @property
    def rocm_home(self) -> str:
        """The ROCm home a build-only torch brings for cpp_extension's ROCM_HOME ("" otherwise)."""
        info = self._info()
        return info.rocm_home or "" if info is not None else ""

    @property
    def cmake_prefix(self) -> str:
        """Where torch's CMake package is, as torch.utils.cmake_prefix_path says ("" with no torch)."""
        info = self._info()
        return f"{info.path}/share/cmake" if info is not None else ""

    @property
    def folder(self) -> str:
        """torch's package folder (include/, lib/, share/cmake: what a libtorch archive holds; "" with no torch)."""
        info = self._info()
        return str(info.path) if info is not None else ""

    @property
    def flavour(self) -> str:
        """rocm | cuda | cpu | unknown | none."""
        info = self._info()
        return info.flavour if info is not None else "none"

    @property
    def rocm_version(self) -> RocmVersion:
        """The ROCm release a ROCm torch was built for (0 otherwise)."""
        info = self._info()
        return RocmVersion(info.rocm_version if info is not None and info.rocm_version else "0")

    def __str__(self) -> str:
        info = self._info()
        return (info.version or "") if info is not None else ""


class Renderer:
    def __init__(self, context: dict[str, Any]):
        missing = templating.CONTEXT_NAMES - set(context)
        assert not missing, f"render context lacks {missing}"
        self.context = context

    def text(self, value: Any, pos: Position | None, key: str | None = None) -> str:
        """Render one string; a non-template comes back unchanged (the loader made every leaf a string)."""
        if not isinstance(value, str):
            return str(value)
        if not templating.is_template(value):
            return value
        try:
            out = templating.compile_template(value).render(self.context)
            if len(out) > templating.MAX_VALUE:
                raise templating.TooLarge(f"it renders to more than {templating.MAX_VALUE} characters")
            return out
        except RecursionError:
            raise self._error("template nested too deeply", value, pos, key, None) from None
        except SecurityError as exc:
            raise self._error(f"template refused by the sandbox: {exc}", value, pos, key,
                              "plain values: archs, rocm.path, options.NAME, ... (no underscore attributes)") from None
        except jinja2.UndefinedError as exc:
            raise self._error(f"template uses something undefined: {exc.message}", value, pos, key,
                              ", ".join(sorted(templating.CONTEXT_NAMES))) from None
        except jinja2.TemplateError as exc:
            raise self._error(f"template error: {exc}", value, pos, key, None) from None
        except (TypeError, ValueError, ArithmeticError, LookupError) as exc:
            raise self._error(f"template failed: {exc}", value, pos, key, None) from None

    def shell(self, value: str, pos: Position | None, key: str) -> tuple[str, dict[str, str]]:
        """A `shell:` step's script, its `${{ }}` values passed as environment variables (never as code)."""
        with templating.collecting_shell_values() as values:
            script = self.text(value, pos, key)
        try:
            return templating.bind_shell_values(script, values)
        except templating.ShellQuoting as exc:
            raise self._error(str(exc), value, pos, key,
                              "${{ ... }} outside quotes or inside double quotes, e.g. echo \"${{ options.msg }}\"") from None

    def optional(self, value: str | None, pos: Position | None, key: str) -> str | None:
        """A key the recipe may leave out: None stays None."""
        return None if value is None else self.text(value, pos, key)

    def words(self, values: tuple[str, ...], pos: Position | None, key: str) -> tuple[str, ...]:
        """An argv list, each word rendered on its own (a value never splits into several)."""
        return tuple(self.text(v, pos, f"{key}[{i}]") for i, v in enumerate(values))

    def pairs(self, values: tuple[tuple[str, str], ...], pos: Position | None, key: str) -> dict[str, str]:
        """A mapping of names to values (cmake defines, config settings): the values rendered."""
        return {k: self.text(v, pos, f"{key}.{k}") for k, v in values}

    def condition(self, when: str | None, pos: Position | None, key: str) -> bool:
        if when is None:
            return True
        result = self.text(when, pos, key).strip().lower()
        if result in ("true", "1", "yes"):
            return True
        if result in ("false", "0", "no", ""):
            return False
        raise self._error("`when` must render to true or false", when, pos, key, "true, false",
                          rendered=result)

    @staticmethod
    def _error(message: str, value: str, pos: Position | None, key: str | None, accepted: str | None,
               rendered: str | None = None) -> RecipeError:
        if rendered is not None:
            message += f" (it rendered to {rendered!r})"
        return RecipeError(message, file=pos.file if pos else None, line=pos.line if pos else None,
                           column=pos.column if pos else None, key=key or (pos.key if pos else None),
                           value=value, accepted=accepted)
