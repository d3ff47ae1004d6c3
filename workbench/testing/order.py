"""Notebooks spread over pytest-xdist workers by the time each took in its last run.

The times live in pytest's cache (`.pytest_cache`, key `gem_workbench/notebook_seconds`); a
notebook never timed counts as the longest. Without the cache (a first run,
`-p no:cacheprovider`), or in one process, the order stays as collected.

- A run of notebooks only (`gem-workbench test -n N`) is planned: the notebooks are split
  between the workers so that their sums of times are as even as the times allow, and each
  worker runs its share longest first (`TimedScheduling`). xdist's own scheduler hands out items
  in collection order, two to each worker at the start: even longest-first, the two longest
  notebooks then ran on one worker (6 tutorials, 2 workers: 3.78 s against 3.30 s).
- In a run that mixes notebooks with other tests, xdist schedules, and each worker sorts the
  notebooks longest first among the places they hold in the collection.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from xdist.scheduler import LoadScheduling

KEY = "gem_workbench/notebook_seconds"
KEEP = 5000  # notebooks remembered; past that, only the last run's


def is_notebook(nodeid: str) -> bool:
    return ".ipynb::" in nodeid


class NotebookSeconds:
    """A pytest plugin object: records notebook times, orders notebooks on xdist workers."""

    def __init__(self, cache: Any) -> None:
        self.cache = cache
        self.recorded: dict[str, float] = {}

    def _known(self) -> dict[str, Any]:
        seconds = self.cache.get(KEY, {})
        return seconds if isinstance(seconds, dict) else {}  # the file is the user's: any shape

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if not hasattr(config, "workerinput"):  # one process: the order a user reads
            return
        known = self._known()
        slots = [i for i, item in enumerate(items) if is_notebook(item.nodeid)]

        def longest_first(item: pytest.Item) -> float:
            value = seconds(known.get(item.nodeid))
            return -value if value is not None else -math.inf

        # the other items keep their places; every worker computes the same order
        for i, item in zip(slots, sorted((items[i] for i in slots), key=longest_first)):
            items[i] = item

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # under xdist the controller sees every worker's reports too: it alone saves them
        if report.when == "call" and report.passed and is_notebook(report.nodeid):
            self.recorded[report.nodeid] = report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput") or not self.recorded:
            return
        merged = {**self._known(), **self.recorded}
        self.cache.set(KEY, merged if len(merged) <= KEEP else self.recorded)

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> LoadScheduling | None:
        if config.getvalue("dist") != "load":  # the user chose another way of sharing
            return None
        from ._xdist import TimedScheduling  # imports xdist: only a run that uses it

        return TimedScheduling(config, log, self._known())


def plan(seconds: list[float], workers: int) -> list[list[int]]:
    """The indices of `seconds` split into `workers` lists whose sums are close, each longest first.

    Longest first to the least loaded worker (LPT), then single moves and swaps between the most
    and the least loaded worker while they lower the larger of the two sums.
    """
    shares: list[list[int]] = [[] for _ in range(max(1, workers))]
    loads = [0.0] * len(shares)
    for i in sorted(range(len(seconds)), key=lambda i: -seconds[i]):
        w = loads.index(min(loads))
        shares[w].append(i)
        loads[w] += seconds[i]
    for _ in range(len(seconds) * len(shares)):  # each step lowers the larger sum: it ends
        hi, lo = loads.index(max(loads)), loads.index(min(loads))
        gap = loads[hi] - loads[lo]
        # moving d from hi to lo (or swapping a for b: d = a - b) leaves max(hi - d, lo + d)
        best, pick = gap, None
        for a in shares[hi]:
            for b in [None, *shares[lo]]:
                d = seconds[a] - (seconds[b] if b is not None else 0.0)
                if 0 < d < gap and abs(gap - 2 * d) < best:
                    best, pick = abs(gap - 2 * d), (a, b)
        if pick is None:
            break
        a, b = pick
        shares[hi].remove(a)
        shares[lo].append(a)
        loads[hi] -= seconds[a]
        loads[lo] += seconds[a]
        if b is not None:
            shares[lo].remove(b)
            shares[hi].append(b)
            loads[lo] -= seconds[b]
            loads[hi] += seconds[b]
    return [sorted(share, key=lambda i: -seconds[i]) for share in shares]


def seconds(value: Any) -> float | None:
    """A time from the cache, or None for whatever else the user's cache file holds there."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok and value >= 0 else None
