"""A build step standing in for a compiler: writes what it ran with into the package.

argv[1] is the ROCm prefix: its hipconfig answers like the real one.
"""
import os
import subprocess
import sys

hipconfig = os.path.join(sys.argv[1], "bin", "hipconfig")
version = subprocess.run([hipconfig, "--version"], capture_output=True, text=True, check=True).stdout.strip()
lines = [
    f"hip {version}",
    f"HIPCC_COMPILE_FLAGS_APPEND={os.environ.get('HIPCC_COMPILE_FLAGS_APPEND', '')}",
    f"RECIPE_FLAG={os.environ.get('RECIPE_FLAG', '')}",
]
with open(os.path.join("recorder", "built.txt"), "w") as fh:
    fh.write("\n".join(lines) + "\n")
