"""A watch on each sandbox's whole memory (SEC5, issue 25).

`--max-old-space-size` bounds V8's heap only: a tool's ArrayBuffers (a Uint8Array's bytes),
nested Workers and the runtime's own memory are outside it (one call kept 1,800 MiB of
Uint8Arrays under `memory_mb=256`). So one thread per Python process reads each sandbox's
resident size (/proc/<pid>/statm, through a file opened once: one pread per look) every POLL
seconds, while a call runs and between calls, and kills a process over its limit; the call
also looks once when its tool returned (a tool can fill memory faster than the poll). The kill
goes through a pidfd: never to another process that took the pid of one already reaped.
The thread ends when no sandbox is left to watch.
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


def rss_limit_mb(memory_mb: int) -> int:
    """The resident size a sandbox with a heap limit of `memory_mb` may reach: the heap, as much
    again for everything outside it (ArrayBuffers, nested Workers), and the runtime."""
    return 2 * memory_mb + RUNTIME_MB


class Watch:
    """One sandbox process and its memory limit; `killed` is its size (bytes) if the watch
    killed it for going over."""

    def __init__(self, proc: subprocess.Popen[bytes], limit_mb: int) -> None:
        self.limit_mb = limit_mb
        self.limit = limit_mb << 20
        self.killed: int | None = None
        self._pidfd = os.pidfd_open(proc.pid)
        try:
            self._statm = os.open(f"/proc/{proc.pid}/statm", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            os.close(self._pidfd)
            raise

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
            for fd in (self._statm, self._pidfd):
                if fd >= 0:
                    os.close(fd)
            self._statm = self._pidfd = -1


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
                if w.ended():  # (its sandbox may be collected without a stop: never kept)
                    w.close()
        time.sleep(POLL)


def _forget_thread() -> None:
    global _thread, _lock
    _thread = None  # a forked child has no guard thread (nor the parent's sandboxes)
    _lock = threading.RLock()  # (another thread may have held it at the fork)
    _watches.clear()


os.register_at_fork(after_in_child=_forget_thread)
