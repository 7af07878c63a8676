"""`extends: NAME`: a recipe written as changes to another one.

Merge rules, applied to the YAML before validation (so every error still
names the file and line where the value was written):
- mappings merge key by key, recursively;
- anything else, lists included, is replaced by the extending recipe's value;
- `KEY+:` (e.g. `patches+:`, `steps+:`, `requires: {tools+: [...]}`) appends
  the extending recipe's list to the base's list instead.
"""

from __future__ import annotations

from rocbuild.recipe.yamlpos import Mark, YList, YMap

APPEND = "+"


class MergeError(Exception):
    def __init__(self, message: str, key: str, mark: Mark, accepted: str):
        super().__init__(message)
        self.message, self.key, self.mark, self.accepted = message, key, mark, accepted


def merge(base: YMap, child: YMap, prefix: str = "") -> YMap:
    out = YMap(base)
    out.mark = child.mark
    out.key_marks, out.value_marks = dict(base.key_marks), dict(base.value_marks)

    def put(key: str, value: object, key_mark: Mark, value_mark: Mark) -> None:
        out[key] = value
        out.key_marks[key], out.value_marks[key] = key_mark, value_mark

    for key, value in child.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        kmark, vmark = child.key_marks[key], child.value_marks[key]
        if isinstance(key, str) and key.endswith(APPEND) and len(key) > 1:
            name = key[: -len(APPEND)]
            if name in child:
                raise MergeError(f"both {name!r} and {key!r} given", path, kmark,
                                 f"{name}: (replaces the base's list) or {key}: (appends to it), not both")
            if not isinstance(value, YList):
                raise MergeError(f"{key!r} appends a list", path, vmark, f"{key}: [ ... ]")
            before = base.get(name)
            if before is None:
                put(name, value, kmark, vmark)
                continue
            if not isinstance(before, YList):
                raise MergeError(f"the base's {name!r} is not a list, so {key!r} cannot append to it", path,
                                 kmark, f"{name}: to replace it")
            joined = YList(list(before) + list(value))
            joined.mark = value.mark
            joined.item_marks = list(before.item_marks) + list(value.item_marks)
            put(name, joined, kmark, vmark)
        elif isinstance(value, YMap) and (key not in base or isinstance(base[key], YMap)):
            put(key, merge(base.get(key) or _empty(value), value, path), kmark, vmark)
        else:
            put(key, value, kmark, vmark)
    return out


def _empty(like: YMap) -> YMap:
    out = YMap()
    out.mark, out.key_marks, out.value_marks = like.mark, {}, {}
    return out
