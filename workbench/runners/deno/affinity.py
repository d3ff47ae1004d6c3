"""A call's conversation on one CPU: the calling thread and the sandbox's threads take turns.

A JS call is a chain of hand-offs (Python -> Deno main -> Worker -> main -> Python, twice more
per ctx call) in which one thread runs at a time. On the VMs we measure on, a hand-off to a
thread asleep on another vCPU costs an inter-processor interrupt, tens of µs each: keeping the
chain on the CPU the calling thread already runs on took a kv.get round trip from JS from
~400 to ~260 µs (tests/bench, `deno_ctx_round_trip`).

So for the time of a top-level call, the calling thread is pinned to its current CPU, and the
sandbox's threads join it there (moved again only when the caller is on another CPU next
time). V8's platform threads (concurrent GC and compilation) stay free: they run beside the
tool, not in turns with it. Nothing stays pinned through a long wait: when the sandbox has
worked for `RELEASE_AFTER` without a word (a tool computing), its threads are set free again
and the calling thread with them, so the scheduler can spread the work as before. Where
affinity cannot be set (not Linux, one CPU, a mask the caller set), nothing happens.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from functools import cache

RELEASE_AFTER = 0.02  # seconds of one wait for the sandbox before its threads are set free
FREE_THREADS = ("V8 ",)  # thread-name prefixes never pinned: V8's platform workers


@cache
def _getcpu() -> Callable[[], int] | None:
    """libc's sched_getcpu (a vDSO read, no system call), or None where there is none."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    try:
        fn = ctypes.CDLL(None).sched_getcpu
    except (OSError, AttributeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_int, []
    return fn


class Colocation:
    """The CPU one sandbox process's threads are pinned to, if any."""

    def __init__(self) -> None:
        self.pid: int | None = None  # the process pinned, and where, and its mask before
        self.cpu = -1
        self.mask: set[int] = set()

    def join(self, pid: int) -> set[int] | None:
        """Pin the calling thread to its CPU, and the process's threads there too; the
        thread's mask to give back to `leave` (None: nothing was pinned)."""
        getcpu = _getcpu()
        if getcpu is None:
            return None
        cpu = getcpu()
        try:
            mine = os.sched_getaffinity(0)
            if len(mine) < 2 or cpu not in mine:
                return None
            if self.pid != pid or self.cpu != cpu:
                if self.pid != pid:
                    self.mask = os.sched_getaffinity(pid)
                self._set(pid, {cpu})
                self.pid, self.cpu = pid, cpu
            os.sched_setaffinity(0, {cpu})
        except OSError:  # the process is gone, or affinity is not ours to set
            return None
        return mine

    def leave(self, mine: set[int] | None) -> None:
        """Give the calling thread its mask back (after `join`)."""
        if mine is not None:
            try:
                os.sched_setaffinity(0, mine)
            except OSError:
                pass

    def release(self, mine: set[int] | None) -> None:
        """The sandbox is computing: its threads and the calling thread are free again."""
        if self.pid is not None:
            try:
                self._set(self.pid, self.mask)
            except OSError:
                pass
            self.pid = None
        self.leave(mine)

    @staticmethod
    def _set(pid: int, cpus: set[int]) -> None:
        """Every thread of `pid` but V8's platform workers to `cpus`; threads it starts later
        (a new Worker, tokio's) inherit it from the thread that starts them."""
        base = f"/proc/{pid}/task"
        for tid in os.listdir(base):
            try:
                with open(f"{base}/{tid}/comm", "rb") as f:
                    if f.read().decode(errors="replace").startswith(FREE_THREADS):
                        continue
                os.sched_setaffinity(int(tid), cpus)
            except (FileNotFoundError, ProcessLookupError):  # a thread that just ended
                continue
