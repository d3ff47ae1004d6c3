"""`bench.debug(..., break_at=["tools/t.ts:8"])` (issue 46, stage 2's source lines): a call
paused by V8 at a TS line of a Notochord tool and of an Ekanos integration, in the real Deno
sandbox through its inspector; `where` at the TS line, `locals`, `eval`, `next()`, `step()`
into a helper, `cont()` to the result; a line breakpoint then a ctx breakpoint answered with an
error the tool handles; a pause past the call's timeout; and the loop under nbclient."""

from __future__ import annotations

import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import GemBuilder

from workbench import UsageError, WorkbenchError
from workbench.debug.lines import LinePause

pytestmark = pytest.mark.deno

# TS whose lines and JS's differ (the types are erased): the lines must go through the map
TS = """\
function half(n: number): number {
  const h: number = n / 2;
  return h;
}

export default async function (input: { a: number; path: string }, ctx: any) {
  const a: number = input.a;
  const doubled: number = a * 2;
  const obj = { list: [1, "two", null], nested: { deep: { deeper: { deepest: 1 } } } };
  const h: number = half(doubled);
  let text: string;
  try {
    text = await ctx.files.read(input.path);
  } catch (e: any) {
    text = "handled " + e.code + ": " + e.message;
  }
  return { doubled, h, text };
}
"""
IN = {"a": 21, "path": "notes/a.md"}
EKANOS = """\
import { defineIntegration } from '@ekanos/sdk';
export default defineIntegration({ slug: 'demo', egress: ['api.demo.example'],
  tools: [{ name: 'weather', description: 'd', parameters: { type: 'object', properties: {} },
    outputExample: { ok: true },
    async run(ctx, args) {
      const key = await ctx.secrets.get('api_key');
      const shown = key.slice(0, 3);
      const r = await ctx.fetch('https://api.demo.example/v1/weather');
      return { ok: true, temperature: (await r.json()).temperature, shown };
    } }] });
"""


def _ts(gem: GemBuilder, opened: Callable, **options: Any) -> Any:
    gem.tool("t", TS, ext="ts")
    return opened(gem, **options)


def test_a_ts_tool_stops_at_a_line_reads_locals_evaluates_steps_and_continues(
    gem: GemBuilder, opened: Callable
) -> None:
    bench = _ts(gem, opened, timeout=20)
    t0 = time.monotonic()
    s = bench.debug("t", IN, break_at=["tools/t.ts:8"])
    first = time.monotonic() - t0
    assert s.state == "paused", s
    where = s.where
    assert isinstance(where, LinePause)
    assert (where.file, where.line, where.why) == ("tools/t.ts", 8, "breakpoint")
    assert (8, "  const doubled: number = a * 2;") in where.code
    assert "→    8  " in s._repr_html_() and "tools/t.ts:8" in s._repr_html_()
    assert s.locals["a"] == 21 and s.locals.get("doubled") is None  # (not yet assigned)
    assert s.eval("a * 2") == 42 and s.eval("input.path") == "notes/a.md"
    assert s.eval("({x: [1, {y: 'z'}]})") == {"x": [1, {"y": "z"}]}
    s.next()
    assert s.where.line == 9 and s.locals["doubled"] == 42
    s.next()
    assert s.where.line == 10
    obj = s.locals["obj"]
    assert obj["list"] == [1, "two", None]
    assert obj["nested"] == {"deep": "Object"}  # past the depth bound (3 levels): described
    assert "<table>" in s.locals._repr_html_()
    s.step()  # into the helper
    assert (s.where.function, s.where.line) == ("half", 2)
    assert s.where.stack[1][:2] == ("tools/t.ts", 10)  # called from line 10
    assert s.locals["n"] == 42
    s.cont()
    assert s.state == "ended" and s.result is not None and s.result.ok, s
    assert s.result.value["doubled"] == 42 and s.result.value["h"] == 21
    assert s.result.value["text"].startswith("handled E_NOT_FOUND")
    assert [p.done for p in s.pauses] == ["stepped over", "stepped over", "stepped in", "ran"]
    assert "ended" in s._repr_html_()
    # detached once it ended: the bench's next call runs through its breakpoint's line
    assert bench.call("t", IN).value["doubled"] == 42
    # and the next session on the bench stops again (the bench keeps one link to its Worker)
    t0 = time.monotonic()
    again = bench.debug("t", {**IN, "a": 5}, break_at=["tools/t.ts:9"])
    assert again.where.line == 9 and again.locals["doubled"] == 10, again
    assert again.cont().result.value["h"] == 5
    print(f"second session's pause {time.monotonic() - t0:.2f} s")
    print(f"first pause (the inspector added, the sandbox restarted) {first:.2f} s")


