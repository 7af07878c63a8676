"""Whether build steps can run confined on this machine (bubblewrap), found once per command.

A confined step sees the machine read-only, no network, no GPU, no home folder and only the plan's
environment; plan/confine.py makes its bwrap argv. This module only finds out whether bubblewrap can make
such a sandbox here, by making one: installed, allowed to make namespaces (as root always; otherwise
unprivileged user namespaces must be on, and not restricted by AppArmor as on Ubuntu 24.04)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rocbuild.roots.info import RootInfo

# What a confined step is given: the probe asks bubblewrap for all of it at once.
PROBE = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--unshare-net",
         "--unshare-pid", "--unshare-ipc", "--die-with-parent")
HINT_USERNS = ("as root it works where new namespaces are allowed; otherwise allow unprivileged user namespaces "
               "(sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 also "
               "sysctl kernel.apparmor_restrict_unprivileged_userns=0), or build in a root as root")
# As root it fails only where namespaces are refused: a container's seccomp or AppArmor profile, a namespace limit.
HINT_ROOT = ("this machine or container refuses new namespaces: in Docker or Podman run the container with "
             "--cap-add SYS_ADMIN --security-opt seccomp=unconfined --security-opt apparmor=unconfined (as the "
             "generated CI workflows do), and check /proc/sys/user/max_net_namespaces and max_pid_namespaces")


@dataclass(frozen=True)
class Confinement:
    """How build steps run: confined by bubblewrap (`bwrap` starts it), or not, and why."""

    on: bool
    why: str  # how it confines, or why it does not
    bwrap: tuple[str, ...] = ()  # the command that starts bubblewrap (in a root: the machine's, through its loader)
    user_ns: bool = False  # bubblewrap needs a user namespace of its own (a user without root)
    asked: bool = True  # False: --no-confine

    def to_json(self) -> dict[str, object]:
        return {"confined": self.on, "why": self.why, "bwrap": list(self.bwrap), "user_namespace": self.user_ns}


NOT_CHECKED = Confinement(False, "not checked", asked=False)


def find_confinement(*, asked: bool, root: RootInfo | None, environ: Mapping[str, str]) -> Confinement:
    if not asked:
        return Confinement(False, "turned off by --no-confine", asked=False)
    if environ.get("ROCBUILD_CONFINE") == "0":
        return Confinement(False, "turned off by ROCBUILD_CONFINE=0", asked=False)
    if root is not None:
        bwrap: Sequence[str] = root.bwrap
        if not bwrap:
            return Confinement(False, "the machine outside the root has no bubblewrap to confine steps with "
                               "(apt-get install bubblewrap)")
    else:
        found = shutil.which("bwrap", path=environ.get("PATH") or os.defpath)
        if found is None:
            return Confinement(False, "bubblewrap (bwrap) is not installed (apt-get install bubblewrap)")
        bwrap = (found,)
    user_ns = os.geteuid() != 0
    problem = _probe(bwrap, user_ns)
    if problem is not None:
        return Confinement(False, f"bubblewrap cannot make a sandbox here ({problem}): "
                           + (HINT_USERNS if user_ns else HINT_ROOT))
    how = "in a user namespace of its own" if user_ns else "as root"
    return Confinement(True, f"bubblewrap, {how}", tuple(bwrap), user_ns)


def _probe(bwrap: Sequence[str], user_ns: bool) -> str | None:
    argv = [*bwrap, *PROBE, *(["--unshare-user"] if user_ns else []), "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False,
                              stdin=subprocess.DEVNULL, errors="replace")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        return lines[-1].strip() if lines else f"exit code {done.returncode}"
    return None
