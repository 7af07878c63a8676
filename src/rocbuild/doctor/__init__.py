"""`rocbuild doctor`: preflight checks that name the cause of a broken ROCm setup and the fix (doctor/run.py)."""
