"""A Ctrl-C at the worst moments of a JS call, of a sandbox start and of a stop: that call raises
KeyboardInterrupt, the next call works, and no process, fd, FIFO or thread is left over, nor is
a closed fd number (maybe another file's by then) ever read or written.

Each Ctrl-C is raised where Python would raise a pending SIGINT (as a function starts, as a C
function is called or returns) by a profile hook (sys.setprofile: this thread only), at a moment
chosen by what is true then, not by timing; or by _thread.interrupt_main, a SIGINT as the main
thread next runs Python code."""

from __future__ import annotations

import _thread
import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _deno import OK, deno_home, deno_pids, interrupted  # noqa: F401  (fixture)
from conftest import GemBuilder

from workbench.runners.deno import framing as framing_mod
from workbench.runners.deno import job as job_mod
from workbench.runners.deno import lifecycle as lifecycle_mod
from workbench.runners.deno import process as process_mod
from workbench.runners.deno import sandbox as sandbox_mod
from workbench.runners.deno.sandbox import Sandbox

pytestmark = pytest.mark.deno


def within(frame: Any, name: str) -> bool:
    """Whether `frame` is in a function named `name`, or called from one."""
    while frame is not None:
        if frame.f_code.co_name == name:
            return True
        frame = frame.f_back
    return False


