"""workbench.debug.cdp against a real Deno inspector (a process with a Worker, on a loopback
port): commands and replies, errors and timeouts as E_CDP, events, a Worker's session (its
commands, its events apart from the main target's), and a detach that leaves the Worker
running (Deno keeps a session's pause and breakpoints after its socket closes)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench._deno import deno_bin
from workbench.debug import CDPError, Connection, targets
from workbench.debug.inspector import free_port

MAIN = """\
const w = new Worker(new URL("./worker.ts", import.meta.url).href, { type: "module", name: "counter" });
let last = -1;
w.onmessage = (e) => { last = e.data; };
(globalThis as any).lastSeen = () => last;
let i = 0;
setInterval(() => w.postMessage(i++), 20);
"""
WORKER = """\
let count = 0;
function tick(n: number): number {
  count += 1;
  return n * 2;
}
self.onmessage = (e: MessageEvent) => (self as any).postMessage(tick(e.data as number));
"""


@pytest.fixture
def inspected(tmp_path: Path) -> Iterator[int]:
    """A Deno process with a Worker, its inspector on a free loopback port."""
    (tmp_path / "main.ts").write_text(MAIN)
    (tmp_path / "worker.ts").write_text(WORKER)
    port = free_port()
    proc = subprocess.Popen(
        [
            deno_bin(),
            "run",
            "--quiet",
            "--no-config",
            "--no-lock",
            f"--allow-read={tmp_path}",
            f"--inspect=127.0.0.1:{port}",
            str(tmp_path / "main.ts"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        end = time.monotonic() + 30
        while not _listed(port):  # (listed once its main module runs)
            assert time.monotonic() < end, "the inspector listed no target in 30 s"
            time.sleep(0.1)
        yield port
    finally:
        proc.kill()
        proc.wait(10)


def _listed(port: int) -> bool:
    try:
        return bool(targets("127.0.0.1", port, timeout=1))
    except CDPError:
        return False


def _connect(port: int) -> Connection:
    return Connection(targets("127.0.0.1", port)[0]["webSocketDebuggerUrl"], timeout=10)


def test_commands_replies_and_errors_on_the_main_target(inspected: int) -> None:
    listed = targets("127.0.0.1", inspected)
    assert listed[0]["type"] == "node" and listed[0]["webSocketDebuggerUrl"].startswith("ws://127.0.0.1:")
    with _connect(inspected) as conn:
        got = conn.send("Runtime.evaluate", {"expression": "6 * 7"})
        assert got["result"]["value"] == 42
        with pytest.raises(CDPError) as info:
            conn.send("No.suchMethod")
        assert info.value.code == "E_CDP" and info.value.details["method"] == "No.suchMethod"
        started = time.monotonic()
        with pytest.raises(CDPError, match="within the timeout"):
            conn.event("Never.happens", timeout=0.3)
        assert time.monotonic() - started < 2
        conn.send("Runtime.enable")
        created = conn.event("Runtime.executionContextCreated")
        assert created["context"]["auxData"]["isDefault"] is True
    assert conn.closed
    with pytest.raises(CDPError, match="closed"):
        conn.send("Runtime.evaluate", {"expression": "1"})


def test_a_workers_session_its_commands_events_and_a_breakpoint(inspected: int) -> None:
    with _connect(inspected) as conn:
        worker = conn.worker()
        assert worker.url.endswith("/worker.ts")
        assert conn.worker() is worker  # one session per Worker and connection
        assert (
            worker.send("Runtime.evaluate", {"expression": "typeof lastSeen"})["result"]["value"]
            == "undefined"
        )
        assert (
            conn.send("Runtime.evaluate", {"expression": "typeof lastSeen"})["result"]["value"] == "function"
        )
        worker.send("Debugger.enable")
        parsed = [e for e in worker.events() if e.get("method") == "Debugger.scriptParsed"]
        script = next(e["params"] for e in parsed if e["params"]["url"].endswith("/worker.ts"))
        assert script["sourceMapURL"].startswith("data:application/json")
        assert not any(e.get("method") == "Debugger.scriptParsed" for e in conn.events())  # not the main's
        worker.send("Debugger.setBreakpointByUrl", {"url": script["url"], "lineNumber": 2})
        paused = worker.event("Debugger.paused", timeout=10)
        frame = paused["callFrames"][0]
        assert frame["functionName"] == "tick"
        value = worker.send(
            "Debugger.evaluateOnCallFrame", {"callFrameId": frame["callFrameId"], "expression": "n * 100"}
        )
        assert isinstance(value["result"]["value"], int)
    # closed while paused: the session was detached (resumed, debugger off), the Worker runs on
    with _connect(inspected) as conn:
        first = conn.send("Runtime.evaluate", {"expression": "lastSeen()"})["result"]["value"]
        time.sleep(0.5)
        later = conn.send("Runtime.evaluate", {"expression": "lastSeen()"})["result"]["value"]
        assert later > first


def test_no_inspector_is_a_coded_error() -> None:
    port = free_port()
    with pytest.raises(CDPError) as info:
        targets("127.0.0.1", port, timeout=1)
    assert info.value.details["port"] == port
    with pytest.raises(CDPError, match="cannot connect"):
        Connection(f"ws://127.0.0.1:{port}/x", timeout=1)
