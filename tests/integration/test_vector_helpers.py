"""CUDA's helper_math.h style operators over HIP's vector types (trap vector-operators-redefined), compiled by
this machine's own hipcc (Debian's, gfx1030) as C++20 like a torch extension: ambiguous as written, and
compiling once the drafter's one regex edit per file has guarded them. An operator that returns a scalar
(a dot product written as float3 * float3) is never guarded: HIP's element-wise one would change its meaning."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rocbuild.draft.masks import vector_helpers
from rocbuild.engine.patch import apply_replace
from rocbuild.plan.model import ReplacePatch

pytestmark = pytest.mark.hipcc

HELPERS = """\
#pragma once
#include <hip/hip_runtime.h>
#include <cmath>

inline __host__ __device__ float2 operator+(float2 a, float2 b)
{
    return make_float2(a.x + b.x, a.y + b.y);
}
inline __host__ __device__ void operator+=(float2 &a, float2 b)
{
    a.x += b.x;
    a.y += b.y;
}
inline __host__ __device__ float3 operator*(float3 a, float b)
{
    return make_float3(a.x * b, a.y * b, a.z * b);
}
inline __device__ __host__ float lerp(float a, float b, float t)
{
    return a + t * (b - a);
}
inline __host__ __device__ float dot3(float3 a, float3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
inline __host__ __device__ float operator|(float3 a, float3 b) { return dot3(a, b); }
"""
KERNEL = """\
#include "helpers.cuh"
__global__ void k(float2* x, float3* y, float* z) {
  x[0] = x[0] + x[1];
  x[0] += x[1];
  y[0] = y[0] * 2.0f;
  z[0] = lerp(z[0], z[1], 0.5f) + (y[0] | y[1]);
}
"""


def _compile(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([shutil.which("hipcc") or "hipcc", "-std=c++20", "--offload-arch=gfx1030", "-c",
                           "k.hip", "-o", "k.o"], cwd=folder, capture_output=True, text=True, check=False,
                          env=dict(os.environ, HIP_PLATFORM="amd"))  # hipcc picks NVIDIA where it sees nvcc


def test_the_guarded_helpers_compile_where_the_unguarded_are_ambiguous(tmp_path):
    (tmp_path / "helpers.cuh").write_text(HELPERS)
    (tmp_path / "k.hip").write_text(KERNEL)
    before = _compile(tmp_path)
    assert before.returncode != 0 and "is ambiguous" in before.stderr, before.stderr[-2000:]
    operators, lerp = vector_helpers({"helpers.cuh": HELPERS, "k.hip": KERNEL})
    assert (operators.file, operators.line, lerp.line) == ("helpers.cuh", 5, 18)
    for edit, said in ((operators, "replaced 3"), (lerp, "replaced 1")):  # not operator|, which returns a float
        patch = ReplacePatch(file=edit.file, find=edit.find, replacement=edit.with_, regex=True, count=None,
                             where="test")
        assert apply_replace(patch, tmp_path) == f"helpers.cuh: {said}"
        assert apply_replace(patch, tmp_path) == "helpers.cuh: already applied"
    guarded = (tmp_path / "helpers.cuh").read_text()
    assert guarded.count("#if !defined(__HIP_PLATFORM_AMD__)") == 3
    assert "#endif\ninline __host__ __device__ float dot3" in guarded
    after = _compile(tmp_path)
    assert after.returncode == 0, after.stderr[-3000:]
