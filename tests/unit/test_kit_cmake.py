"""The build-only torch's Caffe2Targets.cmake, as a ROCm build of torch exports its targets."""

from __future__ import annotations

import re

from rocbuild.torchkit.cmake import targets_text, torch_hip_version


def _props(text: str, target: str) -> str:
    return re.search(rf"set_target_properties\({target} PROPERTIES\n(.*?)\n\)", text, re.S).group(1)


def test_torch_hip_hands_its_hip_flags_to_every_consumer_and_the_library_target_passes_them_on():
    """caffe2's `target_compile_options(torch_hip PUBLIC ${HIP_CXX_FLAGS})`: a C++ or HIP target that links
    torch gets USE_ROCM, the HIP platform and TORCH_HIP_VERSION; torch_hip_library passes options on as
    caffe2_interface_library does."""
    text = targets_text("USE_DISTRIBUTED;USE_C10D_GLOO", 702)
    options = re.search(r'INTERFACE_COMPILE_OPTIONS "([^"]*)"', _props(text, "torch_hip")).group(1).split(";")
    assert {"-DUSE_ROCM", "-D__HIP_PLATFORM_AMD__=1", "-DTORCH_HIP_VERSION=702", "-DHIPBLAS_V2"} <= set(options)
    assert not [o for o in options if o.startswith("-std=")]  # it would override a consumer's C++20 (or break C)
    assert 'INTERFACE_COMPILE_OPTIONS "\\$<TARGET_PROPERTY:torch_hip,INTERFACE_COMPILE_OPTIONS>"' in \
        _props(text, "torch_hip_library")
    assert "INTERFACE_COMPILE_OPTIONS" not in _props(text, "torch_cpu")


def test_torch_hip_version_is_loadhips():
    assert (torch_hip_version("7.2.53211"), torch_hip_version("6.4.43484-abc"), torch_hip_version("7")) == (702, 604, 700)
