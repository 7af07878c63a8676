"""Build roots: Debian userlands holding a real ROCm release, made, entered and changed."""
