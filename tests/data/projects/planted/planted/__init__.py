"""The package of the planted-traps fixture."""
