"""A call's conversation on one CPU: the calling thread and the sandbox's threads take turns.

A JS call is a chain of hand-offs (Python -> Deno main -> Worker -> main -> Python, twice more
per ctx call) in which one thread runs at a time. On the VMs we measure on, a hand-off to a
thread asleep on another vCPU costs an inter-processor interrupt, tens of µs each: keeping the
chain on the CPU the calling thread already runs on took a kv.get round trip from JS from
~400 to ~300 µs (tests/bench, `deno_ctx_round_trip`; docs/benchmarks.md).

So while the calling thread of a top-level call waits for the sandbox, it is pinned to its
current CPU, and the conversation's threads in the sandbox (the host's main thread, tokio's,
the host's Worker) are pinned there too, moved again only when the caller is on another CPU
at a later wait. The caller is pinned for its waits only and gets its own mask back after
each, even after a Ctrl-C: a thread or a process it starts meanwhile (serving a ctx call,
starting the next sandbox after a kill) inherits nothing. Left free: V8's platform threads
(concurrent GC and compiling, which run beside the tool) and Workers a tool starts itself
(one left running between calls would share the conversation's CPU). Nothing stays pinned
through a long wait: when the sandbox has worked for `RELEASE_AFTER` without a word (a tool
computing), its threads are set free for the rest of the call. A caller whose mask has one
CPU sets them free too, so they may run where it does. Where affinity cannot be set (not
Linux, a cpuset that forbids it, no /proc), nothing happens.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from collections.abc import Callable
from functools import cache

from .process import alive

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
    """Where one sandbox process's conversation threads are pinned, if anywhere."""

    def __init__(self) -> None:
        self.held: set[int] | None = None  # the calling thread's own mask while it is pinned
        self.forget()

    def forget(self) -> None:
        """A new process: nothing of it is pinned yet."""
        self.pid: int | None = None  # the process, and its threads' mask before any pin
        self.mask: set[int] = set()
        self.cpu = -1  # the CPU its conversation threads are pinned to; -1: free
        self.threads = 0  # its thread count then (as /proc counts links): a new one shows
        self.failed = False  # affinity is not ours to set there: not tried again

    def join(self, proc: subprocess.Popen[bytes]) -> None:
        """Pin the calling thread to its CPU, and the process's conversation threads there
        too; `leave` gives the thread its own mask back (also after a Ctrl-C anywhere here)."""
        getcpu = _getcpu()
        if getcpu is None or self.failed:
            return
        cpu = getcpu()
        try:
            mine = os.sched_getaffinity(0)
            if len(mine) < 2 or cpu not in mine:  # a caller its user pinned: the sandbox's
                self.release()  # threads are free to run where it runs
                return
            pid = proc.pid
            if self.pid != pid:  # read before any pin, so its own
                self.forget()
                self.pid, self.mask = pid, os.sched_getaffinity(pid)
            threads = os.stat(f"/proc/{pid}/task").st_nlink
            if self.cpu != cpu or self.threads != threads:
                if not alive(proc):  # gone: its pid may soon be another process's
                    return
                self.cpu = -2  # unknown until every thread is set
                self._set(pid, cpu)
                self.cpu, self.threads = cpu, threads
            self.held = mine  # before the pin: a Ctrl-C after it still finds what to restore
            os.sched_setaffinity(0, {cpu})
        except OSError:  # gone, or not ours to set (a cpuset, no /proc): leave it be
            self.failed = alive(proc)

    def leave(self) -> None:
        """Give the calling thread its own mask back, if `join` pinned it."""
        mine = self.held
        if mine is not None:
            try:
                os.sched_setaffinity(0, mine)
            except OSError:
                pass
            self.held = None

    def release(self) -> None:
        """The sandbox is computing (or the caller cannot join it): its threads are free."""
        if self.pid is not None and self.cpu != -1:
            try:
                self._set(self.pid, None)
                self.cpu = -1
            except OSError:
                pass

    def _set(self, pid: int, cpu: int | None) -> None:
        """The conversation's threads to `cpu` (None: their own mask back), every other one
        free. The conversation: the host's main thread, tokio's, and the host's Worker, the
        oldest Worker alive (a tool's own Workers start after it, from it, and inherit its pin:
        the next call's first wait sees the new thread and sets them free). V8's platform
        workers are left as they are."""
        pinned = self.mask if cpu is None else {cpu}
        base = f"/proc/{pid}/task"
        workers: list[tuple[int, int]] = []
        for tid in os.listdir(base):
            try:
                with open(f"{base}/{tid}/comm", "rb") as f:
                    name = f.read().decode(errors="replace").strip()
                if name.startswith(FREE_THREADS):
                    continue
                if name.startswith("worker-") and name[7:].isdigit():
                    workers.append((int(name[7:]), int(tid)))
                else:
                    os.sched_setaffinity(int(tid), pinned)
            except (FileNotFoundError, ProcessLookupError):  # a thread that just ended
                continue
        for i, (_, worker) in enumerate(sorted(workers)):
            try:
                os.sched_setaffinity(worker, pinned if i == 0 else self.mask)
            except ProcessLookupError:
                continue
