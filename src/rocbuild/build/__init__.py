"""Executing a plan: the engine's phases and the parts that touch the work folder and the source tree."""
