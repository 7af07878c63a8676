"""CI at scale: the build matrix and the GitHub Actions workflow that builds it."""
