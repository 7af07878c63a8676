"""The symbols of a build-only ROCm torch's link-only libraries, in LLVM's interface-stub format (IFS).

Debian's CPU libraries give theirs through `llvm-ifs` (their sonames and needed libraries renamed to a
ROCm wheel's). `libc10_hip.so` and `libtorch_hip.so` have no Debian counterpart: what they export is
what the hipified `c10/hip` and `ATen/hip` headers declare and do not define, which the ROCm clang reads
from its AST (`-ast-dump=json`, several JSON documents one after another) of a file including them all."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

# Declarations that make a symbol a library defines: functions, methods, and data declared extern/static.
_DECLS = frozenset({"FunctionDecl", "CXXMethodDecl", "CXXConstructorDecl", "CXXDestructorDecl", "CXXConversionDecl",
                    "VarDecl"})
# Inside these, declarations are templates: instantiated by their users, exported by nobody.
_TEMPLATES = frozenset({"FunctionTemplateDecl", "ClassTemplateDecl", "ClassTemplatePartialSpecializationDecl",
                        "VarTemplateDecl", "TypeAliasTemplateDecl"})
_SONAME = re.compile(r"^lib(?P<name>[A-Za-z0-9_]+)\.so(?:\.[0-9.]+)?$")


def documents(text: str) -> Iterator[dict[str, Any]]:
    """The JSON documents clang prints one after another with -ast-dump-filter."""
    decoder = json.JSONDecoder()
    i = 0
    while (i := text.find("{", i)) != -1:
        doc, i = decoder.raw_decode(text, i)
        if isinstance(doc, dict):
            yield doc


class _Walk:
    """Clang's JSON names a location's file only where it changes from the one printed before, so the
    walk follows the document in order and keeps the file it is in."""

    def __init__(self) -> None:
        self.file = ""
        # mangled name -> every header declaring it: a function first declared in a CPU header (torch's
        # headeronly Macros.h declares at::cuda::warp_size) and again in ATen/hip is libtorch_hip's.
        self.found: dict[str, set[str]] = {}

    def seen(self, loc: Any) -> None:
        if not isinstance(loc, dict):
            return
        for inner in ("spellingLoc", "expansionLoc"):
            self.seen(loc.get(inner))
        if isinstance(loc.get("file"), str):
            self.file = loc["file"]

    def node(self, node: Any, in_template: bool = False) -> None:
        if not isinstance(node, dict):
            return
        self.seen(node.get("loc"))
        declared_in = self.file
        for end in ("begin", "end"):
            self.seen((node.get("range") or {}).get(end))
        kind = node.get("kind")
        if kind in _DECLS and not in_template and declares_a_symbol(node):
            self.found.setdefault(node["mangledName"], set()).add(declared_in)
        for child in node.get("inner", ()):
            self.node(child, in_template or kind in _TEMPLATES)


def declares_a_symbol(node: Mapping[str, Any]) -> bool:
    """A declaration (not a definition) with a linker name that some library must define."""
    if not node.get("mangledName") or node.get("isImplicit"):
        return False
    if any(node.get(k) for k in ("inline", "constexpr", "explicitlyDeleted", "explicitlyDefaulted")):
        return False
    if node.get("kind") == "VarDecl":
        return node.get("storageClass") in ("extern", "static") and "init" not in node
    return not any(isinstance(c, dict) and c.get("kind") == "CompoundStmt" for c in node.get("inner", ()))


def declared_symbols(dumps: list[str]) -> dict[str, set[str]]:
    """Mangled name -> the headers that declare it, over every dump."""
    walk = _Walk()
    for text in dumps:
        walk.file = ""
        for doc in documents(text):
            walk.node(doc)
    return walk.found


def by_library(declared: Mapping[str, set[str]], folders: Mapping[str, tuple[str, ...]],
               defined_elsewhere: set[str]) -> dict[str, list[str]]:
    """Each library's symbols: those declared in its header folders (the first library whose folders
    declare it) and not already defined by another library of the kit (which the linker would take first)."""
    out: dict[str, list[str]] = {name: [] for name in folders}
    for symbol, headers in sorted(declared.items()):
        if symbol in defined_elsewhere:
            continue
        for name, parts in folders.items():
            if any(part in header for part in parts for header in headers):
                out[name].append(symbol)
                break
    return out


def ifs_text(soname: str, symbols: list[str], needed: list[str]) -> str:
    """An IFS file for `llvm-ifs --output-elf`: functions only (the headers' data are static members,
    linked by name like functions)."""
    lines = ["--- !ifs-v1", "IfsVersion: 3.0", f"SoName: {soname}",
             "Target: { ObjectFormat: ELF, Arch: x86_64, Endianness: little, BitWidth: 64 }"]
    if needed:
        lines += ["NeededLibs:"] + [f"  - '{n}'" for n in needed]
    lines += ["Symbols:"] + [f"  - {{ Name: '{s}', Type: Func }}" for s in symbols] + ["..."]
    return "\n".join(lines) + "\n"


def renamed_ifs(text: str, renames: Mapping[str, str]) -> str:
    """Debian's library as llvm-ifs read it, with its soname and the kit's needed libraries renamed to a
    ROCm wheel's (libc10.so.2.14 -> libc10.so); other needed libraries stay."""
    def rename(match: re.Match[str]) -> str:
        return match.group(1) + renames.get(match.group(2).strip("'\""), match.group(2)) + match.group(3)

    return re.sub(r"^(SoName:\s*|\s*-\s*)('?[A-Za-z0-9_.+-]+\.so[0-9.]*'?)(\s*)$", rename, text, flags=re.M)


def wheel_soname(debian_soname: str) -> str | None:
    """libc10.so.2.14 -> libc10.so (a ROCm wheel's name); None for what is not a library name."""
    m = _SONAME.match(debian_soname)
    return f"lib{m.group('name')}.so" if m else None


def ifs_names(text: str) -> list[str]:
    """The symbol names an IFS file lists."""
    return re.findall(r"^\s*-\s*\{\s*Name:\s*'?([^,'}]+?)'?\s*,", text, flags=re.M)
