"""The issue-3 benchmarks: JS tools in the Deno sandbox, each with a baseline from the same run.

Cold start to first result, warm call, and the ctx round trip from JS. The round-trip benchmark
also times its parts (Python↔Deno pipe, Deno main↔worker postMessage, the Python ctx layer) and
the cold start a bare `deno run` that starts one Worker, so a miss shows where the time goes.
Nothing here asserts a time: `run.py` compares the figures with the targets.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from benchlib import QUICK, Figures, Sizes, no_gc, time_ns, write_gem
from benchmarks import NOOP, _call
from deno import find_deno_bin

import workbench
from workbench._deno import DENO_FLAGS, minimal_env  # the sandbox's own, for a fair bare run

ONE = "export default async function () { return 1 }\n"
KV = """\
export default async function (input, ctx) {
  const t0 = performance.now();
  for (let i = 0; i < input.n; i++) await ctx.storage.kv.get("k");
  return { us: (performance.now() - t0) * 1000 / input.n };
}
"""
# what the ping-pongs send: a ctx request as the host writes it to Python, one JSON line
MESSAGE = {"t": "ctx", "id": "20250101-120000-a1b2c3", "seq": 1, "method": "storage.kv.get", "args": ["k"]}
PY_ECHO = """\
import json, sys
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    out.write(json.dumps(json.loads(line), separators=(",", ":")).encode() + b"\\n")
    out.flush()
"""
# The hops of a ctx round trip, each alone, as host.ts and worker/ make them. Deno's main thread
# reads and writes a pipe blocking (readSync/writeSync, as host.ts does its FIFOs) and moves
# messages to and from a Worker through two SharedArrayBuffers, waiting with Atomics.wait (as
# host.ts does); the Worker waits on its event loop (Atomics.waitAsync, as worker/channel.ts does). Arg:
# "main" (main echoes) or "worker" (main forwards each message to a Worker that echoes it: the
# four hand-offs every ctx call makes, Python -> main -> Worker -> main -> Python, no ctx work).
DENO_ECHO = """\
const [mode] = Deno.args;
const chunk = new Uint8Array(1 << 16);
const toW = new Int32Array(new SharedArrayBuffer(8 + (1 << 16)));
const fromW = new Int32Array(new SharedArrayBuffer(8 + (1 << 16)));
const w = mode === "worker" ? new Worker(URL.createObjectURL(new Blob([`
  onmessage = async (e) => {
    const [toW, fromW] = e.data, inb = new Uint8Array(toW.buffer, 8), out = new Uint8Array(fromW.buffer, 8);
    postMessage("ready");
    for (let seen = 0;;) {
      const r = Atomics.waitAsync(toW, 0, seen);
      if (r.async) await r.value;
      seen = Atomics.load(toW, 0);
      const n = Atomics.load(toW, 1);
      out.set(inb.subarray(0, n));
      Atomics.store(fromW, 1, n);
      Atomics.store(fromW, 0, seen);
      Atomics.notify(fromW, 0);
    }
  };`], { type: "text/javascript" })), { type: "module" }) : null;
