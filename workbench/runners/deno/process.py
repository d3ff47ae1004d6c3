"""The Deno process's plumbing: its output captured as logs, its environment, its end.

stdout/stderr carry only the tool's console output, at most limits.log_bytes per call (SEC5).
"""

from __future__ import annotations

import errno
import os
import select
import signal
import subprocess
import time

from ...ctx.limits import DEFAULT as DEFAULT_LIMITS
from ..python import CappedLog, render_logs

QUIET_FIRST, QUIET_LAST = 0.001, 0.064  # seconds between looks at quiet pipes (Output.wait)


class Output:
    """The tool's stdout and stderr, read by the calling thread whenever it waits.

    No reader threads: waking one per output line cost more than the rest of a warm call. A
    call's share of each stream ends at its nonce line, written by the host after the tool
    finished and before the host reports the result. Each share is a CappedLog (SEC5): a tool
    printing without end costs log_bytes of memory, and the marker is still found, since
    only the last len(marker) - 1 bytes need keeping to see it across reads.
    """

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        self.proc = proc
        self.fds = (proc.stdout.fileno(), proc.stderr.fileno())
        for fd in self.fds:  # read when there may be something, never to wait (see take)
            os.set_blocking(fd, False)
        self.open = set(self.fds)
        self.limit = DEFAULT_LIMITS.log_bytes
        self.marker: bytes | None = None
        self.logs = {fd: CappedLog(self.limit) for fd in self.fds}  # the share being written
        self.ended: dict[int, CappedLog | None] = dict.fromkeys(self.fds)  # closed by the marker
        self.pending = dict.fromkeys(self.fds, b"")  # may be the start of the marker
        self.flowing = False  # output came while the caller waited: watch the pipes too

    def begin(self, nonce: str, limit: int) -> None:
        """A call starts: its share ends at `nonce`; output since the last call belongs to it."""
        self.marker, self.limit = f"{nonce}\n".encode(), limit
        self.flowing = False
        for fd, log in self.logs.items():
            if log.limit != limit and not log.total:
                self.logs[fd] = CappedLog(limit)

    def wait(self, channel: int, deadline: float) -> bool:
        """Until `channel` is readable (True) or the deadline passed (False), reading the
        output meanwhile. A tool printing without pause keeps the output readable all the time:
        the deadline is checked on every turn, not only when nothing is ready.

        The pipes are watched only once output came during the call: a write nobody selects
        on wakes nobody, and the host's two end markers, written just before each result,
        used to wake this thread twice per call (~80 µs of a warm call on 2 cores). Until
        then they are read after 1 ms of waiting, then at doubling intervals up to 64 ms: a
        tool blocked on a full pipe waits that long once, and its output is read as it comes
        from then on."""
        quiet = QUIET_FIRST
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if self.flowing:
                ready = select.select([channel, *self.open], [], [], left)[0]
            else:
                ready = select.select([channel], [], [], min(left, quiet))[0]
                if not ready and self.open:
                    ready = select.select(list(self.open), [], [], 0)[0]
                    quiet = min(quiet * 2, QUIET_LAST)
            for fd in ready:
                if fd != channel:
                    self.pump(fd)
                    self.flowing = True
            if channel in ready:
                return True
            if not self.open:  # both streams ended: the process is gone (or shut them)
                return bool(select.select([channel], [], [], 0)[0])

    def close(self) -> None:
        """Read no more: the pipes' numbers are forgotten (`open` emptied) before the pipes are
        closed, so that nothing here reads a closed number, or one reused by another file, even
        after a Ctrl-C between the two. Done again, it does nothing more."""
        self.open.clear()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()

    def pump(self, fd: int) -> None:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:  # nothing there after all
            return
        if not chunk:
            self.open.discard(fd)  # EOF: the process is gone
            self.logs[fd].write(self.pending[fd])
            self.pending[fd] = b""
            return
        marker = self.marker
        if marker is None or self.ended[fd] is not None:  # no marker to look for
            self.logs[fd].write(chunk)
            return
        data = self.pending[fd] + chunk if self.pending[fd] else chunk
        cut = data.find(marker)
        if cut >= 0:
            self.logs[fd].write(data[:cut])
            self.ended[fd], self.logs[fd] = self.logs[fd], CappedLog(self.limit)
            self.pending[fd] = b""
            self.logs[fd].write(data[cut + len(marker) :])  # the next call's
            return
        keep = len(marker) - 1
        self.logs[fd].write(data[:-keep])
        self.pending[fd] = data[-keep:]

    def take(self, nonce: str | None, timeout: float) -> str:
        """Each stream up to its nonce line (or to EOF when nonce is None / the process died)."""
        deadline = time.monotonic() + timeout
        parts: list[tuple[str, CappedLog]] = []
        for name, fd in zip(("stdout", "stderr"), self.fds):
            # the host wrote the markers before it reported the end: read first, wait after
            waited = False
            while (nonce is None or self.ended[fd] is None) and fd in self.open:
                if waited:
                    left = deadline - time.monotonic()
                    if left <= 0 or not select.select([fd], [], [], left)[0]:
                        break
                self.pump(fd)
                waited = True
            log = self.ended[fd]
            if log is None or nonce is None:  # no marker: all there is, and a fresh share
                if log is not None:
                    parts.append((name, log))
                log = self.logs[fd]
                log.write(self.pending[fd])
                self.pending[fd], self.logs[fd] = b"", CappedLog(self.limit)
            self.ended[fd] = None
            parts.append((name, log))
        self.marker = None
        if not any(log.total for _, log in parts):  # the usual call: it printed nothing
            return ""
        return (
            render_logs(parts, self.limit)
            if len(parts) == 2
            else "".join(render_logs([p], self.limit) for p in parts)
        )


