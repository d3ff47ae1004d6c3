"""A watch on each sandbox's whole memory, and on its CPU between calls (SEC5, issue 25).

`--max-old-space-size` bounds V8's heap only: a tool's ArrayBuffers (a Uint8Array's bytes),
nested Workers and the runtime's own memory are outside it (one call kept 1,800 MiB of
Uint8Arrays under `memory_mb=256`). So one thread per Python process reads each sandbox's
resident size (/proc/<pid>/statm, through a file opened once: one pread per look) every POLL
seconds, while a call runs and between calls, and kills a process over its limit; the call
also looks once when its tool returned (a tool can fill memory faster than the poll). The kill
goes through a pidfd: never to another process that took the pid of one already reaped.
The thread ends when no sandbox is left to watch.

Between calls it also judges what the process wants of the CPU. The bridge stops what a call
leaves that it can see (timers, ports, nested Workers, a Worker that never comes back idle:
worker/, host.ts), but not an async loop that yields through the runtime's own ops (`for (;;)
await Deno.readTextFile(f)` burned a CPU after its call): this does. CPU time alone is what the
machine gave, not what the process asked for: under load 6 on 2 cores a spinner got 0.42 of a
CPU and passed a 0.5 threshold. So it counts runnable time: CPU time (/proc/<pid>/stat, dead
threads included) plus the time its threads waited on a run queue (/proc/<pid>/task/*/schedstat,
field 2). A spinner is runnable all the time whatever the load; an idle sandbox sleeps. A
sandbox runnable more than IDLE_SHARE of the time over IDLE_STREAK windows of IDLE_WINDOW in a
row with no call running is killed: a GC after a big call is runnable for a moment, not for
IDLE_STREAK x IDLE_WINDOW (where schedstat is missing, CPU time alone is counted).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time

POLL = 0.05  # seconds between looks
PAGE = os.sysconf("SC_PAGE_SIZE")
RUNTIME_MB = 64  # Deno's own resident memory besides the heap (an idle host: 34-58 MB)
IDLE_WINDOW, IDLE_SHARE, IDLE_STREAK = 0.5, 0.5, 4  # killed after 2 s runnable over half the time
TICK = os.sysconf("SC_CLK_TCK")


def rss_limit_mb(memory_mb: int) -> int:
    """The resident size a sandbox with a heap limit of `memory_mb` may reach: the heap, as much
    again for everything outside it (ArrayBuffers, nested Workers), and the runtime."""
    return 2 * memory_mb + RUNTIME_MB


class Watch:
    """One sandbox process and its memory limit; `killed` is its size (bytes) if the watch
    killed it for going over."""

    def __init__(self, proc: subprocess.Popen[bytes], limit_mb: int) -> None:
        self.limit = limit_mb << 20
        self.killed: int | None = None
        self.spun: float | None = None  # the CPU share it used between calls, if killed for it
        self._busy = True  # a call is running (or none ran yet): its CPU is its own
        self._idle_since: tuple[float, float, dict[str, int]] | None = None  # (when, CPU s, waits)
        self._streak = 0  # windows in a row runnable over IDLE_SHARE
        self.judged = 0  # windows judged so far (tests count them rather than wait)
        self._tasks = f"/proc/{proc.pid}/task"
        self._pidfd = self._statm = self._stat = -1
        try:
            self._pidfd = os.pidfd_open(proc.pid)
            self._statm = os.open(f"/proc/{proc.pid}/statm", os.O_RDONLY | os.O_CLOEXEC)
            self._stat = os.open(f"/proc/{proc.pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self.close()
            raise

    @property
    def fired(self) -> bool:
        """Whether the guard killed the process (for its memory, or for spinning between calls)."""
        return self.killed is not None or self.spun is not None

    def cpu(self) -> float:
        """CPU seconds the process used so far (all its threads; 0 once gone)."""
        try:
            fields = os.pread(self._stat, 1024, 0).rsplit(b")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / TICK
        except (OSError, ValueError, IndexError):
            return 0.0

    def begin(self) -> None:
        """A top call starts: its CPU is not counted."""
        with _lock:
            self._busy = True

    def end(self) -> None:
        """A top call ended: count from the thread's next look (no /proc read in the call)."""
        with _lock:
            self._busy = False
            self._idle_since = None
            self._streak = 0

    def waits(self) -> dict[str, int]:
        """Nanoseconds each live thread waited on a run queue so far, by thread id (empty where
        the kernel keeps no schedstat, or once the process is gone)."""
        out: dict[str, int] = {}
        try:
            tids = os.listdir(self._tasks)
        except OSError:
            return out
        for tid in tids:
            try:
                with open(f"{self._tasks}/{tid}/schedstat", "rb") as f:
                    out[tid] = int(f.read().split()[1])
            except (OSError, ValueError, IndexError):
                continue  # (a thread that ended meanwhile)
        return out

    def idle_check(self) -> None:
        """Kill the process if it was runnable more than IDLE_SHARE of the time in each of the
        last IDLE_STREAK windows of IDLE_WINDOW with no call running (under _lock, from the
        thread)."""
        if self._busy or self.fired:
            return
        now = time.monotonic()
        if self._idle_since is None:
            self._idle_since = (now, self.cpu(), self.waits())
            return
        since, used, waited = self._idle_since
        if now - since < IDLE_WINDOW:
            return
        cpu, waits = self.cpu(), self.waits()
        # a thread new since the window began waited all its wait in it; one gone is not counted
        wait = sum(max(0, w - waited.get(tid, 0)) for tid, w in waits.items()) / 1e9
        share = (cpu - used + wait) / (now - since)
        self._idle_since = (now, cpu, waits)
        self.judged += 1
        self._streak = self._streak + 1 if share > IDLE_SHARE else 0
        if self._streak >= IDLE_STREAK:
            self.spun = share
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def rss(self) -> int:
        """The process's resident bytes now (0 once it is gone or the watch closed)."""
        try:
            return int(os.pread(self._statm, 128, 0).split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            return 0

    def check(self) -> int | None:
        """Kill the process if it is over its limit; its size if it was (now or before)."""
        with _lock:  # (the thread's looks and close take it: never a closed fd)
            if self.killed is None and (size := self.rss()) > self.limit:
                self.killed = size
                with contextlib.suppress(OSError):  # ended meanwhile
                    signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            return self.killed

    def ended(self) -> bool:
        """Whether the process exited (its pidfd is readable then)."""
        return self._pidfd < 0 or bool(select.select([self._pidfd], [], [], 0)[0])

    def close(self) -> None:
        with _lock:
            _watches.discard(self)
            for fd in (self._stat, self._statm, self._pidfd):
                if fd >= 0:
                    os.close(fd)
            self._stat = self._statm = self._pidfd = -1


_lock = threading.RLock()
_watches: set[Watch] = set()
_thread: threading.Thread | None = None


def watch(proc: subprocess.Popen[bytes], limit_mb: int) -> Watch:
    """Watch `proc` from now until its Watch is closed."""
    global _thread
    w = Watch(proc, limit_mb)
    with _lock:
        _watches.add(w)
        if _thread is None:
            _thread = threading.Thread(target=_run, name="workbench-memory-guard", daemon=True)
            _thread.start()
    return w


def _run() -> None:
    global _thread
    while True:
        with _lock:
            if not _watches:
                _thread = None
                return
            for w in list(_watches):
                w.check()
                w.idle_check()
                if w.ended():  # (its sandbox may be collected without a stop: never kept)
                    w.close()
        time.sleep(POLL)


def _forget_thread() -> None:
    global _thread, _lock
    _thread = None  # a forked child has no guard thread (nor the parent's sandboxes)
    _lock = threading.RLock()  # (another thread may have held it at the fork)
    _watches.clear()


os.register_at_fork(after_in_child=_forget_thread)
