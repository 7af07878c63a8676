"""How a recipe class declares its YAML keys: each field that a recipe writes carries `spec(...)` metadata
(its JSON shape, its key when that is not the field's name, and where it sits) and a docstring under it.
recipe/keys.py reads the key tables, the JSON Schema and the reference's field lists from these, so the
loader, the schema and the docs cannot drift from the model (recipe/model.py).

A shape is a JSON Schema fragment for the key's value; the loader's own checks go further (templates,
PEP 440 versions, paths that stay in the tree) and say where a value is wrong and what would do."""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

Shape = dict[str, Any]
# Where a key sits in a recipe entry: inside the kind's own mapping (`cmake: {defines: ...}`), beside the
# kind key (`when:`, `env:`), or as the kind key's whole value (`run: [argv]`, `diff: FILE`).
Place = Literal["body", "beside", "value"]
# A value's shape: a fragment, a recipe class (a mapping of exactly its keys), or one built on demand
# (from classes declared further down).
ShapeSpec = Shape | type | Callable[[], Shape]

# Leaf shapes. A recipe's strings may hold ${{ ... }} templates; numbers are read as written (1.10 stays 1.10).
TEXT: Shape = {"type": ["string", "number"]}
WHEN: Shape = {"type": ["string", "boolean"]}
FLAG: Shape = {"type": "boolean"}
TEXTS: Shape = {"type": "array", "items": TEXT}
ARGV: Shape = {"type": "array", "items": TEXT, "minItems": 1}
POSITIVE: Shape = {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "string"}]}
SETTINGS: Shape = {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}}
NAME_PATTERN = "^[a-z0-9][a-z0-9._-]*$"
ENV_NAME_PATTERN = "^[A-Za-z_][A-Za-z0-9_]*$"
NAME: Shape = {"type": "string", "pattern": NAME_PATTERN}


def spec(shape: ShapeSpec, *, key: str | None = None, place: Place = "body") -> dict[str, Any]:
    """A field's metadata: `field(metadata=spec(TEXT))`. Fields without it are not written in recipes
    (positions, values the loader derives)."""
    return {"recipe": (shape, key, place)}


@dataclass(frozen=True)
class Key:
    """One YAML key of a mapping, as the loader, the schema and the docs see it. The loader needs its name
    and whether it is required; its doc and shape (read from source, built from other classes) are made
    when the schema or the reference asks, so loading a recipe pays for neither."""

    name: str
    required: bool
    field: str  # the dataclass field that holds it
    spec: ShapeSpec
    owner: type | None = None  # the class whose docstrings document it
    fixed_doc: str = ""

    @property
    def doc(self) -> str:
        return self.fixed_doc or (field_docs(self.owner).get(self.field, "") if self.owner is not None else "")

    @property
    def shape(self) -> Shape:
        return resolve(self.spec)


def keys_of(cls: type, place: Place = "body") -> dict[str, Key]:
    """The keys a recipe class declares at one place, in declaration order (base classes first)."""
    out = {}
    for f in dataclasses.fields(cls):
        declared = f.metadata.get("recipe")
        if declared is None or declared[2] != place:
            continue
        shape, key, _ = declared
        name = key or f.name.rstrip("_").replace("_", "-")
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out[name] = Key(name, required, f.name, shape, cls)
    return out


def resolve(shape: ShapeSpec) -> Shape:
    if isinstance(shape, type):
        return obj(keys_of(shape))
    if callable(shape):
        return shape()
    return shape


def obj(section: dict[str, Key], doc: str = "") -> Shape:
    """A mapping of exactly the section's keys."""
    shape: Shape = {"type": "object", "additionalProperties": False,
                    "properties": {k: {**v.shape, "description": v.doc} for k, v in section.items()}}
    needed = [k for k, v in section.items() if v.required]
    if needed:
        shape["required"] = needed
    if doc:
        shape["description"] = doc
    return shape


def required(section: dict[str, Key]) -> dict[str, bool]:
    """The loader's form of a section: key -> required."""
    return {name: key.required for name, key in section.items()}


def class_doc(cls: type) -> str:
    """The first paragraph of a class's docstring, on one line: what its kind key means."""
    return " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """Each field's docstring (the string literal under it), from the class and its bases, read from
    the source: what the schema and the reference say of the key."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__[:-1]):
        docs.update(_module_docs(klass.__module__).get(klass.__qualname__, {}))
    return docs


@functools.cache
def _module_docs(module: str) -> dict[str, dict[str, str]]:
    """Class name -> field -> docstring, for every class of a module (its source parsed once)."""
    import ast  # only the schema and the reference read docstrings
    import inspect

    try:
        tree = ast.parse(inspect.getsource(sys.modules[module]))
    except (OSError, TypeError, KeyError):  # no source (a frozen build): the keys stay undocumented
        return {}
    out: dict[str, dict[str, str]] = {}
    for klass in tree.body:
        if not isinstance(klass, ast.ClassDef):
            continue
        docs = out.setdefault(klass.name, {})
        for node, after in zip(klass.body, klass.body[1:]):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                docs[node.target.id] = " ".join(after.value.value.split())
    return out


def _leaf(name: str, required: bool, doc: str, shape: Shape) -> Key:
    return Key(name, required, name, shape, fixed_doc=doc)


# The small mappings a list item or an env value may be instead of a plain string: YAML forms of a
# Conditional (recipe/model.py), each a value or name and the `when:` it applies under.
CONDITIONAL_VALUE = {"value": _leaf("value", True, "the value", TEXT),
                     "when": _leaf("when", False, "applies when this renders true", WHEN)}
NAMED = {"name": _leaf("name", True, "the name", TEXT),
         "when": _leaf("when", False, "needed when this renders true", WHEN)}
VERSIONED = {**NAMED, "version": _leaf("version", False, "a PEP 440 specifier its `--version` must satisfy", TEXT)}
ENV: Shape = {"type": "object", "propertyNames": {"pattern": ENV_NAME_PATTERN},
              "additionalProperties": {"anyOf": [TEXT, obj(CONDITIONAL_VALUE)]}}


def names(section: dict[str, Key]) -> Shape:
    """A list of names, each a string or a mapping of the section's keys."""
    return {"type": "array", "items": {"anyOf": [TEXT, obj(section)]}}


def body_shape(cls: type) -> Shape:
    """The shape of an entry's kind key: its one value field's, or a mapping of its body keys (or, for
    kinds that take one, a bare null or boolean as well)."""
    value = keys_of(cls, "value")
    if value:
        (key,) = value.values()
        return key.shape
    shape = obj(keys_of(cls))
    also: tuple[str, ...] = getattr(cls, "ALSO", ())
    if also:
        return {"anyOf": [{"type": also[0] if len(also) == 1 else list(also)}, shape]}
    return shape


def kind_keys(classes: tuple[type, ...]) -> dict[str, Key]:
    """Each entry class's kind key: required (an entry has exactly one), documented by the class."""
    return {cls.KIND: Key(cls.KIND, True, "", functools.partial(body_shape, cls),  # type: ignore[attr-defined]
                          fixed_doc=class_doc(cls)) for cls in classes}


def entries(classes: tuple[type, ...]) -> Shape:
    """A list of entries, each a mapping with exactly one kind key and the keys that kind takes beside it."""
    return {"type": "array", "items": {"oneOf": [
        obj({kind: key, **keys_of(cls, "beside")}) for (kind, key), cls in zip(kind_keys(classes).items(), classes)]}}