def alive(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the process has not ended. Not Popen.poll: a Ctrl-C between its lock's acquire
    and the try that releases it keeps that lock for good, and every later poll then says
    "running" while wait blocks for ever. waitid with WNOWAIT leaves the process to be reaped
    (by terminate): until then its pid is no other process's."""
    if proc.returncode is not None:
        return False
    if not hasattr(os, "waitid"):  # (not on every Unix)
        return proc.poll() is None
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:  # reaped, and a Ctrl-C kept its returncode from being noted
        return False


def terminate(proc: subprocess.Popen[bytes]) -> None:
    """Kill the process's group, and reap the process. Not with Popen.wait, which blocks for
    ever on a lock an interrupted Popen.poll kept (see alive); reaped here and noted as Popen
    does, it may be done again after a Ctrl-C anywhere."""
    if alive(proc):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if proc.returncode is None:
        try:
            status = os.waitpid(proc.pid, 0)[1]
        except ChildProcessError:  # reaped already (its status lost to a Ctrl-C): it was killed
            proc.returncode = -signal.SIGKILL
        else:
            proc.returncode = os.waitstatus_to_exitcode(status)


def open_writer(path: str, proc: subprocess.Popen[bytes], fds: list[int]) -> bool:
    """Our end of the FIFO the host reads (non-blocking), appended to `fds`: it opens once the
    host is reading it. If Deno dies first, False (so start fails)."""
    deadline = time.monotonic() + 30
    while alive(proc) and time.monotonic() < deadline:
        try:
            open_into(fds, path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            return True
        except OSError as exc:  # ENXIO: the host has not opened it yet
            if exc.errno != errno.ENXIO:
                raise
        time.sleep(0.002)
    return False


def open_into(fds: list[int], path: str, flags: int) -> None:
    """os.open(path, flags), its fd appended to `fds` within the same C call (list.extend of a
    map): a Ctrl-C is raised between bytecodes only, so none comes between the open and the
    append, and the fd is never lost (whoever closes `fds` closes it)."""
    fds.extend(map(os.open, (path,), (flags,)))


def close_all(fds: list[int]) -> None:
    """Close every fd in `fds`, emptying it. Each is taken out of the list and closed within one
    C call (any() over a map of os.close on list.pop), so a Ctrl-C never leaves a closed number
    in the list (closed again later, maybe another file's by then) nor an open one out of it."""
    while fds:
        try:
            any(map(os.close, iter(fds.pop, None)))  # os.close returns None: runs to the end
        except IndexError:  # all closed: pop on the empty list ends the map
            return
        except OSError:  # that one is closed all the same (close frees the number even then)
            continue


def kill(proc: subprocess.Popen[bytes] | None, output: Output | None, fds: list[int]) -> None:
    """Kill the process and close every channel to it (a stop, and a Sandbox collected). Each
    step may be done again, so a stop cut short by a Ctrl-C can be finished later. Its pipes
    are closed both through `output` and directly: after a Ctrl-C in a start, `output` may
    still be the last process's."""
    try:
        if proc is not None:
            terminate(proc)
    finally:
        if output is not None:
            output.close()
        if proc is not None:
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        close_all(fds)
