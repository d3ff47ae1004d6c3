"""open(inspect=): a debugger attaches to a JS/TS tool's sandbox over the DevTools protocol
(a real Deno sandbox, a real CDP client on the relay's WebSocket): breakpoints at TS lines
through the script's source map, locals read and expressions evaluated in the paused frame,
`debugger;` statements, a pause that outlasts the call's timeout, inspect="wait", Ctrl-C while
paused, the ports closed with the bench, and the sandbox's own permissions unchanged."""

from __future__ import annotations

import _thread
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _deno import ADD, deno_home, deno_pids  # noqa: F401  (fixture)
from conftest import GemBuilder

import workbench
from workbench.debug import Connection, SourceMap, WorkerSession
from workbench.debug.cdp import CDPError

SUM_LINE = 8  # 0-based: `const sum: number = doubled + input.b;`


def _gem(gem: GemBuilder, source: str = ADD, name: str = "add") -> GemBuilder:
    return gem.tool(name, source, ext="ts", side_effect="read")


def _attach(bench: workbench.Bench) -> tuple[Connection, WorkerSession]:
    conn = Connection(bench.inspector.ws_url, timeout=20)
    worker = conn.worker(timeout=20)
    worker.send("Debugger.enable", timeout=20)
    return conn, worker


def _script(worker: WorkerSession, name: str) -> dict[str, Any]:
    """The scriptParsed of the tool file `name` (the Worker imported it already)."""
    for ev in worker.events():
        params = ev.get("params") or {}
        if ev.get("method") == "Debugger.scriptParsed" and str(params.get("url")).endswith(name):
            return params
    raise AssertionError(f"no script {name} among the Worker's")


def _in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}
    t = threading.Thread(target=lambda: out.setdefault("result", fn()), daemon=True)
    t.start()
    return t, out


def _locals(worker: WorkerSession, frame: dict[str, Any]) -> dict[str, Any]:
    scope = next(s for s in frame["scopeChain"] if s["type"] == "local")
    props = worker.send(
        "Runtime.getProperties", {"objectId": scope["object"]["objectId"], "ownProperties": True}
    )
    return {p["name"]: p.get("value", {}).get("value") for p in props["result"]}


