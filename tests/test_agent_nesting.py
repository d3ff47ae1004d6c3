"""A JS/TS agent tool calling another JS/TS tool of its gem (A3–A5): the nested call runs in
the same sandbox while its caller waits. Each test is a tool that bends the re-entrant bridge:
a caller that does not wait, a callee that hangs, dies or keeps a ctx, mixed languages."""

from __future__ import annotations

import os
import time
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


# -- found by a red-team pass on the re-entrant bridge ------------------------------------------

SIBLINGS = {
    "prod": ("export async function handle() { return 'P'; }", "js"),
    "cons": ("export async function handle() { return 'C' + (await globalThis.gate); }", "js"),
    # its second call waits for what the first one's result opens
    "pair": (
        "export async function handle(input, ctx) {\n"
        "  let open; globalThis.gate = new Promise((r) => { open = r; });\n"
        "  const p = ctx.tools.prod({}).then((v) => { open(v); return v; });\n"
        "  return await Promise.all([p, ctx.tools.cons({})]);\n"
        "}",
        "js",
    ),
    "fan": (
        "export async function handle(input, ctx) {\n"
        "  const all = [];\n"
        "  for (let i = 0; i < 60; i++) all.push(ctx.tools.leaf({ x: i }).then((v) => v.x, (e) => e.code));\n"
        "  return await Promise.all(all);\n"
        "}",
        "js",
    ),
    "noisy": (
        "export async function handle(i, ctx) { await ctx.audit('x', {}); console.log('NESTED-OUT'); return 1; }",
        "js",
    ),
    "loud": (
        "export async function handle(i, ctx) { console.log('TOP-OUT'); globalThis.p = ctx.tools.noisy({}); return 'early'; }",
        "js",
    ),
    "callee": ("export async function handle() { return 'v1'; }", "js"),
    "outer": ("export async function handle(i, ctx) { return await ctx.tools.callee({}); }", "js"),
    "leaf": TOOLS["leaf"],
}


@pytest.fixture
def siblings(gem: GemBuilder, opened: Callable) -> object:
    return opened(agent_gem(gem, **SIBLINGS), timeout=10)


def test_A3_concurrent_calls_of_one_tool_run_in_turn_and_a_later_one_may_wait_for_an_earlier(
    siblings,
) -> None:
    res = siblings.call("pair")
    assert res.value == ["P", "CP"], res  # was a deadlock until the deadline
    assert [c.tool for c in res.children] == ["prod", "cons"]


def test_A5_sixty_concurrent_nested_calls_stop_at_the_51st(siblings) -> None:
    res = siblings.call("fan")
    assert res.error is not None and res.error.code == "E_LIMIT"
    assert len(res.children) == 50 and all(c.error is None for c in res.children)
    assert siblings.call("leaf", {"x": 1}).value["x"] == 1


def test_A3_a_nested_calls_output_is_its_top_calls_even_when_the_top_returned_first(siblings) -> None:
    res = siblings.call("loud")
    assert res.value == "early" and "TOP-OUT" in res.logs and "NESTED-OUT" in res.logs
    assert "NESTED-OUT" not in siblings.call("leaf", {"x": 1}).logs


def test_A3_a_tool_first_run_nested_is_reimported_after_an_edit(siblings, gem: GemBuilder) -> None:
    assert siblings.call("outer").value == "v1"
    path = gem.root / "tools" / "callee.js"
    path.write_text("export async function handle() { return 'v2'; }")
    os.utime(path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    assert siblings.call("callee").value == "v2"
    assert siblings.call("outer").value == "v2"


def test_A4_after_a_nested_call_ended_the_sandbox_the_next_one_is_a_coded_error(
    gem: GemBuilder, opened: Callable
) -> None:
    tools = {
        "hog": (
            "export async function handle() { const a = []; for (;;) a.push(new Array(1e6).fill(1.5)); }",
            "js",
        ),
        "leaf": TOOLS["leaf"],
        "py_mid": (
            "def handle(input, ctx):\n"
            "    try:\n        ctx.tools.hog({})\n    except Exception as e:\n        first = e.code\n"
            "    try:\n        ctx.tools.leaf({'x': 1})\n    except Exception as e:\n        return [first, e.code]\n",
            "py",
        ),
        "top": ("export async function handle(i, ctx) { return await ctx.tools.py_mid({}); }", "js"),
    }
    bench = opened(agent_gem(gem, **tools), timeout=20, memory_mb=64)
    res = bench.call("top")
    assert res.error is not None and res.error.code == "E_OUT_OF_MEMORY", res
    mid = res.children[0]
    assert [c.tool for c in mid.children] == ["hog", "leaf"]
    assert all(c.error is not None and c.error.code == "E_OUT_OF_MEMORY" for c in mid.children)
    assert bench.call("leaf", {"x": 2}).value["x"] == 2
