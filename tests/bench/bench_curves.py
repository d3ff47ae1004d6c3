"""Cost curves (issue 14 item 6): how the inspection views' cost grows with size, as the
exponent k of a fitted t ≈ c·nᵏ (least squares on log-log): 1 is linear; anything above ~1.15
is a defect to fix or to explain in the docs.

- `bench.files()` with 10³…10⁵ files in the (mock) conversation folder;
- `bench.calls()` and `bench.diff(snapshot)` after 10³…10⁴ calls;
- `bench.data(collection)` with 10³…10⁶ documents;
- the memory a bench keeps per 10⁴ calls (its results and traces; traced with tracemalloc).
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib import Figures, Sizes, write_gem

import workbench

KV = "def handle(input, ctx):\n    ctx.storage.kv.set('k' + str(input['i']), 'v')\n    return input['i']\n"
INSERT = """
def handle(input, ctx):
    notes = ctx.data.collection("notes")
    for i in range(input["n"]):
        notes.insert({"title": f"note {i}", "status": "open", "priority": i % 5 + 1})
    return input["n"]
"""


def exponent(points: list[tuple[int, float]]) -> float:
    """The slope of log(t) against log(n): t ≈ c·nᵏ."""
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(max(t, 1e-9)) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def best_of(fn: Callable[[], Any], reps: int = 3) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def _kept_mb_per_10k(bench: workbench.Bench, start: int, n: int = 1000) -> float:
    """Memory the bench holds after n more calls (results, traces), per 10⁴ calls."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(n):
            bench.call("kv", {"i": start + i})
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return (after - before) / 1e6 * 10_000 / n


def bench_curves(sizes: Sizes) -> Figures:
    full = sizes.docs >= 100_000
    file_ns = [1_000, 10_000, 100_000] if full else [1_000, 3_000, 10_000]
    call_ns = [1_000, 3_000, 10_000] if full else [300, 1_000, 3_000]
    doc_ns = [1_000, 10_000, 100_000, 1_000_000] if full else [1_000, 10_000, 30_000]
    kept = 1000
    if sizes.smoke:  # a tenth of the work: sizes still 10x apart, so each k is a slope
        file_ns, call_ns, doc_ns, kept = [300, 1_000, 3_000], [100, 300, 1_000], [300, 3_000, 10_000], 200
    out: Figures = {}
    with tempfile.TemporaryDirectory() as d:
        gem = write_gem(Path(d) / "gem", {"kv": KV, "insert": INSERT}, {"notes": ["status"]})
        # files(): a folder of n small files
        points = []
        for n in file_ns:
            with workbench.open(gem, state_dir=Path(d) / f"f{n}", headless=True) as bench:
                store = bench.providers.files
                for i in range(n):
                    store.write("workspace", f"d{i % 100}/f{i}.txt", b"x")
                points.append((n, best_of(bench.files)))
        out["files_k"], out["files_ms_max"] = exponent(points), points[-1][1] * 1000
        # calls() and diff() after n calls; memory per 10^4 calls
        calls, diffs = [], []
        with workbench.open(gem, state_dir=Path(d) / "c", headless=True) as bench:
            snap = bench.snapshot()
            done = 0
            for n in call_ns:
                while done < n:
                    bench.call("kv", {"i": done})
                    done += 1
                calls.append((n, best_of(bench.calls)))
                diffs.append((n, best_of(lambda: bench.diff(snap))))
            out["kept_mb_per_10k_calls"] = _kept_mb_per_10k(bench, done, kept)
        out["calls_k"], out["calls_ms_max"] = exponent(calls), calls[-1][1] * 1000
        out["diff_k"], out["diff_ms_max"] = exponent(diffs), diffs[-1][1] * 1000
        # data(): n documents
        points = []
        with workbench.open(gem, state_dir=Path(d) / "d", headless=True) as bench:
            have = 0
            for n in doc_ns:
                bench.call("insert", {"n": n - have})
                have = n
                points.append((n, best_of(lambda: bench.data("notes"), 2)))
        out["data_k"], out["data_ms_max"] = exponent(points), points[-1][1] * 1000
        out["files_n"], out["calls_n"], out["docs_n"] = file_ns[-1], call_ns[-1], doc_ns[-1]
    return out
