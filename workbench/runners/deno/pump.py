"""A child's output read from several pipes at once, each into its own bounded sink, within a
deadline: what `deno info` and `deno test` print, and the JUnit report Deno writes into a FIFO.

A sink returns False when it is full: the child is killed then, before it writes more (SEC5:
nothing it prints is held or stored past a bound). A FIFO opened with O_NONBLOCK and no writer
yet is never readable (Linux), so a child that never opens it costs nothing; once its writer has
closed it, it reads as EOF and is dropped.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Callable

from ..python import CappedLog

#: Takes the next chunk; False when the sink is full.
Sink = Callable[[bytes], bool]


class Bytes:
    """A sink keeping at most `limit` bytes: one byte more and it is full."""

    def __init__(self, limit: int) -> None:
        self.limit, self.data = limit, bytearray()

    def __call__(self, chunk: bytes) -> bool:
        if len(self.data) + len(chunk) > self.limit:
            return False
        self.data += chunk
        return True


def capped(log: CappedLog) -> Sink:
    """A sink writing into `log`, which keeps its head and tail: never full."""

    def write(chunk: bytes) -> bool:
        log.write(chunk)
        return True

    return write


def pump(proc: subprocess.Popen[bytes], main: int, sinks: dict[int, Sink], deadline: float | None) -> str:
    """Read each fd of `sinks` into its sink until the child has closed `main` and exited, then
    what the others still hold (without waiting). Answers "done", "timeout" or "full" (a sink
    said so); the child's whole process group is killed unless done, and always waited for."""
    status = "done"
    open_fds = set(sinks)
    try:
        while status == "done":
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                status = "timeout"
                break
            if main not in open_fds:
                if proc.poll() is not None:
                    break
                wait = 0.05 if wait is None else min(wait, 0.05)  # closed its output, runs on
            for fd in select.select(list(open_fds), [], [], wait)[0]:
                if not _read(fd, sinks[fd], open_fds):
                    status = "full"
                    break
        for fd in list(open_fds) if status == "done" else []:
            os.set_blocking(fd, False)  # its writer has exited: what is left, then EOF
            while fd in open_fds and status == "done":
                status = "done" if _read(fd, sinks[fd], open_fds) else "full"
    finally:
        if status != "done" or proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
    return status


def _read(fd: int, sink: Sink, open_fds: set[int]) -> bool:
    """One chunk from `fd` into `sink`; False when the sink is full. At EOF, or when a
    non-blocking fd has nothing now, `fd` leaves `open_fds`."""
    try:
        chunk = os.read(fd, 1 << 16)
    except BlockingIOError:
        chunk = b""
    if not chunk:
        open_fds.discard(fd)
        return True
    return sink(chunk)
