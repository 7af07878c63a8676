"""Wheelhouses people install from: PEP 503 indexes, and wheels repaired for publishing."""
