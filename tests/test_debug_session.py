"""`bench.debug(...)` (issue 46, stage 2): a call paused at ctx breakpoints that the next cells
drive — its arguments shown, answered or failed with a value or error of the debugger's that
the tool then handles, run on, aborted — for Notochord TS and Python tools, an Ekanos
integration and an agent tool, in the real Deno sandbox; past its timeout; with the bench's
other calls refused while it is paused; and under nbclient on the Gem Workbench kernel."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import GemBuilder

import workbench
from workbench import UsageError, WorkbenchError
from workbench.debug import DebugSession, parse_break_at

PY = """\
def handle(input, ctx):
    ctx.files.write("notes/a.md", "first")
    try:
        text = ctx.files.read("notes/a.md")
    except Exception as e:
        text = "handled " + e.code + ": " + e.message
    ctx.storage.kv.set("seen", text)
    return {"text": text}
"""
TS = """\
export default async function (input: { path: string }, ctx: any) {
  await ctx.files.write(input.path, "first");
  let text: string;
  try {
    text = await ctx.files.read(input.path);
  } catch (e: any) {
    text = "handled " + e.code + ": " + e.message;
  }
  await ctx.storage.kv.set("seen", text);
  return { text };
}
"""
SRC = {"py": PY, "ts": TS}
IN = {"path": "notes/a.md"}


@pytest.fixture(params=["py", pytest.param("ts", marks=pytest.mark.deno)])
def lang(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def bench(lang: str, gem: GemBuilder, opened: Callable) -> workbench.Bench:
    gem.tool("t", SRC[lang], ext=lang)
    return opened(gem, timeout=10)


def test_a_call_pauses_at_a_ctx_breakpoint_shows_its_args_and_returns_the_answer(bench: Any) -> None:
    s = bench.debug("t", IN, break_at=["ctx.files.read"])
    assert isinstance(s, DebugSession) and s.state == "paused" and s.result is None
    assert (s.where.method, s.where.name, s.where.seq) == ("files.read", "ctx.files.read", 2)
    assert s.args == {"path": "notes/a.md"}
    assert [r["method"] for r in s.where.trace] == ["files.write"]  # the trace so far
    if bench.manifest.tools["t"].language == "python":  # the tool's line that made the call
        file, line, _, code = s.where.source[-1]
        assert (file, line) == ("tools/t.py", 4) and "ctx.files.read" in dict(code)[4]
        assert "tools/t.py:4" in s._repr_html_()
    shown = s._repr_html_()
    assert "ctx.files.read" in shown and "notes/a.md" in shown and "paused" in shown
    s.answer("from the debugger")
    assert s.state == "ended" and s.result.ok and s.result.value == {"text": "from the debugger"}
    read = [r for r in s.result.trace_rows if r["method"] == "files.read"]
    assert read[0]["by"] == "debugger" and read[0]["result"] == "from the debugger"
    assert "ended" in s._repr_html_() and "answered" in s._repr_html_()
    assert bench.call("t", IN).value == {"text": "first"}  # the next call is a plain one


def test_fail_gives_the_tool_a_ctx_error_it_catches_and_handles(bench: Any) -> None:
    s = bench.debug("t", IN, break_at="files.read")  # the ctx layer's spelling too
    s.fail("E_NOT_FOUND", "the debugger says it is gone")
    res = s.result
    assert res.ok and res.value["text"].startswith("handled E_NOT_FOUND")
    assert "the debugger says it is gone" in res.value["text"]
    row = next(r for r in res.trace_rows if r["method"] == "files.read")
    assert (row["ok"], row["error"], row["by"]) == (False, "E_NOT_FOUND", "debugger")
    assert res.trace_rows[-1]["method"] == "storage.kv.set" and res.trace_rows[-1]["ok"]  # it ran on
    assert s.pauses[0].done == "failed E_NOT_FOUND"


def test_cont_runs_through_several_breakpoints_to_the_end(bench: Any) -> None:
    s = bench.debug("t", IN, break_at="ctx.*")
    seen = []
    while s.state == "paused":
        seen.append((s.where.seq, s.where.method))
        s.cont()
    assert seen == [(1, "files.write"), (2, "files.read"), (3, "storage.kv.set")]
    assert s.result.value == {"text": "first"} and "by" not in s.result.trace_rows[1]
    assert [p.done for p in s.pauses] == ["ran", "ran", "ran"]


def test_a_namespace_breakpoint_stops_at_each_of_its_methods(bench: Any) -> None:
    s = bench.debug("t", IN, break_at="ctx.files.*")
    assert s.where.method == "files.write"
    s.cont()
    assert s.where.method == "files.read"
    s.cont()
    assert s.state == "ended" and len(s.pauses) == 2  # storage.kv.set is not under files


def test_a_paused_python_call_outlives_its_timeout_and_completes(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("t", PY)
    gem.tool(
        "a",
        "import asyncio\nasync def handle(input, ctx):\n    await ctx.files.write('x.md', 'x')\n"
        "    text = await ctx.files.read('x.md')\n    await asyncio.sleep(0.2)\n    return {'text': text}\n",
    )
    bench = opened(gem, timeout=1)
    for tool in ("t", "a"):  # a sync tool and an async one (its await is after the pause)
        s = bench.debug(tool, IN, break_at="ctx.files.read")
        time.sleep(1.6)
        s.cont()
        assert s.result.ok, s.result.error
        assert s.result.value["text"] in ("first", "x") and s.paused_seconds >= 1.5
    late = bench.call("a", {})  # the timeout itself still holds without a pause
    assert late.ok


@pytest.mark.deno
def test_a_paused_ts_call_outlives_its_timeout_and_completes(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("t", TS, ext="ts")
    bench = opened(gem, timeout=1)
    s = bench.debug("t", IN, break_at="ctx.files.read")
    time.sleep(1.6)
    s.cont()
    assert s.result.ok, s.result.error


def test_the_timeout_still_holds_after_a_pause_with_the_time_paused_given_back(
    gem: GemBuilder, opened: Callable
) -> None:
    """Only time paused is given back: an async tool that sleeps on after its pause is stopped
    at its timeout counted without the pause — not at once, not never."""
    gem.tool(
        "t",
        "import asyncio\nasync def handle(input, ctx):\n    await ctx.files.list('')\n"
        "    await asyncio.sleep(30)\n    return 'late'\n",
    )
    bench = opened(gem, timeout=1)
    s = bench.debug("t", {}, break_at="ctx.files.list")
    time.sleep(1.5)  # past the timeout: the call is not over
    t0 = time.monotonic()
    s.cont()
    took = time.monotonic() - t0
    assert s.result.error is not None and s.result.error.code == "E_TIMEOUT"
    assert 0.3 < took < 10, took  # the second it had left, then stopped


def test_other_calls_are_refused_while_paused_and_close_aborts_the_call(bench: Any) -> None:
    s = bench.debug("t", IN, break_at="ctx.files.read")
    with pytest.raises(UsageError, match=r"bench.debug\('t'\) is paused") as refused:
        bench.call("t", IN)
    assert refused.value.details["session"] == "bench.debug('t')"
    with pytest.raises(UsageError, match="paused"):
        bench.debug("t", IN, break_at="ctx.*")
    t0 = time.monotonic()
    bench.close()
    assert time.monotonic() - t0 < 10 and bench.closed
    assert s.state == "ended" and s.result.error.code == "E_INTERRUPTED"


def test_abort_ends_the_call_as_an_interrupt_and_the_bench_calls_on(bench: Any) -> None:
    s = bench.debug("t", IN, break_at="ctx.storage.kv.set")
    assert s.where.trace[-1]["method"] == "files.read"
    s.abort()
    assert s.state == "ended" and s.result.error.code == "E_INTERRUPTED"
    assert s.pauses[-1].done == "aborted" and bench.debugging is None
    assert s.abort() is s  # ended: nothing to do
    assert bench.call("t", IN).value == {"text": "first"}  # the bench (and its sandbox) go on


def test_commands_need_a_paused_call_and_check_what_they_are_given(bench: Any) -> None:
    s = bench.debug("t", IN, break_at="ctx.files.read")
    with pytest.raises(UsageError, match="not JSON"):
        s.answer({1, 2})
    with pytest.raises(UsageError, match="error code"):
        s.fail("not a code")
    with pytest.raises(UsageError, match="message"):
        s.fail("E_NOT_FOUND", "x" * 20_000)
    s.fail(WorkbenchError("E_PERM_DENIED", "no, says the debugger"))
    assert "E_PERM_DENIED" in s.result.value["text"]
    for command in (s.cont, lambda: s.answer(1), lambda: s.where):
        with pytest.raises(UsageError, match="ended"):
            command()


def test_a_call_that_hits_no_breakpoint_is_ended_at_once(bench: Any) -> None:
    s = bench.debug("t", IN, break_at="ctx.files.delete")
    assert s.state == "ended" and s.pauses == [] and s.result.value == {"text": "first"}
    assert "no breakpoint was hit" in s._repr_html_()


def test_source_lines_need_a_js_tool_file_and_stepping_a_line_pause(
    gem: GemBuilder, opened: Callable
) -> None:
    gem.tool("t", PY)
    bench = opened(gem)
    with pytest.raises(UsageError, match="not a JS/TS tool file") as e:
        bench.debug("t", IN, break_at=["tools/t.ts:12"])
    assert e.value.code == "E_USAGE" and bench.debugging is None
    s = bench.debug("t", IN, break_at="ctx.files.read")
    for what in (s.step, s.next, lambda: s.locals, lambda: s.eval("1 + 1")):
        with pytest.raises(UsageError, match=r"paused at a source line|paused at one") as e:
            what()
        assert "before ctx.files.read" in str(e.value)
    s.cont()
    assert s.result.ok


@pytest.mark.parametrize(
    "break_at, words",
    [
        ("ctx.files.reed", "nearest: ctx.files.read"),
        (["ctx.fetch"], "no ctx method"),  # Ekanos' name, not Notochord's
        (["ctx.files.read", 5], r"break_at\[1\]"),
        ("ctx.nothing.*", "no ctx method"),
        ({"ctx.files.read": 1}, "give a name or a list"),
        ([f"ctx.files.read{i}" for i in range(300)], "more than 200"),
        ("x" * 400, "up to 300"),
    ],
)
def test_unknown_or_bad_breakpoints_are_usage_errors(
    break_at: Any, words: str, gem: GemBuilder, opened: Callable
) -> None:
    gem.tool("t", PY)
    bench = opened(gem)
    with pytest.raises(UsageError, match=words):
        bench.debug("t", IN, break_at=break_at)
    assert bench.debugging is None and bench.call("t", IN).ok
    with pytest.raises(UsageError, match="no option crash"):
        bench.debug("t", IN, crash=1)


def test_names_come_from_each_platforms_ctx_table() -> None:
    from workbench.platforms import agent, ekanos, notochord

    class M:
        tools = {"lookup": None}

    assert parse_break_at("ctx.fetch", ekanos.PROFILE, M()).methods == {"fetch"}  # type: ignore[arg-type]
    assert parse_break_at("storage.account.get", ekanos.PROFILE, M()).methods == {"storage.account.get"}  # type: ignore[arg-type]
    sent = parse_break_at(["ctx.tools.send_email", "ctx.tools.lookup"], agent.PROFILE, M())  # type: ignore[arg-type]
    assert sent.methods == {"tools.send_email", "tools.lookup"}
    assert parse_break_at("ctx.email.getMessage", notochord.PROFILE, M()).methods == {"email.getMessage"}  # type: ignore[arg-type]
    every = parse_break_at("ctx", notochord.PROFILE, M())  # type: ignore[arg-type]
    assert every.every and every.stops_at("data.insert")
    with pytest.raises(UsageError, match="nearest: ctx.tools.send_email"):
        parse_break_at("ctx.tools.send_mail", agent.PROFILE, M())  # type: ignore[arg-type]


EKANOS = """\
import { defineIntegration } from '@ekanos/sdk';
export default defineIntegration({ slug: 'demo', egress: ['api.demo.example'],
  tools: [{ name: 'weather', description: 'd', parameters: { type: 'object', properties: {} },
    outputExample: { ok: true },
    async run(ctx, args) {
      const key = await ctx.secrets.get('api_key');
      try {
        const r = await ctx.fetch('https://api.demo.example/v1/weather');
        return { ok: true, temperature: (await r.json()).temperature, key: typeof key };
      } catch (e) {
        ctx.logger.warn({ code: e.code }, 'weather unavailable');
        return { ok: false, handled: e.code, message: e.message };
      }
    } }] });
