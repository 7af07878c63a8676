"""The target Python's torch, read without importing it: which flavour (ROCm, CUDA, CPU) and which ROCm.

Importing torch is slow, can fail (a CUDA torch on a host without its
libraries) and may touch the GPU; `torch/version.py` is plain assignments,
so the probe reads it with `ast` instead. The same probe also reports the
interpreter's site-packages folders, which `rocbuild doctor` scans.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from typing import Any

from rocbuild.detect.rocm import RocmVersion
from rocbuild.errors import UsageError
from rocbuild.process.runner import query_process

# Run by the target python (stdlib only); prints one JSON object.
PROBE = r"""
import ast, importlib.util, json, os, site, sys, sysconfig
out = {"python": "%d.%d" % sys.version_info[:2], "executable": sys.executable, "torch": None}
dirs = [sysconfig.get_paths().get(k) for k in ("purelib", "platlib")]
try:
    dirs += site.getsitepackages()
except AttributeError:
    pass
if site.ENABLE_USER_SITE:
    dirs.append(site.getusersitepackages())
seen = []
for d in dirs:
    if d and os.path.isdir(d) and os.path.realpath(d) not in [os.path.realpath(s) for s in seen]:
        seen.append(d)
out["site_packages"] = seen
# PEP 668: a distribution's Python refuses pip installs outside a virtual environment.
stdlib = sysconfig.get_paths().get("stdlib") or ""
out["externally_managed"] = sys.prefix == sys.base_prefix and os.path.isfile(os.path.join(stdlib, "EXTERNALLY-MANAGED"))
spec = importlib.util.find_spec("torch")
if spec is not None and spec.submodule_search_locations:
    root = list(spec.submodule_search_locations)[0]
    torch = {"path": root, "fields": {}}
    try:
        with open(os.path.join(root, "version.py"), encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for node in tree.body:
            target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
            value = getattr(node, "value", None)
            if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
                torch["fields"][target.id] = value.value
    except (OSError, SyntaxError, ValueError) as exc:
        torch["error"] = "%s: %s" % (type(exc).__name__, exc)
    out["torch"] = torch
print(json.dumps(out))
"""

# PyTorch's ROCm wheel indexes, download.pytorch.org/whl/rocm<name>, torch 2.1 on. That site cannot be read
# offline (nor while planning), so the list is kept here from what this project has on record: the indexes up
# to rocm7.1 as listed before, and rocm7.2, whose torch 2.14.0+rocm7.2 wheel's version.py tests/pyenv_trees.py
# records. PyPI (torch 2.15.0, October 2026) does not say which ROCm indexes carry a release. An index not
# listed (a newer ROCm), a mirror or AMD's own is named with --torch-index, which bypasses this list.
TORCH_ROCM_INDEXES = ("5.6", "5.7", "6.0", "6.1", "6.2", "6.2.4", "6.3", "6.4", "7.0", "7.1", "7.2")
INDEX_URL = "https://download.pytorch.org/whl/rocm{}"
INDEX_SCHEMES = ("http", "https", "file")


@dataclass
class TorchInfo:
    path: str
    version: str | None
    hip: str | None  # torch.version.hip, e.g. "6.1.40091-a8dbc0c19"
    cuda: str | None  # torch.version.cuda, e.g. "12.1"
    error: str | None = None
    # A build-only ROCm torch (`rocbuild root torch`): headers and link-only libraries, never importable
    # with its extensions; its version.py says so, and where its ROCm home of links is.
    build_only: bool = False
    rocm_home: str | None = None

    @property
    def flavour(self) -> str:
        """rocm | cuda | cpu | unknown (version.py unreadable)."""
        if self.error:
            return "unknown"
        if self.hip:
            return "rocm"
        if self.cuda:
            return "cuda"
        return "cpu"

    @property
    def rocm_version(self) -> str | None:
        """The ROCm release torch was built against, major.minor ("6.1"); None unless a ROCm build."""
        if self.flavour != "rocm":
            return None
        for text in (self.hip or "", _local(self.version)):
            m = re.match(r"^(?:rocm)?(\d+)\.(\d+)", text)
            if m:
                return f"{m.group(1)}.{m.group(2)}"
        return None

    def describe(self) -> str:
        what = {"rocm": f"a ROCm build (torch.version.hip={self.hip})",
                "cuda": f"a CUDA build (torch.version.cuda={self.cuda}, torch.version.hip=None)",
                "cpu": "a CPU-only build (torch.version.hip and torch.version.cuda are None)",
                "unknown": f"unreadable ({self.error})"}[self.flavour]
        kind = " (build-only: for compiling extensions, never for running them)" if self.build_only else ""
        return f"torch {self.version or '?'} at {self.path} is {what}{kind}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "version": self.version, "hip": self.hip, "cuda": self.cuda,
                "flavour": self.flavour, "rocm_version": self.rocm_version, "error": self.error,
                **({"build_only": True, "rocm_home": self.rocm_home} if self.build_only else {})}


@dataclass
class PythonEnv:
    executable: str
    version: str
    site_packages: list[str] = field(default_factory=list)
    torch: TorchInfo | None = None
    externally_managed: bool = False  # PEP 668: pip installs only into a virtual environment


def _local(version: str | None) -> str:
    return (version or "").partition("+")[2]


def parse_probe(text: str) -> PythonEnv:
    """The probe's JSON line -> PythonEnv; ValueError when it is not the probe's output."""
    lines = [line for line in text.strip().splitlines() if line.startswith("{")]
    if not lines:
        raise ValueError("no JSON from the probe")
    data = json.loads(lines[-1])
    torch = None
    if data.get("torch"):
        t = data["torch"]
        fields = t.get("fields", {})

        def text_field(name: str) -> str | None:
            value = fields.get(name)
            return value if isinstance(value, str) and value else None

        torch = TorchInfo(t["path"], text_field("__version__"), text_field("hip"), text_field("cuda"), t.get("error"),
                          build_only=fields.get("build_only") is True, rocm_home=text_field("rocm_home"))
    return PythonEnv(data["executable"], data["python"], list(data.get("site_packages", [])), torch,
                     bool(data.get("externally_managed")))


def _probe_here() -> PythonEnv:
    """The probe in this interpreter, seeing what a `python -c` run from "/" would: the working
    folder (on sys.path under `python -m`) must not shadow the real torch with a ./torch."""
    here = os.path.realpath(os.getcwd())
    saved = list(sys.path)
    sys.path[:] = [p for p in saved if p and os.path.realpath(p) != here]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(PROBE, {"__name__": "rocbuild_probe"})
    finally:
        sys.path[:] = saved
    return parse_probe(out.getvalue())


def probe_argv(python: str) -> tuple[str, ...]:
    return (python, "-c", PROBE)


def probe_python(python: str) -> PythonEnv | str:
    """Run the probe; a PythonEnv, or the reason it could not run. The interpreter running rocbuild
    answers in-process (the probe only reads files)."""
    if os.path.abspath(python) == os.path.abspath(sys.executable):
        return _probe_here()
    # cwd "/": `-c` puts the working folder on sys.path, where a ./torch would shadow the real one.
    proc = query_process(probe_argv(python), timeout=120, cwd="/")
    if isinstance(proc, str):
        return proc
    if proc.exit_code != 0:
        return f"{python} failed to run the probe: {proc.stderr.strip()[-500:]}"
    try:
        return parse_probe(proc.stdout)
    except (ValueError, KeyError) as exc:
        return f"{python} gave no usable answer to the probe ({exc})"


def rocm_torch_index(rocm: RocmVersion | None) -> str | None:
    """The PyTorch wheel index for a ROCm build matching `rocm`: the newest one not above it, same
    major; the newest there is when the ROCm release is unknown; None when PyTorch publishes none
    for that release (a torch for another ROCm major would not load against it)."""
    def key(name: str) -> tuple[int, ...]:
        return tuple(int(x) for x in name.split("."))

    if rocm is None:
        return INDEX_URL.format(TORCH_ROCM_INDEXES[-1])
    release = (rocm.major, rocm.minor, rocm.micro)
    same_major = [n for n in TORCH_ROCM_INDEXES if key(n)[0] == rocm.major and key(n) <= release]
    return INDEX_URL.format(max(same_major, key=key)) if same_major else None


def unpublished(rocm: RocmVersion | None) -> str:
    """Why PyTorch's indexes hold no torch for `rocm`."""
    shown = rocm.short if rocm is not None else "?"
    return (f"PyTorch publishes no ROCm {shown} wheels (its ROCm indexes: "
            f"{', '.join('rocm' + n for n in TORCH_ROCM_INDEXES)}); install one of those ROCm releases "
            "(or build torch from source against this one)")


def check_index_url(url: str) -> str:
    """--torch-index: a package index URL pip can read (http, https or file), else UsageError."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme in INDEX_SCHEMES and (parts.netloc if parts.scheme != "file" else parts.path) \
            and not any(c.isspace() for c in url):
        return url
    raise UsageError(f"--torch-index {url!r}: not a package index URL",
                     hint="give the URL of a PEP 503 index that serves ROCm torch wheels, with "
                          f"{', '.join(s + '://' for s in INDEX_SCHEMES)} (e.g. "
                          f"{INDEX_URL.format(TORCH_ROCM_INDEXES[-1])}, a mirror of it, or file:///path/simple)")


@dataclass(frozen=True)
class TorchIndex:
    """Where a ROCm torch for this host comes from: an index URL, or why there is none."""

    url: str | None
    problem: str | None = None


def torch_index_for(rocm: RocmVersion | None, override: str | None = None) -> TorchIndex:
    """--torch-index when given (checked), else PyTorch's index for `rocm`; an unknown or unpublished
    ROCm release has none: installing a torch for the wrong ROCm would only fail later, at import."""
    if override is not None:
        return TorchIndex(check_index_url(override))
    if rocm is None:
        return TorchIndex(None, "the ROCm release is unknown, so is PyTorch's index for it: give --torch-index URL")
    url = rocm_torch_index(rocm)
    return TorchIndex(url) if url is not None else TorchIndex(None, unpublished(rocm) + "; or give --torch-index URL")


def torch_install_argv(python: str, index: str, *, replace: bool) -> tuple[str, ...]:
    """pip installing torch from `index` into `python`. `replace`: a CUDA or CPU torch is there, and
    pip takes any installed torch as satisfying `torch`: only --force-reinstall swaps it (and torch's
    dependencies, which PyTorch's indexes carry too)."""
    return (python, "-m", "pip", "install", *(("--force-reinstall",) if replace else ()), "torch",
            "--index-url", index)


def rocm_torch_install(python: str, rocm: RocmVersion | None, *, externally_managed: bool = False) -> str:
    """The command that gives the target python a ROCm torch: pip from the matching PyTorch index (in
    a new virtual environment when that Python refuses pip, PEP 668), or why there is none."""
    index = rocm_torch_index(rocm)
    if index is None:
        return unpublished(rocm)
    if externally_managed:
        return venv_advice(python, index)
    return f"{shlex.quote(python)} -m pip install --force-reinstall torch torchvision torchaudio --index-url {index}"


def venv_advice(python: str, index: str) -> str:
    """A system Python refuses pip (PEP 668): a virtual environment of its own, then that one as --python."""
    py = shlex.quote(python)
    return (f"{py} -m venv ~/rocm-venv && ~/rocm-venv/bin/pip install torch torchvision torchaudio --index-url "
            f"{shlex.quote(index)}  ({python} is managed by the system (PEP 668); then give rocbuild --python "
            "~/rocm-venv/bin/python)")
