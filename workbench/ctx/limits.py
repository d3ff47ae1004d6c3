"""Time bounds of a call, and the `Limits` the rule modules read (SEC5).

`Limits` is a platform profile's (workbench.platforms.base): every bound the workbench puts on
what a tool controls, as named data. Each call's session carries its profile's limits and a
deadline that every ctx call checks.
"""

from __future__ import annotations

import time

from .._errors import WorkbenchError
from ..platforms.base import Limits

__all__ = ["DEFAULT", "MAX_TICKS", "Limits", "deadline_after", "remaining"]

DEFAULT = Limits()
# the reads of a running clock a sandboxed call keeps for its pin (worker/clock.ts MAX_TICKS): past
# them a replay's clock runs on from the last one
MAX_TICKS = 1000


def deadline_after(seconds: float | None) -> float | None:
    """A monotonic deadline `seconds` from now (None: no deadline)."""
    return None if seconds is None else time.monotonic() + seconds


def remaining(deadline: float | None, what: str) -> float | None:
    """Seconds left before `deadline`, or E_TIMEOUT when none are; None when unbounded."""
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise WorkbenchError(
            "E_TIMEOUT",
            f"{what}: the call ran out of time (its timeout covers the ctx calls it makes)",
            method=what,
        )
    return left
