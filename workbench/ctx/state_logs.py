"""A log a capability keeps on the bench (the activity log, the HTTP log) as a state part of
role "log" (ctx/parts.py): a snapshot is the ring as it is (its rows shared, not copied), a
restore puts it back exactly (what was appended since goes, what was dropped comes back).

A log is written by calls, never put from someone's JSON: its dump is its rows, a put takes
only an empty list (it empties the log) and refuses rows with the part's coded error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import state_check as check
from .kept import Ring
from .parts import Refusal, StateContext, StatePart

__all__ = ["ring_part"]


def ring_part(name: str, ring_of: Callable[[Any], Ring[Any] | None]) -> StatePart:
    """The "log" part `name` of the Ring `ring_of(backend)` (None: the bench has no such log)."""

    def ring(cx: StateContext) -> Ring[Any] | None:
        return ring_of(cx.backend) if cx.backend is not None else None

    def dump(cx: StateContext) -> list[Any]:
        r = ring(cx)
        return list(r) if r is not None else []

    def put(cx: StateContext, value: Any, bad: Refusal) -> None:
        if check.items(value, bad, name):
            raise bad(name, "is a log the bench's calls write: a state does not put rows in it")
        r = ring(cx)
        if r is not None:
            r.clear()

    def snapshot(cx: StateContext) -> Any:
        r = ring(cx)
        return r.saved() if r is not None else None

    def restore(cx: StateContext, saved: Any) -> None:
        r = ring(cx)
        if r is not None and saved is not None:
            r.put_back(saved)

    return StatePart(name, dump=dump, put=put, role="log", snapshot=snapshot, restore=restore, blank=list)
