"""Drafting: a recipe from a project's own build files, the catalogue of known build traps, and the
failure report that names a failed build's cause."""