"""


@pytest.mark.deno
def test_an_ekanos_tool_pauses_at_ctx_fetch_and_handles_the_debuggers_error(
    tmp_path: Path, opened: Callable
) -> None:
    root = tmp_path / "integration"
    root.mkdir()
    (root / "integration.ts").write_text(EKANOS)
    bench = opened(
        root,
        secrets={"api_key": "sk_test_1"},
        fetch_handlers=[{"match": "https://api.demo.example/", "respond": {"json": {"temperature": 12}}}],
    )
    s = bench.debug("weather", {}, break_at=["ctx.secrets.get", "ctx.fetch"])
    assert s.where.name == "ctx.secrets.get" and s.args == {"name": "api_key"}
    s.cont()
    assert s.where.name == "ctx.fetch" and s.where.seq == 2
    assert s.args["url"] == "https://api.demo.example/v1/weather"
    s.fail("E_HTTP", "the debugger cut the line")
    res = s.result
    assert res.value == {"ok": False, "handled": "E_HTTP", "message": "the debugger cut the line"}
    assert [r["method"] for r in res.trace_rows] == ["secrets.get", "fetch", "logger.warn"]
    assert res.trace_rows[1]["by"] == "debugger"
    assert bench.call("weather").value["temperature"] == 12  # undisturbed without the debugger


AGENT = """\
export async function handle(input, ctx) {
  try {
    return { sent: await ctx.tools.send_email(input) };
  } catch (e) {
    return { failed: e.code };
  }
}
"""


@pytest.mark.deno
def test_an_agent_tool_pauses_at_a_dispatched_built_in(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("mail", AGENT, ext="js")
    bench = opened(gem.as_agent("agent-1", "Helper"))
    note = {"to": "ann@acme.example", "subject": "hi", "body_text": "hello"}
    s = bench.debug("mail", note, break_at="ctx.tools.send_email")
    assert s.where.method == "tools.send_email" and note in s.args.values()
    s.answer({"message_id": "<debugger@x>"})  # no recipient allowed: only the answer sends it
    assert s.result.value == {"sent": {"message_id": "<debugger@x>"}}
    s = bench.debug("mail", note, break_at="ctx.tools.send_email")
    s.fail("E_DISPATCH", "the platform's connection failed (the debugger)")
    assert s.result.value == {"failed": "E_DISPATCH"}


GC_SCRIPT = """\
import gc, sys, time, workbench
bench = workbench.open(sys.argv[1], state_dir=sys.argv[2], headless=True)
s = bench.debug("t", {"path": "notes/a.md"}, break_at="ctx.files.read")
assert s.state == "paused"
del s
gc.collect()
print("left paused", flush=True)
"""


@pytest.mark.deno
def test_a_session_left_paused_does_not_hang_the_process_at_exit(gem: GemBuilder, tmp_path: Path) -> None:
    gem.tool("t", TS, ext="ts")
    script = tmp_path / "left.py"
    script.write_text(GC_SCRIPT)
    t0 = time.monotonic()
    out = subprocess.run(
        [sys.executable, str(script), str(gem.write()), str(tmp_path / "state")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "left paused" in out.stdout and time.monotonic() - t0 < 30


NOTEBOOK = [
    "import workbench\nbench = workbench.open({gem!r}, state_dir={state!r}, headless=True)",
    "s = bench.debug('t', {{'path': 'notes/a.md'}}, break_at=['ctx.files.read'])\ns",
    "assert s.state == 'paused' and s.where.name == 'ctx.files.read', s\ns.where",
    "print('args:', s.args)\ntry:\n    bench.call('t', {{'path': 'notes/a.md'}})\n"
    "except workbench.UsageError as e:\n    print('refused:', e.code)",
    "s.fail('E_NOT_FOUND', 'the notebook says no')",
    "print('result:', s.result.value)\nassert s.result.value['text'].startswith('handled E_NOT_FOUND')\n"
    "bench.close()",
    # left paused, its bench open, when the notebook ends: the kernel still shuts down
    "left = workbench.open({gem!r}, state_dir={state!r}, headless=True)\n"
    "left.debug('t', {{'path': 'notes/a.md'}}, break_at='ctx.*').state",
]


@pytest.mark.deno
def test_a_notebook_drives_a_debug_session_under_nbclient(gem: GemBuilder, tmp_path: Path) -> None:
    """The whole loop in a notebook run by nbclient on the Gem Workbench kernel: the cell
    that calls bench.debug returns paused, the next ones read where, fail the ctx call with
    an error the TS tool handles, and read the result."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from workbench.testing import run_notebook

    gem.tool("t", TS, ext="ts")
    cells = [c.format(gem=str(gem.write()), state=str(tmp_path / "state")) for c in NOTEBOOK]
    path = tmp_path / "debug.ipynb"
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

    assert "paused" in text(1) and "ctx.files.read" in text(1)  # the session, shown as HTML
    assert "notes/a.md" in text(2)
    assert "args: {'path': 'notes/a.md'}" in text(3) and "refused: E_USAGE" in text(3)
    assert "ended" in text(4) and "failed E_NOT_FOUND" in text(4)
    assert "result: {'text': 'handled E_NOT_FOUND: the notebook says no'}" in text(5)
    assert "'paused'" in text(6) and took < 90, took


