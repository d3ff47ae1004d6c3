"""Notebooks under pytest-xdist: the plan that splits them by their last times, the scheduler
that follows it (xdist's own LoadScheduling code, fake workers), a real `-n 2` run, and the
kernel client that does not wait for IOPub to fall quiet."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from queue import Empty
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_testing_plugin import write_notebook

from workbench.testing.order import plan

pytest_plugins = ["pytester"]

seconds_lists = st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), max_size=9)


def makespan(seconds: list[float], shares: list[list[int]]) -> float:
    return max(sum(seconds[i] for i in share) for share in shares)


@given(seconds_lists, st.integers(min_value=1, max_value=4))
def test_plan_gives_every_notebook_to_one_worker_longest_first(seconds: list[float], workers: int):
    shares = plan(seconds, workers)
    assert len(shares) == workers
    assert sorted(i for share in shares for i in share) == list(range(len(seconds)))
    for share in shares:
        assert [seconds[i] for i in share] == sorted((seconds[i] for i in share), reverse=True)


@given(seconds_lists)
def test_plan_for_two_workers_is_within_7_6_of_the_best_split(seconds: list[float]):
    """LPT's bound for two workers; the swaps that follow usually find the best split."""
    best = min(
        max(
            sum(s for s, side in zip(seconds, sides) if side),
            sum(s for s, side in zip(seconds, sides) if not side),
        )
        for sides in itertools.product((0, 1), repeat=len(seconds))
    )
    assert makespan(seconds, plan(seconds, 2)) <= best * 7 / 6 + 1e-9


def test_plan_splits_the_tutorials_better_than_longest_first_in_pairs():
    # the tutorials' times under -n 2 (03, 06, 04, 01, 02, 05): xdist's own order gave one
    # worker 03 + 06 + 05 = 3.78 s and the other 3.30 s
    seconds = [1.70, 1.24, 1.23, 1.17, 0.90, 0.84]
    shares = plan(seconds, 2)
    assert makespan(seconds, shares) == pytest.approx(3.64)
    assert sorted(map(sorted, shares)) == [[0, 4, 5], [1, 2, 3]]


