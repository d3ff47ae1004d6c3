"""Ctrl-C (a notebook's interrupt) during a call: the call stays in `bench.calls()` as an
E_INTERRUPTED row saying its writes were kept, the cell stops with one line, not a traceback.

The Ctrl-C is raised where Python would raise a pending SIGINT: by a profile hook (this thread
only) at the tool's chosen ctx call, so it lands mid-call after a write, whatever the timing.
tests/test_kernel.py sends a real SIGINT through a kernel."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from _ipython import workbench_shell
from conftest import GemBuilder

import workbench
from workbench._errors import CallInterrupted

TOOL = {
    "py": "def handle(input, ctx):\n"
    "    ctx.storage.kv.set('seen', input['n'])\n"
    "    ctx.storage.kv.get('stop-here')\n"
    "    return 'done'\n",
    "js": "export default async function (input, ctx) {\n"
    "  await ctx.storage.kv.set('seen', input.n);\n"
    "  await ctx.storage.kv.get('stop-here');\n"
    "  return 'done';\n}\n",
}


@contextmanager
def ctrl_c_at(method: str, key: str) -> Iterator[list[str]]:
    """Raise KeyboardInterrupt as the ctx layer starts `method` with `key` (once)."""
    seen: list[str] = []

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_name == "invoke" and not seen:
            args = frame.f_locals.get("args") or ()
            if frame.f_locals.get("method") == method and key in map(str, args):
                seen.append(method)
                raise KeyboardInterrupt

    sys.setprofile(hook)
    try:
        yield seen
    finally:
        sys.setprofile(None)


@pytest.fixture
def bench(gem: GemBuilder, opened: Callable[..., workbench.Bench], lang: str) -> workbench.Bench:
    gem.tool("t", TOOL[lang], ext=lang, schema={"type": "object", "properties": {"n": {"type": "string"}}})
    return opened(gem)


def test_an_interrupted_call_is_a_row_saying_its_writes_were_kept(bench: workbench.Bench) -> None:
    with ctrl_c_at("storage.kv.get", "stop-here") as seen, pytest.raises(KeyboardInterrupt) as info:
        bench.call("t", {"n": "one"})
    assert seen and isinstance(info.value, CallInterrupted)
    res = info.value.result
    assert res is bench.results[-1] and res.error is not None and res.error.code == "E_INTERRUPTED"
    row = bench.calls().iloc[-1]
    assert row.tool == "t" and row.error == "E_INTERRUPTED" and not row.ok
    assert "interrupted (Ctrl-C) after 1 ctx call," in row.message
    assert "what it wrote before was kept" in row.message and res.call_id in row.message
    assert bench.kv().set_index("key").value["seen"] == "one"  # the write was committed
    assert bench.call("t", {"n": "two"}).raise_for_error().value == "done"  # the next call works
    assert list(bench.calls().ok) == [False, True]


def test_an_interrupted_call_shows_as_one_line_in_ipython(
    bench: workbench.Bench, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ip = workbench_shell(tmp_path / "ipython")
    ip.user_ns["bench"] = bench
    capsys.readouterr()  # what loading the extension said
    for cell in ('bench.call("t", {"n": "a"})', '%tool t {"n": "b"}'):
        with ctrl_c_at("storage.kv.get", "stop-here") as seen:
            outcome = ip.run_cell(cell)
        assert seen and isinstance(outcome.error_in_exec, KeyboardInterrupt)
        out = capsys.readouterr()
        shown = (out.out + out.err).strip().splitlines()
        assert len(shown) == 1, shown  # no traceback through magics.py, _bench.py, _pipeline.py
        assert shown[0].startswith("KeyboardInterrupt: t: interrupted (Ctrl-C) after 1 ctx call,")
        assert "what it wrote before was kept" in shown[0]
    assert list(bench.calls().error) == ["E_INTERRUPTED", "E_INTERRUPTED"]
    assert bench.kv().set_index("key").value["seen"] == "b"


def test_a_call_interrupted_before_any_ctx_call_says_it_wrote_nothing(
    bench: workbench.Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    def stop(*_: Any, **__: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(bench.core, "check_input", stop)  # Ctrl-C as the input is checked
    with pytest.raises(CallInterrupted) as info:
        bench.call("t", {"n": "x"})
    assert info.value.result.error.message.startswith("interrupted (Ctrl-C) before its first ctx call")
    assert "it wrote nothing through ctx" in info.value.result.error.message
    assert info.value._render_traceback_() == [f"KeyboardInterrupt: t: {info.value.result.error.message}"]
    assert bench.calls().error.tolist() == ["E_INTERRUPTED"]


def test_ctrl_c_in_a_nested_call_marks_it_and_its_caller_interrupted(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    gem.tool("outer", "def handle(input, ctx):\n    return ctx.tools.inner({})\n")
    gem.tool("inner", "def handle(input, ctx):\n    ctx.audit('mid', {})\n    ctx.audit('stop-here', {})\n")
    bench = opened(gem.as_agent())
    with ctrl_c_at("audit", "stop-here") as seen, pytest.raises(CallInterrupted):
        bench.call("outer")
    assert seen
    rows = bench.calls().set_index("tool")
    assert rows.error.to_dict() == {"inner": "E_INTERRUPTED", "outer": "E_INTERRUPTED"}  # not E_INTERNAL
    assert rows.message["inner"].startswith("interrupted (Ctrl-C) after 1 ctx call,")
    assert rows.parent["inner"] == rows.call_id["outer"]


def test_an_interrupted_call_cannot_be_pinned(bench: workbench.Bench) -> None:
    with ctrl_c_at("storage.kv.get", "stop-here"), pytest.raises(CallInterrupted) as info:
        bench.call("t", {"n": "one"})
    with pytest.raises(workbench.UsageError, match=r"was interrupted \(Ctrl-C\): call it again and pin"):
        info.value.result.pin("first")
    assert not (bench.manifest.root / "tests" / "calls").exists()