def test_a_dropped_session_is_collected_once_its_call_ended(gem: GemBuilder, opened: Callable) -> None:
    """An ended session holds nothing of the bench's: it can go."""
    import weakref

    gem.tool("t", PY)
    bench = opened(gem)
    s = bench.debug("t", IN, break_at="ctx.files.read")
    s.cont()
    ref = weakref.ref(s)
    del s
    gc.collect()
    assert ref() is None and bench.debugging is None


def test_an_interrupt_while_the_call_runs_ends_it_at_its_next_pause(
    gem: GemBuilder, opened: Callable
) -> None:
    """Ctrl-C in the cell that waits for the first pause: nobody will drive the call, so it
    is aborted there (E_INTERRUPTED) instead of holding the bench paused for good."""
    import _thread
    import threading

    gem.tool(
        "t", "import time\ndef handle(input, ctx):\n    time.sleep(0.8)\n    return ctx.files.list('')\n"
    )
    bench = opened(gem)
    threading.Timer(0.2, _thread.interrupt_main).start()
    with pytest.raises(KeyboardInterrupt):
        bench.debug("t", {}, break_at="ctx.files.list")
    s = bench.debugging
    assert s is not None and s.abandoned
    t0 = time.monotonic()
    while s.state != "ended" and time.monotonic() - t0 < 10:
        time.sleep(0.05)
    assert s.result is not None and s.result.error.code == "E_INTERRUPTED"
    assert bench.debugging is None and bench.call("t", {}).ok