class FakeWorker:
    """What LoadScheduling uses of xdist's WorkerController."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent += indices

    def shutdown(self) -> None:
        self.shutting_down = True

    def __repr__(self) -> str:
        return self.name


def scheduler(pytester: pytest.Pytester, seconds: dict[str, float], collection: list[str]) -> Any:
    from workbench.testing._xdist import TimedScheduling

    sched = TimedScheduling(pytester.parseconfig("--tx", "2*popen"), None, seconds)
    workers = [FakeWorker("gw0"), FakeWorker("gw1")]
    for w in workers:
        sched.add_node(w)
    for w in workers:
        sched.add_node_collection(w, collection)
    sched.schedule()
    return sched, workers


NBS = [f"nbs/{n}.ipynb::{n}" for n in "abcdef"]


def test_the_scheduler_hands_each_worker_its_share_then_what_is_left_of_the_latest(
    pytester: pytest.Pytester,
):
    times = dict(zip(NBS, [9.0, 5.0, 4.0, 3.0, 2.0, 1.0]))  # plan: {a, d} = 12, {b, c, e, f} = 12
    sched, (w0, w1) = scheduler(pytester, times, NBS)
    assert (w0.sent, w1.sent) == ([0, 3], [1, 2])  # two each: one to run, one to hold
    sched.mark_test_complete(w1, 1, 5.0)  # b done: w1 gets e, the next of its share
    assert w1.sent == [1, 2, 4] and sched.pending == [5]
    sched.mark_test_complete(w0, 0, 2.0)  # a ran short; w0's share is used up: it takes f,
    assert w0.sent == [0, 3, 5] and not sched.pending  # the last of w1's, which runs late


def test_the_scheduler_hands_a_crashed_workers_notebooks_out_first(pytester: pytest.Pytester):
    times = dict(zip(NBS, [9.0, 5.0, 4.0, 3.0, 2.0, 1.0]))
    sched, (w0, w1) = scheduler(pytester, times, NBS)
    assert sched.remove_node(w0) == NBS[0]  # it was running a and held d
    sched.mark_test_complete(w1, 1, 5.0)
    assert w1.sent == [1, 2, 3]  # d before the rest of w1's own share


def test_the_scheduler_gives_every_worker_two_items_when_times_are_zero(pytester: pytest.Pytester):
    """A worker holding one item cannot start it: a share of 0 s left is still a share."""
    times = dict(zip(NBS[:4], [5.0, 0.0, 0.0, 0.0]))  # plan: {a}, {b, c, d}
    sched, (w0, w1) = scheduler(pytester, times, NBS[:4])
    assert (w0.sent, w1.sent) == ([0, 3], [1, 2]) and not sched.pending
    assert w0.shutting_down and w1.shutting_down


def test_a_worker_that_replaces_a_crashed_one_gets_what_is_left(pytester: pytest.Pytester):
    times = dict(zip(NBS, [9.0, 0.0, 0.0, 0.0, 0.0, 0.0]))  # plan: {a}, {b, c, d, e, f}
    sched, (w0, w1) = scheduler(pytester, times, NBS)
    assert (w0.sent, w1.sent) == ([0, 5], [1, 2])
    sched.remove_node(w1)  # running b, holding c
    w2 = FakeWorker("gw2")
    sched.add_node(w2)
    sched.add_node_collection(w2, NBS)
    sched.schedule()
    # c (handed back) first, then the last of the share nobody runs now
    assert w2.sent == [2, 4]
    sched.mark_test_complete(w2, 2, 0.0)
    sched.mark_test_complete(w0, 0, 9.0)
    # every item once, but b: xdist reports the item a worker crashed in, and does not rerun it
    assert sorted(w0.sent + w2.sent) == [0, 2, 3, 4, 5] and not sched.pending


def test_the_scheduler_leaves_mixed_runs_to_xdist(pytester: pytest.Pytester):
    collection = [*NBS[:2], "tests/test_x.py::test_one", "tests/test_x.py::test_two"]
    sched, (w0, w1) = scheduler(pytester, dict(zip(NBS, [1.0, 9.0])), collection)
    assert not sched.shares and (w0.sent, w1.sent) == ([0, 1], [2, 3])  # consecutive pairs


def test_under_xdist_a_notebook_run_follows_the_plan(pytester: pytest.Pytester):
    for name in "abcd":
        write_notebook(pytester.path / "nbs" / f"{name}.ipynb", "x = 1")
    seconds = pytester.path / ".pytest_cache" / "v" / "gem_workbench" / "notebook_seconds"
    seconds.parent.mkdir(parents=True)
    # longest first in pairs (xdist's way) would run a + b on one worker: 14 s against 5 s
    seconds.write_text(json.dumps({f"nbs/{n}.ipynb::{n}": s for n, s in zip("abcd", [9, 5, 4, 1])}))
    ran = pytester.runpytest_subprocess("--nb", "nbs", "-p", "no:randomly", "-n", "2", "-v")
    ran.assert_outcomes(passed=4)
    by_worker: dict[str, set[str]] = {}
    for line in ran.outlines:
        if "] PASSED nbs/" in line:
            worker = line.split("]")[0].split("[")[-1]
            by_worker.setdefault(worker, set()).add(line.split("::")[-1].strip())
    assert sorted(map(sorted, by_worker.values())) == [["a", "d"], ["b", "c"]], ran.outlines


class ScriptedClient:
    """ReadyClient's `wait_for_ready` against scripted channels (no kernel: what it does when
    IOPub is slow to join or the kernel dies is not reproducible with a real one)."""

    def __init__(self, iopub_silent_for: int, alive: bool = True) -> None:
        self.requests = 0
        self.iopub_polls = 0
        self.iopub_silent_for = iopub_silent_for
        self.alive = alive
        self.info: dict[str, Any] | None = None
        self.waits: list[float] = []

    def kernel_info(self) -> str:
        self.requests += 1
        return f"req-{self.requests}"

    async def get_shell_msg(self, timeout: float) -> dict[str, Any]:
        if not self.alive:
            raise Empty
        return {"msg_type": "kernel_info_reply", "content": {"status": "ok"}}

    async def get_iopub_msg(self, timeout: float) -> dict[str, Any]:
        self.iopub_polls += 1
        self.waits.append(timeout)
        if self.iopub_polls <= self.iopub_silent_for:
            raise Empty
        return {"msg_type": "status", "content": {"execution_state": "busy"}}

    async def _async_is_alive(self) -> bool:
        return self.alive

    def _handle_kernel_info_reply(self, msg: dict[str, Any]) -> None:
        self.info = msg


def wait_for_ready(client: ScriptedClient, timeout: float | None = 60) -> None:
    from workbench.testing._client import ReadyClient

    asyncio.run(ReadyClient.wait_for_ready(client, timeout))  # type: ignore[arg-type]


def test_ready_client_asks_again_until_iopub_carries_a_message():
    client = ScriptedClient(iopub_silent_for=3)
    wait_for_ready(client)
    assert client.info is not None and client.info["msg_type"] == "kernel_info_reply"
    assert (client.requests, client.iopub_polls) == (4, 4)  # one request per silent poll
    assert client.waits == [0.01, 0.02, 0.04, 0.08]  # each silence waited twice as long


def test_ready_client_asks_a_silent_kernel_at_most_every_200_ms():
    client = ScriptedClient(iopub_silent_for=10)
    wait_for_ready(client)
    assert client.waits[-4:] == [0.2] * 4


def test_ready_client_is_ready_at_the_first_iopub_message():
    client = ScriptedClient(iopub_silent_for=0)
    wait_for_ready(client)
    assert (client.requests, client.iopub_polls) == (1, 1)


def test_ready_client_reports_a_dead_kernel_and_a_timeout():
    with pytest.raises(RuntimeError, match="Kernel died before replying to kernel_info"):
        wait_for_ready(ScriptedClient(iopub_silent_for=0, alive=False))
    with pytest.raises(RuntimeError, match="didn't respond in 0 seconds"):
        wait_for_ready(ScriptedClient(iopub_silent_for=10**9), timeout=0)


def test_a_notebook_sees_its_first_cells_output(pytester: pytest.Pytester, tmp_path: Path):
    """Ready means IOPub is connected: nothing the first cell prints is lost."""
    from workbench.testing.notebook import run_notebook

    path = write_notebook(tmp_path / "first.ipynb", "print('first words')")
    for _ in range(3):
        nb = run_notebook(path)
        assert nb.cells[1].outputs[0]["text"] == "first words\n"
