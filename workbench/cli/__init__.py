"""The `gem-workbench` command: check a gem, call a tool, export and replay a repro bundle, run
notebooks, start JupyterLab."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["main"]

#: The command modules, in the order --help lists them: each registers itself in the table
#: (_table.COMMANDS) as it is imported. A new command is a module here and a name in this list.
COMMAND_MODULES = (
    "check",
    "new",
    "doctor",
    "call",
    "mcp",
    "export",
    "replay",
    "conversation",
    "types",
    "test",
    "kernel",
    "lab",
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run `gem-workbench` with `argv` (default: sys.argv[1:]); its exit code."""
    own, extra = _split_passthrough(list(sys.argv[1:] if argv is None else argv))
    parser = _parser_for(own)
    args = parser.parse_args(own)
    args.extra = extra
    import warnings

    from ._out import show_warning

    warnings.showwarning = show_warning
    from .._errors import command_line

    try:
        with command_line():  # hints name this command's flags, not open()'s keywords
            return int(args.fn(args))
    except KeyboardInterrupt:  # Ctrl-C: the bench closed on the way out; one line, the shell's 130
        print(f"gem-workbench {args.command}: interrupted", file=sys.stderr)
        return 130


def _split_passthrough(argv: list[str]) -> tuple[list[str], list[str]]:
    """`gem-workbench test|lab … -- ARGS`: ARGS go to pytest or jupyter lab untouched."""
    if argv[:1] in (["test"], ["lab"]) and "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, []


def _parser_for(own: list[str]) -> argparse.ArgumentParser:
    """The parser of this command line: with open()'s flags when its command takes them (they
    are the capabilities' rows, every platform's: built only then, so the other commands do
    not import the ctx layer or read the plugins; start-up: docs/benchmarks.md)."""
    from ._table import COMMANDS

    _load()
    name = next((a for a in own if not a.startswith("-")), None)
    command = COMMANDS.get(name or "")
    flags = "never" if command is None else command.flags
    asked = flags == "asked" and any(a in ("-h", "--help") for a in own)
    parser = parser_with(table=flags == "always" or asked)
    if flags == "asked" and not asked:
        _, rest = parser.parse_known_args(own)
        if rest:  # a flag of the table (or a mistake): parse again knowing every flag
            parser = parser_with(table=True)
    return parser


def parser_with(*, table: bool) -> argparse.ArgumentParser:
    """The command line, every registered command; `table`: with open()'s flags for the
    commands that take them."""
    from ._table import COMMANDS, OpenFlags

    _load()
    parser = argparse.ArgumentParser(prog="gem-workbench", description=__doc__)
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS.values():
        p = command.add(sub, OpenFlags(table and command.flags != "never"))
        if command.run is not None:
            p.set_defaults(fn=command.run)
    return parser


def _load() -> None:
    """Import the command modules (each registers itself), in COMMAND_MODULES' order."""
    for name in COMMAND_MODULES:
        importlib.import_module(f"{__name__}.{name}")


def _version() -> str:
    """The installed distribution's version, or the package's own when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gem-workbench")
    except PackageNotFoundError:
        from .. import __version__

        return __version__


class _Version(argparse.Action):
    """--version, read only when given (importlib.metadata is not imported for other commands)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"gem-workbench {_version()}")
        parser.exit()
