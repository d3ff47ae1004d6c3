"""What this process can get of a CPU now, for tests whose budgets are clock time: a budget
scaled by `slowdown()` asks of a loaded machine the same work it asks of an idle one."""

from __future__ import annotations

import time


def slowdown(cpu_seconds: float = 0.3) -> float:
    """How many times its CPU time a CPU-bound loop of `cpu_seconds` takes on this thread now
    (at least 1): ~1 on an idle machine, ~3 where other work leaves the process a third of a
    CPU. Measured, not assumed: the same test passes beside CPU hogs and on a quiet machine."""
    wall, cpu = time.perf_counter(), time.thread_time()
    while time.thread_time() - cpu < cpu_seconds:
        pass
    return max(1.0, (time.perf_counter() - wall) / cpu_seconds)
