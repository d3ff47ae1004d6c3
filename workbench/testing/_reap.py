"""Every process a notebook's kernel started, found again after the kernel ended, and killed.

A process that leaves the kernel's process group or session (`setsid`, `start_new_session=True`,
a double fork) outlives the kernel, and killing the kernel's group misses it. Each kernel
starts with a marker of its own in its environment, which its descendants inherit; once the
kernel has ended, every process whose initial environment (/proc/<pid>/environ) holds the
marker is stopped (SIGSTOP: none can fork while the scan goes on), then killed. Chosen because
it needs nothing of the machine: cgroups are read-only here (no root cgroup delegation), and a
child subreaper would make the pytest process reap every orphan of the run. A process started
with an environment of its own (`env -i`, `Popen(env={})`) does not carry the marker.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from collections.abc import Iterator

#: The environment variable carrying a kernel's marker.
MARKER = "GEM_WORKBENCH_NB_KERNEL"
#: Scans at most (a fork bomb is stopped one generation per scan).
ROUNDS = 100
#: Seconds waited at most for the killed processes to be gone.
DEATH_WAIT = 2.0


def new_marker() -> str:
    """A marker no other kernel has."""
    return secrets.token_hex(16)


def kill_marked(marker: str) -> int:
    """Stop, then kill, every process (but this one) started with MARKER=marker; how many."""
    needle = f"{MARKER}={marker}".encode() + b"\0"
    stopped: set[int] = set()
    for _ in range(ROUNDS):
        found = [pid for pid in _carrying(needle) if pid not in stopped]
        if not found:
            break
        for pid in found:
            _signal(pid, signal.SIGSTOP)
            stopped.add(pid)
    for pid in stopped:
        _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + DEATH_WAIT
    while any(_running(pid) for pid in stopped) and time.monotonic() < deadline:
        time.sleep(0.005)  # (SIGKILL is delivered, not yet acted on, when kill returns)
    return len(stopped)


def _running(pid: int) -> bool:
    """Not gone, and not a zombie (a zombie runs nothing: its parent, or PID 1, reaps it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def _carrying(needle: bytes) -> Iterator[int]:
    own = os.getpid()
    try:
        names = os.listdir("/proc")
    except OSError:  # (no procfs: nothing to find)
        return
    for name in names:
        if not name.isdigit() or int(name) == own:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = f.read()
        except OSError:  # gone, or not ours to read
            continue
        if environ.startswith(needle) or b"\0" + needle in environ:
            yield int(name)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
