"""A second wheel of the same recipe, built only when asked for."""
