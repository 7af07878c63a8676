"""What the host has: GPU architectures, ROCm, the target Python."""
