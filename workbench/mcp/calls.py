"""One MCP tools/call run as `bench.call` on a server's standing worker thread, which a
client's cancellation ends as a notebook's interrupt does: a KeyboardInterrupt raised in that
thread (the call is an E_INTERRUPTED row of `bench.calls()`, its writes kept, the sandbox
restarted for the next call), by the one path the pipeline and the runners already take for
Ctrl-C. A call cancelled before it began never runs."""

from __future__ import annotations

import ctypes
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._errors import CallInterrupted, WorkbenchError, internal_error

if TYPE_CHECKING:
    from ..bench.bench import Bench
    from ..bench.result import CallResult


def _raise_in(tid: int, exc: type[BaseException]) -> None:
    """Make thread `tid` raise `exc` at its next check (a call, a loop's jump back)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), ctypes.py_object(exc))


def _landing() -> None:
    """A call: where an exception raised in this thread by `_raise_in` is raised, if pending."""


class CallJob:
    """`bench.call(key, args)` to run on a worker thread; `interrupt()` from any thread."""

    def __init__(self, bench: Bench, key: str, args: Any) -> None:
        self.bench, self.key, self.args = bench, key, args
        self.result: CallResult | None = None
        self.error: WorkbenchError | None = None
        self.interrupted = False
        self.abandoned = False  # interrupted before it began: it never runs
        self._lock = threading.Lock()  # an interrupt is raised only while the call runs
        self._tid: int | None = None
        self._running = False

    def run(self) -> None:
        """Run the call (on the worker thread); its result or its error is kept on the job."""
        tid = threading.get_ident()
        with self._lock:
            if self.abandoned:
                return
            self._tid, self._running = tid, True
        try:
            try:
                self.result = self.bench.call(self.key, self.args)
            except CallInterrupted as exc:  # the pipeline kept it as an E_INTERRUPTED row
                self.result = exc.result
            except WorkbenchError as exc:  # the bench closed, a sandbox that cannot start
                self.error = exc
            except Exception as exc:  # SEC7: the workbench's own bug, said, not raised
                self.error = internal_error("bench.call", exc)
        except KeyboardInterrupt:  # it landed before the call began or after it ended
            self.interrupted = True
        finally:
            self._done(tid)

    def _done(self, tid: int) -> None:
        while True:  # an interrupt landing here is forgotten; none can be raised after it
            try:
                with self._lock:
                    self._running = False
                # one raised before is let land here, not cleared: clearing a pending one with
                # PyThreadState_SetAsyncExc(tid, NULL) leaves the interpreter's async-exception
                # flag set (CPython 3.11), and a traced or profiled call in any thread then
                # never gets past its first line
                _landing()
                return
            except KeyboardInterrupt:
                self.interrupted = True

    @property
    def running(self) -> bool:
        """Whether the call has begun and not ended."""
        return self._running

    def interrupt(self) -> bool:
        """End the call as Ctrl-C would (one not begun never runs); whether it was running."""
        with self._lock:
            if self._tid is None:
                self.abandoned = self.interrupted = True
                return False
            if not self._running:
                return False
            self.interrupted = True
            _raise_in(self._tid, KeyboardInterrupt)
            return True


IDLE_SECONDS = 30.0  # a worker with no call for this long ends; the next call starts another


class Worker:
    """One standing thread that runs a server's jobs in turn: handing a job to a thread that
    waits is one queue put, where `anyio.to_thread` paid for a capacity limiter, a cancel scope
    and a thread-pool round trip each call (about twice the hand-off's time). It ends after
    IDLE_SECONDS without a job, so a stopped server leaves no thread behind."""

    def __init__(self, name: str, *, idle: float = IDLE_SECONDS) -> None:
        self.name, self.idle = name, idle
        self._jobs: queue.SimpleQueue[tuple[CallJob, Callable[[], None]]] = queue.SimpleQueue()
        self._lock = threading.Lock()  # a job is never put after the thread decided to end
        self._thread: threading.Thread | None = None

    def submit(self, job: CallJob, done: Callable[[], None]) -> None:
        """Run `job` after the jobs before it; `done()` is called on the worker when it ended."""
        with self._lock:
            self._jobs.put((job, done))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self._thread.start()

    @property
    def alive(self) -> bool:
        """Whether its thread runs now (it ends when idle)."""
        return self._thread is not None

    def _loop(self) -> None:
        while True:
            try:
                job, done = self._jobs.get(timeout=self.idle)
            except queue.Empty:
                with self._lock:
                    if self._jobs.empty():
                        self._thread = None
                        return
                continue
            try:
                job.run()
            finally:
                done()
