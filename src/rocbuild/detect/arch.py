"""GPU architecture (gfx target) detection: rocminfo, KFD sysfs, enumerators, overrides."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rocbuild.detect.query import query
from rocbuild.errors import HostNotReady, UsageError
from rocbuild.gfx import KNOWN_TARGETS

# gfx + decimal major (1-2 digits) + hex minor + hex stepping, then optional
# target features (each of sramecc/xnack at most once, + or -).
_GFX = r"gfx(?:[1-9][0-9]?)[0-9a-f][0-9a-f]"
ARCH_RE = re.compile(rf"^{_GFX}(?::(?:sramecc|xnack)[+-]){{0,2}}$")
GENERIC_RE = re.compile(r"^gfx[0-9a-f-]+-generic")
ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
ISA_RE = re.compile(r"amdgcn-amd-amdhsa--(\S+)")
AGENT_RE = re.compile(r"^\s*Agent\s+\d+\s*$")
FIELD_RE = re.compile(r"^(\s*)([A-Za-z][A-Za-z .()/#-]*?):\s*(.*?)\s*$")
AMD_VENDOR_ID = 4098
ARCH_FORM = "gfx targets such as gfx1100, gfx90a or gfx942:sramecc+:xnack-, comma-separated"


@dataclass
class Gpu:
    gfx: str  # base target, e.g. gfx942
    target_id: str  # with features when known, e.g. gfx942:sramecc+:xnack-
    marketing_name: str = ""
    source: str = ""
    node: str | None = None


@dataclass
class Override:
    value: str  # HSA_OVERRIDE_GFX_VERSION as set, e.g. 10.3.0
    gfx: str  # the target the runtime reports, e.g. gfx1030
    hardware: list[str] = field(default_factory=list)  # what KFD says the silicon is, when readable


@dataclass
class ArchDetection:
    archs: list[str]
    gpus: list[Gpu]
    source: str  # "--arch", "rocminfo", "sysfs", "rocm_agent_enumerator", "amdgpu-arch", or "none"
    override: Override | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "archs": self.archs,
            "gpus": [asdict(g) for g in self.gpus],
            "source": self.source,
            "override": asdict(self.override) if self.override else None,
            "notes": self.notes,
        }


def base_gfx(target_id: str) -> str:
    return target_id.split(":", 1)[0]


def parse_arch_list(text: str) -> list[str]:
    """Validate a user's --arch value; exit 2 with the accepted form on anything odd."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError("--arch is empty", hint=f"accepted: {ARCH_FORM}")
    out: list[str] = []
    for raw in text.split(","):
        item = raw.strip()
        if not ARCH_RE.fullmatch(item) or item.count(":sramecc") > 1 or item.count(":xnack") > 1:
            shown = item if len(item) <= 60 else item[:57] + "..."
            hint = f"accepted: {ARCH_FORM}"
            if GENERIC_RE.match(item):
                hint += "\ngeneric ISAs (gfx11-generic, ...) are not build targets: name the GPU's own target"
            elif ";" in item:
                hint += "\nseparate several targets with commas, not semicolons"
            raise UsageError(f"not a gfx target: {shown!r}", hint=hint)
        base = item.split(":")[0]
        if base not in KNOWN_TARGETS:
            close = difflib.get_close_matches(base, sorted(KNOWN_TARGETS), n=3, cutoff=0.7)
            raise UsageError(f"{base!r} is not a GPU target LLVM knows",
                             hint=(f"did you mean {' or '.join(close)}?\n" if close else "")
                             + "known targets: " + ", ".join(sorted(KNOWN_TARGETS, key=lambda t: (len(t), t))))
        if item not in out:
            out.append(item)
    return out


def decode_gfx_target_version(value: int) -> str | None:
    """KFD's gfx_target_version (e.g. 90010) -> gfx name (gfx90a); 0 (a CPU) -> None."""
    if value <= 0:
        return None
    major, minor, step = value // 10000, (value // 100) % 100, value % 100
    if minor > 15 or step > 15:
        return None
    return f"gfx{major}{minor:x}{step:x}"


