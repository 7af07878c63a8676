"""Executing a Plan: the engine and its phases (workspace, requirements, build environment, patches,
identity, lock, build cache, relabel, publish)."""
