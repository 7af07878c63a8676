"""Recipes: the data model, the YAML loader that keeps source positions, and lookup."""
