"""Issue 6 figures: a mock fetch round trip from JS vs a ctx.files round trip; resource path()."""

from __future__ import annotations

import hashlib
import json
import statistics
import tempfile
from pathlib import Path

from bench_deno import _workbench_home
from benchlib import Figures, Sizes

import workbench

# N calls timed inside the tool, so only the ctx round trips are measured
FETCH_VS_FILES = """\
export default async function (input, ctx) {
  await ctx.files.write("a.txt", "hello");
  const t0 = performance.now();
  for (let i = 0; i < input.n; i++) await (await ctx.http.fetch("https://api.test/x")).text();
  const t1 = performance.now();
  for (let i = 0; i < input.n; i++) await ctx.files.read("a.txt");
  const t2 = performance.now();
  return { fetch_us: (t1 - t0) * 1000 / input.n, files_us: (t2 - t1) * 1000 / input.n };
}
"""
RESOURCE_PATH = """\
import time

def handle(input, ctx):
    ctx.resources.path("model")  # the first call puts it in the cache
    out = []
    for _ in range(input["n"]):
        t0 = time.perf_counter_ns()
        ctx.resources.path("model")
        out.append(time.perf_counter_ns() - t0)
    return out
"""
MODEL = b"\x00model-bytes" * 1000


def _gem(root: Path) -> Path:
    (root / "tools").mkdir(parents=True)
    (root / "tools" / "rt.js").write_text(FETCH_VS_FILES)
    (root / "tools" / "res.py").write_text(RESOURCE_PATH)
    manifest = {
        "id": "bench.issue6",
        "name": "Bench",
        "version": "0.1.0",
        "permissions": {"http": {"connections": {}}},
        "resources": [
            {
                "id": "model",
                "url": "https://models.test/model.bin",
                "sha256": hashlib.sha256(MODEL).hexdigest(),
            }
        ],
        "tools": [
            {"name": "rt", "file": "tools/rt.js", "inputSchema": {"type": "object"}},
            {"name": "res", "file": "tools/res.py", "inputSchema": {"type": "object"}},
        ],
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def bench_fetch_vs_files(sizes: Sizes) -> Figures:
    """Median per-call µs of a mock `ctx.http.fetch` and of `ctx.files.read`, from one JS tool."""
    n, fetch, files = max(100, sizes.trips // 4), [], []
    with tempfile.TemporaryDirectory() as d, _workbench_home(Path(d)):
        bench = workbench.open(
            _gem(Path(d) / "gem"),
            state_dir=Path(d) / "state",
            http=[{"match": "https://api.test/", "respond": "ok"}],
        )
        try:
            bench.call("rt", {"n": 20}).raise_for_error()  # warm-up
            for _ in range(max(2, sizes.trip_reps)):
                v = bench.call("rt", {"n": n}).raise_for_error().value
                fetch.append(v["fetch_us"])
                files.append(v["files_us"])
        finally:
            bench.close()
    f, r = statistics.median(fetch), statistics.median(files)
    return {"fetch_us": f, "files_us": r, "ratio": f / r}


def bench_resource_path(sizes: Sizes) -> Figures:
    """Median `ctx.resources.path()` on a cached resource, timed inside a Python tool."""
    with tempfile.TemporaryDirectory() as d, _workbench_home(Path(d)):
        bench = workbench.open(_gem(Path(d) / "gem"), state_dir=Path(d) / "state", resources={"model": MODEL})
        try:
            ns = bench.call("res", {"n": max(200, sizes.finds)}).raise_for_error().value
        finally:
            bench.close()
    return {"path_ms": statistics.median(ns) / 1e6}
