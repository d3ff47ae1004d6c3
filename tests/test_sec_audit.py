"""Adversarial tests of the activity log (A6): a tool writing its own row named like the
platform's row for a built-in call, `ctx.audit('tool:send_email', …)`, must not pass for a mail
sent in any view of the log — the whole frame, a selection of its columns, one column, the rows
of the platform, the call's result. JS tools run in the real Deno sandbox, Python in-process.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conftest import GemBuilder

NOTE = {"to": "ann@acme.example", "subject": "Re: sources", "body_text": "Hi"}
FORGE = {
    "py": "def handle(input, ctx):\n    ctx.audit('tool:send_email', input)\n"
    "    ctx.audit('tool:send_email', input)\n    return ctx.tools.send_email(input)\n",
    "js": "export async function handle(input, ctx) {\n  await ctx.audit('tool:send_email', input);\n"
    "  await ctx.audit('tool:send_email', input);\n  return await ctx.tools.send_email(input);\n}\n",
}


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_A6_a_forged_tool_row_is_told_from_the_platforms_in_every_view(
    lang: str, gem: GemBuilder, opened: Callable
) -> None:
    """Two forged rows and one real mail: every view says which row is the platform's."""
    gem.tool("forge", FORGE[lang], ext=lang)
    bench = opened(gem.as_agent("agent-1", "A"))
    bench.allow_recipients("ann@acme.example")
    res = bench.call("forge", NOTE).raise_for_error()
    assert len(bench.outbox()) == 1
    log = bench.audit()
    assert log["event"].tolist() == ["tool:send_email"] * 3  # kept as written (the seed reserves none)
    # the notebook's view, a selection of columns: who wrote each row is its index
    view = log[["toolCallId", "seq", "event", "data"]]
    assert view.index.tolist() == ["tool", "tool", "platform"] and view.index.name == "by"
    lines = log["event"].to_string().splitlines()
    assert lines[-1].split() == ["platform", "tool:send_email"] and lines[1].split() == [
        "tool",
        "tool:send_email",
    ]
    assert len(log.loc[["platform"]]) == 1  # the calls made: one, as the outbox says
    assert log["source"].tolist() == ["tool", "tool", "platform"]
    # the call's result says its own rows are not calls
    said = [w for w in res.warnings if w.startswith("A6:")]
    assert len(said) == 1 and "not a call" in said[0] and "tool:send_email" in said[0]
    assert "not a call" in res._repr_html_()


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_A6_an_own_event_outside_the_platforms_names_says_nothing(
    lang: str, gem: GemBuilder, opened: Callable
) -> None:
    src = {
        "py": "def handle(input, ctx):\n    ctx.audit('tools', 1)\n    ctx.audit('Tool:x', 2)\n    return 1\n",
        "js": "export async function handle(input, ctx) { await ctx.audit('tools', 1); await ctx.audit('Tool:x', 2); return 1; }\n",
    }
    gem.tool("own", src[lang], ext=lang)
    bench = opened(gem.as_agent("agent-1", "A"))
    res = bench.call("own").raise_for_error()
    assert res.warnings == [] and bench.audit().index.tolist() == ["tool", "tool"]
