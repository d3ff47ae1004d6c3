"""Reliability (issue 9, item 8): N processes × M calls on ONE real state folder.

Every process opens the same gem on the same state folder and workspace (providers="real")
and calls a Python tool that does a kv read-modify-write increment and a collection insert.
Figures: calls that failed, increments lost (successful calls whose +1 is not in the final
counter), documents, and the throughput against one process doing every call.

`python tests/bench/bench_concurrency.py [PROCS CALLS]` prints the same line as run.py.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchlib import Figures, Sizes, write_gem

BUMP = """
def handle(input, ctx):
    kv = ctx.storage.kv
    n = int(kv.get("counter") or 0)
    kv.set("counter", str(n + 1))
    ctx.data.collection("events").insert({"proc": input["proc"], "i": input["i"]})
    return n + 1
"""

# One worker: open the bench, say "ready", wait for "go" on stdin, make the calls, print JSON.
WORKER = """
import json, sys, time
import workbench

gem, state, calls, proc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ok, errors, first = 0, {}, {}
try:
    bench = workbench.open(gem, providers="real", state_dir=state,
                           workspace=state + "/workspace", headless=True)
except Exception as exc:  # opening is part of sharing a state folder: count it, do not crash
    bench, code = None, "open: " + getattr(exc, "code", type(exc).__name__)
    errors[code], first[code] = calls, str(exc)[:200]
print("ready", flush=True)
sys.stdin.readline()
t0 = time.perf_counter()
for i in range(calls if bench else 0):
    res = bench.call("bump", {"proc": proc, "i": i})
    if res.ok:
        ok += 1
    else:
        errors[res.error.code] = errors.get(res.error.code, 0) + 1
        first.setdefault(res.error.code, res.error.message[:200])
seconds = time.perf_counter() - t0
if bench:
    bench.close()
print(json.dumps({"ok": ok, "errors": errors, "first": first, "seconds": seconds}), flush=True)
"""


def gem_folder(root: Path) -> Path:
    """The benchmark's gem: tool `bump`, collection `events`."""
    return write_gem(root, {"bump": BUMP}, indexes={"events": ["proc"]})


def run_workers(gem: Path, state: Path, procs: int, calls: int) -> dict[str, Any]:
    """Start `procs` workers on one state folder, release them together, and collect:
    ok / failed calls, error codes (with a first message each), wall seconds, final counter
    and document count read back from the state folder."""
    state.mkdir(parents=True, exist_ok=True)
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(gem), str(state), str(calls), str(k)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for k in range(procs)
    ]
    try:
        for w in workers:  # every bench open (and its tables made) before the clock starts
            assert w.stdout is not None and w.stdout.readline().strip() == "ready"
        t0 = time.perf_counter()
        for w in workers:
            assert w.stdin is not None
            w.stdin.write("go\n")
            w.stdin.flush()
        outs = [json.loads(w.communicate(timeout=600)[0]) for w in workers]
        seconds = time.perf_counter() - t0
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()
    import workbench

    with workbench.open(
        gem, providers="real", state_dir=state, workspace=state / "workspace", headless=True
    ) as bench:
        kv = bench.kv()
        counter = int(kv.loc[kv["key"] == "counter", "value"].iloc[0]) if len(kv) else 0
        docs = len(bench.data("events"))
    errors: Counter[str] = Counter()
    first: dict[str, str] = {}
    for o in outs:
        errors.update(o["errors"])
        for code, msg in o["first"].items():
            first.setdefault(code, msg)
    return {
        "ok": sum(o["ok"] for o in outs),
        "failed": sum(errors.values()),
        "errors": dict(errors),
        "first": first,
        "seconds": seconds,
        "counter": counter,
        "docs": docs,
    }


def bench_concurrency(sizes: Sizes) -> Figures:
    """`sizes.procs` processes × `sizes.proc_calls` calls on one state folder, against one
    process making all of them on a fresh one. All figures are counts or positive values:
    errors = calls - ok_calls, lost = ok_calls - final_counter (run.py's line shows both)."""
    procs, calls = sizes.procs, sizes.proc_calls
    with tempfile.TemporaryDirectory() as d:
        gem = gem_folder(Path(d) / "gem")
        many = run_workers(gem, Path(d) / "many", procs, calls)
        one = run_workers(gem, Path(d) / "one", 1, procs * calls)
    for code, msg in many["first"].items():  # say what went wrong, not only how often
        print(f"# concurrency: {many['errors'][code]} × {code}, e.g. {msg}", file=sys.stderr)
    conc_cps, serial_cps = (procs * calls) / many["seconds"], (procs * calls) / one["seconds"]
    return {
        "procs": procs,
        "calls_per_proc": calls,
        "calls": procs * calls,
        "ok_calls": many["ok"],
        "final_counter": many["counter"],
        "docs": many["docs"],
        "conc_s": many["seconds"],
        "serial_s": one["seconds"],
        "conc_cps": conc_cps,
        "serial_cps": serial_cps,
        "ratio": conc_cps / serial_cps,
    }


if __name__ == "__main__":
    from benchlib import FULL

    sizes = (
        FULL
        if len(sys.argv) != 3
        else dataclasses.replace(FULL, procs=int(sys.argv[1]), proc_calls=int(sys.argv[2]))
    )
    from run import concurrency

    text, ok = concurrency(bench_concurrency(sizes))
    print(f"{text}  {'OK' if ok else 'MISS'}")
