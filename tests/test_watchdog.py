"""ctx/_watchdog.py: one thread, woken only when an earlier deadline than the one it waits for
is armed (the ctx calls of one tool call share its deadline: arming them wakes nothing)."""

from __future__ import annotations

import threading
import time

import pytest

from workbench.ctx import _watchdog


def test_arming_a_later_deadline_wakes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    fired = threading.Event()
    waited_for = time.monotonic() + 60
    first = _watchdog.arm(waited_for, fired.set)
    try:
        for _ in range(3000):  # until the thread sleeps until `first` (another test's may be due)
            if _watchdog._wake_at == waited_for:
                break
            time.sleep(0.01)
        assert _watchdog._wake_at == waited_for
        notified: list[int] = []
        real = _watchdog._lock.notify
        monkeypatch.setattr(_watchdog._lock, "notify", lambda *a: (notified.append(1), real(*a)))
        later = waited_for + 60
        for _ in range(500):  # a tool call's ctx calls: one deadline, armed and disarmed in turn
            _watchdog.disarm(_watchdog.arm(later, fired.set))
        assert notified == [] and not fired.is_set()
        soon = _watchdog.arm(time.monotonic() + 0.05, fired.set)
        assert notified == [1]  # an earlier deadline wakes it, and it fires in time
        assert fired.wait(30)
        _watchdog.disarm(soon)
    finally:
        _watchdog.disarm(first)


def test_SEC5_an_interrupt_that_fails_leaves_the_watchdog_serving_other_deadlines() -> None:
    """A call's interrupt that raises (its bench closed meanwhile: "Cannot operate on a closed
    database") is dropped, not repeated; the one thread lives on and fires the next deadline.
    Before, the exception ended the thread, and no later deadline in the process was enforced."""
    calls: list[int] = []

    def broken() -> None:
        calls.append(1)
        raise RuntimeError("Cannot operate on a closed database.")

    fired = threading.Event()
    bad = _watchdog.arm(time.monotonic() + 0.01, broken)
    for _ in range(3000):
        if calls:
            break
        time.sleep(0.01)
    time.sleep(0.1)  # (a repeat, were it kept, is due every REPEAT = 0.01 s)
    assert calls == [1] and bad not in _watchdog._armed
    good = _watchdog.arm(time.monotonic() + 0.05, fired.set)
    try:
        assert fired.wait(30), "the watchdog thread died with the failing interrupt"
        assert _watchdog._thread is not None and _watchdog._thread.is_alive()
    finally:
        _watchdog.disarm(good)
