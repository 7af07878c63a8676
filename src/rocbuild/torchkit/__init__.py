"""A build-only ROCm torch for machines where no ROCm torch can be installed: made in a build root from one
real torch release (Debian's) with its own hipify, for compiling torch extensions only."""
