"""The job count: cores, the memory available or a --memory budget, and the recipe's memory per job."""

from __future__ import annotations

import pytest

from rocbuild.detect.jobs import GIB, MIB, available_memory, choose_jobs, parse_size


@pytest.mark.parametrize("text, size", [("9GiB", 9 * GIB), ("2.5 GiB", int(2.5 * GIB)), ("900MiB", 900 * MIB),
                                        ("4g", 4 * GIB), ("12 MB", 12 * MIB), ("9", None), ("lots", None),
                                        ("-1GiB", None)])
def test_sizes(text, size):
    assert parse_size(text) == size


def test_meminfo_is_read_for_memavailable():
    assert available_memory("MemTotal: 100 kB\nMemAvailable:    2048 kB\n") == 2048 * 1024
    assert available_memory("MemTotal: 100 kB\n") is None


def test_jobs_asked_for_win():
    assert choose_jobs(asked=7, per_job=9 * GIB, available=GIB, budget=None, cpus=2).count == 7


def test_memory_holds_fewer_jobs_than_cores():
    jobs = choose_jobs(asked=None, per_job=9 * GIB, available=20 * GIB, budget=None, cpus=16)
    assert jobs.count == 2 and "20.0 GiB available" in jobs.why and "9.0 GiB per job by the recipe" in jobs.why


def test_a_budget_smaller_than_what_is_available_decides():
    jobs = choose_jobs(asked=None, per_job=None, available=20 * GIB, budget=5 * GIB, cpus=16)
    assert jobs.count == 2 and "--memory 5.0 GiB holds 2 of 16" in jobs.why and "by default" in jobs.why
    assert choose_jobs(asked=None, per_job=None, available=20 * GIB, budget=GIB, cpus=16).count == 1  # never 0


def test_enough_memory_means_one_job_per_core():
    jobs = choose_jobs(asked=None, per_job=None, available=64 * GIB, budget=None, cpus=4)
    assert jobs.count == 4 and jobs.why.startswith("4 cores")
    assert choose_jobs(asked=None, per_job=None, available=None, budget=None, cpus=3).count == 3
