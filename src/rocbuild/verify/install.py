"""A scratch install of built wheels for `command:` and `import:` checks (pypa/installer, in process).

The layout is pip's --target layout: packages at the top, scripts in bin/.
Doing it in process saves starting pip for every build (and every cached one).
"""

from __future__ import annotations

from pathlib import Path

from rocbuild.errors import StepFailed


def install_wheels(wheels: list[Path], site: Path, python: str) -> None:
    from installer import install
    from installer.destinations import SchemeDictionaryDestination
    from installer.exceptions import InstallerError
    from installer.sources import WheelFile

    scheme = {"purelib": site, "platlib": site, "headers": site / "include", "scripts": site / "bin",
              "data": site}
    destination = SchemeDictionaryDestination({k: str(v) for k, v in scheme.items()}, interpreter=python,
                                              script_kind="posix", bytecode_optimization_levels=())
    for wheel in wheels:
        try:
            with WheelFile.open(wheel) as source:
                install(source, destination, additional_metadata={"INSTALLER": b"rocbuild\n"})
        except (InstallerError, ValueError, OSError) as exc:
            raise StepFailed(f"cannot install {wheel.name} for verification: {exc}") from None
