"""The sandbox each build step runs in, as the bwrap argv that `plan` shows before the step's own.

A confined step (detect/confine.py found bubblewrap usable) sees:
- the machine (or the root's tree) read-only, with the home folder, and in a root the machine outside it,
  replaced by empty folders; what the build reads from there (the target python, rocbuild's cache, the
  recipe's folders) is bound back read-only;
- write access to the work folder, ccache's folder and its own /tmp (the work area's tmp/, on disk), and
  nowhere else;
- no network (unless the recipe says `network: true` for the step), no GPU (a /dev of its own, without
  /dev/kfd and /dev/dri), its own pid namespace (nothing outlives it) and only the plan's environment.
rocbuild itself, outside the steps, fetches sources and build requirements, installs what is missing and
writes the cache and the wheelhouse: those phases are not confined, and are the only writers of a root."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from rocbuild.paths import cache_root
from rocbuild.roots.info import HOST_MOUNT

if TYPE_CHECKING:
    from rocbuild.plan.model import Plan, Step

CONFINED_HOME = "/tmp/home"  # in the step's own /tmp: thrown away with it
# What a confined step is given from rocbuild's own environment, besides PATH: where ROCm is, and
# reproducibility. Anything else (tokens, CI secrets, proxies) stays out.
CONFINED_PASSED = ("ROCM_PATH", "ROCM_HOME", "HIP_PATH", "SOURCE_DATE_EPOCH")
# For a step with `network: true`: how this machine reaches the network.
NETWORK_PASSED = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "PIP_INDEX_URL",
                  "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST")


def hidden(plan: Plan) -> tuple[str, ...]:
    """Folders no step sees: the home folder (ssh keys, tokens), and in a root the whole machine outside. A home
    that does not exist has nothing to hide (a root entered without root has no /root), and bubblewrap, which
    would make a mount point for it on the read-only tree, could not."""
    root = plan.host.root
    found = [HOST_MOUNT] if root is not None else []
    # In a root, HOME is the root's /root; the user's own home outside is reached through a share (the recipe's
    # folder, when the recipe is kept at the top of the home folder), and is hidden as well.
    for home in (plan.host.environ.get("HOME", ""), root.home if root is not None and root.home else ""):
        if (home.startswith("/") and os.path.normpath(home) not in ("/", "/usr", "/etc", "/opt", "/tmp", *found)
                and os.path.isdir(home)):
            found.append(os.path.normpath(home))
    return tuple(found)


def readable(plan: Plan) -> tuple[str, ...]:
    """What the steps read that may lie in a hidden folder: the target python (and the one its venv is made
    from), rocbuild's cache (mirrors, wheels pip may install from), the recipe's folders, the ROCm prefix."""
    exe = plan.host.python.executable
    folders = [Path(exe).parent.parent, Path(os.path.realpath(exe)).parent.parent, cache_root(),
               plan.recipe.directory, *plan.recipe.patch_dirs, plan.host.rocm.path]
    covered = (*hidden(plan), "/tmp")  # what the sandbox replaces; elsewhere the machine is seen read-only anyway
    out: list[str] = []
    for folder in folders:
        text = os.path.abspath(str(folder))
        inside = any(text.startswith(c.rstrip("/") + "/") for c in covered)
        # never a hidden folder itself (a recipe kept in ~ would bind the whole home back), nor an ancestor
        # of one: binding it would show that folder again
        if inside and text not in out and text not in covered and not any(c.startswith(text.rstrip("/") + "/")
                                                                          for c in covered):
            out.append(text)
    return tuple(out)


def writable(plan: Plan) -> tuple[str, ...]:
    ccache = plan.base_env.get("CCACHE_DIR")
    return (str(plan.work.root), *([ccache] if ccache else []))


def sandbox(plan: Plan, step: Step) -> tuple[str, ...]:
    """The bwrap argv, up to `--`, that `step` runs under; empty when steps are not confined."""
    confine = plan.host.confine
    if not confine.on or plan.step_tmp is None:
        return ()
    argv = [*confine.bwrap, "--ro-bind", "/", "/"]
    for folder in hidden(plan):
        argv += ["--tmpfs", folder]
    argv += ["--dev", "/dev", "--proc", "/proc", "--bind", str(plan.step_tmp), "/tmp", "--dir", CONFINED_HOME]
    for folder in readable(plan):
        argv += ["--ro-bind-try", folder, folder]
    work, *others = writable(plan)
    argv += ["--bind", work, work]
    for folder in others:
        argv += ["--bind-try", folder, folder]
    argv += ["--unshare-pid", "--unshare-ipc", "--die-with-parent"]
    argv += [] if step.network else ["--unshare-net"]
    argv += ["--unshare-user"] if confine.user_ns else []
    return (*argv, "--chdir", step.cwd, "--")


def step_environment(plan: Plan, step: Step) -> dict[str, str]:
    """All a confined step's variables (its plan's, and for a network step this machine's proxies)."""
    extra = {k: plan.host.environ[k] for k in NETWORK_PASSED if step.network and plan.host.environ.get(k)}
    return {**plan.base_env, **extra, **step.env}
