"""Which needed libraries are ROCm's, CUDA's or the runtime's: as real wheels name them."""

from __future__ import annotations

import pytest

from rocbuild.gfx import MACH
from rocbuild.verify.codeobj import target_of
from rocbuild.verify.elf import CUDA_LIB, ROCM_LIB, RUNTIME_LIB, ElfInfo


@pytest.mark.parametrize("name", ["librocprofiler-register.so.0", "librocprofiler-sdk.so.1", "libdrm_amdgpu.so.1",
                                  "librocm_sysdeps_liblzma.so.5", "libamdhip64-d6e3e8e7.so.6", "libhipblaslt.so.1"])
def test_rocm_libraries_as_wheels_name_them(name):
    assert ROCM_LIB.match(name) and not CUDA_LIB.match(name)


def test_vendored_copies_keep_their_rocm_major_and_kind():
    info = ElfInfo(needed=["libamdhip64-d6e3e8e7.so.7", "libcudart-9335f6a2.so.12"])
    assert info.rocm_majors == {"libamdhip64-d6e3e8e7.so.7": 7} and info.cuda == ["libcudart-9335f6a2.so.12"]
    assert RUNTIME_LIB.match("libhsa-runtime64-1a2b3c4d.so.1")


@pytest.mark.parametrize("flags, abi, target", [
    (0x53F, 2, "gfx90a"),                 # v4+: xnack any, sramecc any
    (0x73F, 2, "gfx90a:xnack+"),
    (0xA4C, 3, "gfx942:sramecc-:xnack-"),
    (0x036, 2, "gfx1030"),
    (0x04F, 4, "gfx950"),
    (0x05A, 4, "gfx1251"),
    (0x054, 4, "gfx11-generic"),
    (0x05F, 4, "gfx9-4-generic"),
    (0x33F, 1, "gfx90a:sramecc+:xnack+"),  # v3: one bit each
])
def test_e_flags_decode_to_target_ids(flags, abi, target):
    assert str(target_of(flags, abi)) == target


def test_the_mach_table_names_each_processor_once():
    names = list(MACH.values())
    assert len(names) == len(set(names)) and {"gfx1153", "gfx1200", "gfx1201", "gfx1250", "gfx12-generic"} <= set(names)