def test_a_breakpoint_at_a_ts_line_is_hit_read_evaluated_and_the_call_returns(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    bench = opened(_gem(gem), inspect=True)
    assert bench.call("add", {"a": 1, "b": 2}).value == {"sum": 4}  # the Worker imports the tool
    conn, worker = _attach(bench)
    try:
        script = _script(worker, "tools/add.ts")
        smap = SourceMap.from_url(script["sourceMapURL"])
        line, column = smap.generated("tools/add.ts", SUM_LINE)
        assert line != SUM_LINE  # V8 counts the transpiled JS's lines: the map is needed
        worker.send(
            "Debugger.setBreakpointByUrl", {"url": script["url"], "lineNumber": line, "columnNumber": column}
        )
        t, out = _in_thread(lambda: bench.call("add", {"a": 3, "b": 4}))
        paused = worker.event("Debugger.paused", timeout=20)
        frame = paused["callFrames"][0]
        at = smap.original(frame["location"]["lineNumber"], frame["location"]["columnNumber"])
        assert at is not None and at.source.endswith("tools/add.ts") and at.line == SUM_LINE
        assert bench.inspector.paused
        local = _locals(worker, frame)
        assert local["doubled"] == 6 and local["input"] is None  # (an object: no value, its id)
        got = worker.send(
            "Debugger.evaluateOnCallFrame",
            {"callFrameId": frame["callFrameId"], "expression": "doubled + input.b * 10"},
        )
        assert got["result"]["value"] == 46
        worker.send("Debugger.resume")
        t.join(20)
        res = out["result"]
        assert res.error is None and res.value == {"sum": 10}
        assert not bench.inspector.paused
    finally:
        conn.close()


def test_a_debugger_statement_stops_at_its_ts_line(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    source = ADD.replace("const sum: number", "debugger;\n      const sum: number")
    bench = opened(_gem(gem, source), inspect=True)
    conn, worker = _attach(bench)  # before the first call: the statement stops it
    try:
        t, out = _in_thread(lambda: bench.call("add", {"a": 1, "b": 1}))
        paused = worker.event("Debugger.paused", timeout=30)
        frame = paused["callFrames"][0]
        smap = SourceMap.from_url(_script(worker, "tools/add.ts")["sourceMapURL"])
        at = smap.original(frame["location"]["lineNumber"], frame["location"]["columnNumber"])
        assert at is not None and at.line == SUM_LINE  # the `debugger;` line, as the file has it
        assert paused["reason"] == "other"
        worker.send("Debugger.resume")
        t.join(20)
        assert out["result"].value == {"sum": 3}
    finally:
        conn.close()


def test_a_paused_call_outlives_its_timeout_and_the_timeout_counts_again_after(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    source = ADD.replace(
        "const sum: number",
        "if (input.a < 0) for (;;) {}\n      if (input.a > 0) debugger;\n      const sum: number",
    )
    bench = opened(_gem(gem, source), inspect=True, timeout=1.0)
    conn, worker = _attach(bench)
    try:
        # imported first (on a loaded machine that may take longer than the 1 s timeout alone)
        assert bench.call("add", {"a": 0, "b": 0}).value == {"sum": 0}
        t, out = _in_thread(lambda: bench.call("add", {"a": 2, "b": 2}))
        worker.event("Debugger.paused", timeout=30)
        time.sleep(2.0)  # twice the call's timeout
        assert t.is_alive()
        worker.send("Debugger.resume")
        t.join(20)
        res = out["result"]
        assert res.error is None and res.value == {"sum": 6}
        # the timeout still stops a call that runs over it without a pause
        worker.send("Debugger.setSkipAllPauses", {"skip": True})
        started = time.monotonic()
        looped = bench.call("add", {"a": -1, "b": 0})
        assert looped.error is not None and looped.error.code == "E_TIMEOUT"
        assert time.monotonic() - started < 10
    finally:
        conn.close()


def test_wait_holds_the_call_until_a_debugger_attaches_and_breaks_before_the_tool_runs(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    bench = opened(_gem(gem), inspect="wait", timeout=2.0)
    t, out = _in_thread(lambda: bench.call("add", {"a": 5, "b": 1}))
    time.sleep(3.0)  # longer than the call's timeout: held, not timed out
    assert t.is_alive() and "result" not in out
    conn, worker = _attach(bench)
    try:
        # as VS Code does: stop before each script with a source map runs, bind, go on
        worker.send(
            "Debugger.setInstrumentationBreakpoint", {"instrumentation": "beforeScriptWithSourceMapExecution"}
        )
        worker.send("Runtime.runIfWaitingForDebugger")  # the relay lets the call go
        smap, url = None, ""
        while smap is None:
            worker.event("Debugger.paused", timeout=30)
            for ev in worker.events():
                params = ev.get("params") or {}
                if str(params.get("url")).endswith("tools/add.ts"):
                    smap, url = SourceMap.from_url(params["sourceMapURL"]), params["url"]
            if smap is None:
                worker.send("Debugger.resume")
        line, column = smap.generated("tools/add.ts", SUM_LINE)
        worker.send("Debugger.setBreakpointByUrl", {"url": url, "lineNumber": line, "columnNumber": column})
        worker.send("Debugger.resume")
        frame = worker.event("Debugger.paused", timeout=30)["callFrames"][0]
        assert _locals(worker, frame)["doubled"] == 10
        worker.send("Debugger.removeBreakpoint", {"breakpointId": f"1:{line}:{column}:{url}"})
        worker.send("Debugger.resume")
        t.join(20)
        assert out["result"].value == {"sum": 11}
        # attached: the next call is not held
        assert bench.call("add", {"a": 1, "b": 1}).value == {"sum": 3}
    finally:
        conn.close()


def test_a_debugger_that_leaves_the_worker_paused_lets_the_call_go_on(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    source = ADD.replace("const sum: number", "debugger;\n      const sum: number")
    bench = opened(_gem(gem, source), inspect=True, timeout=2.0)
    conn, worker = _attach(bench)
    t, out = _in_thread(lambda: bench.call("add", {"a": 1, "b": 1}))
    worker.event("Debugger.paused", timeout=30)
    conn._ws.close()  # gone without a word (Deno would keep the Worker paused): the relay resumes it
    t.join(20)
    assert out["result"].error is None and out["result"].value == {"sum": 3}
    assert bench.call("add", {"a": 2, "b": 2}).value == {"sum": 6}  # no breakpoint, no pause left


def test_ctrl_c_while_paused_ends_the_call_and_the_next_call_works(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    source = ADD.replace("const sum: number", "if (input.a === 7) debugger;\n      const sum: number")
    bench = opened(_gem(gem, source), inspect=True, timeout=1.0)
    conn, worker = _attach(bench)
    first = bench.inspector.relay.port
    assert bench.call("add", {"a": 0, "b": 0}).value == {"sum": 0}  # imported within its 1 s

    def interrupt() -> None:
        worker.event("Debugger.paused", timeout=30)
        time.sleep(1.5)
        _thread.interrupt_main()

    t = threading.Thread(target=interrupt, daemon=True)
    t.start()
    with pytest.raises(KeyboardInterrupt):
        bench.call("add", {"a": 7, "b": 0})
    t.join(5)
    res = bench.call("add", {"a": 1, "b": 1})  # a new sandbox, the relay's port kept
    assert res.error is None and res.value == {"sum": 3}
    assert bench.inspector.port == first
    with pytest.raises(CDPError):  # the debugger's connection went with the old sandbox
        worker.send("Runtime.evaluate", {"expression": "1"}, timeout=5)
    conn2, worker2 = _attach(bench)
    try:
        got = worker2.send("Runtime.evaluate", {"expression": "6 * 7"})
        assert got["result"]["value"] == 42
    finally:
        conn2.close()
        conn.close()


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def test_the_ports_listen_on_loopback_and_close_with_the_bench(gem: GemBuilder, tmp_path: Path) -> None:
    bench = workbench.open(_gem(gem).write(), inspect=True, state_dir=tmp_path / "state")
    try:
        assert bench.call("add", {"a": 1, "b": 1}).value == {"sum": 3}
        inspector = bench.inspector
        relay, deno = inspector.port, inspector.deno_port
        assert not _refused(relay) and not _refused(deno)
        assert inspector.relay.address == ("127.0.0.1", relay)
        pid = deno_pids(gem.root)[0]
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert f"--inspect=127.0.0.1:{deno}".encode() in cmdline
    finally:
        bench.close()
    assert _refused(relay) and _refused(deno)


def test_without_inspect_the_sandbox_has_no_inspector(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    bench = opened(_gem(gem))
    assert bench.call("add", {"a": 1, "b": 1}).value == {"sum": 3}
    assert bench.inspector is None
    pid = deno_pids(gem.root)[0]
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert not any(a.startswith(b"--inspect") for a in cmdline), cmdline


PROBE = """\
    export default async function probe(input: { port: number; path: string }): Promise<string[]> {
      const out: string[] = [];
      try {
        const r = await fetch(`http://127.0.0.1:${input.port}/json/list`);
        out.push(`fetch read ${(await r.text()).length}`);
      } catch (e) {
        out.push(`fetch: ${(e as Error).name}`);
      }
      try {
        const ws = new WebSocket(`ws://127.0.0.1:${input.port}${input.path}`);
        await new Promise((ok, no) => { ws.onopen = ok; ws.onerror = no; });
        out.push("websocket open");
      } catch (e) {
        out.push(`websocket: ${(e as Error).name}`);
      }
      try {
        await Deno.connect({ hostname: "127.0.0.1", port: input.port });
        out.push("tcp open");
      } catch (e) {
        out.push(`tcp: ${(e as Error).name}`);
      }
      return out;
    }
    """


def test_a_tool_cannot_reach_the_inspector_from_inside_the_sandbox(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    bench = opened(gem.tool("probe", PROBE, ext="ts", side_effect="read"), inspect=True)
    inspector = bench.inspector
    bench.call("probe", {"port": 1, "path": "/"})  # the sandbox up: Deno's port known
    for port, path in ((inspector.port, "/" + inspector.relay.token), (inspector.deno_port, "/")):
        res = bench.call("probe", {"port": port, "path": path})
        assert res.error is None, res.error
        assert res.value == ["fetch: NotCapable", "websocket: NotCapable", "tcp: NotCapable"], res.value


HOST_PROBE = """(async () => {
  const out = [];
  const tries = [
    ["gem", () => Deno.readTextFile(%(manifest)s)],
    ["outside", () => Deno.readTextFile(%(outside)s)],
    ["net", () => fetch("http://127.0.0.1:%(port)d/json/list")],
    ["tcp", () => Deno.connect({ hostname: "127.0.0.1", port: %(port)d })],
    ["env", () => Deno.env.get("PATH")],
    ["run", () => new Deno.Command("true").output()],
  ];
  for (const [what, f] of tries) {
    try { await f(); out.push(what + " ok"); } catch (e) { out.push(what + " " + e.name + (e.name === "TypeError" ? ": " + e.message : "")); }
  }
  return out;
})()"""


def test_a_debugger_in_the_hosts_isolate_has_the_hosts_permissions_only(
    gem: GemBuilder, opened: Callable[..., workbench.Bench], tmp_path: Path
) -> None:
    """docs/security.md: a client on the relay reaches the host's main isolate too (not only
    the Worker); what it runs there is held to the host's permissions, which add nothing to
    the network, the environment, subprocesses or files outside the gem."""
    outside = tmp_path / "outside.txt"
    outside.write_text("not the gem's")
    bench = opened(_gem(gem), inspect=True)
    assert bench.call("add", {"a": 1, "b": 1}).value == {"sum": 3}
    expr = HOST_PROBE % {
        "manifest": json.dumps(str(gem.root / "manifest.json")),
        "outside": json.dumps(str(outside)),
        "port": bench.inspector.port,
    }
    with Connection(bench.inspector.ws_url, timeout=20) as conn:
        got = conn.send("Runtime.evaluate", {"expression": expr, "awaitPromise": True, "returnByValue": True})
    assert got["result"]["value"] == [
        "gem ok",
        "outside NotCapable",
        "net NotCapable",
        "tcp NotCapable",
        "env NotCapable",
        "run NotCapable",
    ]
    assert bench.call("add", {"a": 2, "b": 2}).value == {"sum": 6}  # the sandbox carries on


def test_the_command_line_prints_the_addresses_and_waits_for_a_debugger(
    gem: GemBuilder, tmp_path: Path
) -> None:
    """`gem-workbench call … --inspect=wait`: the addresses and launch.json on stderr before
    the call, the call held until a debugger attaches at the printed address, its result on
    stdout."""
    root = _gem(gem).write()
    cmd = [sys.executable, "-m", "workbench", "call", str(root), "add", "--input", '{"a": 2, "b": 5}']
    cmd += ["--state-dir", str(tmp_path / "state"), "--inspect=wait"]
    env = {**os.environ, "GEM_WORKBENCH_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None and proc.stdout is not None
        err = ""
        while "]\n}\n" not in err:  # the launch.json snippet's end
            line = proc.stderr.readline()
            assert line, err
            err += line
        assert "devtools://devtools/bundled/js_app.html?" in err and "chrome://inspect" in err
        launch = json.loads(err[err.index('{\n  "version"') :])
        (config,) = launch["configurations"]
        assert config["type"] == "node" and config["request"] == "attach" and config["address"] == "127.0.0.1"
        time.sleep(2.0)
        assert proc.poll() is None  # held: no debugger yet
        with Connection(config["websocketAddress"], timeout=20) as conn:
            worker = conn.worker(timeout=20)
            worker.send("Runtime.runIfWaitingForDebugger")
            out, rest = proc.communicate(timeout=60)
        assert proc.returncode == 0, rest
        assert json.loads(out) == {"sum": 9}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_gem_open_inspect_prints_the_addresses_in_the_cell(
    gem: GemBuilder, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from _ipython import workbench_shell

    shell = workbench_shell(tmp_path / "ipython")
    monkeypatch.chdir(tmp_path)
    root = _gem(gem).write()
    bench = None
    try:
        assert shell.run_cell(f"%gem open {root} --inspect --state-dir {tmp_path / 'state'}").success
        bench = shell.user_ns["bench"]
        _, err = capsys.readouterr()
        assert bench.inspector.devtools_url in err and '"request": "attach"' in err
        assert bench.inspector.mode is True
        assert shell.run_line_magic("tool", 'add {"a": 1, "b": 1}').value == {"sum": 3}
        wrong = shell.run_cell(f"%gem open {root} --inspect=later --state-dir {tmp_path / 'state'}")
        assert not wrong.success
        assert "--inspect=wait" in capsys.readouterr().err
    finally:
        if bench is not None:
            bench.close()


def test_wait_does_not_hold_a_python_tools_call(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    _gem(gem).tool("echo", "def handle(input, ctx):\n    return input\n", side_effect="read")
    bench = opened(gem, inspect="wait", timeout=5.0)
    started = time.monotonic()
    assert bench.call("echo", {"x": 1}).value == {"x": 1}  # it runs in the kernel: nothing to attach
    assert time.monotonic() - started < 3 and not bench.inspector.attached
