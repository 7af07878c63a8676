"""A doctor check's result, and who is asking (the user whose device access is judged)."""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STATUSES = ("ok", "warn", "fail", "skip")


@dataclass
class DoctorCheck:
    id: str
    status: str  # ok | warn | fail | skip
    message: str
    fix: str = ""  # for warn and fail: what to do, a command where there is one
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        assert self.status in STATUSES, self.status

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "status": self.status, "message": self.message, "fix": self.fix}
        if self.details:
            out["details"] = self.details
        return out


@dataclass(frozen=True)
class Identity:
    """A user and their groups; device access is judged from mode bits against it."""

    uid: int
    gids: frozenset[int]
    user: str

    @classmethod
    def current(cls) -> Identity:
        uid = os.getuid()
        try:
            user = pwd.getpwuid(uid).pw_name
        except KeyError:
            user = str(uid)
        return cls(uid, frozenset(os.getgroups()) | {os.getgid()}, user)


@dataclass(frozen=True)
class Groups:
    """The group database of the machine looked at (ROOT/etc/group)."""

    by_gid: dict[int, tuple[str, tuple[str, ...]]]

    @classmethod
    def read(cls, root: Path) -> Groups:
        out: dict[int, tuple[str, tuple[str, ...]]] = {}
        try:
            text = (root / "etc" / "group").read_text(errors="replace")
        except OSError:
            return cls(out)
        for line in text.splitlines():
            parts = line.split(":")
            if len(parts) >= 4 and parts[2].isdigit():
                out[int(parts[2])] = (parts[0], tuple(m for m in parts[3].split(",") if m))
        return cls(out)

    def name(self, gid: int) -> str:
        return self.by_gid.get(gid, (str(gid), ()))[0]

    def gid(self, name: str) -> int | None:
        return next((g for g, (n, _) in self.by_gid.items() if n == name), None)

    def member(self, who: Identity, gid: int) -> bool:
        return gid in who.gids or who.user in self.by_gid.get(gid, ("", ()))[1]


def can_open(path: Path, who: Identity, groups: Groups) -> bool:
    """Read and write access to a device node as the kernel would judge it (root passes)."""
    st = path.stat()
    if who.uid == 0:
        return True
    if st.st_uid == who.uid:
        return st.st_mode & 0o600 == 0o600
    if groups.member(who, st.st_gid):
        return st.st_mode & 0o060 == 0o060
    return st.st_mode & 0o006 == 0o006
