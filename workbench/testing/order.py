"""Notebooks longest first under pytest-xdist, by the time each took in its last run.

pytest-xdist hands items to its workers in collection order, a couple at a time. Name order
can leave one worker running the longest notebook while the other is done: largest-first
order makes the last notebook to finish a short one, so both workers end together. The times
live in pytest's cache (`.pytest_cache`, key `gem_workbench/notebook_seconds`); a notebook
never timed counts as the longest. Without the cache (a first run, `-p no:cacheprovider`),
or in one process, the order stays as collected.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

KEY = "gem_workbench/notebook_seconds"
KEEP = 5000  # notebooks remembered; past that, only the last run's


def _is_notebook(nodeid: str) -> bool:
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
        slots = [i for i, item in enumerate(items) if _is_notebook(item.nodeid)]

        def longest_first(item: pytest.Item) -> float:
            value = known.get(item.nodeid)
            return -value if isinstance(value, (int, float)) else -math.inf

        # the other items keep their places; every worker computes the same order
        for i, item in zip(slots, sorted((items[i] for i in slots), key=longest_first)):
            items[i] = item

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # under xdist the controller sees every worker's reports too: it alone saves them
        if report.when == "call" and report.passed and _is_notebook(report.nodeid):
            self.recorded[report.nodeid] = report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput") or not self.recorded:
            return
        merged = {**self._known(), **self.recorded}
        self.cache.set(KEY, merged if len(merged) <= KEEP else self.recorded)
