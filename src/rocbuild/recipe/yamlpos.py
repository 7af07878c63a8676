"""YAML to plain Python values that remember where each key and value was written."""

from __future__ import annotations

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


class YInt(int):
    """An int that remembers how it was written (a commit `0123456` or a ref `1.10`)."""

    raw: str


class YFloat(float):
    raw: str


def compose(text: str, file: str | None = None) -> object:
    """Parse one YAML document; raises yaml.YAMLError or DuplicateKey. Marks carry `file` when given."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if root is None:
        return None
    return _convert(root, _Scalars(), file)


def _convert(node: Node, scalars: SafeConstructor, file: str | None = None) -> object:
    def _mark(n: Node) -> Mark:
        return Mark(n.start_mark.line + 1, n.start_mark.column + 1, file)

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
        items = YList(_convert(item, scalars, file) for item in node.value)
        items.mark = _mark(node)
        items.item_marks = [_mark(item) for item in node.value]
        return items
    if isinstance(node, MappingNode):
        out = YMap()
        out.mark = _mark(node)
        out.key_marks, out.value_marks = {}, {}
        for key_node, value_node in node.value:
            key = _convert(key_node, scalars, file)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                key = str(key)
            if key in out:
                raise DuplicateKey(str(key), _mark(key_node), out.key_marks[key])
            out[key] = _convert(value_node, scalars, file)
            out.key_marks[key] = _mark(key_node)
            out.value_marks[key] = _mark(value_node)
        return out
    raise TypeError(f"unexpected YAML node {node!r}")  # pragma: no cover - yaml has no other kinds
