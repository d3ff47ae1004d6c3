"""What a JS call leaves behind, and the sandbox's whole memory (SEC5, red team of issue 25).

A call that returns must leave nothing running (timers, intervals, ports, nested Workers, a
microtask flood), and the sandbox's resident memory is bounded by guard.rss_limit_mb, not only
its V8 heap. CPU is measured from /proc/<pid>/stat over a second after the call: a bound on
what the sandbox burns, not on how long anything takes. Python tools run in the kernel's own
process (docs/security.md): none of this applies to them.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _deno import OK, deno_home, deno_pids, gone  # noqa: F401  (fixture)
from conftest import GemBuilder

from workbench.runners.deno import guard
from workbench.runners.deno import sandbox as sandbox_mod

pytestmark = pytest.mark.deno

TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pids: list[int]) -> float:
    """CPU seconds the processes used so far (user + system, all threads); a process gone
    counts for nothing (it burns nothing any more)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICK
    return total


def _burn(root: Path, seconds: float = 1.0) -> float:
    """CPU seconds per second the gem's sandbox processes use over the next `seconds`."""
    pids = deno_pids(root)
    before = _cpu(pids)
    time.sleep(seconds)
    return (_cpu(pids) - before) / seconds


def _status(pid: int) -> tuple[int, int]:
    """(resident MB, threads) of a process."""
    text = Path(f"/proc/{pid}/status").read_text()
    rss = re.search(r"VmRSS:\s+(\d+) kB", text)
    threads = re.search(r"Threads:\s+(\d+)", text)
    assert rss and threads, text
    return int(rss[1]) >> 10, int(threads[1])


# Each leaves something computing after it returned: before issue 25 the sandbox burned 0.7 to
# 1.9 CPU-s/s with no call running, until the bench closed
SPIN = "const end = performance.now() + 5; while (performance.now() < end) {}"
LEFTOVERS = {
    "interval": f"setInterval(() => {{ {SPIN} }}, 0);",
    "timeouts": f"const again = () => {{ {SPIN}; setTimeout(again, 0); }}; setTimeout(again, 0);",
    "port": f"const c = new MessageChannel(); c.port1.onmessage = () => {{ {SPIN}; c.port2.postMessage(1); }};"
    " c.port2.postMessage(1);",
    "then": f"Promise.resolve().then(() => setInterval(() => {{ {SPIN} }}, 0));",  # set after it returned
    "microtasks": "const f = () => queueMicrotask(f); f();",
    "async-loop": "(async () => { for (;;) await null; })();",
    "worker": "new Worker(`data:text/javascript,${encodeURIComponent('for (;;) {}')}`, { type: 'module' });"
    " await new Promise((r) => setTimeout(r, 100));",
}


@pytest.mark.parametrize("left", list(LEFTOVERS))
def test_SEC5_a_call_leaves_nothing_running(gem: GemBuilder, opened: Callable, left: str) -> None:
    gem.tool("leave", f"export default async () => {{ {LEFTOVERS[left]} return 'returned'; }}", ext="js")
    gem.tool("ok", OK, ext="js")
    bench = opened(gem, timeout=10)
    assert bench.call("ok").ok
    assert bench.call("leave").value == "returned"
    # nothing it started runs on: a flood the worker cannot clear is allowed IDLE_CPU_MS (100 ms)
    # of the host's CPU before the process ends, while the flooding thread spins beside it, so a
    # one-off ~0.2 CPU-s after the call is the design; over 2 s it stays under 0.2 CPU-s/s,
    # where a leftover still running burns 0.7 to 1.9 CPU-s/s
    assert _burn(gem.root, 2.0) < 0.2
    res = bench.call("ok")  # and the next call runs as any (a flood made it time out)
    assert res.value == "ok", res.error
    assert _burn(gem.root, 0.5) < 0.2


