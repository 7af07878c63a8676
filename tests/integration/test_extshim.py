"""The torch extensions' build shim (engine/extshim) as a build step's python meets it: first on PYTHONPATH as
`sitecustomize`. Its effect on a real build (extensions at once, within the jobs) is shown against the
build-only torch in tests/integration/test_build_only_torch_root.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rocbuild.plan.model import EXTENSION_JOBS, EXTENSION_SHIM

PROBE = ("import sys; print(sorted(type(f).__name__ for f in sys.meta_path if type(f).__name__ == '_Finder'));"
         "print(sys.modules['sitecustomize'].__file__)")


def run(tmp_path: Path, jobs: str) -> list[str]:
    other = tmp_path / "other"  # a sitecustomize the shim hides, as Debian's own in /usr/lib/python3.X
    other.mkdir(exist_ok=True)
    (other / "sitecustomize.py").write_text("print('the hidden sitecustomize ran')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(EXTENSION_SHIM.parent), str(other)]),
               **{EXTENSION_JOBS: jobs})
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    assert done.stderr == ""
    return done.stdout.splitlines()


def test_the_shim_waits_for_torch_and_runs_the_sitecustomize_it_hides(tmp_path):
    ran, finders, module = run(tmp_path, "2")
    assert ran == "the hidden sitecustomize ran"
    assert finders == "['_Finder']" and module == str(EXTENSION_SHIM)


def test_one_job_leaves_the_import_system_alone(tmp_path):
    ran, finders, _ = run(tmp_path, "1")
    assert ran == "the hidden sitecustomize ran" and finders == "[]"
