"""A JS/TS agent tool calling another JS/TS tool of its gem (A3–A5): the nested call runs in
the same sandbox while its caller waits. Each test is a tool that bends the re-entrant bridge:
a caller that does not wait, a callee that hangs, dies or keeps a ctx, mixed languages."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import GemBuilder
from test_agent import agent_gem

pytestmark = pytest.mark.deno

TOOLS = {
    "leaf": (
        "export async function handle(input, ctx) { return { id: ctx.toolCallId, x: input.x ?? 0 }; }",
        "js",
    ),
    # does not await its nested call, and returns first
    "hasty": (
        "export async function handle(input, ctx) {\n"
        "  globalThis.pending = ctx.tools.leaf({ x: 1 });\n"
        "  return 'early';\n"
        "}",
        "js",
    ),
    # its own ctx calls in flight while the nested call runs, both awaited together
    "busy": (
        "export async function handle(input, ctx) {\n"
        "  const [a, b, c] = await Promise.all([ctx.tools.leaf({ x: 2 }), ctx.audit('mid', { n: 1 }),\n"
        "                                       ctx.tools.calculate({ expression: '6*7' })]);\n"
        "  await ctx.audit('after', {});\n"
        "  return { a: a.x, c, mine: ctx.toolCallId, theirs: a.id };\n"
        "}",
        "ts",
    ),
    "spin": ("export async function handle() { for (;;) {} }", "js"),
    "calls_spin": (
        "export async function handle(input, ctx) {\n"
        "  try { await ctx.tools.spin({}); } catch (e) { return { caught: e.code }; }\n"
        "}",
        "js",
    ),
    # keeps its ctx in the shared realm for a later tool to try
    "keeper": (
        "export async function handle(input, ctx) { globalThis.kept = ctx; return 'kept'; }",
        "js",
    ),
    "thief": (
        "export async function handle(input, ctx) {\n"
        "  await ctx.tools.keeper({});\n"
        "  try { await globalThis.kept.audit('stolen', {}); return 'used'; }\n"
        "  catch (e) { return { refused: e.code }; }\n"
        "}",
        "js",
    ),
    # an uncaught error outside any promise the bridge holds: the worker's onerror
    "bomb": (
        "export async function handle() { setTimeout(() => { throw new Error('later'); }, 0);"
        " await new Promise((r) => setTimeout(r, 200)); return 'never'; }",
        "js",
    ),
    "calls_bomb": (
        "export async function handle(input, ctx) {\n"
        "  try { return await ctx.tools.bomb({}); } catch (e) { return { caught: e.code }; }\n"
        "}",
        "js",
    ),
    # Python -> JS -> Python -> JS
    "py_top": ("def handle(input, ctx):\n    return ctx.tools.js_mid({})\n", "py"),
    "js_mid": ("export async function handle(input, ctx) { return await ctx.tools.py_mid({}); }", "js"),
    "py_mid": ("def handle(input, ctx):\n    return {'leaf': ctx.tools.leaf({'x': 9})['x']}\n", "py"),
}


@pytest.fixture
def bench(gem: GemBuilder, opened: Callable) -> object:
    root: Path = agent_gem(gem, **TOOLS)
    return opened(root, timeout=5)


def test_A3_a_caller_that_does_not_wait_ends_first_and_the_nested_call_still_completes(bench) -> None:
    res = bench.call("hasty")
    assert res.value == "early"
    assert [c.tool for c in res.children] == ["leaf"] and res.children[0].value["x"] == 1
    assert bench.call("leaf", {"x": 3}).value["x"] == 3  # the bridge is in step afterwards


def test_A3_A2_A6_the_callers_ctx_calls_are_served_while_its_nested_call_runs(bench) -> None:
    res = bench.call("busy").raise_for_error()
    assert res.value["a"] == 2 and res.value["c"] == {"result": 42}
    assert res.value["mine"] != res.value["theirs"]  # A2: a new toolCallId per call
    audit = bench.audit()
    assert {"mid", "after"} <= set(audit["event"]) and (audit["call_id"] == res.call_id).any()


def test_A5_a_nested_call_that_hangs_ends_the_whole_invocation_at_the_deadline(bench) -> None:
    res = bench.call("calls_spin")
    assert res.error is not None and res.error.code == "E_TIMEOUT"
    assert bench.call("leaf", {"x": 4}).value["x"] == 4  # a fresh sandbox


def test_A3_a_ctx_kept_by_a_nested_call_is_refused_once_that_call_ended(bench) -> None:
    assert bench.call("thief").value == {"refused": "E_STATE"}
    assert "stolen" not in set(bench.audit()["event"])


def test_A4_a_nested_call_killed_by_an_uncaught_error_fails_its_caller_too(bench) -> None:
    res = bench.call("calls_bomb")  # the worker is gone: the caller cannot catch it
    assert res.error is not None and res.error.code == "E_TOOL_ERROR" and "later" in res.error.message
    assert res.children[0].error is not None and res.children[0].error.code == "E_TOOL_ERROR"
    assert bench.call("leaf", {"x": 5}).value["x"] == 5


def test_A3_python_and_js_tools_nest_through_each_other(bench) -> None:
    res = bench.call("py_top").raise_for_error()
    assert res.value == {"leaf": 9}
    assert [c.tool for c in res.children] == ["js_mid"]
    assert [c.tool for c in res.children[0].children] == ["py_mid"]
    assert [c.tool for c in res.children[0].children[0].children] == ["leaf"]
