"""Nothing lost: a process killed mid-call leaves whole files and the state before the call."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import workbench

HANG = """
import time
def handle(input, ctx):
    notes = ctx.data.collection("notes")
    for i in range(100):
        notes.insert({"n": i})
    notes.count()                     # flushes the buffered inserts into the open transaction
    ctx.storage.kv.set("k", "during")
    ctx.files.write("workspace:a.txt", "new " * 1000)
    open(input["marker"], "w").close()
    time.sleep(60)
"""
ADD = "def handle(input, ctx):\n    ctx.storage.kv.set('k', 'before')\n    return ctx.data.collection('notes').insert({'n': -1})\n"


def test_kill_mid_call_keeps_state_consistent(gem, tmp_path):
    gem.tool("hang", HANG).tool("add", ADD).collections(notes=["n"])
    path = gem.write()
    ws, state, marker = tmp_path / "ws", tmp_path / "state", tmp_path / "marker"
    ws.mkdir()
    (ws / "a.txt").write_text("old")
    script = textwrap.dedent(f"""
        import workbench
        b = workbench.open({str(path)!r}, providers="real", workspace={str(ws)!r},
                           state_dir={str(state)!r}, headless=True)
        b.call("add").raise_for_error()
        b.call("hang", {{"marker": {str(marker)!r}}})
    """)
    proc = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None, "the child process died before the call hung"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with workbench.open(path, providers="real", workspace=ws, state_dir=state) as b:
        assert b.data("notes")["n"].tolist() == [-1]  # the killed call's inserts: gone
        assert b.kv().set_index("key")["value"].to_dict() == {"k": "before"}
        assert b.providers.data_db.conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert (ws / "a.txt").read_text() in ("old", "new " * 1000)  # whole, never torn
    assert sorted(p.name for p in ws.iterdir()) == ["a.txt"]  # no temp file left behind
