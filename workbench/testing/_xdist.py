"""The xdist scheduler of a run of notebooks only (see `order`); imported only by such a run."""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadScheduling

from ._plan import is_notebook, plan, seconds


class TimedScheduling(LoadScheduling):
    """xdist's load scheduling, except that a run of notebooks only follows `plan()`.

    A worker starts an item only once it holds the next one (or was told to stop), so each gets
    two items at the start, and one more as each ends. Each is the next of its share; a worker
    whose share is used up takes the shortest item left in the share with the most time left
    (its worker runs late). Items handed back by a worker that crashed go first.
    """

    # as LoadScheduling.__init__ sets them (mypy cannot infer them through xdist's import cycle)
    collection: list[str] | None
    maxschedchunk: int | None

    def __init__(self, config: pytest.Config, log: Any, recorded: dict[str, Any]) -> None:
        super().__init__(config, log)
        self.recorded = recorded  # nodeid -> seconds, as the cache holds them
        self.shares: dict[Any, list[int]] = {}  # worker -> the indices it has yet to get
        self.costs: list[float] = []  # index -> expected seconds

    def schedule(self) -> None:
        if self.collection is not None:  # a worker added later: LoadScheduling's way
            return super().schedule()
        collection = next(iter(self.node2collection.values()))
        nodes = self.nodes
        if (
            len(nodes) < 2
            or not collection
            or not all(map(is_notebook, collection))
            or any(c != collection for c in self.node2collection.values())  # xdist reports it
        ):
            return super().schedule()
        times = [seconds(self.recorded.get(nodeid)) for nodeid in collection]
        longest = max((t for t in times if t is not None), default=1.0)  # never timed: the longest
        self.costs = [longest if t is None else t for t in times]
        self.shares = dict(zip(nodes, plan(self.costs, len(nodes))))
        self.collection = collection
        self.pending[:] = range(len(collection))
        if self.maxschedchunk is None:  # as LoadScheduling.schedule sets it
            self.maxschedchunk = len(collection)
        # fullest shares first: a worker with a one-notebook share then takes a second only if
        # items are left once the others have their two
        for node in sorted(nodes, key=lambda n: -len(self.shares[n])):
            self._send_tests(node, min(2, len(self.shares[node])))
        for node in nodes:
            if self.pending and len(self.node2pending[node]) < 2:
                self._send_tests(node, 2 - len(self.node2pending[node]))
        if not self.pending:
            for node in nodes:
                node.shutdown()

    def _send_tests(self, node: Any, num: int) -> None:
        if not self.shares:
            return super()._send_tests(node, num)
        chosen = [i for i in (self._take(node) for _ in range(num)) if i is not None]
        if chosen:
            self.node2pending[node].extend(chosen)
            node.send_runtest_some(chosen)

    def _take(self, node: Any) -> int | None:
        planned = {i for share in self.shares.values() for i in share}
        handed_back = [i for i in self.pending if i not in planned]
        share = self.shares.get(node, [])
        if handed_back:
            i = handed_back[0]
        elif share:
            i = share.pop(0)
        else:  # (among shares with items left: all may have 0 s left, recorded times of 0)
            left = [s for s in self.shares.values() if s]
            if not left:
                return None
            i = max(left, key=lambda s: sum(self.costs[i] for i in s)).pop()
        self.pending.remove(i)
        return i
