"""The gem-workbench command is a package: one module per command, each registering its
subparser and handler in one table, from which the command line is built."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ORDER = [
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
]


def test_each_command_is_a_module_of_the_cli_package_registered_in_the_table() -> None:
    import workbench.cli
    from workbench.cli._table import COMMANDS

    workbench.cli.parser_with(table=False)  # (imports the command modules)
    assert list(COMMANDS) == ORDER  # the order --help lists them in
    folder = Path(workbench.cli.__file__).parent
    for name, command in COMMANDS.items():
        assert (folder / f"{name}.py").is_file()
        assert command.add.__module__ == f"workbench.cli.{name}"
    assert {n: c.flags for n, c in COMMANDS.items() if c.flags != "never"} == {
        "check": "asked",
        "doctor": "always",
        "call": "always",
        "mcp": "always",
        "export": "always",
        "conversation": "always",
    }


def test_the_help_lists_every_registered_command_in_order() -> None:
    from workbench.cli import parser_with

    text = parser_with(table=False).format_help()
    assert "{" + ",".join(ORDER) + "}" in text


def test_a_command_registered_in_the_table_is_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.cli import main
    from workbench.cli._table import COMMANDS, OpenFlags, register

    def add(sub: Any, flags: OpenFlags) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser("hello", help="say hello")
        p.add_argument("--to", default="world")
        return p

    def run(args: argparse.Namespace) -> int:
        print(f"hello {args.to}")
        return 3

    register("hello", add, run)
    try:
        assert main(["hello", "--to", "you"]) == 3
        assert capsys.readouterr().out == "hello you\n"
    finally:
        del COMMANDS["hello"]


def test_the_open_flags_are_added_only_to_the_commands_that_take_them() -> None:
    from workbench.cli import parser_with

    def takes_seed(parser: argparse.ArgumentParser, *words: str) -> bool:
        _, rest = parser.parse_known_args([*words, "--seed", "1"])
        return rest == []

    lean, full = parser_with(table=False), parser_with(table=True)
    assert not takes_seed(lean, "call", "g", "t") and takes_seed(full, "call", "g", "t")
    assert takes_seed(full, "check", "g") and takes_seed(full, "doctor", "g")
    assert takes_seed(full, "export", "g")
    assert not takes_seed(full, "types", "g") and not takes_seed(full, "replay", "b")


def test_the_doctor_command_runs_from_the_cli_package(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "doctor", str(tmp_path / "nothing-here")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1, out.stderr
    assert out.stderr.startswith("gem-workbench doctor: error E_"), out.stderr
    assert "Traceback" not in out.stderr
