"""Source edits of what a CUDA source includes, where HIP's headers differ from CUDA's in what they bring or in
which compiler may read them. Each finds its places in the tree's sources (masks.read_sources) and returns
one SourceEdit per place, as the other source edits do."""

from __future__ import annotations

import re
from collections.abc import Mapping

from rocbuild.draft.masks import SourceEdit, line_of

# What a torch extension's build hands the host compiler (g++), never HIP's clang.
HOST_SOURCES = (".cpp", ".cc", ".cxx")
BF16_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"](?:cuda_bf16\.h|hip/hip_bf16\.h)[>\"][^\n]*$", re.MULTILINE)
BF16_DROPPED = "  // rocbuild: unused here, and g++ cannot read HIP's bf16 header"


def host_bf16_includes(texts: Mapping[str, str]) -> list[SourceEdit]:
    """Each include of CUDA's bf16 header (or HIP's) in a host source that uses none of its names (no
    `bfloat16` in it), as a comment. ROCm 7's hip_bf16.h is written for HIP's compiler: under g++ its
    static_assert on __bf16_2 fails and __builtin_elementwise_fma is undeclared (ista-daslab-optimizers-cuda,
    whose .cpp bindings include cuda_bf16.h and use nothing of it). A host source that does use it is left
    to fail, and named."""
    found: list[SourceEdit] = []
    for rel, text in texts.items():
        if not rel.endswith(HOST_SOURCES):
            continue
        match = BF16_INCLUDE.search(text)
        if match is None or "bfloat16" in BF16_INCLUDE.sub("", text):
            continue
        whole = match.group(0).strip()
        found.append(SourceEdit(rel, line_of(text, match.start()), whole, whole, f"// {whole}{BF16_DROPPED}", False))
    return found


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
