"""Every process a notebook's kernel started, found again after the kernel ended, and killed.

A process that leaves the kernel's process group or session (`setsid`, `start_new_session=True`,
a double fork) outlives the kernel, and killing the kernel's group misses it. Each kernel
starts with a marker of its own in its environment, which its descendants inherit; once the
kernel has ended, every process whose initial environment (/proc/<pid>/environ) holds the
marker is stopped (SIGSTOP: none can fork while the scan goes on), then killed. Chosen because
it needs nothing of the machine: cgroups are read-only here (no root cgroup delegation), and a
child subreaper would make the pytest process reap every orphan of the run.

A process started with an environment of its own (`env -i`, `Popen(env={})`) sheds the marker,
so the workbench kernel of a notebook test also loads this module as an IPython extension: the
kernel becomes a child subreaper (PR_SET_CHILD_SUBREAPER), so every orphan among its descendants
(a double fork, a new session) is re-parented to it, not to PID 1, and stays in its process
tree; at exit, after its other atexit handlers closed its benches, it stops and kills that tree
(`kill_tree`). A kernel killed before its exit cannot: the test process stops the tree first
(`NotebookKernel`), and kills it once the kernel is gone.
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
    kill_pids(stopped)
    return len(stopped)


def descendants(root: int) -> set[int]:
    """Every process whose chain of parents (/proc/<pid>/stat) leads to `root`, now."""
    parents: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return set()
    for name in names:
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    parents[int(name)] = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, todo = set(), [root]
    while todo:
        parent = todo.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                found.add(pid)
                todo.append(pid)
    return found


def stop_tree(root: int) -> set[int]:
    """Stop (SIGSTOP) every descendant of `root`, again until no new one appears; their pids."""
    stopped: set[int] = set()
    for _ in range(ROUNDS):
        found = descendants(root) - stopped - {os.getpid()}
        if not found:
            break
        for pid in found:
            _signal(pid, signal.SIGSTOP)
        stopped |= found
    return stopped


def kill_pids(pids: set[int]) -> None:
    """SIGKILL `pids` (stopped processes: none has forked since, none was reaped for another)
    and wait up to DEATH_WAIT for them to be gone."""
    for pid in pids:
        _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + DEATH_WAIT
    while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.005)  # (SIGKILL is delivered, not yet acted on, when kill returns)


def kill_tree(root: int) -> int:
    """Stop, then kill, every descendant of `root`; how many."""
    stopped = stop_tree(root)
    kill_pids(stopped)
    return len(stopped)


def load_ipython_extension(ipython: object) -> None:
    """In a notebook test's kernel: become the subreaper of its descendants, and kill what is
    left of them at exit (registered first, so run last)."""
    import atexit
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # (not Linux: the environment marker still applies)
        return
    own = os.getpid()
    atexit.register(lambda: os.getpid() == own and kill_tree(own))


#: prctl option making a process the reaper of its orphaned descendants (Linux 3.4).
_PR_SET_CHILD_SUBREAPER = 36


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
