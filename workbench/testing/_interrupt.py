"""Ctrl-C during a notebook run stops the run and reaches the caller as KeyboardInterrupt.

nbclient handles SIGINT itself while it executes a notebook: it shuts the kernel down, the cell
fails as "the kernel died", and pytest went on with the next notebook, so a Ctrl-C never
stopped a notebook suite. Here SIGINT cancels the run instead: its cleanup runs (the cell is
interrupted, the kernel shut down and its files removed), then KeyboardInterrupt is raised, and
pytest stops as after a Ctrl-C in any test. A second Ctrl-C kills the kernels at once.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

#: The handler of the run in progress on the main thread's loop (None: no run, or on a thread,
#: where there are no signal handlers), that loop, and how many times Ctrl-C was pressed.
_handler: Callable[[], None] | None = None
_loop: asyncio.AbstractEventLoop | None = None
_presses = 0


def run(fn: Callable[[], Awaitable[T]], *, what: object, on_again: Callable[[], None]) -> T:
    """`fn()` run to its end on jupyter_core's event loop of this thread; a Ctrl-C cancels it
    and, once it has ended, raises KeyboardInterrupt (naming `what`, unless `fn` raised one
    saying more); a second one calls `on_again` (kill)."""
    from jupyter_core.utils import run_sync

    async def guarded() -> T:
        global _handler, _loop, _presses
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
        assert task is not None

        def on_sigint() -> None:
            global _presses
            _presses += 1
            if _presses > 1:
                on_again()
            task.cancel()

        previous = signal.getsignal(signal.SIGINT)
        handler = _ignore if previous == signal.SIG_IGN else on_sigint
        try:
            loop.add_signal_handler(signal.SIGINT, handler)
        except (RuntimeError, ValueError):  # not the main thread: Ctrl-C is not ours to handle
            return await fn()
        _handler, _loop, _presses = handler, loop, 0
        try:
            result = await fn()
        except KeyboardInterrupt:  # (fn said where it was)
            raise
        except BaseException as exc:
            if _presses:  # (nbclient turns a cancelled cell into DeadKernelError)
                cause = None if isinstance(exc, asyncio.CancelledError) else exc
                raise KeyboardInterrupt(_said(what)) from cause
            raise
        finally:
            _handler = _loop = None
            loop.remove_signal_handler(signal.SIGINT)
            if previous is not None:  # (None: a handler not set from Python, left as it is now)
                signal.signal(signal.SIGINT, previous)
        if _presses:  # pressed as the run ended
            raise KeyboardInterrupt(_said(what))
        return result

    return run_sync(guarded)()


def _said(what: object) -> str:
    return f"{what}: Ctrl-C" + (f" {_presses} times: its kernel was killed" if _presses > 1 else "")


def _ignore() -> None:
    """The handler of a process started with SIGINT ignored (a background job of a script)."""


def _ours() -> bool:
    """Whether the run in progress is this loop's (another thread may run a notebook too)."""
    return _handler is not None and asyncio.get_running_loop() is _loop


def reclaim() -> None:
    """Handle SIGINT here again after nbclient set (or removed) its own handler."""
    if _ours():
        assert _handler is not None and _loop is not None
        _loop.add_signal_handler(signal.SIGINT, _handler)


def pressed() -> bool:
    """Whether Ctrl-C was pressed during this loop's run in progress."""
    return _ours() and _presses > 0
