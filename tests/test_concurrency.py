"""Issue 9, item 8: processes sharing one real state folder take turns; no call fails, no write
is lost. (tests/bench/bench_concurrency.py measures the same at 4 × 150 calls.)"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "bench"))

from bench_concurrency import gem_folder, run_workers  # noqa: E402


def test_SEC_concurrency_two_processes_on_one_state_folder_lose_nothing(tmp_path):
    gem = gem_folder(tmp_path / "gem")
    got = run_workers(gem, tmp_path / "state", procs=2, calls=30)
    assert got["failed"] == 0, got["first"]
    assert got["ok"] == 60
    assert got["counter"] == 60  # every read-modify-write increment kept
    assert got["docs"] == 60
