"""Proof that a build is what was asked for: device code per arch, nothing CUDA-linked."""
