"""Call hooks (workbench/ctx/hooks.py): how pins, replays, crash reruns and the doctor take part
in a call, and how a tool built on the workbench does — observe, answer or fail a ctx call,
in a JS and a Python tool, with keyword arguments only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conftest import GemBuilder

from workbench import CallHooks, CallIdentity, WorkbenchError
from workbench.ctx.hooks import ctx_hooks

PY = (
    "def handle(input, ctx):\n"
    "    ctx.storage.kv.set('k', input.get('v', 'x'))\n"
    "    try:\n"
    "        got = ctx.storage.kv.get('k')\n"
    "    except Exception as e:\n"
    "        got = 'failed: ' + str(e)\n"
    "    return {'got': got}\n"
)
JS = (
    "export default async function (input, ctx) {\n"
    "  await ctx.storage.kv.set('k', input.v ?? 'x');\n"
    "  let got;\n"
    "  try { got = await ctx.storage.kv.get('k'); } catch (e) { got = 'failed: ' + e.message; }\n"
    "  return { got };\n"
    "}\n"
)


class Watch(CallHooks):
    """Every hook call, in order, with the keyword names it was given."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def on_call_start(self, **kw: Any) -> None:
        self.seen.append(("start", sorted(kw)))

    def on_ctx_call(self, *, method: str, fn: Callable[..., Any], answer: Any, **kw: Any) -> Any:
        self.seen.append(("ctx", method))
        return answer(fn)

    def on_call_end(self, *, result: Any, **kw: Any) -> None:
        self.seen.append(("end", result.ok))


class Answer(CallHooks):
    """Answers kv.get itself: the tool and the trace see its answer."""

    def on_ctx_call(self, *, method: str, fn: Callable[..., Any], answer: Any, **_: Any) -> Any:
        if method == "storage.kv.get":
            return answer(lambda *a, **k: "from the hook")
        return answer(fn)


class Fail(CallHooks):
    """Fails kv.get with an error of its own, which the trace shows (answered by a function
    that raises); raising from the hook itself aborts the ctx call untraced, as a crash does."""

    def on_ctx_call(self, *, method: str, fn: Callable[..., Any], answer: Any, **_: Any) -> Any:
        if method == "storage.kv.get":

            def refuse(*_: Any, **__: Any) -> Any:
                raise WorkbenchError("E_NOT_FOUND", "the hook refused it", method=method)

            return answer(refuse)
        return answer(fn)


@pytest.fixture(params=["py", "ts"])
def bench(request: pytest.FixtureRequest, gem: GemBuilder, opened: Callable) -> Any:
    gem.tool("t", PY if request.param == "py" else JS, ext=request.param)
    return opened(gem.write())


def test_a_hook_sees_the_call_start_each_ctx_call_and_the_end_with_keywords(bench: Any) -> None:
    watch = Watch()
    res = bench.call("t", {"v": "a"}, hooks=[watch])
    assert res.value == {"got": "a"}
    assert watch.seen[0] == ("start", ["result", "session"])
    methods = [m for what, m in watch.seen if what == "ctx"]
    assert methods[-2:] == ["storage.kv.set", "storage.kv.get"]
    assert watch.seen[-1] == ("end", True)
    bench.call("t", {"v": "b"})  # a call's hooks are that call's only
    assert len([s for s in watch.seen if s[0] == "end"]) == 1


def test_a_hook_answers_a_ctx_call_and_the_trace_shows_its_answer(bench: Any) -> None:
    res = bench.call("t", {"v": "a"}, hooks=[Answer()])
    assert res.value == {"got": "from the hook"}
    row = res.trace_rows[-1]
    assert row["method"] == "storage.kv.get" and row["ok"] and "from the hook" in str(row["result"])
    assert bench.call("t", {"v": "b"}).value == {"got": "b"}  # gone with the call


def test_a_hook_fails_a_ctx_call_and_the_tool_handles_it(bench: Any) -> None:
    res = bench.call("t", {"v": "a"}, hooks=[Fail()])
    assert res.ok and res.value["got"].startswith("failed: ") and "the hook refused it" in res.value["got"]
    row = res.trace_rows[-1]
    assert (row["method"], row["ok"], row["error"]) == ("storage.kv.get", False, "E_NOT_FOUND")


def test_hooks_run_in_order_the_first_sees_the_call_first(bench: Any) -> None:
    watch = Watch()
    res = bench.call("t", {"v": "a"}, hooks=[watch, Answer()])
    assert res.value == {"got": "from the hook"} and ("ctx", "storage.kv.get") in watch.seen


def test_a_hook_that_does_not_override_on_ctx_call_is_not_asked_on_ctx_calls() -> None:
    class Ends(CallHooks):
        def on_call_end(self, **_: Any) -> None:
            pass

    watch, ends = Watch(), Ends()
    assert ctx_hooks([ends, watch, CallHooks()]) == (watch,)


def test_an_identity_repeats_a_calls_id_key_and_draws(bench: Any) -> None:
    first = bench.call("t", {"v": "a"})
    again = bench.call(
        "t",
        {"v": "a"},
        identity=CallIdentity.of(call_id=first.call_id, key=first.idempotency_key, seed=7, ids=7),
    )
    assert (again.call_id, again.idempotency_key) == (first.call_id, first.idempotency_key)
    assert again.replay["seed"] == 7 and again.replay["ids"] == 7
    with pytest.raises(TypeError, match="no field colour"):
        CallIdentity.of(colour="red")


def test_a_standing_pins_hook_and_a_calls_hook_both_take_part(bench: Any) -> None:
    """The bench's own pins hook copies the state, a given hook answers: the pin keeps both."""
    res = bench.call("t", {"v": "a"}, hooks=[Answer()])
    path = res.pin("answered")
    assert path.exists() and "from the hook" in path.read_text()