def test_SEC5_a_flood_that_the_next_call_meets_does_not_fail_it(gem: GemBuilder, opened: Callable) -> None:
    """The next call sent while the host still gives the flooded Worker its grace: the host ends
    before it read that call, which then runs in a fresh process (never E_TIMEOUT, E_SANDBOX)."""
    gem.tool(
        "flood", "export default async () => { const f = () => queueMicrotask(f); f(); return 1 }", ext="js"
    )
    gem.tool("ok", OK, ext="js")
    bench = opened(gem, timeout=10)
    for _ in range(3):
        pid = bench.sandbox.pid or bench.call("ok") and bench.sandbox.pid
        assert bench.call("flood").value == 1
        res = bench.call("ok")
        assert res.value == "ok", res.error
        assert gone(pid) and bench.sandbox.pid != pid


def test_SEC5_a_flood_left_by_a_call_that_worked_a_while_still_returns_its_value(
    gem: GemBuilder, opened: Callable
) -> None:
    """A call's end is notified once the Worker is idle (worker/channel.ts): one that never is
    (a flood) after working longer than the host's blocking wait (the host then waits on its
    event loop) still returns its value, and the next call runs in a fresh process."""
    gem.tool(
        "late_flood",
        "export default async () => { const end = performance.now() + 30; while (performance.now() < end) {}"
        " const f = () => queueMicrotask(f); f(); return 1 }",
        ext="js",
    )
    gem.tool("ok", OK, ext="js")
    bench = opened(gem, timeout=10)
    pid = bench.call("ok") and bench.sandbox.pid
    res = bench.call("late_flood")
    assert res.value == 1, res.error
    assert res.duration_ms < 5000  # not the call's timeout
    assert bench.call("ok").value == "ok"
    assert gone(pid) and bench.sandbox.pid != pid


