"""rocbuild: build ROCm-native Python extensions from shareable recipes."""

__version__ = "0.1.0"
