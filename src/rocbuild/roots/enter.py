"""Running rocbuild inside a build root.

`--root` re-runs the same rocbuild command inside the root, through bubblewrap: the root's folders
make up `/`, this machine's devices, /sys and /tmp are shared, and so are the folders the command names
(work, --out, --source-dir, recipes, the cache) at the same paths. Inside, every probe, step and
check is the root's own (its hipcc, cmake, python3, apt), with nothing to translate. rocbuild
itself runs from this machine's Python, reached read-only under HOST_MOUNT and started through
this machine's dynamic loader, so the root needs no copy of rocbuild and its imports.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rocbuild.errors import HostNotReady, UsageError
from rocbuild.paths import cache_root, config_root
from rocbuild.roots.info import HOST_MOUNT, IN_ROOT, RootInfo
from rocbuild.roots.store import Root

# The root's own system: a folder of this machine can't be shared at these paths.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/var", "/boot", "/opt",
               "/proc", "/sys", "/dev", "/run")
# Folders of the tree not entered: the kernel's and bubblewrap's own, and where this machine's shared
# folders get their mount points (homes, /srv, /mnt, /media).
NOT_FROM_TREE = frozenset({"proc", "dev", "sys", "tmp", "run", "home", "srv", "mnt", "media", "lost+found"})
ROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# What crosses into the root from this environment: rocbuild's own settings, GPU selection, proxies,
# the package index, reproducibility and terminal settings.
PASSED_ENV = ("TERM", "NO_COLOR", "COLUMNS", "SOURCE_DATE_EPOCH", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
              "HSA_OVERRIDE_GFX_VERSION", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "http_proxy", "https_proxy",
              "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL",
              "PIP_TRUSTED_HOST", "PIP_FIND_LINKS")
LOADERS = {"x86_64": "/lib64/ld-linux-x86-64.so.2", "aarch64": "/lib/ld-linux-aarch64.so.1"}
BOOT = ("import json, sys; sys.path[:0] = json.loads(sys.argv.pop(1)); "
        "from rocbuild.cli.app import run; run()")


@dataclass(frozen=True)
class Share:
    path: Path  # absolute, the same inside and out
    writable: bool
    flag: str  # what named it, for messages


def roots_own(path: Path) -> str | None:
    """The system folder of the root that `path` is (or lies in), or None."""
    text = str(path)
    return next((d for d in SYSTEM_DIRS if text == d or text.startswith(d + "/")), None)


def check_share(share: Share) -> None:
    system = roots_own(share.path)
    if system is not None:
        raise UsageError(f"{share.flag} {share.path}: cannot be shared with a build root ({system} is the "
                         "root's own)", hint="use a folder elsewhere (your home, /srv, /tmp, ...)")


def bwrap_prefix(root: Root, shares: Sequence[Share], cwd: Path, env: Mapping[str, str]) -> list[str]:
    """The bwrap argv up to `--`: what enters the root. `/` is bubblewrap's own tmpfs holding the
    tree's folders (and its /usr-merge links), so the shared folders' mount points are made there,
    never in the tree (which, made without root, only mmdebstrap's namespace can write)."""
    rootless = os.geteuid() != 0
    argv = ["bwrap"]
    for entry in sorted(root.tree.iterdir()) if root.tree.is_dir() else []:
        if entry.name in NOT_FROM_TREE or (rootless and entry.name == "root"):
            continue
        if entry.is_symlink():
            argv += ["--symlink", os.readlink(entry), f"/{entry.name}"]
        elif entry.is_dir():
            argv += ["--bind", str(entry), f"/{entry.name}"]
    argv += ["--dev-bind", "/dev", "/dev", "--proc", "/proc", "--ro-bind", "/sys", "/sys", "--tmpfs", "/run",
             "--ro-bind", "/", HOST_MOUNT, "--bind", "/tmp", "/tmp", "--ro-bind-try", "/etc/resolv.conf",
             "/etc/resolv.conf"]
    if rootless:  # a user namespace in which this user is root, with the capabilities that let the
        # confined steps inside make their own sandbox (a nested bubblewrap: detect/confine.py)
        argv += ["--unshare-user", "--uid", "0", "--gid", "0", "--cap-add", "ALL"]
    for share in sorted(shares, key=lambda s: len(s.path.parts)):
        if share.path == Path("/tmp") or Path("/tmp") in share.path.parents:
            continue
        argv += ["--bind" if share.writable else "--ro-bind", str(share.path), str(share.path)]
    argv += ["--die-with-parent", "--clearenv"]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    argv += ["--chdir", str(cwd)]
    return argv


def host_python_argv() -> list[str]:
    """This machine's Python (the one running rocbuild), started inside the root through this machine's
    loader and libraries, with rocbuild's import path."""
    exe = Path(sys.executable).resolve()
    paths = [HOST_MOUNT + p for p in sys.path if p and os.path.exists(p)]
    # This machine is read-only in the root, so Python could not save the bytecode of a module no
    # command on this machine imported yet, and would compile it again in every command: it is kept
    # in the (shared, writable) cache instead.
    pycache = cache_root().resolve() / "pycache"
    return [*host_loader_argv(), HOST_MOUNT + str(exe), "-E", "-s", "-X", f"pycache_prefix={pycache}", "-c", BOOT,
            json.dumps(paths)]


def host_bwrap_argv() -> tuple[str, ...]:
    """This machine's bubblewrap, started inside the root the same way (the root need not have one): what
    confines each build step there. Empty when this machine has none."""
    import shutil

    found = shutil.which("bwrap")
    return (*host_loader_argv(), HOST_MOUNT + os.path.realpath(found)) if found else ()


def host_loader_argv() -> list[str]:
    """This machine's dynamic loader, as a program inside the root runs through it: its real file (the
    root's own loader lies at the same path) and this machine's library folders."""
    loader = LOADERS.get(platform.machine())
    if loader is None:
        raise HostNotReady(f"--root: not supported on {platform.machine()} yet")
    libdirs = [Path(sys.base_prefix) / "lib"]
    for d in ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/usr/local/lib"):
        libdirs += [Path(d) / f"{platform.machine()}-linux-gnu", Path(d)]
    conf = Path("/etc/ld.so.conf.d")
    if conf.is_dir():
        for file in sorted(conf.glob("*.conf")):
            libdirs += [Path(line.strip()) for line in file.read_text(errors="replace").splitlines()
                        if line.strip().startswith("/")]
    search = ":".join(HOST_MOUNT + str(d) for d in dict.fromkeys(libdirs) if d.is_dir())
    return [HOST_MOUNT + os.path.realpath(loader), "--library-path", search]


def root_env(root: Root, prefix_shown: list[str], environ: Mapping[str, str]) -> dict[str, str]:
    """The variables inside: a root from an image starts from the image's own (its Dockerfile's ENV: PATH
    with /opt/rocm/bin, ROCM_PATH, ...), as a container of it would."""
    env = {"PATH": ROOT_PATH, **image_env(root), "HOME": "/root", "LANG": "C.UTF-8",
           "DEBIAN_FRONTEND": "noninteractive",
           "XDG_CACHE_HOME": str(cache_root().parent), "XDG_CONFIG_HOME": str(config_root().parent)}
    env.update({k: v for k, v in environ.items() if k in PASSED_ENV or k.startswith("ROCBUILD_")})
    ident = root.identity()
    info = RootInfo(name=root.name, tree=str(root.tree), suite=root.info.get("suite"), mirror=root.info.get("mirror"),
                    id=ident["id"], rootless=os.geteuid() != 0, apt_target=root.apt_target,
                    versions=dict(ident["versions"]), components=dict(ident["components"]), enter=tuple(prefix_shown),
                    image=_image_of(root), bwrap=host_bwrap_argv(), home=environ.get("HOME") or None)
    env[IN_ROOT] = info.encode()
    return env


def image_env(root: Root) -> dict[str, str]:
    """The image's ENV, as `root create --image` recorded it (root.json "env": ["K=V", ...])."""
    pairs = (item.partition("=") for item in root.info.get("env") or () if isinstance(item, str))
    return {key: value for key, sep, value in pairs if sep and key and key not in ("HOME", "PWD", "HOSTNAME")}


def _image_of(root: Root) -> str | None:
    image, image_id = root.info.get("image"), root.info.get("image_id")
    return f"{image} ({str(image_id)[:19]})" if image else None


def run_inside(root: Root, args: Sequence[str], shares: Sequence[Share], environ: Mapping[str, str]) -> int:
    """Run `rocbuild ARGS` inside the root; its exit code."""
    for share in shares:
        check_share(share)
    cwd = Path.cwd()
    try:
        check_share(Share(cwd, True, "the current folder"))
        shares = [*shares, Share(cwd, True, "the current folder")]
    except UsageError:
        cwd = Path("/")
    return run_command(root, [*host_python_argv(), *args], environ, [mount_point(s) for s in shares], cwd)


def mount_point(share: Share) -> Share:
    """A folder that does not exist yet (a wheelhouse a build may never write) is reached through its
    nearest existing parent, so that entering the root creates nothing; a parent that is the root's
    own, or /, cannot be shared, and the folder is made instead."""
    path = share.path
    while not path.exists() and path.parent != path:
        path = path.parent
    if path == share.path:
        return share
    if path == Path("/") or roots_own(path) is not None:
        share.path.mkdir(parents=True, exist_ok=True)
        return share
    return Share(path, share.writable, share.flag)


def run_as_owner(root: Root, command: Sequence[str], environ: Mapping[str, str]) -> int:
    """Run `command` inside the root as the owner of its files, to change the root itself (apt-get).
    As root that is how builds enter it; a root made without root belongs to this user's subordinate
    ids, which only a user namespace that maps them all (util-linux unshare --map-auto) can write as."""
    if os.geteuid() == 0:
        return run_command(root, command, environ)
    script = ('mount --rbind /dev "$1/dev" && mount -t proc proc "$1/proc" && tree=$1 && shift && '
              'exec /usr/sbin/chroot "$tree" /usr/bin/env -i PATH=' + ROOT_PATH + ' HOME=/root LANG=C.UTF-8 '
              'DEBIAN_FRONTEND=noninteractive "$@"')
    argv = ["unshare", "--map-root-user", "--map-auto", "--mount", "--pid", "--fork", "--", "sh", "-c", script, "sh",
            str(root.tree), *command]
    return subprocess.run(argv, check=False, stdin=subprocess.DEVNULL).returncode


def run_command(root: Root, command: Sequence[str], environ: Mapping[str, str], shares: Sequence[Share] = (),
                cwd: Path = Path("/")) -> int:
    """Run `command` inside the root, passing SIGTERM and SIGHUP on; its exit code."""
    import shutil

    if shutil.which("bwrap") is None:
        raise HostNotReady("--root needs bubblewrap (bwrap), which is not installed",
                           hint="install it: apt-get install bubblewrap")
    # What `plan` shows as the way in: the bwrap options, without the variables it sets.
    shown = bwrap_prefix(root, shares, cwd, {}) + ["--"]
    env = root_env(root, shown, environ)
    read_end, write_end = os.pipe()
    argv = [*bwrap_prefix(root, shares, cwd, env), "--info-fd", str(write_end), "--", *command]
    old = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    child: list[int] = []
    pending: list[int] = []  # signals that came before bubblewrap said which process is inside

    def forward(signum: int, _frame: object) -> None:
        # The process inside has its own session, so a signal reaches it once: from here.
        if not child:
            pending.append(signum)
            return
        try:
            os.kill(child[0], signum)
        except ProcessLookupError:
            pass

    for sig in old:
        signal.signal(sig, forward)
    try:
        proc = subprocess.Popen(argv, pass_fds=(write_end,), start_new_session=True)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as fh:
            info = fh.read()
        try:
            child.append(int(json.loads(info.decode() or "{}")["child-pid"]))
        except (ValueError, KeyError, TypeError):
            pass
        while child and pending:  # on a loaded machine the command inside may already run
            forward(pending.pop(0), None)
        code = proc.wait()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    if code == 1 and not child:
        raise HostNotReady(f"cannot enter the root {root.name} ({root.tree}) with bubblewrap",
                           hint="as root this always works; without root, unprivileged user namespaces must be "
                                "allowed (sysctl kernel.unprivileged_userns_clone=1)")
    return code if code >= 0 else 128 - code
