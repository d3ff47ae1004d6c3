"""Ctx breakpoints in the debugger panel: a breakpoint whose source is a ctx name
(`ctx.files.write`, `ctx.fetch`, `ctx.files.*`, as `bench.debug(break_at=...)` takes them,
ctxbreak.py) pauses a call before that ctx call, whatever language the tool is in.

The workbench answers every ctx call, so this pause is in Python: a standing `CallHooks` on the
bench waits in `on_ctx_call` (the cell's thread) until the panel says Continue (or Next, Step
In, Step Out: each lets the ctx call run). The panel sees the `JS: <gem>` thread stopped with
one frame, `ctx.files.write`, and its arguments as variables. The time waited is given back to
the call (CallSession.extend_deadline).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ..ctx.hooks import CallHooks

__all__ = ["CtxBreaks", "py_children", "py_value"]

WAIT_STEP = 0.1  # seconds between looks at whether the bench or the link closed


class CtxBreaks(CallHooks):
    """The standing hook of a debugged bench: ctx calls its breakpoints name wait for the panel.
    `pause(session, method, args, kwargs)` shows the pause, `resumed()` ends it (both the link's)."""

    def __init__(
        self,
        *,
        stops_at: Callable[[str], bool],
        pause: Callable[[Any, str, tuple[Any, ...], dict[str, Any]], None],
        resumed: Callable[[], None],
        closed: Callable[[], bool],
    ) -> None:
        self.stops_at, self._pause, self._resumed, self._closed = stops_at, pause, resumed, closed
        self._go = threading.Event()

    def on_ctx_call(
        self,
        *,
        session: Any,
        method: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        answer: Callable[[Callable[..., Any]], Any],
        **_: Any,
    ) -> Any:
        if self._closed() or not self.stops_at(method):
            return answer(fn)
        start = time.monotonic()
        self._go.clear()
        self._pause(session, method, args, kwargs)
        try:
            while not self._go.wait(WAIT_STEP):  # (a kernel interrupt lands between waits)
                if self._closed():
                    break
        finally:
            session.extend_deadline(time.monotonic() - start)
            self._resumed()
        return answer(fn)

    def release(self) -> None:
        """Let the waiting ctx call run (the panel's Continue or a step)."""
        self._go.set()

    def close(self) -> None:
        self._go.set()


def py_value(value: Any, *, limit: int) -> tuple[str, str, bool]:
    """A Python value as the panel shows it: its text (at most `limit` characters), its type's
    name, and whether it has children to expand."""
    try:
        text = repr(value)
    except Exception as exc:  # noqa: BLE001 - a value's own repr may raise: shown, not raised
        text = f"<repr failed: {type(exc).__name__}>"
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text, type(value).__name__, isinstance(value, (dict, list, tuple)) and len(value) > 0


def py_children(value: Any, *, most: int) -> list[tuple[str, Any]]:
    """A dict's items or a sequence's elements (at most `most`), named as the panel lists them."""
    if isinstance(value, dict):
        return [(str(k), v) for k, v in list(value.items())[:most]]
    if isinstance(value, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(value[:most])]
    return []
