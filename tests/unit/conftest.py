"""Unit tests are pure: any test here that starts a process fails (integration tests use real tools)."""

from __future__ import annotations

import os
import subprocess

import pytest


class ProcessStarted(AssertionError):
    pass


@pytest.fixture(autouse=True)
def no_processes(monkeypatch):
    # Whether bubblewrap can confine steps is found by starting it: unit tests plan unconfined, as
    # ROCBUILD_CONFINE=0 (or --no-confine) asks; tests/integration covers confinement with real bwrap.
    monkeypatch.setenv("ROCBUILD_CONFINE", "0")
    def refuse(*args, **kwargs):
        raise ProcessStarted(f"a unit test started a process: {args[:2]!r}; use a fake runner, or move the "
                             "test to tests/integration")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve", "execvp",
                 "execvpe"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, refuse)
