"""Recipes: the data model, the YAML loader that keeps source positions, and lookup."""

from rocbuild.recipe.load import load_recipe, load_recipe_text
from rocbuild.recipe.model import Recipe

__all__ = ["Recipe", "load_recipe", "load_recipe_text"]
