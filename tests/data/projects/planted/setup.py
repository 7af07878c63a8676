"""A package planted with two traps of rocbuild's catalogue, for the tests of `--try`:

- hipcc is given nvcc's --expt-relaxed-constexpr, which clang refuses (cuda-flag-for-hipcc);
- without a visible GPU it builds its library for the CPU only, unless FORCE_HIP=1
  (force-variable-unset: the device-code check then finds host code only).
"""

import os
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

force = os.getenv("FORCE_HIP", "0") == "1"
HIP_FLAGS = ["-O2", "--expt-relaxed-constexpr", "-fPIC"]


class Build(build_py):
    def run(self):
        super().run()
        out = os.path.join(self.build_lib, "planted", "_kern.so")
        if os.path.exists("/dev/kfd") or force:
            archs = [a for a in os.environ.get("PLANTED_ARCHS", "").split(";") if a]
            subprocess.check_call(["hipcc", *HIP_FLAGS, "-shared", *[f"--offload-arch={a}" for a in archs],
                                   "kern.hip", "-o", out])
        else:
            subprocess.check_call(["cc", "-shared", "-fPIC", "cpu.c", "-o", out])


class Binary(Distribution):
    def has_ext_modules(self):
        return True


setup(name="planted", version="0.1.0", packages=["planted"], cmdclass={"build_py": Build}, distclass=Binary)
