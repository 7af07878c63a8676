"""docs/command-line.md names every command, action and option the parser takes, and no option it lacks.

The reference's synopsis is a block of `rocbuild COMMAND ...` lines (a line that does not start with
`rocbuild` continues the one above). A command is named by a line of its own; an action (`root create`,
`recipes check`, `cache prune`) or a choice of a positional (`ci github`) by a word of its command's lines,
and its options must be named on the lines that name it. `[options]` stands for the table of options below
the synopsis.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field

from rocbuild.cli.app import build_parser
from tests.conftest import REPO

REFERENCE = REPO / "docs" / "command-line.md"
OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")


def _word(word: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-]){re.escape(word)}(?![\w-])")


@dataclass
class Node:
    """A command, or an action of one: its words on the command line, and the option strings it takes."""

    path: tuple[str, ...]
    options: list[str]
    children: list[Node] = field(default_factory=list)


def parser_tree(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Node:
    node = Node(path, [s for a in parser._actions if not isinstance(a, argparse._HelpAction) for s in a.option_strings])
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            node.children += [parser_tree(sub, (*path, name)) for name, sub in a.choices.items()]
        elif not a.option_strings and a.choices is not None:  # `ci github|matrix`: a choice reads like an action
            node.children += [Node((*path, str(choice)), []) for choice in a.choices]
    return node


def synopsis(text: str) -> list[str]:
    """The indented block under the first heading `## Command line`, one entry per `rocbuild` line."""
    lines = text.split("## Command line", 1)[1].splitlines()
    entries: list[str] = []
    for line in lines[next(i for i, line in enumerate(lines) if line.startswith("    ")):]:
        if line.strip() and not line.startswith("    "):
            break
        if line.strip().startswith("rocbuild "):
            entries.append(line.strip())
        elif line.strip():
            entries[-1] += " " + line.strip()
    return entries


def options_table(text: str) -> str:
    """The first cells of the first table after the synopsis: the options `[options]` stands for."""
    rows = text.split("## Command line", 1)[1].split("\n|", 1)[1].split("\n\n", 1)[0].splitlines()
    return " ".join(re.split(r"(?<!\\)\|", row)[1] for row in rows[2:])


def gaps(root: Node, text: str) -> list[str]:
    """What the reference fails to name, and the options it names that do not exist, as sentences."""
    entries, table = synopsis(text), options_table(text)
    commands = {child.path[0]: child for child in root.children}
    found = [f"`rocbuild {o}` is not named" for o in root.options
             if not any(_word(o).search(e) for e in entries if e.split()[1].startswith("-"))]
    for entry in entries:
        first = entry.split()[1]
        if first.startswith("-"):
            known = root.options
        elif first in commands:
            known = _all_options(commands[first])
        else:
            if first != "RECIPE":  # `rocbuild RECIPE` is `rocbuild build RECIPE`
                found.append(f"`rocbuild {first}`: no such command")
            continue
        found += [f"`rocbuild {first}` takes no {o}" for o in OPTION.findall(entry) if o not in known]
    found += [f"the options table names {o}, which build, plan and prepare do not take" for o in OPTION.findall(table)
              if not any(o in commands[c].options for c in ("build", "plan", "prepare"))]
    for command in root.children:
        found += _missing(command, [e for e in entries if e.split()[1] == command.path[0]], table)
    return found


def _all_options(node: Node) -> list[str]:
    return node.options + [o for child in node.children for o in _all_options(child)]


def _missing(node: Node, lines: list[str], table: str) -> list[str]:
    """What `lines`, the synopsis lines that name `node`, leave out of it and of its actions."""
    name = " ".join(node.path)
    if not lines:
        return [f"`rocbuild {name}` is not named"]
    scope = " ".join(lines) + (" " + table if "[options]" in " ".join(lines) else "")
    out = [f"`rocbuild {name}`: {o} is not named" for o in node.options if not _word(o).search(scope)]
    for child in node.children:
        out += _missing(child, [line for line in lines if _word(child.path[-1]).search(line)], table)
    return out


def test_the_reference_names_every_command_action_and_option():
    found = gaps(parser_tree(build_parser()), REFERENCE.read_text())
    assert not found, "docs/command-line.md:\n" + "\n".join(found)


def test_the_check_finds_what_the_reference_leaves_out_or_invents():
    parser = argparse.ArgumentParser(prog="rocbuild")
    parser.add_argument("--version", action="store_true")
    sub = parser.add_subparsers()
    cache = sub.add_parser("cache").add_subparsers()
    cache.add_parser("list").add_argument("--json", action="store_true")
    cache.add_parser("prune").add_argument("--older-than")
    for command in ("build", "plan", "prepare"):
        sub.add_parser(command).add_argument("-j", "--jobs")
    text = ("# Command line\n\n## Command line\n\n    rocbuild cache list | prune [--older-than DAYS]\n"
            "                   [--dry-run]\n    rocbuild build [options]\n    rocbuild plan [options]\n\n"
            "| option | meaning |\n| --- | --- |\n| `--jobs N`, `--cores N` | parallel jobs |\n")
    assert gaps(parser_tree(parser), text) == [
        "`rocbuild --version` is not named",
        "`rocbuild cache` takes no --dry-run",
        "the options table names --cores, which build, plan and prepare do not take",
        "`rocbuild cache list`: --json is not named",
        "`rocbuild build`: -j is not named",
        "`rocbuild plan`: -j is not named",
        "`rocbuild prepare` is not named",
    ]
