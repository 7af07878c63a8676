"""Recipe options: `--set NAME=VALUE` checked against the recipe's declared knobs."""

from __future__ import annotations

import difflib
from typing import Any

from rocbuild.errors import UsageError
from rocbuild.recipe.model import Recipe


def resolve_options(recipe: Recipe, settings: list[str]) -> dict[str, Any]:
    values: dict[str, Any] = {o.name: (list(o.default) if o.multi else o.default) for o in recipe.options}
    for item in settings:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"--set {item!r}: expected NAME=VALUE", hint=_known(recipe))
        option = recipe.option(name)
        if option is None:
            close = difflib.get_close_matches(name, [o.name for o in recipe.options], n=1)
            hint = (f"did you mean {close[0]!r}?\n" if close else "") + _known(recipe)
            raise UsageError(f"recipe {recipe.name!r} ({recipe.path}) has no option {name!r}", hint=hint)
        parts = [p.strip() for p in value.split(",") if p.strip()] if option.multi else [value]
        if option.choices is not None:
            for part in parts:
                if part not in option.choices:
                    raise UsageError(
                        f"--set {name}={value}: {part!r} is not allowed",
                        hint=f"accepted: {', '.join(option.choices)}" + (" (comma-separated)" if option.multi else ""),
                    )
        values[name] = parts if option.multi else value
    return values


def _known(recipe: Recipe) -> str:
    if not recipe.options:
        return f"recipe {recipe.name!r} declares no options"
    lines = ["options of this recipe:"]
    for o in recipe.options:
        default = ",".join(o.default) if o.multi else o.default
        choices = f" (one of: {', '.join(o.choices)})" if o.choices else ""
        lines.append(f"  {o.name} = {default}{choices}  {o.help}".rstrip())
    return "\n".join(lines)