def decode_override(value: str) -> str | None:
    """HSA_OVERRIDE_GFX_VERSION (e.g. 10.3.0) -> gfx1030; None when malformed."""
    m = re.fullmatch(r"\s*(\d{1,2})\.(\d{1,2})\.(\d{1,2})\s*", value)
    if not m:
        return None
    major, minor, step = (int(x) for x in m.groups())
    if major == 0 or minor > 15 or step > 15:
        return None
    return f"gfx{major}{minor:x}{step:x}"


# -- rocminfo ------------------------------------------------------------------


def parse_rocminfo(text: str, source: str = "rocminfo") -> list[Gpu]:
    """GPU agents from rocminfo output; CPU agents and generic ISAs are skipped."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for raw in text.splitlines():
        line = ANSI_RE.sub("", raw)
        if AGENT_RE.match(line):
            if current:
                blocks.append(current)
            current = []
            continue
        current.append(line)
    if current:
        blocks.append(current)

    gpus = []
    for block in blocks:
        fields: dict[str, str] = {}
        isas: list[str] = []
        for line in block:
            isa = ISA_RE.search(line)
            if isa:
                isas.append(isa.group(1))
                continue
            m = FIELD_RE.match(line)
            # Agent properties are indented by two spaces; deeper lines are pools, caches, ISAs.
            if m and len(m.group(1)) <= 2 and m.group(2) not in fields:
                fields[m.group(2)] = m.group(3)
        device_type = fields.get("Device Type", "").upper()
        if device_type and device_type != "GPU":
            continue
        targets = [t for t in isas if not GENERIC_RE.match(t) and ARCH_RE.match(t)]
        if not targets:
            name = fields.get("Name", "")
            if device_type == "GPU" and ARCH_RE.match(name):
                targets = [name]
            else:
                continue
        target = targets[0]
        gpus.append(Gpu(
            gfx=base_gfx(target),
            target_id=target,
            marketing_name=fields.get("Marketing Name", ""),
            source=source,
            node=fields.get("Node") or None,
        ))
    return gpus


# -- KFD sysfs -----------------------------------------------------------------


def _topology_dir(root: Path) -> Path:
    for rel in ("sys/class/kfd/kfd/topology/nodes", "class/kfd/kfd/topology/nodes", "kfd/topology/nodes",
                "topology/nodes", "nodes"):
        if (root / rel).is_dir():
            return root / rel
    return root / "sys/class/kfd/kfd/topology/nodes"


def read_sysfs(root: Path, notes: list[str] | None = None) -> list[Gpu]:
    """GPU nodes from KFD's topology; unreadable nodes are noted, not fatal."""
    nodes = _topology_dir(root)
    if not nodes.is_dir():
        return []
    gpus = []

    def node_key(p: Path) -> tuple[int, str]:
        return (int(p.name), p.name) if p.name.isdigit() else (1 << 30, p.name)

    for node in sorted(nodes.iterdir(), key=node_key):
        try:
            text = (node / "properties").read_text()
        except PermissionError:
            if notes is not None:
                notes.append(f"cannot read {node / 'properties'}: permission denied")
            continue
        except OSError:
            continue
        props = {}
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1].lstrip("-").isdigit():
                props[parts[0]] = int(parts[1])
        vendor = props.get("vendor_id")
        if vendor is not None and vendor != AMD_VENDOR_ID:
            continue
        gfx = decode_gfx_target_version(props.get("gfx_target_version", 0))
        if gfx is None:
            continue
        try:
            name = (node / "name").read_text().strip()
        except OSError:
            name = ""
        # Newer kernels name every KFD node "ip discovery" (how the driver found the IP blocks): not a GPU name.
        if name.lower() in ("ip discovery", "") or not any(c.isalpha() for c in name):
            name = ""
        gpus.append(Gpu(gfx=gfx, target_id=gfx, marketing_name=name, source="sysfs", node=node.name))
    return gpus