def channel_fds() -> list[str]:
    """What this process's fds on sandbox FIFOs point to."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if "/wb-rpc-" in target:
                found.append(target)
    return found


def fifo_dirs() -> set[str]:
    """The FIFO folders in the temporary folder (the test's own: see `bench`)."""
    return {str(p) for p in Path(tempfile.gettempdir()).glob("wb-rpc-*")}


def until(check: Callable[[], bool], seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.02)
    return check()


@pytest.fixture
def bench(gem: GemBuilder, opened: Callable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A bench whose sandbox has run a call; its FIFO folders are made in a temporary folder of
    the test's own (other tests' may be in the shared one at any time)."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    gem.tool("ok", OK, ext="js")
    gem.tool("length", "export default async (i) => i.s.length", ext="js")
    b = opened(gem, timeout=5)
    assert b.call("ok").ok
    return b


def snapshot() -> tuple[int, int]:
    """How many fds this process has open, and how many threads it runs."""
    return len(os.listdir("/proc/self/fd")), len(os.listdir("/proc/self/task"))


def healthy(bench: Any, before: tuple[int, int], fds: int = 0) -> None:
    """The next call works, in the one sandbox there is, and nothing is left over (`fds` more
    fds than `before`, which the test opened)."""
    res = bench.call("ok")
    assert res.ok, res.error
    sandbox = bench.sandbox
    assert until(lambda: deno_pids(sandbox.gem_root) == [sandbox.pid]), deno_pids(sandbox.gem_root)
    assert len(channel_fds()) == 2, channel_fds()  # its channel's two ends, no more
    limit = (before[0] + fds, before[1])
    assert until(lambda: all(n <= most for n, most in zip(snapshot(), limit))), (snapshot(), limit)
    assert fifo_dirs() == set()
    assert bench.call("length", {"s": "x" * 100_000}).value == 100_000


# -- the start in the background (warm) -----------------------------------------------------------


@pytest.mark.parametrize("event", ["c_call", "c_return"])
def test_a_ctrl_c_as_the_background_start_begins(bench: Any, event: str) -> None:
    # `c_call`: before its thread exists, which warm had already published: the next call
    # joined a thread never started (RuntimeError); `c_return`: just after, before it ran
    sandbox, before = bench.sandbox, snapshot()
    sandbox.stop()
    with interrupted(lambda f, e, a: e == event and a is _thread.start_new_thread):
        sandbox.warm()
    healthy(bench, before)
    # no Thread left half-started in threading's list either
    assert until(lambda: not [t for t in threading.enumerate() if "sandbox" in t.name]), threading.enumerate()


def in_time(fn: Callable[[], Any], seconds: float = 30) -> Any:
    """fn(), in a thread of its own: a failure, not a test that hangs, when it blocks for ever."""
    done: list[Any] = []
    thread = threading.Thread(target=lambda: done.append(fn()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert done, f"still blocked after {seconds} s"
    return done[0]


@pytest.mark.parametrize("moment", ["as it blocks", "as it took a lock"])
def test_a_ctrl_c_while_a_call_waits_for_the_background_start(
    bench: Any, monkeypatch: pytest.MonkeyPatch, moment: str
) -> None:
    # the call forgot the start it waited for: the next one then started a second process
    # beside it (or wrote to its channel before it was open), and each killed the other's; and
    # a wait on a threading.Event, interrupted as it took the Event's lock, kept that lock held:
    # the start blocked as it ended, and so did every later wait
    sandbox, before = bench.sandbox, snapshot()
    sandbox.stop()
    gate = threading.Event()  # the start waits for it before it opens the host's FIFO
    open_writer = lifecycle_mod.open_writer

    def held(*args: Any) -> Any:
        gate.wait(60)
        return open_writer(*args)

    monkeypatch.setattr(lifecycle_mod, "open_writer", held)
    sandbox.warm()

    def waits(f: Any, e: str, a: Any) -> bool:  # the call blocks in its wait for the start
        return e == "c_call" and getattr(a, "__name__", "") == "acquire" and within(f, "_warmed")

    def took(f: Any, e: str, a: Any) -> bool:  # (the start let go on as the call blocks)
        if waits(f, e, a):
            gate.set()
        return (
            e == "c_return"
            and getattr(a, "__name__", "") in ("acquire", "__enter__")
            and within(f, "_warmed")
        )

    try:
        with interrupted(waits if moment == "as it blocks" else took):
            bench.call("ok")

        def opens(f: Any, e: str, a: Any) -> None:  # the next call's wait lets the start go on
            if waits(f, e, a):
                sys.setprofile(None)
                gate.set()

        def next_call() -> Any:
            sys.setprofile(opens)
            try:
                return bench.call("ok")
            finally:
                sys.setprofile(None)

        res = in_time(next_call)
    finally:
        gate.set()
    assert res.ok, res.error
    healthy(bench, before)


# -- the start ------------------------------------------------------------------------------------


def test_a_ctrl_c_as_the_host_process_starts(bench: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # a SIGINT as Popen returns: its process was lost, waiting for ever in its FIFO's open
    sandbox, before = bench.sandbox, snapshot()
    sandbox.stop()
    popen = subprocess.Popen

    def interrupting(*args: Any, **kwargs: Any) -> Any:
        proc = popen(*args, **kwargs)
        _thread.interrupt_main()
        return proc

    monkeypatch.setattr(subprocess, "Popen", interrupting)
    with pytest.raises(KeyboardInterrupt):
        bench.call("ok")
    monkeypatch.setattr(subprocess, "Popen", popen)
    healthy(bench, before)


@pytest.mark.parametrize("end", ["out", "in"])
def test_a_ctrl_c_as_a_channel_end_opens(bench: Any, end: str) -> None:
    # just after os.open returned its fd, before it was recorded: that fd was never closed
    sandbox, before = bench.sandbox, snapshot()
    sandbox.stop()
    suffix = (f"/{end}", f"/{end} (deleted)")
    with interrupted(lambda f, e, a: e == "c_return" and any(t.endswith(suffix) for t in channel_fds())):
        bench.call("ok")
    healthy(bench, before)


def test_a_second_ctrl_c_as_a_failed_start_removes_its_fifos(
    bench: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a start interrupted before the host opened its FIFOs, then again as shutil.rmtree's
    # os.close of the folder returned: rmtree closed that fd again (EBADF, or another file's
    # number), and the call raised OSError, not KeyboardInterrupt
    sandbox, before = bench.sandbox, snapshot()
    sandbox.stop()
    open_writer = lifecycle_mod.open_writer

    def interrupting(*args: Any) -> Any:
        raise KeyboardInterrupt

    def removing(f: Any, e: str, a: Any) -> bool:
        return e == "c_return" and (
            (a is os.close and within(f, "rmtree")) or (a is os.unlink and within(f, "_remove_fifos"))
        )

    monkeypatch.setattr(lifecycle_mod, "open_writer", interrupting)
    with interrupted(removing):
        bench.call("ok")
    monkeypatch.setattr(lifecycle_mod, "open_writer", open_writer)
    healthy(bench, before)


# -- the call and the stop ------------------------------------------------------------------------


def test_a_ctrl_c_in_a_message_then_in_its_stop(bench: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # the header of a call's input sent, not its payload; a second Ctrl-C as the call's stop
    # begins: the host, still reading that payload, took the next call's message for it, and
    # that call ran into its timeout
    sandbox, before = bench.sandbox, snapshot()
    stop = Sandbox.stop

    def interrupted_stop(self: Sandbox) -> str:  # a Ctrl-C as it starts
        monkeypatch.setattr(Sandbox, "stop", stop)
        raise KeyboardInterrupt

    monkeypatch.setattr(Sandbox, "stop", interrupted_stop)
    with interrupted(
        lambda f, e, a: e == "c_return" and a is os.write and f.f_code is Sandbox._write.__code__
    ):
        bench.call("length", {"s": "x" * 200_000})
    assert Sandbox.stop is stop  # it was called, and interrupted
    healthy(bench, before)
    assert sandbox.pid is not None


def test_a_ctrl_c_in_a_stop_after_it_closed_a_pipe(bench: Any) -> None:
    # a stop interrupted once it closed the host's stdout: the next stop read that pipe's
    # number again (EBADF; or, as here, another file's, which has it by then)
    sandbox = bench.sandbox
    before = snapshot()
    proc = sandbox.proc
    with interrupted(lambda f, e, a: proc.stdout.closed):
        sandbox.stop()
    pipes = [os.pipe() for _ in range(4)]  # take the numbers the stop freed
    try:
        for r, w in pipes:
            os.set_blocking(r, False)
            os.write(w, b"mine")
        healthy(bench, before, fds=8)
        for r, _ in pipes:  # never read, nor written to, by the sandbox
            assert os.read(r, 100) == b"mine"
    finally:
        for pipe in pipes:
            for fd in pipe:
                os.close(fd)


def test_a_ctrl_c_in_a_poll_of_the_process(bench: Any) -> None:
    # Popen.poll interrupted between its lock's acquire and the try that releases it (it ran at
    # each call, for Sandbox.pid): that lock stays held, poll says "running" for good, and the
    # stop's Popen.wait blocked for ever
    sandbox, before = bench.sandbox, snapshot()
    proc = sandbox.proc
    with interrupted(
        lambda f, e, a: (
            e == "c_return" and getattr(a, "__name__", "") == "acquire" and within(f, "_internal_poll")
        )
    ):
        proc.poll()
    try:
        assert in_time(lambda: bench.call("ok")).ok
        in_time(sandbox.stop)
        assert proc.returncode is not None
        healthy(bench, before)
    finally:  # (so that the bench's close, after a failure, does not block as well)
        if proc._waitpid_lock.locked():
            proc._waitpid_lock.release()


def test_a_ctrl_c_at_any_step_of_a_stop(bench: Any) -> None:
    # a Ctrl-C at each step of a stop in turn (a second one, after the one that stops a call):
    # the next call ends what it left, and works
    sandbox, before = bench.sandbox, snapshot()
    ours = (
        sandbox_mod.__file__,
        process_mod.__file__,
        framing_mod.__file__,
        job_mod.__file__,
        lifecycle_mod.__file__,
    )
    step = 0
    while True:
        step += 1
        seen = [0]

        def nth(frame: Any, event: str, arg: Any, seen: list[int] = seen, step: int = step) -> None:
            if event in ("call", "c_return") and frame.f_code.co_filename in ours:
                seen[0] += 1
                if seen[0] == step:
                    sys.setprofile(None)
                    raise KeyboardInterrupt

        sys.setprofile(nth)
        try:
            sandbox.stop()
        except KeyboardInterrupt:
            pass
        else:
            break  # it has fewer steps: each was interrupted once
        finally:
            sys.setprofile(None)
        res = bench.call("ok")
        assert res.ok, (step, res.error)
    assert step > 10
    healthy(bench, before)
