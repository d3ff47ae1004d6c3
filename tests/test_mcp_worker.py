"""The MCP server's standing worker (workbench/mcp/calls.py): it runs the calls in turn, a call
cancelled before it began never runs (no row, no write), and an idle worker ends, its thread
gone, and the next call starts another."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from _mcp import mcp_gem
from conftest import GemBuilder

import workbench
from workbench.mcp.calls import CallJob, Worker


def _until(cond: Callable[[], bool], seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.01)


def test_a_call_cancelled_before_it_began_never_runs(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    bench = opened(mcp_gem(gem))
    worker = Worker("test worker: cancelled", idle=0.5)
    slow, queued = CallJob(bench, "slow_py", {}), CallJob(bench, "count", {"by": 5})
    ended = {id(slow): threading.Event(), id(queued): threading.Event()}
    worker.submit(slow, ended[id(slow)].set)
    worker.submit(queued, ended[id(queued)].set)
    _until(lambda: slow.running)
    assert queued.interrupt() is False  # not begun: skipped, not interrupted mid-way
    assert slow.interrupt() is True
    assert ended[id(slow)].wait(15) and ended[id(queued)].wait(15)
    assert slow.result is not None and slow.result.error is not None
    assert slow.result.error.code == "E_INTERRUPTED"
    assert queued.abandoned and queued.result is None and queued.error is None
    assert list(bench.calls().tool) == ["slow_py"]  # the queued call left no row
    assert "n" not in set(bench.kv().key)  # nor a write


def test_an_idle_worker_ends_and_the_next_call_starts_another(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    bench = opened(mcp_gem(gem))
    worker = Worker("test worker: idle", idle=0.2)
    for n in (3, 4):
        job, ended = CallJob(bench, "double", {"n": n}), threading.Event()
        worker.submit(job, ended.set)
        assert ended.wait(30)
        assert job.result is not None and job.result.value == {"doubled": 2 * n}
        _until(lambda: not worker.alive)
        _until(lambda: not any(t.name == "test worker: idle" for t in threading.enumerate()))
