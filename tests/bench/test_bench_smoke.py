"""The benchmarks run (their smallest sizes: SMOKE) and report sane figures; their speed is not
asserted here."""

from __future__ import annotations

import math

import pytest
from benchlib import SMOKE
from run import BENCHMARKS, Benchmark


@pytest.mark.parametrize(
    "benchmark",
    [
        pytest.param(
            b,
            id=name,
            marks=[pytest.mark.deno]
            if name.startswith(("deno_", "mcp_"))
            else [pytest.mark.imap]
            if name.startswith("imap_")
            else [],
        )
        for name, b in BENCHMARKS.items()
    ],
)
def test_benchmark_reports_positive_figures(benchmark: Benchmark) -> None:
    bench, report = benchmark
    figures = bench(SMOKE)
    heavy = figures.pop("heavy_modules", [])
    assert isinstance(heavy, list) and all(isinstance(m, str) for m in heavy)
    assert figures
    for name, value in figures.items():
        # CPU splits are read from /proc in clock ticks (10 ms): a quick run's share may be 0;
        # an `added_` figure is a difference of two measured ones, each checked here: one of a
        # few µs can come out below 0 in a quick run on a busy machine
        least = 0 if name.startswith("cpu_") else -math.inf if name.startswith("added_") else 1e-300
        assert isinstance(value, (int, float)) and math.isfinite(value) and value >= least, (name, value)
    text, ok = report(figures | {"heavy_modules": heavy})
    assert text and isinstance(ok, bool)
