"""`rocbuild root create`: a Debian userland holding one ROCm release, made with mmdebstrap.

Root mode when run as root, mmdebstrap's unshare mode (user namespaces) otherwise. The root is made
in NAME.part and renamed when complete, so `root list` never shows half a root.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from rocbuild.errors import HostNotReady, StepFailed, UsageError
from rocbuild.fsutil import write_text_atomically
from rocbuild.progress import Progress
from rocbuild.roots.archive import BUILD_TOOLS, ROCM_BASE, Suite
from rocbuild.roots.store import (
    INFO,
    SHOWN_PACKAGES,
    TREE,
    Root,
    check_name,
    installed_packages,
    remove_tree,
    roots_folder,
)

HOST_CA_FOLDER = Path("/usr/local/share/ca-certificates")
DEBIAN_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
PIP_CONF = "[global]\ncert = /etc/ssl/certs/ca-certificates.crt\ndefault-timeout = 180\n"


def creation_mode() -> str:
    """'root' or 'unshare'; HostNotReady with what to do when neither can work here."""
    if shutil.which("mmdebstrap") is None:
        raise HostNotReady("making a build root needs mmdebstrap, which is not installed",
                           hint="install it (and bubblewrap, which enters roots): apt-get install mmdebstrap bubblewrap")
    if os.geteuid() == 0:
        return "root"
    # mmdebstrap's unshare mode maps this user's subordinate ids through shadow's setuid helpers; without them
    # it stops with only "E: cannot find newuidmap"
    lacking = [tool for tool in ("newuidmap", "newgidmap") if shutil.which(tool) is None]
    if lacking:
        raise HostNotReady(f"making a build root without root needs {' and '.join(lacking)}, which are not installed",
                           hint="install them (Debian/Ubuntu: apt-get install uidmap), or run it as root")
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        raise HostNotReady("making a build root needs root, or user namespaces, which this machine refuses "
                           f"({probe.stderr.decode(errors='replace').strip() or 'unshare failed'})",
                           hint="run it as root (sudo rocbuild root create ...), or allow unprivileged user "
                                "namespaces (sysctl kernel.unprivileged_userns_clone=1) and give this user "
                                "subordinate ids (/etc/subuid, /etc/subgid)")
    return "unshare"


def mmdebstrap_argv(suite: Suite, mirror: str, tree: Path, mode: str, extra: tuple[str, ...] = ()) -> list[str]:
    """One mmdebstrap run: the base suite's userland with the build tools, then the ROCm packages (from
    the overlay suite, when there is one, with `apt-get -t`). Files go in through its hooks: in unshare
    mode the tree belongs to subordinate ids, which only mmdebstrap's namespace can write as."""
    rocm = (*ROCM_BASE, *extra)
    argv = ["mmdebstrap", f"--mode={mode}", "--variant=apt", "--format=directory",
            "--aptopt=Acquire::Check-Valid-Until \"false\"", "--aptopt=APT::Install-Recommends \"false\"",
            f"--include={','.join(BUILD_TOOLS)}"]
    certs = sorted(HOST_CA_FOLDER.glob("*.crt")) if HOST_CA_FOLDER.is_dir() else []
    if certs:  # this machine's own trust anchors (a proxy's, say), so TLS works the same inside
        argv.append(f"--customize-hook=mkdir -p \"$1{HOST_CA_FOLDER}\"")
        argv += [f"--customize-hook=cat {shlex.quote(str(c))} > \"$1\"{shlex.quote(f'{HOST_CA_FOLDER}/{c.name}')}"
                 for c in certs]
        argv.append("--customize-hook=chroot \"$1\" update-ca-certificates")
    target = ["-t", suite.apt_target] if suite.apt_target else []
    argv.append("--customize-hook=chroot \"$1\" env DEBIAN_FRONTEND=noninteractive apt-get install -y "
                + " ".join([*target, *rocm]))
    # A constant text, so no path of this machine (which may hold spaces) goes into the hook's command.
    argv.append("--customize-hook=printf '%s' " + shlex.quote(PIP_CONF) + " > \"$1/etc/pip.conf\"")
    # The mount point for this machine's resolver settings, which entering the root binds there.
    argv.append("--customize-hook=touch \"$1/etc/resolv.conf\"")
    argv += [suite.base, str(tree), f"deb {mirror} {suite.base} main"]
    if suite.apt_target:
        argv.append(f"deb {mirror} {suite.apt_target} main")
    return argv


def create_root(name: str, suite: Suite, mirror: str, rocm: str, progress: Progress,
                extra: tuple[str, ...] = ()) -> Root:
    check_name(name)
    folder = roots_folder() / name
    if folder.exists():
        raise UsageError(f"root {name!r} exists already ({folder})",
                         hint=f"use it (--root {name}), or remove it first: rocbuild root remove {name}")
    for package in extra:  # they go into mmdebstrap's hook command line: Debian's name syntax only
        if not DEBIAN_NAME_RE.match(package):
            raise UsageError(f"--with {package!r}: not a Debian package name",
                             hint="lower-case letters, digits, '+', '-' and '.', starting with a letter or digit")
    for package in (*ROCM_BASE, *extra):
        if not suite.has(package):
            raise UsageError(f"--with {package}: Debian {suite.name} has no such package")
    mode = creation_mode()
    partial = roots_folder() / f"{name}.part"
    if partial.exists():  # a creation that was interrupted: start it over
        remove_tree(partial)
    partial.mkdir(parents=True)
    tree = partial / TREE
    argv = mmdebstrap_argv(suite, mirror, tree, mode, extra)
    started = progress.start(f"root create {name}",
                             f"Debian {suite.name} (ROCm {suite.rocm}) from {mirror}, {mode} mode")
    progress.say("    $ " + " ".join(argv))
    try:
        result = subprocess.run(argv, check=False, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise StepFailed(f"mmdebstrap exited with {result.returncode}; no root was made",
                             hint="its messages are above; run the same command again to retry")
        info = {"name": name, "suite": suite.name, "base": suite.base, "apt_target": suite.apt_target,
                "mirror": mirror, "rocm": suite.rocm, "asked": rocm, "mode": mode, "extra": list(extra),
                "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        write_text_atomically(partial / INFO, json.dumps(info, indent=2) + "\n")
        os.replace(partial, folder)
    except BaseException:
        try:
            remove_tree(partial)
        except (OSError, HostNotReady):
            pass  # the next `root create` of this name removes it first
        raise
    progress.done(f"root create {name}", started)
    return Root(name, folder / TREE, info)


def describe_installed(root: Root) -> str:
    installed = installed_packages(root.tree)
    return "\n".join(f"  {p} {installed[p]}" for p in SHOWN_PACKAGES if p in installed)
