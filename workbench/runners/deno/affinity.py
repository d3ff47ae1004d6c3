"""A call's conversation on one CPU: the calling thread and the sandbox's threads take turns.

A JS call is a chain of hand-offs (Python -> Deno main -> Worker -> main -> Python, twice more
per ctx call) in which one thread runs at a time. On the VMs we measure on, a hand-off to a
thread asleep on another vCPU costs an inter-processor interrupt, tens of µs each: keeping the
chain on the CPU the calling thread already runs on took a kv.get round trip from JS from
~400 to ~260 µs (tests/bench, `deno_ctx_round_trip`; docs/benchmarks.md).

So while the calling thread waits for the sandbox, it is pinned to its current CPU, and the
sandbox's threads are pinned there too (moved again only when the caller is on another CPU at
a later wait). The caller is pinned for its waits only: a thread or a process it starts
meanwhile (serving a ctx call, starting a new sandbox) would inherit its mask. V8's platform
threads (concurrent GC and compilation) stay free: they run beside the tool, not in turns with
it. Nothing stays pinned through a long wait: when the sandbox has worked for `RELEASE_AFTER`
without a word (a tool computing), its threads are set free again for the rest of the call,
so the scheduler can spread the work as before. Where affinity cannot be set (not Linux, one
CPU, a caller whose mask has one CPU), nothing happens.
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
    """Where one sandbox process's threads are pinned, if anywhere."""

    def __init__(self) -> None:
        self.pid: int | None = None  # the process, and its threads' mask before any pin
        self.mask: set[int] = set()
        self.cpu = -1  # the CPU its threads are pinned to; -1: free

    def join(self, pid: int) -> set[int] | None:
        """Pin the calling thread to its CPU, and the process's threads there too; the
        thread's own mask, for `leave` (None: nothing was pinned)."""
        getcpu = _getcpu()
        if getcpu is None:
            return None
        cpu = getcpu()
        try:
            mine = os.sched_getaffinity(0)
            if len(mine) < 2 or cpu not in mine:
                return None
            if self.pid != pid:  # a new process: read before any pin, so its own
                self.pid, self.mask, self.cpu = pid, os.sched_getaffinity(pid), -1
            if self.cpu != cpu:
                self.cpu = -2  # unknown until every thread is moved
                self._set(pid, {cpu})
                self.cpu = cpu
            os.sched_setaffinity(0, {cpu})
        except OSError:  # the process is gone, or affinity is not ours to set
            return None
        return mine

    def leave(self, mine: set[int] | None) -> None:
        """Give the calling thread its own mask back (after `join`)."""
        if mine is not None:
            try:
                os.sched_setaffinity(0, mine)
            except OSError:
                pass

    def release(self) -> None:
        """The sandbox is computing: its threads are free again."""
        if self.pid is not None and self.cpu != -1:
            try:
                self._set(self.pid, self.mask)
                self.cpu = -1
            except OSError:
                pass

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
