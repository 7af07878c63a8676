"""Source edits of what a CUDA source includes, where HIP's headers differ from CUDA's in what they bring or in
which compiler may read them. Each finds its places in the tree's sources (masks.read_sources) and returns
one SourceEdit per place, as the other source edits do."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from rocbuild.draft.masks import SourceEdit, cuda_includes, line_of, renames

# What a torch extension's build hands the host compiler (g++), never HIP's clang.
HOST_SOURCES = (".cpp", ".cc", ".cxx")
BF16_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"](?:cuda_bf16\.h|hip/hip_bf16\.h)[>\"]", re.MULTILINE)
LOCAL_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*\"(?P<path>[^\"]+)\"", re.MULTILINE)


def host_bf16_include(texts: Mapping[str, str]) -> SourceEdit | None:
    """The first host source that includes CUDA's bf16 header (or HIP's), itself or through the tree's own headers
    (ista-daslab-optimizers-cuda's .cpp bindings include utils.h, which includes cuda_bf16.h): the include line in
    that source. ROCm 7's hip_bf16.h is written for clang: under g++ its static_assert on __bf16_2 fails."""
    for rel, text in texts.items():
        if not rel.endswith(HOST_SOURCES):
            continue
        for match in [BF16_INCLUDE.search(text), *LOCAL_INCLUDE.finditer(text)]:
            if match is None:
                continue
            if match.re is BF16_INCLUDE or _reaches_bf16(texts, rel, match.group("path"), set()):
                line = line_of(text, match.start())
                return SourceEdit(rel, line, text.splitlines()[line - 1].strip(), "", "", False)
    return None


def _reaches_bf16(texts: Mapping[str, str], includer: str, path: str, seen: set[str]) -> bool:
    """Whether the tree's header `path`, included by `includer`, includes the bf16 header, itself or further down."""
    rel = os.path.normpath(os.path.join(os.path.dirname(includer), path))
    if rel in seen or rel not in texts or len(seen) > 64:
        return False
    seen.add(rel)
    text = texts[rel]
    return BF16_INCLUDE.search(text) is not None or any(
        _reaches_bf16(texts, rel, m.group("path"), seen) for m in LOCAL_INCLUDE.finditer(text))


CUBLAS_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"](?:cublas_v2|cublas|cublasLt|cublas_api)\.h[>\"][^\n]*$",
                            re.MULTILINE)
FP16_INCLUDE = re.compile(r"#[ \t]*include[ \t]*[<\"](?:cuda_fp16\.hp?p?|hip/hip_fp16\.h)[>\"]")
# `half` used as a type (a declaration, sizeof, a cast, a template argument), not the word in a comment.
HALF_TYPE = re.compile(r"sizeof\(\s*half2?\s*\)|[<(,]\s*half2?\s*[*&]?\s*[>),]"
                       r"|\bhalf2?\s*[*&]*\s*[A-Za-z_]\w*\s*[;,)=\[]")
FP16_ADDED = "#include <cuda_fp16.h>  // rocbuild: cuBLAS's header brings half, hipBLAS's does not"


def cublas_fp16_includes(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Where the CUDA sources use `half` and a file includes cuBLAS's header without cuda_fp16.h: cuda_fp16.h
    included first. cuBLAS's cublas_api.h includes cuda_fp16.h, so CUDA code gets `half` from it; hipBLAS's
    header (what hipify makes of it) does not include hip_fp16.h, and clang finds `half` undeclared
    (cuda-moea). hipify maps the added include to hip/hip_fp16.h."""
    if not any(HALF_TYPE.search(text) for rel, text in texts.items() if rel.endswith((".cu", ".cuh", ".h", ".hpp"))):
        return []
    found: list[SourceEdit] = []
    for rel, text in texts.items():
        match = CUBLAS_INCLUDE.search(text)
        if match is None or FP16_INCLUDE.search(text):
            continue
        whole = match.group(0).strip()
        found.append(SourceEdit(rel, line_of(text, match.start()), whole, whole, f"{FP16_ADDED}\n{whole}", False))
    return found


# CUB's names torch's hipify leaves (it maps cub::DeviceRadixSort and a few more, not cub::DoubleBuffer); hipCUB
# declares each under hipcub::, and hipify maps the include itself (cub/cub.cuh to hipcub/hipcub.hpp).
CUB_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"](?:cub/|hipcub/)", re.MULTILINE)
CUB_NAME = re.compile(r"(?<![\w:])cub::")


def cub_names(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Where the tree includes CUB: each file that names cub::, as one regex edit to hipcub::."""
    if not any(CUB_INCLUDE.search(text) for text in texts.values()):
        return []
    return renames(texts, [(CUB_NAME, "hipcub::")])


# CUDA's math_constants.h (CUDART_INF_F, CUDART_PI_F, ...), which hipify leaves: HIP's hip/hip_math_constants.h
# defines the same constants under the HIP_ prefix (ROCm 5.5 on), these names each.
CUDART_CONSTANT = re.compile(
    r"\bCUDART_((?:2_OVER_PI|3PIO4|DBL2INT_CVT|INF|L2E|L2T|LG2|LG2_X_1024|LG2_X_1075|LGE|LN2|LN2_X_1024|LN2_X_1025"
    r"|LN2_X_1075|LNPI|LNT|MAX_NORMAL|MIN_DENORM|NAN|NEG_ZERO|NORM_HUGE|ONE|PI|PIO2|PIO4|REMQUO_BITS|REMQUO_MASK"
    r"|SQRT_2OPI|SQRT_2PI|SQRT_2_OVER_PI|SQRT_HALF|SQRT_PIO2|SQRT_TWO|THIRD|TRIG_PLOSS|TWOTHIRD|TWO_TO_\w+|ZERO)"
    r"(?:_F|_HI|_LO)?)\b")


def math_constants(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each include of CUDA's math_constants.h as HIP's, and each file that uses its constants, as one regex edit
    to HIP's names."""
    return cuda_includes(texts, {"math_constants.h": "hip/hip_math_constants.h"}) + \
        renames(texts, [(CUDART_CONSTANT, r"HIP_\1")])