NESTED = """\
def handle(input, ctx):
    try:
        got = ctx.tools.inner({})
    except Exception as e:
        got = {"caught": e.code}
    return {"inner": got}
"""
INNER = "def handle(input, ctx):\n    ctx.audit('inner', {'n': 1})\n    return {'ok': True}\n"


def test_a_nested_calls_ctx_call_pauses_with_its_own_call_id(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("outer", NESTED)
    gem.tool("inner", INNER)
    bench = opened(gem.as_agent("agent-1", "Helper"), timeout=1)
    s = bench.debug("outer", {}, break_at="ctx.audit")
    assert s.where.tool == "inner" and s.where.call_id.startswith(s.where.call_id.split(".")[0] + ".")
    assert s.args == {"event": "inner", "data": {"n": 1}}
    time.sleep(1.3)  # past the timeout: the outer and the nested call both get the time back
    s.fail("E_PERM_DENIED", "not from the debugger's bench")
    assert s.result.ok, s.result.error
    assert s.result.value == {"inner": {"caught": "E_PERM_DENIED"}}


def test_the_paused_view_escapes_and_bounds_what_the_tool_passed(gem: GemBuilder, opened: Callable) -> None:
    gem.tool(
        "t",
        "def handle(input, ctx):\n    ctx.files.write('a.md', input['text'])\n"
        "    return ctx.files.read('a.md')[:10]\n",
    )
    bench = opened(gem)
    hostile = "<script>alert(1)</script>" + "x" * 1_000_000
    s = bench.debug("t", {"text": hostile}, break_at="ctx.files.*")
    shown = s._repr_html_()
    assert "<script>" not in shown and "&lt;script&gt;" in shown and len(shown) < 20_000
    assert s.args["content"] == hostile  # the arguments themselves, whole
    s.cont()
    shown = s._repr_html_()  # the next pause: its trace so far holds the write
    assert "<script>" not in shown and len(shown) < 20_000 and s.where.trace[0]["method"] == "files.write"
    s.cont()
    assert s.result.value == "<script>al"


def test_a_python_tools_threads_pause_in_turn(gem: GemBuilder, opened: Callable) -> None:
    """Two threads of a tool reach a breakpoint at once: one pause at a time, each answered."""
    gem.tool(
        "t",
        "from concurrent.futures import ThreadPoolExecutor\n"
        "def handle(input, ctx):\n"
        "    with ThreadPoolExecutor(2) as pool:\n"
        "        got = list(pool.map(lambda k: ctx.storage.kv.get(k), ['a', 'b']))\n"
        "    return sorted(got)\n",
    )
    bench = opened(gem)
    s = bench.debug("t", {}, break_at="ctx.storage.kv.get")
    answered = []
    while s.state == "paused":
        key = s.args["key"]
        answered.append(key)
        s.answer("answer for " + key)
    assert sorted(answered) == ["a", "b"] and len(s.pauses) == 2
    assert s.result.value == ["answer for a", "answer for b"]


def test_peek_reads_the_state_as_the_paused_tool_sees_it(bench: Any) -> None:
    """A view run from the notebook would wait for the paused call's storage transaction;
    peek runs it in the call's thread: the call's own writes so far are there."""
    s = bench.debug("t", IN, break_at="ctx.files.read")
    paths = s.peek(lambda b: b.files()["path"].tolist())
    assert any(p.endswith("notes/a.md") for p in paths), paths
    assert s.peek(lambda b: b.kv()).empty  # kv.set comes after the read
    with pytest.raises(ZeroDivisionError):
        s.peek(lambda b: 1 / 0)
    assert s.state == "paused"
    s.cont()
    with pytest.raises(UsageError, match="peek"):
        s.peek(lambda b: b.kv())
    assert s.result.value == {"text": "first"}


def test_the_notebook_has_its_output_back_while_a_python_tool_is_paused(
    gem: GemBuilder, opened: Callable, capsys: pytest.CaptureFixture[str]
) -> None:
    gem.tool("t", "def handle(input, ctx):\n    print('from the tool')\n    return ctx.files.list('')\n")
    bench = opened(gem)
    s = bench.debug("t", {}, break_at="ctx.files.list")
    print("from the notebook")
    s.cont()
    assert "from the notebook" in capsys.readouterr().out
    assert "from the tool" in s.result.logs and "from the notebook" not in s.result.logs
