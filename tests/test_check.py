"""`gem-workbench check` loads every tool without calling it (issue 13): each unloadable tool
is reported with file:line; a manifest.json path works; a file path says what was expected."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import EXAMPLE_GEM, GemBuilder
from test_cli import cli

import workbench
from workbench._check import check

pytestmark = pytest.mark.deno

BAD = {
    "pysyntax": ("def handle(input, ctx)\n    return 1\n", "py"),
    "pynohandle": ("def run(input, ctx):\n    return 1\n", "py"),
    "tssyntax": (
        "export default async function (input: any, ctx: any) {\n  const x: number = ;\n  return x;\n}\n",
        "ts",
    ),
    "jsnoexport": ("async function main(input, ctx) { return 1; }\n", "js"),
    "npmimport": (
        '// a helper\nimport pad from "npm:left-pad";\nexport default async function () { return pad(); }\n',
        "js",
    ),
    "jsrimport": ('import x from "jsr:@std/path";\nexport default async function () { return x; }\n', "ts"),
    "remote": (
        'import x from "https://deno.land/x/y.ts";\nexport default async function () { return x; }\n',
        "ts",
    ),
    "throws": ("const a = 1;\nthrow new Error('at import');\nexport default async function () {}\n", "js"),
    "good": ("export default async function (input: unknown) { return 1; }\n", "ts"),
    "goodpy": ("async def handle(input, ctx):\n    return 1\n", "py"),
}


def bad_gem(gem: GemBuilder) -> Path:
    for name, (src, ext) in BAD.items():
        gem.tool(name, src, ext=ext)
    return gem.write()


def test_check_reports_each_unloadable_tool_with_file_and_line(gem: GemBuilder) -> None:
    got = {p["file"].split("/")[-1].split(".")[0]: p for p in check(bad_gem(gem))}
    assert set(got) == set(BAD) - {"good", "goodpy"}
    assert got["pysyntax"]["line"] == 1 and "SyntaxError" in got["pysyntax"]["message"]
    assert "no `handle` function" in got["pynohandle"]["message"]
    assert got["tssyntax"]["line"] == 2 and got["tssyntax"]["message"].startswith("SyntaxError")
    assert "no default or handle export" in got["jsnoexport"]["message"]
    for name, line in (("npmimport", 2), ("jsrimport", 1), ("remote", 1)):
        assert got[name]["line"] == line and "N4" in got[name]["message"], got[name]
    assert got["throws"]["line"] == 2 and "at import" in got["throws"]["message"]


def test_check_command_prints_file_line_and_exits_1(gem: GemBuilder) -> None:
    out = cli("check", str(bad_gem(gem)))
    assert out.returncode == 1 and "8 problems" in out.stderr
    assert "tools/pysyntax.py:1: SyntaxError" in out.stderr and "Traceback" not in out.stderr


def test_check_takes_the_manifest_path_and_says_what_a_file_is_not(gem: GemBuilder) -> None:
    assert check(EXAMPLE_GEM / "manifest.json") == []
    assert cli("check", str(EXAMPLE_GEM / "manifest.json")).returncode == 0
    [problem] = check(EXAMPLE_GEM / "tools" / "add_note.py")
    assert "is a file; give a gem folder" in problem["message"]
    with pytest.raises(workbench.GemLoadError, match="give a gem folder"):
        workbench.open(EXAMPLE_GEM / "tools" / "add_note.py")
    assert "does not exist" in check(EXAMPLE_GEM / "nope")[0]["message"]


def test_check_passes_the_example_gems(opened: Callable) -> None:
    gems = EXAMPLE_GEM.parent
    for name in ("notes", "seed-examples", "mail-digest", "agent-research", "acme-payments"):
        assert check(gems / name) == [], name


def test_A1_check_sees_an_agent_tools_plain_handle(gem: GemBuilder) -> None:
    from test_agent import agent_gem

    root = agent_gem(gem, plain=("async function handle(input, ctx) { return 1; }\n", "js"),
                     none=("async function other() {}\n", "js"))  # fmt: skip
    [problem] = check(root)
    assert problem["file"].endswith("none.js") and "handle" in problem["message"]
