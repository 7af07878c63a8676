"""Where a wheel installs: tags and the glibc and libstdc++ floors read from its symbol versions, and
whether a given Python can install it (and what it would take)."""

from __future__ import annotations

from rocbuild.detect.python import Interpreter
from rocbuild.verify.floors import floors_of, installs_on, what_it_takes

ROOT_WHEEL = "hello_hip-0.1.0+rocm7.2-cp314-cp314-linux_x86_64.whl"
VERSIONS = ["GLIBC_2.2.5", "GLIBC_2.38", "GLIBC_2.14", "GLIBCXX_3.4.32", "GLIBCXX_3.4", "CXXABI_1.3", "hip_4.2"]
DEBIAN12 = Interpreter("/usr/bin/python3", (3, 11), (2, 36), "x86_64")


def test_the_highest_versions_are_the_floors():
    floors = floors_of(ROOT_WHEEL, VERSIONS)
    assert floors is not None
    assert (floors.python, floors.platform, floors.glibc, floors.glibcxx) == ("cp314", "linux_x86_64", (2, 38),
                                                                              (3, 4, 32))
    assert floors.describe() == "python cp314, linux_x86_64, glibc >= 2.38, libstdc++ >= GLIBCXX_3.4.32 (GCC 14)"
    assert floors_of("not-a-wheel.tar.gz", VERSIONS) is None


def test_another_python_cannot_install_it_and_is_told_how():
    floors = floors_of(ROOT_WHEEL, VERSIONS)
    assert floors is not None
    why = installs_on(floors, DEBIAN12)
    assert why is not None and "cp314" in why and "CPython 3.11" in why
    assert "--python /usr/bin/python3" in what_it_takes(floors, DEBIAN12)


def test_the_right_python_with_too_old_a_glibc_is_told_about_glibc():
    floors = floors_of(ROOT_WHEEL.replace("cp314-cp314", "cp311-cp311"), VERSIONS)
    assert floors is not None
    why = installs_on(floors, DEBIAN12)
    assert why == "it needs glibc 2.38, and this machine has 2.36"
    assert "glibc is 2.36 or older" in what_it_takes(floors, DEBIAN12)


def test_what_fits_installs():
    floors = floors_of("x-1.0-cp311-cp311-linux_x86_64.whl", ["GLIBC_2.14"])
    assert floors is not None and installs_on(floors, DEBIAN12) is None
    abi3 = floors_of("x-1.0-cp39-abi3-manylinux_2_28_x86_64.whl", [])
    assert abi3 is not None and installs_on(abi3, DEBIAN12) is None
    newer = floors_of("x-1.0-cp39-abi3-manylinux_2_39_x86_64.whl", [])
    assert newer is not None and installs_on(newer, DEBIAN12) == "it needs glibc 2.39, and this machine has 2.36"
    arm = floors_of("x-1.0-cp311-cp311-linux_aarch64.whl", [])
    assert arm is not None and "linux_aarch64" in (installs_on(arm, DEBIAN12) or "")
