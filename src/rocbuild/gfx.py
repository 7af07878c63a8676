"""LLVM's AMDGPU processors, in one place: the EF_AMDGPU_MACH numbers code objects carry in their ELF
header (llvm/BinaryFormat/ELF.h, LLVM 22), the generic ISAs and the processors each serves, and so the
gfx targets a build may name. A leaf module: detection, verify and the command line all read it.
"""

from __future__ import annotations

MACH: dict[int, str] = {
    0x020: "gfx600", 0x021: "gfx601", 0x022: "gfx700", 0x023: "gfx701", 0x024: "gfx702", 0x025: "gfx703",
    0x026: "gfx704", 0x028: "gfx801", 0x029: "gfx802", 0x02A: "gfx803", 0x02B: "gfx810", 0x02C: "gfx900",
    0x02D: "gfx902", 0x02E: "gfx904", 0x02F: "gfx906", 0x030: "gfx908", 0x031: "gfx909", 0x032: "gfx90c",
    0x033: "gfx1010", 0x034: "gfx1011", 0x035: "gfx1012", 0x036: "gfx1030", 0x037: "gfx1031", 0x038: "gfx1032",
    0x039: "gfx1033", 0x03A: "gfx602", 0x03B: "gfx705", 0x03C: "gfx805", 0x03D: "gfx1035", 0x03E: "gfx1034",
    0x03F: "gfx90a", 0x040: "gfx940", 0x041: "gfx1100", 0x042: "gfx1013", 0x043: "gfx1150", 0x044: "gfx1103",
    0x045: "gfx1036", 0x046: "gfx1101", 0x047: "gfx1102", 0x048: "gfx1200", 0x049: "gfx1250", 0x04A: "gfx1151",
    0x04B: "gfx941", 0x04C: "gfx942", 0x04E: "gfx1201", 0x04F: "gfx950", 0x050: "gfx1310",
    0x051: "gfx9-generic", 0x052: "gfx10-1-generic", 0x053: "gfx10-3-generic", 0x054: "gfx11-generic",
    0x055: "gfx1152", 0x057: "gfx1154", 0x058: "gfx1153", 0x059: "gfx12-generic", 0x05A: "gfx1251",
    0x05B: "gfx12-5-generic", 0x05C: "gfx1172", 0x05D: "gfx1170", 0x05E: "gfx1171", 0x05F: "gfx9-4-generic",
    0x062: "gfx11-7-generic", 0x063: "gfx13-generic",
}

# Generic ISAs (code object v6) and the processors each one serves, from
# LLVM's AMDGPUUsage "Generic Processors" table.
GENERIC_MEMBERS = {
    "gfx9-generic": ("gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"),
    "gfx9-4-generic": ("gfx940", "gfx941", "gfx942", "gfx950"),
    "gfx10-1-generic": ("gfx1010", "gfx1011", "gfx1012", "gfx1013"),
    "gfx10-3-generic": ("gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"),
    "gfx11-generic": ("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
                      "gfx1154"),
    "gfx11-7-generic": ("gfx1170", "gfx1171", "gfx1172"),
    "gfx12-generic": ("gfx1200", "gfx1201"),
    "gfx12-5-generic": ("gfx1250", "gfx1251"),
    "gfx13-generic": ("gfx1310",),
}

# The processors a build can target (a name of the right shape that is not among them, gfx9999, is a
# typo, not a GPU); generic ISAs are not build targets.
KNOWN_TARGETS = frozenset(name for name in MACH.values() if name not in GENERIC_MEMBERS)
