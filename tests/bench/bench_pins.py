"""Pinned calls (issue 29): what pinning adds to a call, what a replay costs next to the call it
replays, and a hundred pinned cases of a trivial JS tool replayed as `gem-workbench test` does
(one warm bench per gem: _pinreplay.Replayer)."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from benchlib import QUICK, Figures, Sizes, no_gc, per_call_ns, time_ns, write_gem
from benchmarks import NOOP

import workbench
from workbench.pins.replay import Replayer

# a trivial JS tool that reaches state: one kv read, one kv write
KV_JS = """\
export default async function (input, ctx) {
  const n = Number((await ctx.storage.kv.get("n")) ?? 0) + 1;
  await ctx.storage.kv.set("n", String(n));
  return { n, title: input.title };
}
"""


def bench_pin_overhead(sizes: Sizes = QUICK) -> Figures:
    """bench.call of a trivial Python tool on a bench that can pin (the default) vs pins=False."""
    with tempfile.TemporaryDirectory() as d:
        gem = write_gem(Path(d), {"noop": NOOP})
        with (
            workbench.open(gem, headless=True) as pins,
            workbench.open(gem, headless=True, pins=False) as plain,
        ):
            on, off = per_call_ns(
                lambda: pins.call("noop", {}), lambda: plain.call("noop", {}), sizes.calls, sizes.batches
            )
    return {"on_us": on / 1e3, "off_us": off / 1e3, "added_us": (on - off) / 1e3}


def bench_pin_replay(sizes: Sizes = QUICK) -> Figures:
    """A warm replay of a pinned JS call (state put, call with its answers served, compared) vs
    the warm call itself; and N cases of it replayed by one Replayer, cold start included."""
    n_cases = 100
    with tempfile.TemporaryDirectory() as d:
        gem = write_gem(Path(d) / "gem", {"bump.js": KV_JS})
        with workbench.open(gem, headless=True) as bench:
            bench.call("bump", {"title": "warm"})
            call_ns = []
            with no_gc():
                for _ in range(sizes.warm_calls):
                    call_ns.append(time_ns(lambda: bench.call("bump", {"title": "x"})))
            for i in range(n_cases):
                bench.call("bump", {"title": f"case {i}"}).pin(f"case{i:03d}")
        cases = sorted((gem / "tests" / "calls" / "bump").glob("*.json"))
        t0 = time.perf_counter()
        with Replayer() as replayer:
            for path in cases:
                out = replayer.replay(path)
                if not out.ok:
                    raise RuntimeError(out.report())
            all_s = time.perf_counter() - t0
            replay_ns = []
            with no_gc():
                for _ in range(sizes.warm_calls):
                    replay_ns.append(time_ns(lambda: replayer.replay(cases[0])))
    call_ms, replay_ms = statistics.median(call_ns) / 1e6, statistics.median(replay_ns) / 1e6
    return {
        "call_ms": call_ms,
        "replay_ms": replay_ms,
        "ratio": replay_ms / call_ms,
        "cases": n_cases,
        "all_s": all_s,
    }
