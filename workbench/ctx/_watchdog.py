"""One thread that interrupts SQLite work still running at a call's deadline (SEC5).

SQLite's progress handler runs between VM instructions, so one expensive instruction (`instr`
on megabyte strings, `randomblob` of 30 MB, a sort) can run for minutes without reaching it.
`Connection.interrupt()` is safe from another thread and stops the statement wherever it is:
the watchdog calls it at the deadline. Arming and disarming cost a lock and a dict operation;
the thread wakes only when the earliest deadline queued is due, and an arm wakes it only for a
deadline earlier than that one: never once per ctx call (the calls of one tool call share its
deadline). Disarmed entries wait in the queue until due, or until `arm` rebuilds it.

An interrupt that lands while no statement runs is lost: SQLite clears the flag when the next
statement starts. The work may be between two statements at its deadline (Python code, or a
statement still being prepared), so the watchdog repeats the interrupt every `REPEAT` seconds
until the work is disarmed: whatever starts after the deadline is stopped within that time.
"""

from __future__ import annotations

import heapq
import itertools
import math
import os
import threading
import time
from collections.abc import Callable

_mutex = threading.RLock()  # arm and disarm take it directly (a Condition's `with` is Python code)
_lock = threading.Condition(_mutex)
_armed: dict[int, tuple[float, Callable[[], None]]] = {}  # token -> (deadline, what to call)
_queue: list[tuple[float, int]] = []  # (deadline, token), lazily pruned
_tokens = itertools.count(1)
_thread: threading.Thread | None = None
_wake_at = math.inf  # when the thread wakes next (inf: when notified)
REPEAT = 0.01  # seconds between interrupts once a deadline has passed


def arm(deadline: float, interrupt: Callable[[], None]) -> int:
    """Call `interrupt()` at `deadline` (time.monotonic()) unless disarmed first."""
    global _thread
    with _mutex:
        if len(_queue) > 2 * len(_armed) + 64:  # mostly disarmed entries: rebuild from the armed
            _queue[:] = [(d, t) for t, (d, _) in _armed.items()]
            heapq.heapify(_queue)
        token = next(_tokens)
        _armed[token] = (deadline, interrupt)
        heapq.heappush(_queue, (deadline, token))
        if _thread is None:
            _thread = threading.Thread(target=_run, name="workbench-watchdog", daemon=True)
            _thread.start()
        elif deadline < _wake_at:
            _lock.notify()
    return token


def disarm(token: int) -> None:
    """The work finished in time: do not interrupt it."""
    with _mutex:
        _armed.pop(token, None)


def _run() -> None:
    global _wake_at
    with _lock:
        while True:
            now = time.monotonic()
            while _queue and _queue[0][0] <= now:  # due: fire it if still armed, else drop it
                _, token = heapq.heappop(_queue)
                fire = _armed.get(token)
                if fire is not None:
                    try:
                        fire[1]()  # under the lock: a disarm that raced it has not returned yet
                    except Exception:  # noqa: BLE001  (e.g. its database closed meanwhile: nothing
                        _armed.pop(token, None)  # runs there to stop; the thread must live on for
                        continue  # every other call's deadline)
                    heapq.heappush(_queue, (now + REPEAT, token))  # until disarmed
            _wake_at = _queue[0][0] if _queue else math.inf
            _lock.wait(None if not _queue else _wake_at - now)


def _forget_thread() -> None:
    global _thread
    _thread = None  # a forked child has no watchdog thread: the next arm starts one


os.register_at_fork(after_in_child=_forget_thread)