# -- enumerators ---------------------------------------------------------------


def parse_enumerator(text: str, source: str) -> list[Gpu]:
    out = []
    for line in text.splitlines():
        name = ANSI_RE.sub("", line).strip()
        if name == "gfx000" or not ARCH_RE.match(name):  # gfx000 is the CPU agent (ROCm <= 6.2)
            continue
        out.append(Gpu(gfx=base_gfx(name), target_id=name, source=source))
    return out


# -- the whole chain -----------------------------------------------------------


def detect_archs(
    arch_option: str | None = None,
    *,
    rocminfo_file: Path | None = None,
    sysfs_root: Path | None = None,
    environ: dict[str, str] | None = None,
    use_commands: bool = True,
) -> ArchDetection:
    """--arch, else rocminfo, else KFD sysfs, else rocm_agent_enumerator / amdgpu-arch.

    When --rocminfo or --sysfs is given only those sources are read, so a
    result can be reproduced from files.
    """
    environ = dict(environ or {})  # the command line passes the environment it was started with
    notes: list[str] = []
    override = None
    override_value = environ.get("HSA_OVERRIDE_GFX_VERSION")
    if override_value:
        gfx = decode_override(override_value)
        if gfx is None:
            notes.append(f"HSA_OVERRIDE_GFX_VERSION={override_value!r} is malformed (expected like 10.3.0); ignored")
        else:
            override = Override(override_value, gfx)

    if arch_option is not None:
        archs = parse_arch_list(arch_option)
        given = [Gpu(gfx=base_gfx(a), target_id=a, source="--arch") for a in archs]
        return ArchDetection(archs, given, "--arch", override, notes)

    explicit = rocminfo_file is not None or sysfs_root is not None
    gpus: list[Gpu] = []
    source = "none"
    sysfs_gpus = read_sysfs(sysfs_root or Path("/"), notes) if (sysfs_root or not explicit) else []

    if rocminfo_file is not None:
        try:
            text = Path(rocminfo_file).read_text(errors="replace")
        except OSError as exc:
            raise UsageError(f"cannot read --rocminfo file {rocminfo_file}: {exc.strerror}") from None
        gpus, source = parse_rocminfo(text, "rocminfo"), "rocminfo"
    elif not explicit and use_commands:
        answer = query(["rocminfo"], env=environ)
        if answer:
            gpus, source = parse_rocminfo(answer, "rocminfo"), "rocminfo"

    if not gpus and sysfs_gpus:
        gpus, source = sysfs_gpus, "sysfs"
        if override:
            # The runtime (and so torch) will report the override, not the silicon.
            gpus = [Gpu(override.gfx, override.gfx, g.marketing_name, "sysfs+override", g.node) for g in gpus]

    if not gpus and not explicit and use_commands:
        for tool in ("rocm_agent_enumerator", "amdgpu-arch"):
            answer = query([tool], env=environ)
            found = parse_enumerator(answer or "", tool)
            if found:
                gpus, source = found, tool
                break

    if override:
        override.hardware = _dedup(g.gfx for g in sysfs_gpus)
    archs = _dedup(g.gfx for g in gpus)
    if not gpus:
        source = "none"
    return ArchDetection(archs, gpus, source, override, notes)


def require_archs(detection: ArchDetection) -> list[str]:
    if detection.archs:
        return detection.archs
    raise HostNotReady(
        "no AMD GPU found and no --arch given",
        hint="name the target(s) to build for, e.g. --arch gfx1100 or --arch gfx90a,gfx942\n"
        "(rocminfo, /sys/class/kfd and rocm_agent_enumerator found no GPU; "
        "`rocbuild detect` shows what was looked at)",
    )


def _dedup(items: Iterable[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out