def test_a_warm_calls_end_is_not_left_to_the_hosts_poll(gem: GemBuilder, opened: Callable) -> None:
    """A top call's end notified late (once the Worker is idle) must still be notified: one left
    to the host's look every SYNC_MS (5 ms) would put 5 ms on every call."""
    gem.tool("ok", OK, ext="js")
    bench = opened(gem)
    bench.call("ok")
    times = []
    for _ in range(60):
        t0 = time.perf_counter()
        assert bench.call("ok").value == "ok"
        times.append(time.perf_counter() - t0)
    assert sorted(times)[len(times) // 2] < 0.004, sorted(times)


def test_SEC5_N5_timers_are_cleared_not_the_module(gem: GemBuilder, opened: Callable) -> None:
    """reuse="always" still keeps module state: a call's timers are cleared where it ran, the
    Worker (and the process) is kept."""
    gem.tool(
        "tick",
        "let n = 0; let fired = 0;\n"
        "export default async () => { setInterval(() => fired++, 1); await new Promise((r) => setTimeout(r, 30));"
        " const seen = fired; await new Promise((r) => setTimeout(r, 0)); return [++n, seen > 0]; }",
        ext="js",
    )
    bench = opened(gem, reuse="always")
    pid = bench.sandbox.pid
    assert [bench.call("tick").value for _ in range(4)] == [[i, True] for i in range(1, 5)]
    assert bench.sandbox.pid == pid or pid is None


def test_SEC5_six_calls_leaving_workers_hold_no_threads_or_memory(gem: GemBuilder, opened: Callable) -> None:
    # each call leaves a Worker that holds 64 MiB and waits on an interval: before issue 25 the
    # sandbox grew by 2 threads and its 64 MiB with each
    hold = "const a = new Uint8Array(64 << 20).fill(1); setInterval(() => a[0]++, 50);"
    gem.tool(
        "spawn",
        "export default async () => {"
        f" new Worker(`data:text/javascript,${{encodeURIComponent({hold!r})}}`, {{ type: 'module' }});"
        " await new Promise((r) => setTimeout(r, 300)); return 1; }",
        ext="js",
    )
    gem.tool("ok", OK, ext="js")
    bench = opened(gem, timeout=20)
    assert bench.call("ok").ok
    rss, threads = _status(bench.sandbox.pid)
    for _ in range(6):
        assert bench.call("spawn").value == 1
    assert bench.call("ok").ok
    (pid,) = deno_pids(gem.root)
    rss2, threads2 = _status(pid)
    assert threads2 <= threads and rss2 < rss + 64, (rss, threads, rss2, threads2)


# -- memory outside the V8 heap ------------------------------------------------------------------

HOLD = """const kept = [];
export default async (i) => {
  for (let k = 0; k < i.mb; k += 16) kept.push(new Uint8Array(16 << 20).fill(1));
  if (i.wait) await new Promise(() => {}); // never returns: only a kill ends the call
  return kept.length * 16;
}"""


def _memory_error(res: object, memory_mb: int) -> None:
    err = res.error  # type: ignore[attr-defined]
    limit = guard.rss_limit_mb(memory_mb)
    assert err is not None and err.code == "E_OUT_OF_MEMORY", res
    assert err.details["limit"] == memory_mb and err.details["rss_limit_mb"] == limit, err
    assert f"limit of {limit} MB" in err.message and "memory_mb" in err.message, err


def test_SEC5_arraybuffers_over_the_limit_fail_the_call(gem: GemBuilder, opened: Callable) -> None:
    # 4 x memory_mb of Uint8Arrays: outside the 64 MB heap limit, so only the guard stops it
    gem.tool("hold", HOLD, ext="js").tool("ok", OK, ext="js")
    bench = opened(gem, memory_mb=64, timeout=60)
    assert bench.call("ok").ok
    old = bench.sandbox.pid
    _memory_error(bench.call("hold", {"mb": 4 * 64}), 64)
    assert gone(old)
    assert bench.call("ok").value == "ok"
    assert bench.call("hold", {"mb": 16}).value == 16  # a fresh module, in a fresh process


def test_SEC5_memory_is_watched_while_the_tool_waits(gem: GemBuilder, opened: Callable) -> None:
    """Killed by the guard's poll while the call runs: the tool never returns, so without it
    the call would end at its timeout (E_TIMEOUT)."""
    gem.tool("hold", HOLD, ext="js").tool("ok", OK, ext="js")
    bench = opened(gem, memory_mb=64, timeout=120)
    _memory_error(bench.call("hold", {"mb": 4 * 64, "wait": True}), 64)
    assert bench.call("ok").value == "ok"


def test_SEC5_arraybuffers_kept_across_calls_are_caught(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("hold", HOLD, ext="js").tool("ok", OK, ext="js")
    bench = opened(gem, memory_mb=64, timeout=60)
    got = [bench.call("hold", {"mb": 48}) for _ in range(4)]
    assert got[0].value == 48  # under the limit: kept, as reuse="always" keeps module state
    failed = [r for r in got if r.error is not None]
    assert failed, [r.value for r in got]  # 48 MiB more per call: over 192 MB by the 4th
    _memory_error(failed[0], 64)
    assert bench.call("ok").value == "ok"


def test_SEC5_the_hosts_recycle_code_is_pythons() -> None:
    host = (Path(sandbox_mod.__file__).parent / "host.ts").read_text()
    assert re.search(rf"\nconst RECYCLED = {sandbox_mod.RECYCLED};", host)


def test_SEC5_200_ordinary_calls_leave_threads_and_memory_flat(gem: GemBuilder, opened: Callable) -> None:
    """Real providers (SQLite kv, a real folder): the sandbox's threads do not grow with calls,
    and its resident size stays within a few MB of where it was (the red team saw 62 -> 318
    MB and 49 threads; not reproduced here, before or after issue 25: this keeps it so)."""
    gem.tool(
        "work",
        """export default async (i, ctx) => {
          await ctx.storage.kv.set("k" + (i.n % 10), "v".repeat(1000));
          await ctx.files.write("f" + (i.n % 10) + ".txt", "x".repeat(10_000));
          return (await ctx.files.read("f" + (i.n % 10) + ".txt")).length + i.n;
        }""",
        ext="js",
    )
    bench = opened(gem, providers="real", timeout=20)
    for n in range(20):  # warm: the JIT, SQLite's cache, the folders
        assert bench.call("work", {"n": n}).ok
    pid = bench.sandbox.pid
    rss, threads = _status(pid)
    for n in range(200):
        res = bench.call("work", {"n": n})
        assert res.value == 10_000 + n, res.error
    assert bench.sandbox.pid == pid
    rss2, threads2 = _status(pid)
    # on a loaded machine (a parallel suite, load average 5 on 2 cores) Deno's runtime may start
    # one more pool thread on demand (9 -> 10 seen once); what the red team saw was a thread per
    # call (49), so: at most two more, and none more after 200 further calls
    assert threads2 <= threads + 2 and rss2 < rss + 32, (rss, threads, rss2, threads2)
    for n in range(200):
        assert bench.call("work", {"n": n}).ok
    rss3, threads3 = _status(pid)
    assert threads3 <= max(threads2, threads + 1) and rss3 < rss + 32, (rss, threads, rss3, threads3)


def test_SEC5_a_sandbox_killed_for_memory_between_calls_is_said_at_the_next(
    gem: GemBuilder, opened: Callable
) -> None:
    """The guard watches between calls too: a process over its limit with no call running is
    killed, and the next call runs in a fresh one with a warning that says why. (The limit is
    lowered on the live watch: what a tool leaves behind is stopped, so nothing grows there.)"""
    gem.tool("hold", HOLD, ext="js")
    bench = opened(gem, memory_mb=64, timeout=60)
    assert bench.call("hold", {"mb": 32}).value == 32
    old, watch = bench.sandbox.pid, bench.sandbox._watch
    watch.limit = 16 << 20  # under what the process holds now
    deadline = time.monotonic() + 10
    while watch.killed is None and time.monotonic() < deadline:
        time.sleep(0.01)  # (the guard looks every 50 ms)
    res = bench.call("hold", {"mb": 16})
    assert gone(old)
    assert res.value == 16, res.error  # a fresh module: what the last one kept is gone
    assert any("between calls" in w and "limit of 192 MB" in w for w in res.warnings), res.warnings


def test_SEC5_an_async_loop_on_runtime_ops_is_killed_between_calls(gem: GemBuilder, opened: Callable) -> None:
    """An async loop that yields through Deno's own ops (no timer, no port, the Worker comes back
    idle between its turns) burned a CPU after its call: the guard kills a sandbox that uses
    over half a CPU with no call running, and the next call says so."""
    loop = "(async () => { for (;;) await Deno.readTextFile(new URL(import.meta.url).pathname); })();"
    gem.tool("loop", f"export default async () => {{ {loop} return 'returned'; }}", ext="js")
    gem.tool("ok", OK, ext="js")
    bench = opened(gem, timeout=10)
    assert bench.call("ok").ok
    assert bench.call("ok").ok  # (a call ended: from now on the sandbox's CPU is watched)
    watch = bench.sandbox._watch
    assert _burn(gem.root, 0.6) < 0.2 and watch.spun is None  # an idle sandbox is left alone
    assert bench.call("loop").value == "returned"
    deadline = time.monotonic() + 10
    while watch.spun is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _burn(gem.root) < 0.2  # killed: it burns nothing more
    res = bench.call("ok")
    assert res.value == "ok", res.error
    assert any("CPU-s/s with no call running" in w for w in res.warnings), res.warnings


# -- the runtime's internals ---------------------------------------------------------------------

# Everything reachable from globalThis (own keys, symbols, accessors, prototypes), walked without
# calling a getter: any `core`, `ops`, `__bootstrap` or op function found is a way to the ops
SCAN = """const scan = (root) => {
  const found = [], seen = new Set(), queue = [[root, "globalThis"]];
  while (queue.length && seen.size < 50000) {
    const [o, path] = queue.shift();
    if (seen.has(o)) continue;
    seen.add(o);
    let keys;
    try { keys = Reflect.ownKeys(o); } catch { continue; }
    for (const k of keys) {
      const name = typeof k === "symbol" ? `[${String(k)}]` : k;
      if (["ops", "core", "__bootstrap", "internal"].includes(name) || /^op_/.test(name)) found.push(`${path}.${name}`);
      let d;
      try { d = Object.getOwnPropertyDescriptor(o, k); } catch { continue; }
      for (const v of [d?.value, d?.get, d?.set]) {
        if (v && (typeof v === "object" || typeof v === "function")) queue.push([v, `${path}.${name}`]);
      }
    }
    const p = Object.getPrototypeOf(o);
    if (p) queue.push([p, `${path}.__proto__`]);
  }
  return found.slice(0, 20);
};
"""

# the ways in a tool tried: each gives what it reached (nothing is the only right answer)
PROBES = """const tries = {};
const attempt = async (name, f) => { try { tries[name] = await f(); } catch (e) { tries[name] = `refused: ${e.name}`; } };
const inWorker = (url) => new Promise((resolve) => {
  const w = new Worker(url, { type: "module" });
  w.onmessage = (m) => { resolve(m.data); w.terminate(); };
  w.onerror = (e) => { e.preventDefault(); resolve(`refused: ${e.message}`); };
  setTimeout(() => { resolve("no answer"); w.terminate(); }, 20000); // (a bound, not a measure)
});
const code = (body) => "data:text/javascript," + encodeURIComponent(SCAN_TEXT + body);
const REPORT = "postMessage(JSON.stringify([typeof Deno[Deno.internal], typeof Deno.internal, scan(globalThis)]));";
await attempt("Deno[Deno.internal]", () => typeof Deno[Deno.internal]);
await attempt("Deno.internal", () => typeof Deno.internal);
await attempt("Deno.core", () => typeof Deno.core);
await attempt("__bootstrap", () => typeof globalThis.__bootstrap);
await attempt("Symbol.for", () => typeof Deno[Symbol.for("Deno.internal")]);
await attempt("symbols of Deno", () => Object.getOwnPropertySymbols(Deno).map((s) => typeof Deno[s]).filter((t) => t === "object"));
await attempt("symbols of globalThis", () => Object.getOwnPropertySymbols(globalThis).filter((s) => { const v = globalThis[s]; return v && (v.core || v.ops); }).map(String));
await attempt("scan", () => scan(globalThis));
await attempt("nested Worker", () => inWorker(code(REPORT)));
await attempt("Worker in a nested Worker", () => inWorker(code(`const w = new Worker(${JSON.stringify(code(REPORT))}, { type: "module" }); w.onmessage = (m) => postMessage(m.data);`)));
await attempt("Worker.prototype.constructor", () => {
  const real = globalThis.Worker;
  globalThis.Worker = Worker.prototype.constructor; // the native constructor, if it is there
  try { return inWorker(code(REPORT)); } finally { globalThis.Worker = real; }
});
await attempt("blob: Worker", () => inWorker(URL.createObjectURL(new Blob([SCAN_TEXT + REPORT], { type: "text/javascript" }))));
await attempt("patched encodeURIComponent", () => {
  const real = globalThis.encodeURIComponent, text = real(SCAN_TEXT + REPORT);
  const honest = code("postMessage('the module it asked for ran')");
  globalThis.encodeURIComponent = () => text; // the wrapper would build its module with this
  try { return inWorker(honest); } finally { globalThis.encodeURIComponent = real; }
});
await attempt("node:worker_threads", async () => {
  const { Worker: NodeWorker } = await import("node:worker_threads");
  try { Object.setPrototypeOf(NodeWorker, (await import("node:events")).EventEmitter); } catch { /* kept */ }
  const w = new NodeWorker("require('worker_threads').parentPort.postMessage(typeof Deno[Deno.internal])", { eval: true });
  return await new Promise((resolve) => w.on("message", (m) => { resolve(m); w.terminate(); }));
});
"""


@pytest.mark.parametrize("ext", ["js", "ts"])
def test_SEC_the_runtimes_internals_are_out_of_reach(gem: GemBuilder, opened: Callable, ext: str) -> None:
    """Deno[Deno.internal] held `core.ops` (every op, without the API's argument checks; a red
    team loaded a native library's op through it): a tool, and every Worker it starts, find
    none of it, however it looks; node:worker_threads' Worker (a realm nothing can precede) is
    refused. What tools use still works (the seeds' examples: test_seed_examples.py)."""
    gem.tool(
        "probe",
        f"const SCAN_TEXT = {SCAN!r};\n{SCAN}\nexport default async () => {{\n{PROBES}\nreturn tries;\n}};",
        ext=ext,
    )
    bench = opened(gem, timeout=60)
    res = bench.call("probe")
    assert res.ok, res.error
    got = res.value
    nothing = '["undefined","undefined",[]]'  # what a nested Worker finds: no symbol, no object, no ops
    assert got == {
        "Deno[Deno.internal]": "undefined",
        "Deno.internal": "undefined",
        "Deno.core": "undefined",
        "__bootstrap": "undefined",
        "Symbol.for": "undefined",
        "symbols of Deno": [],
        "symbols of globalThis": [],
        "scan": [],
        "nested Worker": nothing,
        "Worker in a nested Worker": nothing,
        "Worker.prototype.constructor": nothing,
        "blob: Worker": nothing,
        "patched encodeURIComponent": "the module it asked for ran",
        "node:worker_threads": "refused: NotCapable",
    }, got


# -- the idle guard on a loaded machine ----------------------------------------------------------


@contextlib.contextmanager
def _hogs(n: int) -> Iterator[None]:
    """`n` processes that spin on a CPU each (the load of other work beside the suite)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


# twice as many spinning processes as CPUs (at least 4, at most 16): a load under which a
# spinner's CPU share was under the old threshold (4 beside it on 2 cores: 0.4)
HOGS = min(16, max(4, 2 * (os.cpu_count() or 1)))


def _judged(watch: guard.Watch, windows: int) -> None:
    """Until the guard judged `windows` more windows with no call running."""
    until = watch.judged + windows
    deadline = time.monotonic() + 60  # (a bound for a stuck guard, not a measure)
    while watch.judged < until and watch.spun is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert watch.judged >= until or watch.spun is not None, (watch.judged, until)


LOOP = "(async () => { for (;;) await Deno.readTextFile(new URL(import.meta.url).pathname); })();"
# a call whose garbage the runtime collects after it returned (~200 MB of small objects)
BIG = """export default async () => {
  let kept = 0;
  for (let round = 0; round < 10; round++) {
    const a = [];
    for (let i = 0; i < 300000; i++) a.push({ i, s: "x" + i });
    kept += a.length;
  }
  return kept;
}"""


def test_SEC5_a_spinner_is_killed_beside_cpu_hogs(gem: GemBuilder, opened: Callable) -> None:
    """Under load (4 processes spinning on 2 cores) a spinner left by a call got 0.42 of a CPU
    and passed the guard's 0.5 threshold: never killed. The guard counts runnable time (CPU
    plus run-queue waits), which a loaded machine cannot hide, and kills it."""
    gem.tool("loop", f"export default async () => {{ {LOOP} return 'returned'; }}", ext="js")
    gem.tool("ok", OK, ext="js")
    bench = opened(gem, timeout=30)
    assert bench.call("ok").ok
    with _hogs(HOGS):
        assert bench.call("loop").value == "returned"
        watch = bench.sandbox._watch
        _judged(watch, 4 * guard.IDLE_STREAK)  # time enough to be judged many times over
        assert watch.spun is not None and watch.spun > guard.IDLE_SHARE, watch.judged
    res = bench.call("ok")
    assert res.value == "ok", res.error
    assert any("CPU-s/s with no call running" in w for w in res.warnings), res.warnings


def test_SEC5_idle_and_collecting_sandboxes_live_beside_cpu_hogs(gem: GemBuilder, opened: Callable) -> None:
    """The other side: beside the same hogs, neither a sandbox idle after its call nor one
    collecting a big call's garbage is killed (runnable for a moment, not for the streak)."""
    gem.tool("big", BIG, ext="js").tool("ok", OK, ext="js")
    bench = opened(gem, timeout=60)
    assert bench.call("ok").ok
    pid = bench.sandbox.pid
    with _hogs(HOGS):
        for tool in ("ok", "big", "ok", "big"):
            assert bench.call(tool).ok
            watch = bench.sandbox._watch
            _judged(watch, 2 * guard.IDLE_STREAK)
            assert watch.spun is None, (tool, watch.spun)
    assert bench.sandbox.pid == pid
