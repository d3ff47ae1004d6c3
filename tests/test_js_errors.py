"""JS/TS tools' mistakes get messages as good as Python's (issue 13 item 4): a wrong ctx method
lists the real ones, wrong arguments are described in the ctx's terms, a syntax error reads as
one with its code frame, sandbox denials say what the platform allows (never a Deno flag), and a
forgotten `await` is a warning on the result."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conftest import GemBuilder

pytestmark = pytest.mark.deno

TOOLS = {
    "wrong": "export default async function (i, ctx) { return await ctx.files.readFile('a.txt'); }",
    "args": "export default async function (i, ctx) { return await ctx.files.write('a.txt'); }",
    "many": "export default async function (i, ctx) { return await ctx.storage.kv.get('a', 'b', 'c'); }",
    "syntax": "export default async function (input: any, ctx: any) {\n  const x: number = ;\n  return x;\n}\n",
    "env": "export default async function () { return Deno.env.get('HOME'); }",
    "net": "export default async function () { return (await fetch('https://example.com')).status; }",
    "noawait": "export default async function (i, ctx) { ctx.storage.kv.set('k', 'v'); ctx.storage.kv.get('k'); return 1; }",
}
PY_ARGS = "def handle(input, ctx):\n    return ctx.files.write('a.txt')\n"


@pytest.fixture
def bench(gem: GemBuilder, opened: Callable) -> object:
    for name, src in TOOLS.items():
        gem.tool(name, src, ext="ts" if name == "syntax" else "js")
    gem.tool("py_args", PY_ARGS)
    return opened(gem)


def test_a_wrong_ctx_method_lists_the_real_ones(bench) -> None:
    e = bench.call("wrong").error
    assert "ctx.files has no method 'readFile'" in e.message and "did you mean 'read'?" in e.message
    assert "list, stat, read, write" in e.message


@pytest.mark.parametrize("tool", ["args", "py_args"])
def test_wrong_arguments_are_described_in_the_ctx_terms_for_both_languages(bench, tool: str) -> None:
    e = bench.call(tool).error
    assert (
        e.code == "E_INVALID_ARGUMENT" and e.message == "files.write(path, content, options): missing content"
    )
    assert "positional" not in e.message and "str" not in e.message


def test_too_many_arguments(bench) -> None:
    e = bench.call("many").error
    assert e.message == "storage.kv.get(key): takes at most 1 arguments, got 3"


def test_a_ts_syntax_error_reads_as_one_with_its_code_frame(bench) -> None:
    res = bench.call("syntax")
    assert res.error.message.startswith("SyntaxError: Expression expected")
    assert "2 |   const x: number = ;" in res.error.message and "at tools/syntax.ts:2:21" in res.error.message
    assert "white-space:pre-wrap" in res._repr_html_()  # the frame keeps its lines in the notebook


@pytest.mark.parametrize(
    "tool, words", [("env", "no environment variables"), ("net", "only through its ctx")]
)
def test_N1_denials_say_what_the_platform_allows_not_a_deno_flag(bench, tool: str, words: str) -> None:
    e = bench.call(tool).error
    assert e.code == "E_SANDBOX" and words in e.message and "--allow" not in e.message


def test_a_forgotten_await_is_a_warning_on_the_result(bench) -> None:
    res = bench.call("noawait")
    assert res.value == 1
    [warning] = res.warnings
    assert "2 ctx calls" in warning and "storage.kv.set, storage.kv.get" in warning and "await" in warning
