"""Helpers for the benchmarks: sizes, median timing, and a throwaway gem on disk."""

from __future__ import annotations

import dataclasses
import gc
import json
import statistics
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Figures = dict[str, Any]  # numbers (ms, µs, ratios) plus, for the import benchmark, module names


@dataclass(frozen=True)
class Sizes:
    """How big and how often: the full run, or the quick one for CI smoke tests."""

    docs: int  # documents in the data benchmarks
    calls: int  # bench.call per timed batch (tool call overhead)
    batches: int  # timed batches / repetitions of the small benchmarks
    finds: int  # find calls whose median is taken
    bulk_reps: int  # repetitions of the insert benchmark
    frame_reps: int  # repetitions of the DataFrame benchmark
    imports: int  # fresh interpreters started per import measurement
    spawns: int  # cold starts of the Deno sandbox (and of bare `deno run`)
    warm_calls: int  # warm JS (and Python) tool calls whose median is taken
    trips: int  # ctx round trips from JS (and JSON ping-pongs) per repetition
    trip_reps: int  # repetitions of the round-trip measurements
    mails: int = 1_000_000  # messages in the mock mailbox of the listSince benchmark
    pages: int = 1000  # listSince calls per limit whose median is taken
    procs: int = 4  # processes sharing one real state folder (reliability)
    proc_calls: int = 150  # calls each of them makes
    smoke: bool = False  # the CI smoke test's run (SMOKE): fewest repetitions, smallest curves


FULL = Sizes(
    docs=100_000,
    calls=200,
    batches=25,
    finds=1000,
    bulk_reps=3,
    frame_reps=7,
    imports=7,
    spawns=15,
    warm_calls=1000,
    trips=2000,
    trip_reps=5,
)
QUICK = Sizes(
    docs=10_000,
    calls=50,
    batches=5,
    finds=200,
    bulk_reps=2,
    frame_reps=3,
    imports=3,
    spawns=3,
    warm_calls=100,
    trips=300,
    trip_reps=2,
    mails=100_000,
    pages=200,
    procs=2,
    proc_calls=20,
)


# tests/bench/test_bench_smoke.py's: every benchmark's code and every figure, for the least work
# that still gives each one (the smoke test checks the figures are there and sane, never their
# size; the quick run took 86 CPU-s of the CI suite, a third of it the curves)
SMOKE = dataclasses.replace(
    QUICK,
    calls=20,
    batches=3,
    finds=50,
    bulk_reps=1,
    frame_reps=2,
    imports=1,
    spawns=2,
    warm_calls=30,
    trips=100,
    trip_reps=1,
    mails=20_000,
    pages=50,
    proc_calls=10,
    smoke=True,
)


@contextmanager
def no_gc() -> Iterator[None]:
    """Keep the cyclic GC out of a measurement, as timeit does."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def time_ns(fn: Callable[[], Any]) -> int:
    """Wall time of one call of `fn`, in ns."""
    t0 = time.perf_counter_ns()
    fn()
    return time.perf_counter_ns() - t0


def paired_median_ns(
    fn: Callable[[], Any], baseline: Callable[[], Any], reps: int, warmup: int = 1
) -> tuple[float, float]:
    """Median wall times of `fn` and `baseline`, run alternately so load changes hit both."""
    for _ in range(warmup):
        fn()
        baseline()
    times = [(time_ns(fn), time_ns(baseline)) for _ in range(reps)]
    return statistics.median(t for t, _ in times), statistics.median(b for _, b in times)


def per_call_ns(
    fn: Callable[[], Any], baseline: Callable[[], Any], calls: int, batches: int
) -> tuple[float, float]:
    """Per-call ns of `fn` and `baseline`: median over alternating batches of `calls`, GC off."""

    def batch(f: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(calls):
                f()

        return run

    with no_gc():
        t, b = paired_median_ns(batch(fn), batch(baseline), batches, warmup=2)
    return t / calls, b / calls


def write_gem(root: Path, tools: dict[str, str], indexes: dict[str, list[str]] | None = None) -> Path:
    """Write a gem folder: manifest.json and its tools; `indexes`: collection -> fields.

    `tools` maps a file name to its source: "noop" is tools/noop.py, "one.js" is tools/one.js
    (tool "one").
    """
    (root / "tools").mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"id": "bench.gem", "name": "Bench", "version": "0.1.0", "tools": []}
    for name, source in tools.items():
        file = name if "." in name else f"{name}.py"
        (root / "tools" / file).write_text(textwrap.dedent(source))
        manifest["tools"].append(
            {
                "name": file.split(".")[0],
                "file": f"tools/{file}",
                "inputSchema": {"type": "object"},
                "sideEffect": "write",
            }
        )
    if indexes:
        manifest["data"] = {"collections": {c: {"indexes": f} for c, f in indexes.items()}}
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return root