if (w) await new Promise((ready) => { w.onmessage = ready; w.postMessage([toW, fromW]); });
function viaWorker(bytes, gen) {
  new Uint8Array(toW.buffer, 8).set(bytes);
  Atomics.store(toW, 1, bytes.length);
  Atomics.store(toW, 0, gen);
  Atomics.notify(toW, 0);
  while (Atomics.load(fromW, 0) !== gen) Atomics.wait(fromW, 0, gen - 1);
  return new Uint8Array(fromW.buffer, 8, Atomics.load(fromW, 1)).slice();
}
for (let gen = 1, n; (n = Deno.stdin.readSync(chunk)) !== null; gen++) {
  const bytes = w ? viaWorker(chunk.subarray(0, n), gen) : chunk.subarray(0, n);
  for (let at = 0; at < bytes.length;) at += Deno.stdout.writeSync(bytes.subarray(at));
}
Deno.exit(0); // the worker waits for ever: end it with the process
"""
# a worker echoing messages on its global port: what a cold start must at least wait for
_ECHO_WORKER = """new Worker(URL.createObjectURL(new Blob([`onmessage = (e) => postMessage(e.data)`],
  { type: "text/javascript" })), { type: "module" })"""
# the floor of a sandbox that runs tools in a Worker: start one, wait for its first message
DENO_ONE_WORKER = f"""\
const w = {_ECHO_WORKER};
await new Promise((resolve) => {{ w.onmessage = resolve; w.postMessage(0); }});
w.terminate();
"""


def _deno_env(deno_dir: Path) -> dict[str, str]:
    """The minimal environment the sandbox gets (the same as the workbench's own)."""
    return minimal_env(deno_dir)


def _deno_script(folder: Path, name: str, source: str) -> list[str]:
    """Write `source` to folder/name; the command that runs it with the sandbox's flags."""
    (folder / name).write_text(source)
    return [find_deno_bin(), "run", *DENO_FLAGS, str(folder / name)]


@contextmanager
def _workbench_home(tmp: Path) -> Iterator[None]:
    """Keep default state in tmp: mock benches put their DENO_DIR there, whatever state_dir says."""
    old = os.environ.get("GEM_WORKBENCH_HOME")
    os.environ["GEM_WORKBENCH_HOME"] = str(tmp / "home")
    try:
        yield
    finally:
        if old is None:
            del os.environ["GEM_WORKBENCH_HOME"]
        else:
            os.environ["GEM_WORKBENCH_HOME"] = old


def _open(gem: Path, state: Path) -> workbench.Bench:
    """A new bench on mock providers; JS tools reuse their module instance."""
    from workbench.bench.options import gem_options

    headless = {"headless": True} if "headless" in gem_options(gem) else {}  # a platform with ctx.files
    return workbench.open(gem, providers="mock", state_dir=state, reuse="always", **headless)


def _run(cmd: list[str], env: dict[str, str]) -> str:
    """Run `cmd` to its end; its stdout."""
    return subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout


def bench_cold_start(sizes: Sizes = QUICK) -> Figures:
    """`workbench.open` of a gem with a trivial JS tool to its first result (the sandbox starts
    in the background at open) vs bare `deno run`, and vs a `deno run` starting one Worker.

    Alternating, after one untimed round that fills the caches. Also timed: a bare `deno run`
    of a script that starts one Worker and waits for its first message.
    """
    call_ns: list[int] = []
    bare_ns: list[int] = []
    worker_ns: list[int] = []
    with tempfile.TemporaryDirectory() as d, _workbench_home(Path(d)):
        tmp = Path(d)
        gem = write_gem(tmp / "gem", {"one.js": ONE})
        env = _deno_env(tmp / "deno")
        bare = _deno_script(tmp, "empty.js", "")
        one_worker = _deno_script(tmp, "one_worker.js", DENO_ONE_WORKER)
        for rep in range(-1, sizes.spawns):
            t0 = time.perf_counter_ns()  # open -> first result: the sandbox starts at open
            with _open(gem, tmp / "state") as bench:
                _call(bench, "one", {})
                c = time.perf_counter_ns() - t0
            b = time_ns(lambda: _run(bare, env))
            w = time_ns(lambda: _run(one_worker, env))
            if rep >= 0:
                call_ns.append(c)
                bare_ns.append(b)
                worker_ns.append(w)
    call, bare_med = statistics.median(call_ns), statistics.median(bare_ns)
    return {
        "call_ms": call / 1e6,
        "bare_ms": bare_med / 1e6,
        "ratio": call / bare_med,
        "worker_ms": statistics.median(worker_ns) / 1e6,
        "worker_ratio": call / statistics.median(worker_ns),
    }


def _cpu_us(pid: int) -> dict[str, float]:
    """CPU time (user + system, µs) of each thread of `pid` by name, V8's platform workers as
    one, from /proc (in clock ticks: summed over many calls, not per call)."""
    tick = 1e6 / os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        key = "v8" if name.startswith("V8 ") else "worker" if name.startswith("worker-") else "host"
        out[key] = out.get(key, 0.0) + (int(fields[11]) + int(fields[12])) * tick
    return out


def bench_warm_call(sizes: Sizes = QUICK) -> Figures:
    """Median bench.call of a trivial JS tool (reuse="always") vs a trivial Python tool.

    Calls are timed one by one, in alternating blocks of 50 (alternating call by call slowed
    both: each paid for what the other left running, e.g. the sandbox's log reader threads).
    Where the JS calls' time goes: the CPU time per call of the calling thread and of the
    sandbox's threads (the host's: main and tokio's; the Worker; V8's platform workers), over
    the JS blocks.
    """
    js_ns: list[int] = []
    py_ns: list[int] = []
    cpu: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as d, _workbench_home(Path(d)):
        gem = write_gem(Path(d) / "gem", {"one.js": ONE, "noop": NOOP})
        with _open(gem, Path(d) / "state") as bench, no_gc():
            _call(bench, "one", {})  # (started)
            pid = bench.sandbox.pid or 0
            for block in range(-1, max(1, sizes.warm_calls // 50)):  # block -1 warms up
                before, mine = _cpu_us(pid), time.thread_time_ns()
                js = [time_ns(lambda: _call(bench, "one", {})) for _ in range(50)]
                after, mine = _cpu_us(pid), time.thread_time_ns() - mine
                py = [time_ns(lambda: _call(bench, "noop", {})) for _ in range(50)]
                if block >= 0:
                    js_ns += js
                    py_ns += py
                    cpu["python"] = cpu.get("python", 0.0) + mine / 1e3
                    for k, v in after.items():
                        cpu[k] = cpu.get(k, 0.0) + v - before.get(k, 0.0)
    js_med, py_med = statistics.median(js_ns), statistics.median(py_ns)
    calls = len(js_ns)
    return {
        "js_ms": js_med / 1e6,
        "py_ms": py_med / 1e6,
        "ratio": js_med / py_med,
        **{f"cpu_{k}_us": cpu.get(k, 0.0) / calls for k in ("python", "host", "worker", "v8")},
    }


def _pingpong(send: Callable[[bytes], object], recv: Callable[[], bytes]) -> Callable[[int], float]:
    """trips(n): µs per round trip of one JSON line (a ctx request), over n trips."""
    buf = b""

    def trip() -> None:
        nonlocal buf
        send((json.dumps(MESSAGE, separators=(",", ":")) + "\n").encode())
        while b"\n" not in buf:
            buf += recv()
        line, buf = buf.split(b"\n", 1)
        json.loads(line)

    def trips(n: int) -> float:
        for _ in range(min(n, 200)):  # warm-up
            trip()
        t0 = time.perf_counter_ns()
        for _ in range(n):
            trip()
        return (time.perf_counter_ns() - t0) / n / 1e3

    return trips


@contextmanager
def _pipe_echo(cmd: list[str], env: dict[str, str] | None = None) -> Iterator[Callable[[int], float]]:
    """A child echoing JSON lines on stdin/stdout; the parent writes and reads with os.write and
    os.read, as the sandbox does its FIFOs."""
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env) as child:
        assert child.stdin and child.stdout
        w, r = child.stdin.fileno(), child.stdout.fileno()
        try:
            yield _pingpong(lambda b: os.write(w, b), lambda: os.read(r, 1 << 16))
        finally:
            child.stdin.close()


def bench_ctx_round_trip(sizes: Sizes = QUICK) -> Figures:
    """`await ctx.storage.kv.get("k")` from JS (timed in the tool) vs a Python↔Python JSON
    ping-pong on pipes; alternating, median of `sizes.trip_reps` repetitions.

    Parts, timed alongside: Python↔Deno main on a pipe; the chain of the four hand-offs every
    ctx call makes (Python -> Deno main -> Worker through a SharedArrayBuffer, and back) with no
    ctx work: the floor of this design; and the ctx layer (the trace's duration_us).
    """
    n = sizes.trips
    js: list[float] = []
    ping: list[float] = []
    main: list[float] = []
    chain: list[float] = []
    layer: list[float] = []
    with tempfile.TemporaryDirectory() as d, _workbench_home(Path(d)):
        tmp = Path(d)
        env = _deno_env(tmp / "deno")
        echo = _deno_script(tmp, "echo.js", DENO_ECHO)
        with (
            _open(write_gem(tmp / "gem", {"kv.js": KV}), tmp / "state") as bench,
            _pipe_echo([sys.executable, "-c", PY_ECHO]) as py_trips,
            _pipe_echo([*echo, "main"], env) as main_trips,
            _pipe_echo([*echo, "worker"], env) as chain_trips,
            no_gc(),
        ):
            _call(bench, "kv", {"n": min(n, 200)})  # warm-up
            for _ in range(sizes.trip_reps):
                res = _call(bench, "kv", {"n": n})
                js.append(res.value["us"])
                layer.append(statistics.median(r["duration_us"] for r in res.trace_rows))
                ping.append(py_trips(n))
                main.append(main_trips(n))
                chain.append(chain_trips(n))
    med = statistics.median
    return {
        "trips": n,
        "js_us": med(js),
        "pingpong_us": med(ping),
        "ratio": med(js) / med(ping),
        "main_us": med(main),
        "chain_us": med(chain),
        "chain_ratio": med(chain) / med(ping),
        "layer_us": med(layer),
    }


KV_TOOL = (
    "export default async function (i, ctx) { await ctx.storage.kv.set('k', String(i.n)); return i.n }\n"
)


def _rss_threads(pid: int) -> tuple[float, int]:
    """(resident MB, threads) of a process, from /proc/<pid>/status."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["Threads"])


def bench_memory_flat(sizes: Sizes = QUICK) -> Figures:
    """Resident memory and threads of the bench's process and of the sandbox, after 100 calls
    and after 10⁴ more (10 x warm_calls), of a JS tool making one ctx call (kv.set) on real
    providers (issue 25: the sandbox's RSS grew with ordinary calls). Flat is the target."""
    calls = 10 * sizes.warm_calls
    with tempfile.TemporaryDirectory() as d, _workbench_home(Path(d)):
        gem = write_gem(Path(d) / "gem", {"kv.js": KV_TOOL})
        bench = workbench.open(gem, providers="real", state_dir=Path(d) / "state", headless=True)
        with bench:
            for n in range(100):
                _call(bench, "kv", {"n": n})
            pid = bench.sandbox.pid or 0
            start = {"py": _rss_threads(os.getpid()), "sb": _rss_threads(pid)}
            for n in range(calls):
                _call(bench, "kv", {"n": n})
            assert bench.sandbox.pid == pid, "the sandbox was restarted during the run"
            end = {"py": _rss_threads(os.getpid()), "sb": _rss_threads(pid)}
    out: Figures = {"calls": calls}
    for who in ("py", "sb"):
        out[f"{who}_rss0"], out[f"{who}_thr0"] = start[who]
        out[f"{who}_rss1"], out[f"{who}_thr1"] = end[who]
        out[f"{who}_ratio"] = end[who][0] / start[who][0]
    return out
