"""The build-only torch's lock, between real processes: util-linux's flock(1) holds it the other way while
rocbuild's side waits, says it waits, and goes on only once the other has let go."""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from rocbuild.torchkit.lock import holding, kit_lock_path


def test_the_lock_of_a_kit_sits_beside_its_folder(tmp_path: Path) -> None:
    home = tmp_path / "opt" / "rocbuild"
    kit = home / "torch-2.14.1-rocm7.2-build-only"
    assert kit_lock_path(kit / "bin" / "python", home) == home / "torch-2.14.1-rocm7.2-build-only.lock"
    assert kit_lock_path(kit / "lib" / "python3.14" / "site-packages" / "torch", home) == kit_lock_path(kit / "bin", home)
    assert kit_lock_path(Path("/usr/bin/python3"), home) is None
    assert kit_lock_path(home / "test-venv" / "bin" / "python", home) is None  # a venv beside the kits is no kit
    assert kit_lock_path(home, home) is None


def held_by_another(lock: Path, mode: str, seconds: float) -> subprocess.Popen[bytes]:
    """flock(1) holding `lock` in another process; returns once it holds it (the marker file exists)."""
    held = Path(tempfile.mkdtemp()) / "held"
    other = subprocess.Popen(["flock", mode, str(lock), "sh", "-c", f'touch "{held}"; sleep {seconds}'])
    for _ in range(500):
        if held.exists():
            return other
        time.sleep(0.01)
    other.kill()
    pytest.fail("flock(1) never took the lock")


@pytest.mark.parametrize(("other_mode", "exclusive"), [("--shared", True), ("--exclusive", False),
                                                       ("--exclusive", True)])
def test_each_side_waits_for_the_other_and_says_so(tmp_path: Path, other_mode: str, exclusive: bool) -> None:
    lock = tmp_path / "kit.lock"
    other = held_by_another(lock, other_mode, 1.5)
    said: list[str] = []
    with holding(lock, exclusive=exclusive, waiting="waiting for the other", say=said.append) as fd:
        assert other.poll() is not None, "took the lock while the other process still held it"
        assert fd is not None
    assert said == ["waiting for the other"]
    other.wait()


def test_builds_share_the_lock_without_waiting(tmp_path: Path) -> None:
    lock = tmp_path / "kit.lock"
    other = held_by_another(lock, "--shared", 30)
    try:
        said: list[str] = []
        with holding(lock, exclusive=False, waiting="waiting", say=said.append):
            assert other.poll() is None  # both hold it at once
        assert said == []
    finally:
        other.kill()
        other.wait()


def test_no_kit_no_lock(tmp_path: Path) -> None:
    with holding(None, exclusive=True, waiting="never", say=pytest.fail) as fd:
        assert fd is None
    with holding(tmp_path / "no" / "such" / "folder.lock", exclusive=False, waiting="never", say=pytest.fail) as fd:
        assert fd is None