def test_bad_requests_at_a_line_are_coded_errors(gem: GemBuilder, opened: Callable) -> None:
    bench = _ts(gem, opened)
    with pytest.raises(UsageError, match="not a JS/TS tool file") as e:
        bench.debug("t", IN, break_at=["tools/nope.ts:3"])
    assert e.value.details["field"] == "break_at"
    s = bench.debug("t", IN, break_at="tools/t.ts:8")
    try:
        with pytest.raises(WorkbenchError, match=r"threw: ReferenceError: nope is not defined") as e:
            s.eval("nope + 1")
        assert e.value.code == "E_EVAL"
        with pytest.raises(UsageError, match="paused at tools/t.ts:8"):
            s.answer(1)
        with pytest.raises(UsageError, match="paused at tools/t.ts:8"):
            s.fail("E_NOT_FOUND")
        with pytest.raises(UsageError, match="paused at tools/t.ts:8"):
            s.args  # noqa: B018
        with pytest.raises(UsageError, match="up to 10,000"):
            s.eval("1" * 10_001)
        # hostile values come back bounded: a long array, a cycle, a long string, many objects
        big = s.eval("Array.from({length: 100}, (_, i) => i)")
        assert big[:50] == list(range(50)) and len(big) == 51 and big[-1].endswith("more")
        assert s.eval("(() => { const o: any = {}; o.self = o; return o; })()".replace(": any", "")) == {
            "self": {"self": {"self": "Object"}}  # three levels, then described
        }
        assert len(s.eval("'x'.repeat(100000)")) == 1000
        wide = s.eval("Array.from({length: 300}, () => ({a: {b: 1}}))")
        # 100 objects read per request, then described: the array, 49 elements and their `a`s, one more
        assert wide[48] == {"a": {"b": 1}} and wide[49] == {"a": "Object"} and wide[50] == "251 more"
        assert s.where.line == 8  # still paused there
    finally:
        s.cont()
    assert s.result.ok
    with pytest.raises(
        UsageError, match=r"step\(\) at a source line needs a call paused at one, and it is ended"
    ):
        s.step()


