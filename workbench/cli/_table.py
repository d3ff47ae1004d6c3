"""The commands' table: each command module registers its subparser and its handler here,
once, as it is imported; `workbench.cli` builds the command line from it."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

#: When a command's parser gets open()'s flags (the capabilities' rows, which import the ctx
#: layer and read the plugins): "always"; "asked" (only with --help, or when a flag is not
#: one of its own: `check GEM` stays light); "never".
Flags = Literal["always", "asked", "never"]


class OpenFlags:
    """Adds open()'s flags and bench actions (every platform's, by capability: ctx/spec.py) to
    a command's parser; `on`: whether this command line has them (else it adds nothing)."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, parser: argparse.ArgumentParser) -> None:
        if self.on:
            from ..bench.options import add_flags

            add_flags(parser)


@dataclass(frozen=True)
class Command:
    """One `gem-workbench` command: `add(sub, flags)` adds its subparser to `sub` and returns it;
    `run(args)` is its handler (None: `add` set the parser's `fn` itself)."""

    name: str
    add: Callable[[Any, OpenFlags], argparse.ArgumentParser]
    run: Callable[[argparse.Namespace], int] | None
    flags: Flags = "never"


#: The registered commands, by name, in the order --help lists them.
COMMANDS: dict[str, Command] = {}


def register(
    name: str,
    add: Callable[[Any, OpenFlags], argparse.ArgumentParser],
    run: Callable[[argparse.Namespace], int] | None,
    *,
    flags: Flags = "never",
) -> None:
    """Put the command `name` in the table (a command module calls it as it is imported)."""
    COMMANDS[name] = Command(name, add, run, flags)
