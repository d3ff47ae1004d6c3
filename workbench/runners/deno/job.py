"""A function run in a thread that no Ctrl-C can cut short: the sandbox's start (lifecycle.py)."""

from __future__ import annotations

import _thread
import threading
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

_T = TypeVar("_T")


class Job(Generic[_T]):
    """A function run in a thread of its own, which no Ctrl-C can cut short (Python raises it in
    the main thread only), and which a caller may wait for, or keep from beginning.

    Started with _thread.start_new_thread, one C call: threading.Thread.start, cut short by a
    Ctrl-C, may leave a Thread that never runs (join fails on it) or never leaves threading's
    list. A Ctrl-C in start() may come before that call or after it, and `started` is not set
    then: the thread and a caller that waits claim the job in one step each (dict.setdefault),
    and a caller that claims it first does not wait, while the thread, if it runs, does
    nothing. A wait interrupted by a Ctrl-C may be done again: it waits on a lock the job holds
    until it ended (not on a threading.Event, whose lock a Ctrl-C as its wait enters the lock's
    `with` keeps held for good, and every later wait and set then blocks for ever)."""

    def __init__(self, fn: Callable[[], _T]) -> None:
        self.fn = fn
        self.claim: dict[str, str] = {}
        self.gate = threading.Lock()  # held until the job ended
        self.gate.acquire()
        self.ended = False  # set before the gate opens
        self.result: _T | None = None
        self.error: Exception | None = None
        self.ident = 0  # the thread's, once it claimed the job
        self.started = False  # start() returned: the thread runs, or ran

    def start(self) -> None:
        _thread.start_new_thread(self._run, ())
        self.started = True

    def _run(self) -> None:
        if self.claim.setdefault("by", "thread") != "thread":
            return
        self.ident = _thread.get_ident()
        try:
            self.result = self.fn()
        except Exception as exc:  # noqa: BLE001  (for the caller, which raises it)
            self.error = exc
        finally:
            self.ended = True
            self.gate.release()

    def wait(self) -> None:
        """Until it ended, or at once after a start() cut short before the thread began (it then
        never will)."""
        if not (self.started or self.claim.setdefault("by", "caller") == "thread"):
            return
        if not self.ended:  # the gate is the job's until then: nobody else can hold it
            self.gate.acquire()  # (a Ctrl-C once it returned leaves it held, but `ended` set)
            self.gate.release()
