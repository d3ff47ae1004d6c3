"""How notebooks are shared among xdist workers by their times (order.py re-exports these):
pure functions, below both the plugin (order.py) and its scheduler (_xdist.py), so the
scheduler never imports the plugin that imports it."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["is_notebook", "plan", "seconds"]


def is_notebook(nodeid: str) -> bool:
    return ".ipynb::" in nodeid


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
