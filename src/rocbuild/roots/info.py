"""The build root this rocbuild runs in, as the outer rocbuild described it when it entered the root
(roots/enter.py writes it into ROCBUILD_ROOT); read once, by the command line, and passed down."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

IN_ROOT = "ROCBUILD_ROOT"  # set inside a root: its description, as JSON
HOST_MOUNT = "/run/rocbuild-host"  # where the machine outside a root is seen from inside it (read-only)


@dataclass(frozen=True)
class RootInfo:
    name: str
    tree: str  # the root's folder on the outer machine
    suite: str | None  # the Debian suite it was made from
    mirror: str | None
    id: str  # a digest of what it holds: a root made again with the same packages has the same id
    rootless: bool = False  # made without root: only `rocbuild root install` from outside can change it
    apt_target: str | None = None  # `apt-get -t` for its ROCm (experimental over sid)
    versions: dict[str, str] = field(default_factory=dict)  # package -> version of what identifies it
    components: dict[str, str] = field(default_factory=dict)  # the ROCm family's packages -> versions
    enter: tuple[str, ...] = ()  # the bwrap command that entered it, for `plan`
    image: str | None = None  # the container image it was made from (root create --image), with its id
    bwrap: tuple[str, ...] = ()  # how a step inside starts the machine's bubblewrap (empty: it has none)
    home: str | None = None  # the home folder outside: a share may reach into it (a recipe kept there), steps never

    @property
    def label(self) -> str:
        """What a build identity and a work folder know it by: its suite (or image) and contents, not its name."""
        return f"{self.origin} root {self.id}"

    @property
    def origin(self) -> str:
        return f"image {self.image}" if self.image else f"Debian {self.suite or '?'}"

    @property
    def packages_of(self) -> str:
        """Whose packages its apt installs: Debian's archive, or what the image's apt sources name."""
        return "apt" if self.image else "Debian"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "enter": list(self.enter), "bwrap": list(self.bwrap)}

    def encode(self) -> str:
        return json.dumps(self.to_json())


def root_from_environ(environ: Mapping[str, str]) -> RootInfo | None:
    """The root this process runs in, or None on the host (or when the description is unreadable)."""
    text = environ.get(IN_ROOT)
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None

    def text_or_none(key: str) -> str | None:
        value = data.get(key)
        return value if isinstance(value, str) else None

    versions, components = data.get("versions"), data.get("components")
    enter, bwrap = data.get("enter"), data.get("bwrap")
    return RootInfo(
        name=data["name"], tree=str(data.get("tree") or ""), suite=text_or_none("suite"),
        mirror=text_or_none("mirror"), id=str(data.get("id") or "?"), rootless=bool(data.get("rootless")),
        apt_target=text_or_none("apt_target"),
        versions={str(k): str(v) for k, v in versions.items()} if isinstance(versions, dict) else {},
        components={str(k): str(v) for k, v in components.items()} if isinstance(components, dict) else {},
        enter=tuple(str(a) for a in enter) if isinstance(enter, list) else (), image=text_or_none("image"),
        bwrap=tuple(str(a) for a in bwrap) if isinstance(bwrap, list) else (), home=text_or_none("home"),
    )
