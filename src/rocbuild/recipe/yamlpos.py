"""YAML to plain Python values that remember where each key and value was written."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode


@dataclass(frozen=True)
class Mark:
    line: int  # 1-based
    column: int  # 1-based
    file: str | None = None  # set when recipes are merged (`extends:`): the file this was written in


class YMap(dict[Any, Any]):
    """A mapping that knows the position of itself, each key and each value."""

    mark: Mark
    key_marks: dict[Any, Mark]
    value_marks: dict[Any, Mark]


class YList(list[Any]):
    """A sequence that knows the position of itself and each item."""

    mark: Mark
    item_marks: list[Mark]


class DuplicateKey(Exception):
    def __init__(self, key: str, mark: Mark, first: Mark):
        super().__init__(key)
        self.key, self.mark, self.first = key, mark, first


class _Scalars(SafeConstructor):
    pass


# A recipe is a page of YAML; these bound what a hostile one can make the loader build: aliases
# that refer to aliases (a "billion laughs" file) multiply nodes, and deep nesting exhausts the stack.
MAX_NODES = 50_000
MAX_DEPTH = 64


class TooComplex(Exception):
    """The document is larger, deeper or more self-referential than any recipe."""

    def __init__(self, message: str, mark: Mark):
        super().__init__(message)
        self.message, self.mark = message, mark


class YInt(int):
    """An int that remembers how it was written (a commit `0123456` or a ref `1.10`)."""

    raw: str


class YFloat(float):
    raw: str


def compose(text: str, file: str | None = None) -> object:
    """Parse one YAML document; raises yaml.YAMLError or DuplicateKey. Marks carry `file` when given."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:
        raise TooComplex(f"nested too deeply (a recipe needs at most {MAX_DEPTH} levels)", Mark(1, 1, file)) from None
    if root is None:
        return None
    return _Converter(_Scalars(), file).convert(root, ())


class _Converter:
    def __init__(self, scalars: SafeConstructor, file: str | None):
        self.scalars = scalars
        self.file = file
        self.nodes = 0

    def mark(self, n: Node) -> Mark:
        return Mark(n.start_mark.line + 1, n.start_mark.column + 1, self.file)

    def convert(self, node: Node, parents: tuple[int, ...]) -> object:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise TooComplex(f"more than {MAX_NODES} values (YAML aliases that repeat aliases?)", self.mark(node))
        if id(node) in parents:
            raise TooComplex("an alias refers to the value that contains it", self.mark(node))
        if len(parents) > MAX_DEPTH:
            raise TooComplex(f"nested too deeply (a recipe needs at most {MAX_DEPTH} levels)", self.mark(node))
        return _convert(node, self, parents + (id(node),))


def _convert(node: Node, conv: _Converter, parents: tuple[int, ...]) -> object:
    scalars, _mark = conv.scalars, conv.mark

    if isinstance(node, ScalarNode):
        value = scalars.construct_object(node, deep=True)
        if isinstance(value, int) and not isinstance(value, bool):
            value = YInt(value)
            value.raw = node.value
        elif isinstance(value, float):
            value = YFloat(value)
            value.raw = node.value
        return value
    if isinstance(node, SequenceNode):
        items = YList(conv.convert(item, parents) for item in node.value)
        items.mark = _mark(node)
        items.item_marks = [_mark(item) for item in node.value]
        return items
    if isinstance(node, MappingNode):
        out = YMap()
        out.mark = _mark(node)
        out.key_marks, out.value_marks = {}, {}
        for key_node, value_node in node.value:
            key = conv.convert(key_node, parents)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                key = str(key)
            if key in out:
                raise DuplicateKey(str(key), _mark(key_node), out.key_marks[key])
            out[key] = conv.convert(value_node, parents)
            out.key_marks[key] = _mark(key_node)
            out.value_marks[key] = _mark(value_node)
        return out
    raise TypeError(f"unexpected YAML node {node!r}")  # pragma: no cover - yaml has no other kinds


def key_path_at(text: str, line: int) -> str | None:
    """The key path (`source.commit`, `steps[1].name`) that line `line` (1-based) of a YAML text belongs
    to, read from the indentation of the lines above it: for messages about text the parser could not read."""
    lines = text.splitlines()
    if not 0 < line <= len(lines):
        return None
    path: list[str] = []
    limit: int | None = None  # the indentation a line must be below to be an enclosing key
    for number in range(line - 1, -1, -1):
        m = _KEY_LINE.match(lines[number])
        if m is None:
            continue
        dash = len(m.group(1))
        indent = dash + len(m.group(2) or "")
        if limit is not None and indent >= limit:
            continue
        path.insert(0, m.group(3))
        if m.group(2):  # an item of a list: its index joins the key of the list
            path.insert(0, f"[{_item_index(lines, number, dash)}]")
        limit = dash if m.group(2) else indent
        if limit == 0:
            break
    return re.sub(r"\.\[", "[", ".".join(path)) or None


def _item_index(lines: list[str], number: int, dash: int) -> int:
    """How many items of the same list stand above line `number` (whose "- " is at column `dash`)."""
    index = 0
    for above in range(number - 1, -1, -1):
        text = lines[above]
        stripped = len(text) - len(text.lstrip(" "))
        if text.strip() == "" or text.lstrip().startswith("#") or stripped > dash:
            continue
        if stripped < dash or not text[stripped:].startswith("- "):
            break
        index += 1
    return index


_KEY_LINE = re.compile(r"^( *)(- +)?([A-Za-z0-9_.+-]+)\s*:(?:\s|$)")
