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

from ._plan import is_notebook, plan, seconds

if TYPE_CHECKING:
    from xdist.scheduler import LoadScheduling

KEY = "gem_workbench/notebook_seconds"
KEEP = 5000  # notebooks remembered; past that, only the last run's

__all__ = ["KEY", "KEEP", "NotebookSeconds", "is_notebook", "plan", "seconds"]


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
