"""The actions that touch the source tree: fetching it and patching it."""