def test_a_python_tools_lines_point_to_the_kernels_debugger(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("p", "def handle(input, ctx):\n    return 1\n")
    bench = opened(gem)
    with pytest.raises(WorkbenchError, match="kernel's debugger") as e:
        bench.debug("p", {}, break_at=["tools/p.py:2"])
    assert e.value.code == "E_UNSUPPORTED" and bench.debugging is None


def test_a_line_then_a_ctx_breakpoint_answered_with_an_error_the_tool_handles(
    gem: GemBuilder, opened: Callable
) -> None:
    bench = _ts(gem, opened)
    s = bench.debug("t", IN, break_at=["tools/t.ts:10", "ctx.files.read"])
    assert s.where.name == "tools/t.ts:10"
    with pytest.raises(UsageError, match="needs a call paused at a source line"):
        s.cont().locals  # noqa: B018  (now before the ctx call: no JS frame)
    assert s.where.name == "ctx.files.read" and s.args == {"path": "notes/a.md"}
    s.fail("E_PERM_DENIED", "the debugger says no")
    assert s.result.value["text"] == "handled E_PERM_DENIED: the debugger says no"
    assert [p.done for p in s.pauses] == ["ran", "failed E_PERM_DENIED"]


def test_a_pause_at_a_line_outlives_the_calls_timeout(gem: GemBuilder, opened: Callable) -> None:
    bench = _ts(gem, opened, timeout=2)
    s = bench.debug("t", IN, break_at=["tools/t.ts:8"])
    time.sleep(3.5)  # longer than the call may run
    assert s.locals["a"] == 21
    s.cont()
    assert s.result.ok, s.result
    assert s.paused_seconds >= 3.5


def test_an_ekanos_tool_is_stepped_the_same_way(tmp_path: Path, opened: Callable) -> None:
    root = tmp_path / "integration"
    root.mkdir()
    (root / "integration.ts").write_text(EKANOS)
    bench = opened(
        root,
        secrets={"api_key": "sk_test_1"},
        fetch_handlers=[{"match": "https://api.demo.example/", "respond": {"json": {"temperature": 12}}}],
    )
    s = bench.debug("weather", {}, break_at=["integration.ts:7"])
    assert (s.where.file, s.where.line, s.where.function) == ("integration.ts", 7, "run")
    assert s.locals["key"] == "sk_test_1"
    assert s.eval("key.length * 2") == 18
    s.next()
    assert s.where.line == 8 and s.locals["shown"] == "sk_"
    s.cont()
    assert s.result.value == {"ok": True, "temperature": 12, "shown": "sk_"}


NOTEBOOK = [
    "import workbench\nbench = workbench.open({gem!r}, state_dir={state!r}, headless=True)",
    "s = bench.debug('t', {{'a': 21, 'path': 'notes/a.md'}}, break_at=['tools/t.ts:8'])\ns",
    "s.where",
    "s.locals",
    "print('twice:', s.eval('a * 2'))\ns.next()",
    "print('line:', s.where.line, 'doubled:', s.locals['doubled'])\ns.cont()",
    "print('result:', s.result.value['doubled'], s.result.value['h'])\nbench.close()",
]


def test_a_notebook_stops_at_a_ts_line_under_nbclient(gem: GemBuilder, tmp_path: Path) -> None:
    """The loop in a notebook run by nbclient on the Gem Workbench kernel: the cell that calls
    bench.debug returns paused at the TS line, the next ones read where and locals, step,
    continue and read the result."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from workbench.testing import run_notebook

    gem.tool("t", TS, ext="ts")
    cells = [c.format(gem=str(gem.write()), state=str(tmp_path / "state")) for c in NOTEBOOK]
    path = tmp_path / "lines.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell(textwrap.dedent(c)) for c in cells]), path)
    t0 = time.monotonic()
    nb = run_notebook(path, timeout=120)
    took = time.monotonic() - t0

    def text(i: int) -> str:
        outs = nb.cells[i]["outputs"]
        data = [o.get("data", {}) for o in outs]
        return "".join(o.get("text", "") for o in outs) + "".join(
            str(d.get("text/html", d.get("text/plain", ""))) for d in data
        )

    assert "paused" in text(1) and "tools/t.ts:8" in text(1)
    assert "→    8  " in text(2) and "a * 2" in text(2)
    assert "<th>a</th><td><code>21</code>" in text(3)
    assert "twice: 42" in text(4) and "tools/t.ts:9" in text(4)
    assert "line: 9 doubled: 42" in text(5) and "ended" in text(5)
    assert "result: 42 21" in text(6) and took < 90, took


def test_abort_at_a_line_lets_the_call_go_to_its_next_ctx_breakpoint_and_close_detaches(
    gem: GemBuilder, opened: Callable
) -> None:
    bench = _ts(gem, opened)
    s = bench.debug("t", IN, break_at=["tools/t.ts:8", "ctx.files.read"])
    assert s.where.line == 8
    s.abort()  # let go of V8: the call ends at its ctx breakpoint, as Ctrl-C ends it
    assert s.state == "ended" and s.result.error.code == "E_INTERRUPTED", s.result
    assert [p.done for p in s.pauses] == ["aborted", "aborted"]
    assert bench.call("t", IN).value["doubled"] == 42  # the bench calls on, undebugged
    s = bench.debug("t", IN, break_at=["tools/t.ts:10"])
    assert s.where.line == 10
    t0 = time.monotonic()
    bench.close()  # while paused at a line: detached, the call ends, the bench closes
    assert time.monotonic() - t0 < 10 and s.state == "ended"
    assert s.result is not None and s.result.ok


def test_a_debugger_statement_between_sessions_does_not_hold_the_call(
    gem: GemBuilder, opened: Callable
) -> None:
    gem.tool(
        "d", "export default async function (input: any, ctx: any) {\n  debugger;\n  return 7;\n}\n", ext="ts"
    )
    gem.tool("t", TS, ext="ts")
    bench = opened(gem, timeout=5)
    s = bench.debug("t", IN, break_at=["tools/t.ts:8"])
    assert s.cont().result.ok
    t0 = time.monotonic()
    assert bench.call("d").value == 7  # the bench's link resumes it: nobody debugs it now
    assert time.monotonic() - t0 < 3


def test_source_lines_on_a_bench_another_debugger_holds_are_e_cdp(gem: GemBuilder, opened: Callable) -> None:
    from workbench.debug.dap import Link

    bench = _ts(gem, opened)
    ids = iter(range(1, 1_000_000))
    panel = Link(bench, thread_id=9, ids=lambda: next(ids), emit=lambda _e, _b: None)  # as the panel's
    panel.start()
    try:
        with pytest.raises(WorkbenchError, match="Debugger.enable") as e:
            bench.debug("t", IN, break_at=["tools/t.ts:8"])
        assert e.value.code == "E_CDP" and bench.debugging is None
        s = bench.debug("t", IN, break_at=["ctx.files.read"])  # ctx breakpoints still work
        assert s.where.name == "ctx.files.read"
        assert s.cont().result.ok
    finally:
        panel.close()
