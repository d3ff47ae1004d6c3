"""Issue 29, point 3, end to end: `workbench.open(..., seed=N, clock=…)` makes what a JS tool
sees in the sandbox (Date, performance, Math.random, crypto) and the bench's ids reproducible;
the seam is CallSession's clock_ms / clock_frozen / seed, filled by the bench (test_clock.py)
and read by the sandbox (test_deno_determinism.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import workbench
from workbench.scaffold._create import create

TOOL = """
export default async function (input, ctx) {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return {
    now: Date.now(), iso: new Date().toISOString(), perf: performance.now(),
    random: Math.random(), uuid: crypto.randomUUID(), bytes: Array.from(bytes),
  };
}
"""


@pytest.fixture
def gem(tmp_path: Path) -> Path:
    root = create("dj", lang="js", parent=tmp_path)
    (root / "tools" / "hello.js").write_text(TOOL)
    return root


def _run(gem: Path, **options: object) -> list[dict[str, object]]:
    with workbench.open(gem, **options) as bench:
        out = []
        for _ in range(2):
            res = bench.call("hello", {"name": "x"})
            assert res.ok, res.error
            out.append({**res.value, "call_id": res.call_id})
        return out


def test_same_seed_and_frozen_clock_give_identical_calls(gem: Path) -> None:
    a = _run(gem, seed=7, clock="2026-01-02T03:04:05Z")
    b = _run(gem, seed=7, clock="2026-01-02T03:04:05Z")
    assert a == b
    assert a[0]["iso"] == "2026-01-02T03:04:05.000Z" and a[0]["now"] == 1767323045000
    assert a[0]["random"] != a[1]["random"] and a[0]["uuid"] != a[1]["uuid"]  # a stream, not a constant


def test_another_seed_draws_otherwise(gem: Path) -> None:
    a, b = _run(gem, seed=7), _run(gem, seed=8)
    assert a[0]["random"] != b[0]["random"] and a[0]["uuid"] != b[0]["uuid"]


def test_no_seed_no_clock_is_real(gem: Path) -> None:
    import time

    a, b = _run(gem), _run(gem)
    assert a[0]["random"] != b[0]["random"] and a[0]["call_id"] != b[0]["call_id"]
    assert abs(a[0]["now"] / 1000 - time.time()) < 60  # type: ignore[operator]
