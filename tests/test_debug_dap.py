"""The kernel's debugger (workbench/debug/kernel.py, dap.py) driven as JupyterLab's panel
drives it: debug_request messages on the control channel of a real gem-workbench kernel,
debug_event messages on IOPub, a real Deno sandbox under the tool. A TS breakpoint stops a
cell's call; the frames are at TS lines of the tool's own file; locals, evaluate, step, continue,
and the cell's result. Python cells keep debugpy's debugging."""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _deno import ADD
from conftest import GemBuilder

SUM_LINE = 9  # 1-based, as the panel counts: `const sum: number = doubled + input.b;`
INIT = {
    "clientID": "test",
    "clientName": "test",
    "adapterID": "",
    "pathFormat": "path",
    "linesStartAt1": True,
    "columnsStartAt1": True,
    "supportsVariableType": True,
    "supportsVariablePaging": True,
    "supportsRunInTerminalRequest": True,
    "locale": "en",
}
TIMEOUT = 60


class Panel:
    """What JupyterLab's debugger panel does, over jupyter_client: requests and events."""

    def __init__(self, kc: Any) -> None:
        self.kc, self.seq, self.events = kc, 0, []
        self.km: Any = None

    def request(self, command: str, **arguments: Any) -> dict[str, Any]:
        self.seq += 1
        msg = self.kc.session.msg(
            "debug_request", {"type": "request", "seq": self.seq, "command": command, "arguments": arguments}
        )
        self.kc.control_channel.send(msg)
        end = time.monotonic() + TIMEOUT
        while True:
            reply = self.kc.control_channel.get_msg(timeout=max(0.1, end - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                return reply["content"]

    def event(self, name: str) -> dict[str, Any]:
        """The next debug_event `name` on IOPub (others kept in self.events)."""
        end = time.monotonic() + TIMEOUT
        while time.monotonic() < end:
            try:
                msg = self.kc.iopub_channel.get_msg(timeout=1)
            except queue.Empty:
                continue
            if msg["msg_type"] == "debug_event":
                self.events.append(msg["content"])
                if msg["content"].get("event") == name:
                    return msg["content"]
        raise AssertionError(
            f"no {name} event within {TIMEOUT} s; saw {[e.get('event') for e in self.events]}"
        )

    def reply(self, msg_id: str) -> dict[str, Any]:
        """The execute_reply of a cell sent earlier."""
        end = time.monotonic() + TIMEOUT
        while True:
            reply = self.kc.shell_channel.get_msg(timeout=max(0.1, end - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"]

    def run(self, code: str) -> dict[str, Any]:
        return self.reply(self.kc.execute(code))

    def value(self, expression: str) -> str:
        reply = self.kc.execute("", user_expressions={"v": expression}, reply=True, timeout=TIMEOUT)
        got = reply["content"]["user_expressions"]["v"]
        assert got["status"] == "ok", got
        return str(got["data"]["text/plain"])


@pytest.fixture
def panel(tmp_path: Path) -> Iterator[Panel]:
    """A gem-workbench kernel of its own (the debugger's state is per kernel), attached."""
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="gem-workbench")
    with open(tmp_path / "kernel.log", "w") as log:
        km.start_kernel(
            env={**os.environ, "GEM_WORKBENCH_HOME": str(tmp_path / "home")},
            extra_arguments=["--HistoryManager.hist_file=:memory:"],
            stderr=log,
        )
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        p = Panel(kc)
        p.km = km
        assert p.request("initialize", **INIT)["success"]
        assert p.request("attach")["success"]
        assert p.request("configurationDone")["success"]
        yield p
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _gem(gem: GemBuilder) -> Path:
    return gem.tool("add", ADD, ext="ts", side_effect="read").write()


def _open(p: Panel, root: Path, state: Path) -> None:
    reply = p.run(f"bench = workbench.open({str(root)!r}, state_dir={str(state)!r})")
    assert reply["status"] == "ok", reply


def test_a_ts_breakpoint_from_the_panel_stops_the_cell_steps_and_continues(
    panel: Panel, gem: GemBuilder, tmp_path: Path
) -> None:
    root = _gem(gem)
    tool = str((root / "tools" / "add.ts").resolve())
    _open(panel, root, tmp_path / "state")
    # the panel's Kernel Sources list the tool (after each cell it asks for modules)
    mods = panel.request("modules")["body"]["modules"]
    assert {"id": tool, "name": "test.gem: add", "path": tool} in mods
    # the module is not loaded yet: the breakpoint waits for it
    got = panel.request("setBreakpoints", source={"path": tool}, breakpoints=[{"line": SUM_LINE}])
    assert got["success"] and got["body"]["breakpoints"][0]["line"] == SUM_LINE
    info = panel.request("debugInfo")["body"]
    assert {"source": tool, "breakpoints": [{"line": SUM_LINE}]} in info["breakpoints"]

    cell = panel.kc.execute("r = bench.call('add', {'a': 3, 'b': 4})")
    stopped = panel.event("stopped")["body"]
    thread = stopped["threadId"]
    assert stopped["reason"] == "breakpoint" and not stopped["allThreadsStopped"]
    threads = panel.request("threads")["body"]["threads"]
    assert {"id": thread, "name": "JS: test.gem"} in threads
    assert thread in panel.request("debugInfo")["body"]["stoppedThreads"]

    frames = panel.request("stackTrace", threadId=thread)["body"]["stackFrames"]
    assert frames[0]["source"]["path"] == tool and frames[0]["line"] == SUM_LINE
    assert frames[0]["name"] == "add"
    scopes = panel.request("scopes", frameId=frames[0]["id"])["body"]["scopes"]
    assert scopes[0]["name"] == "Locals"
    local = {
        v["name"]: v
        for v in panel.request("variables", variablesReference=scopes[0]["variablesReference"])["body"][
            "variables"
        ]
    }
    assert local["doubled"]["value"] == "6"
    assert local["input"]["variablesReference"] > 0  # an object: expandable
    fields = panel.request("variables", variablesReference=local["input"]["variablesReference"])["body"][
        "variables"
    ]
    assert {f["name"]: f["value"] for f in fields} == {"a": "3", "b": "4"}
    got = panel.request(
        "evaluate", expression="doubled + input.b * 10", frameId=frames[0]["id"], context="repl"
    )
    assert got["success"] and got["body"]["result"] == "46"
    bad = panel.request("evaluate", expression="nope.x", frameId=frames[0]["id"], context="repl")
    assert not bad["success"] and bad["message"].startswith("E_DAP") and "nope" in bad["message"]

    assert panel.request("next", threadId=thread)["success"]
    stepped = panel.event("stopped")["body"]
    assert stepped["reason"] == "step" and stepped["threadId"] == thread
    frames = panel.request("stackTrace", threadId=thread)["body"]["stackFrames"]
    assert frames[0]["line"] == SUM_LINE + 1  # `return { sum };`
    scopes = panel.request("scopes", frameId=frames[0]["id"])["body"]["scopes"]
    local = {
        v["name"]: v["value"]
        for v in panel.request("variables", variablesReference=scopes[0]["variablesReference"])["body"][
            "variables"
        ]
    }
    assert local["sum"] == "10"

    # as JupyterLab's Continue asks: it forgot the stopped thread first, so it names thread 1
    assert panel.request("continue", threadId=1)["success"]
    assert panel.event("continued")["body"]["threadId"] == thread
    assert panel.reply(cell)["status"] == "ok"
    assert panel.value("r.value == {'sum': 10} and r.error is None") == "True"
    # a stale id after the pause is a coded error, not a traceback
    stale = panel.request("scopes", frameId=frames[0]["id"])
    assert not stale["success"] and stale["message"].startswith("E_DAP")
    # hostile requests: coded failures, the kernel lives
    many = panel.request(
        "setBreakpoints", source={"path": tool}, breakpoints=[{"line": n} for n in range(1, 300)]
    )
    assert not many["success"] and many["message"].startswith("E_DAP") and "200" in many["message"]
    odd = panel.request(
        "setBreakpoints", source={"path": tool}, breakpoints=["x", {"line": "9"}, {"line": True}]
    )
    assert odd["success"] and odd["body"]["breakpoints"] == []
    gone = panel.request("variables", variablesReference=(1 << 30) + 10**6)
    assert not gone["success"] and gone["message"].startswith("E_DAP")
    # the module loaded: the breakpoint is verified at its TS line; cleared, the next call runs
    got = panel.request("setBreakpoints", source={"path": tool}, breakpoints=[{"line": SUM_LINE}])
    assert got["body"]["breakpoints"][0] == {"verified": True, "line": SUM_LINE, "source": {"path": tool}}
    assert panel.request("setBreakpoints", source={"path": tool}, breakpoints=[])["success"]
    assert panel.run("r = bench.call('add', {'a': 1, 'b': 1})")["status"] == "ok"
    assert panel.value("r.value") == "{'sum': 3}"
    assert panel.request("debugInfo")["body"]["breakpoints"] == []
    # the debugger toggled off with a breakpoint set: detached, the next call runs through
    panel.request("setBreakpoints", source={"path": tool}, breakpoints=[{"line": SUM_LINE}])
    assert panel.request("disconnect", restart=False, terminateDebuggee=False)["success"]
    assert panel.run("r = bench.call('add', {'a': 2, 'b': 2})")["status"] == "ok"
    assert panel.value("r.value") == "{'sum': 6}"


def test_an_interrupt_while_paused_ends_the_call_and_the_next_call_stops_again(
    panel: Panel, gem: GemBuilder, tmp_path: Path
) -> None:
    root = _gem(gem)
    tool = str((root / "tools" / "add.ts").resolve())
    _open(panel, root, tmp_path / "state")
    panel.request("setBreakpoints", source={"path": tool}, breakpoints=[{"line": SUM_LINE}])
    cell = panel.kc.execute("r = bench.call('add', {'a': 1, 'b': 1})")
    thread = panel.event("stopped")["body"]["threadId"]
    panel.km.interrupt_kernel()
    reply = panel.reply(cell)  # the cell ends (the call interrupted), the kernel lives
    assert reply["status"] in ("ok", "error")
    assert panel.event("continued")["body"]["threadId"] == thread
    # the sandbox was started anew: the link attaches again and the breakpoint binds again
    cell = panel.kc.execute("r = bench.call('add', {'a': 2, 'b': 1})")
    assert panel.event("stopped")["body"]["threadId"] == thread
    frames = panel.request("stackTrace", threadId=thread)["body"]["stackFrames"]
    assert frames[0]["line"] == SUM_LINE
    assert panel.request("continue", threadId=thread)["success"]
    assert panel.reply(cell)["status"] == "ok"
    assert panel.value("r.value") == "{'sum': 5}"


STEPS = """\
function twice(n: number): number {
  const t: number = n * 2;
  return t;
}

export default async function steps(input: { n: number }, ctx: unknown) {
  const big: number[] = Array.from({ length: 5000 }, (_, i) => i);
  const label: string = "x".repeat(3000);
  const r: number = twice(input.n);
  return { r, n: big.length, label: label.length };
}
"""


def test_step_in_and_out_bounded_values_and_a_pause_longer_than_the_timeout(
    panel: Panel, gem: GemBuilder, tmp_path: Path
) -> None:
    root = gem.tool("steps", STEPS, ext="ts", side_effect="read").write()
    tool = str((root / "tools" / "steps.ts").resolve())
    state = tmp_path / "state"
    assert (
        panel.run(f"bench = workbench.open({str(root)!r}, state_dir={str(state)!r}, timeout=2)")["status"]
        == "ok"
    )
    panel.request("setBreakpoints", source={"path": tool}, breakpoints=[{"line": 9}])
    cell = panel.kc.execute("r = bench.call('steps', {'n': 21})")
    started = time.monotonic()
    thread = panel.event("stopped")["body"]["threadId"]
    frames = panel.request("stackTrace", threadId=thread)["body"]["stackFrames"]
    assert (frames[0]["name"], frames[0]["line"]) == ("steps", 9)
    scopes = panel.request("scopes", frameId=frames[0]["id"])["body"]["scopes"]
    local = {
        v["name"]: v
        for v in panel.request("variables", variablesReference=scopes[0]["variablesReference"])["body"][
            "variables"
        ]
    }
    assert len(local["label"]["value"]) <= 1000 and local["label"]["value"].endswith("…")
    items = panel.request("variables", variablesReference=local["big"]["variablesReference"])["body"][
        "variables"
    ]
    assert len(items) == 201 and items[0] == {
        "name": "0",
        "value": "0",
        "type": "int",
        "variablesReference": 0,
    }
    assert items[-1]["name"] == "…"  # 5000 elements: the first 200 listed
    huge = panel.request("evaluate", expression="1+" * 5001, frameId=frames[0]["id"], context="repl")
    assert not huge["success"] and "E_DAP" in huge["message"] and "10,000" in huge["message"]

    assert panel.request("stepIn", threadId=thread)["success"]
    assert panel.event("stopped")["body"]["reason"] == "step"
    frames = panel.request("stackTrace", threadId=thread)["body"]["stackFrames"]
    assert [(f["name"], f["line"]) for f in frames] == [("twice", 2), ("steps", 9)]
    assert panel.request("stepOut", threadId=thread)["success"]
    panel.event("stopped")
    frames = panel.request("stackTrace", threadId=thread)["body"]["stackFrames"]
    assert frames[0]["name"] == "steps" and frames[0]["line"] in (9, 10)
    time.sleep(max(0.0, 3.0 - (time.monotonic() - started)))  # paused longer than the 2 s timeout
    assert panel.request("continue", threadId=thread)["success"]
    assert panel.reply(cell)["status"] == "ok"
    assert panel.value("(r.error, r.value)") == "(None, {'r': 42, 'n': 5000, 'label': 3000})"


WRITE = """\
export default async function (input: { path: string }, ctx: any) {
  await ctx.files.write(input.path, "hello");
  return { wrote: input.path };
}
"""


def test_a_ctx_breakpoint_from_the_panel_pauses_before_the_ctx_call(
    panel: Panel, gem: GemBuilder, tmp_path: Path
) -> None:
    root = gem.tool("w", WRITE, ext="ts").write()
    tool = str((root / "tools" / "w.ts").resolve())
    state = tmp_path / "state"
    assert (
        panel.run(f"bench = workbench.open({str(root)!r}, state_dir={str(state)!r}, headless=True)")["status"]
        == "ok"
    )
    got = panel.request("setBreakpoints", source={"path": "ctx.files.write"}, breakpoints=[{"line": 1}])
    assert got["success"] and got["body"]["breakpoints"][0]["verified"]
    bad = panel.request("setBreakpoints", source={"path": "ctx.files.nope"}, breakpoints=[{"line": 1}])
    assert not bad["body"]["breakpoints"][0]["verified"]
    assert (
        bad["body"]["breakpoints"][0]["message"].startswith("E_USAGE")
        and "ctx.files.write" in bad["body"]["breakpoints"][0]["message"]
    )
    info = panel.request("debugInfo")["body"]
    assert {"source": "ctx.files.write", "breakpoints": [{"line": 1}]} in info["breakpoints"]

    cell = panel.kc.execute("r = bench.call('w', {'path': 'notes/a.md'})")
    stopped = panel.event("stopped")["body"]
    assert stopped["reason"] == "function breakpoint" and "ctx.files.write" in stopped["description"]
    thread = stopped["threadId"]
    trace = panel.request("stackTrace", threadId=thread)
    assert "stackFrames" in trace.get("body", {}), trace  # (once under two CPU hogs: said how)
    frames = trace["body"]["stackFrames"]
    assert [f["name"] for f in frames] == ["ctx.files.write (before the call)"]
    assert frames[0]["source"]["path"] == tool
    scopes = panel.request("scopes", frameId=frames[0]["id"])["body"]["scopes"]
    assert [s["name"] for s in scopes] == ["Arguments"]
    args = panel.request("variables", variablesReference=scopes[0]["variablesReference"])["body"]["variables"]
    shown = [a["value"] for a in args]
    assert "'notes/a.md'" in shown and "'hello'" in shown
    no = panel.request("evaluate", expression="1 + 1", frameId=frames[0]["id"], context="repl")
    assert not no["success"] and no["message"].startswith("E_DAP")
    assert panel.request("continue", threadId=1)["success"]  # (as JupyterLab asks)
    assert panel.event("continued")["body"]["threadId"] == thread
    assert panel.reply(cell)["status"] == "ok"
    assert panel.value("r.value") == "{'wrote': 'notes/a.md'}"
    # off: the next call runs through
    assert panel.request("setBreakpoints", source={"path": "ctx.files.write"}, breakpoints=[])["success"]
    assert panel.run("r = bench.call('w', {'path': 'notes/b.md'})")["status"] == "ok"
    assert panel.value("r.value") == "{'wrote': 'notes/b.md'}"


def test_python_cells_keep_debugpy(panel: Panel) -> None:
    code = "def twice(x):\n    y = x * 2\n    return y\n\nz = twice(21)\n"
    path = panel.request("dumpCell", code=code)["body"]["sourcePath"]
    got = panel.request(
        "setBreakpoints", source={"path": path}, breakpoints=[{"line": 3}], sourceModified=False
    )
    assert got["success"] and got["body"]["breakpoints"][0]["verified"]
    panel.request("configurationDone")
    cell = panel.kc.execute(code)
    stopped = panel.event("stopped")["body"]
    assert stopped["threadId"] < 1_000_000  # debugpy's thread, not a JS one
    frames = panel.request("stackTrace", threadId=stopped["threadId"])["body"]["stackFrames"]
    assert frames[0]["source"]["path"] == path and frames[0]["line"] == 3
    scopes = panel.request("scopes", frameId=frames[0]["id"])["body"]["scopes"]
    local = {
        v["name"]: v["value"]
        for v in panel.request("variables", variablesReference=scopes[0]["variablesReference"])["body"][
            "variables"
        ]
    }
    assert local["y"] == "42"
    panel.request("continue", threadId=stopped["threadId"])
    assert panel.reply(cell)["status"] == "ok"
    assert panel.value("z") == "42"


PY_TOOL = """\
def handle(input, ctx):
    doubled = input["a"] * 2
    return {"sum": doubled + input["b"]}
"""


def test_python_tools_keep_debugpy(panel: Panel, gem: GemBuilder, tmp_path: Path) -> None:
    root = gem.tool("pyadd", PY_TOOL, side_effect="read").write()
    tool = str((root / "tools" / "pyadd.py").resolve())
    state = tmp_path / "state"
    assert panel.run(f"bench = workbench.open({str(root)!r}, state_dir={str(state)!r})")["status"] == "ok"
    got = panel.request("setBreakpoints", source={"path": tool}, breakpoints=[{"line": 3}])
    assert got["success"] and got["body"]["breakpoints"][0]["verified"]  # debugpy's answer
    cell = panel.kc.execute("r = bench.call('pyadd', {'a': 3, 'b': 4})")
    stopped = panel.event("stopped")["body"]
    assert stopped["threadId"] < 1_000_000
    frames = panel.request("stackTrace", threadId=stopped["threadId"])["body"]["stackFrames"]
    assert frames[0]["source"]["path"] == tool and frames[0]["line"] == 3
    scopes = panel.request("scopes", frameId=frames[0]["id"])["body"]["scopes"]
    variables = panel.request("variables", variablesReference=scopes[0]["variablesReference"])["body"][
        "variables"
    ]
    assert {v["name"]: v["value"] for v in variables}["doubled"] == "6"
    panel.request("continue", threadId=stopped["threadId"])
    assert panel.reply(cell)["status"] == "ok"
    assert panel.value("r.value") == "{'sum': 10}"
