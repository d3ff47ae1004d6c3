"""Python tools, in-process: `tools/x.py` defining `handle(input, ctx)`, sync or async.

In-process means `%debug` and breakpoints work on tool code. The runner knows nothing of
storage: it gets the ctx layer's `Capabilities` and turns them into the tool's `ctx`.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.machinery
import importlib.util
import inspect
import io
import os
import sys
import threading
import time
import traceback
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .._errors import GemLoadError, WorkbenchError
from .._json import to_json
from ..ctx import CtxCrash, PythonCtx
from ..gem.folder import MAX_TOOL_BYTES, read_file

if TYPE_CHECKING:
    from ..ctx import Capabilities
    from ..ctx.limits import Limits
    from ..gem import ToolSpec


@dataclass
class Outcome:
    """What running a tool produced: a value, or an error; plus its console output.

    `json` is the value already serialised by the tool's own runtime (JS: JSON.stringify),
    which is what the caller receives and what N9 measures. `checked`: `value` already went
    through that check (Python tools: in the runner, where the tool's own code may run).
    """

    value: Any = None
    error: WorkbenchError | None = None
    logs: str = ""
    json: str | None = None
    checked: bool = False
    warnings: list[str] = field(default_factory=list)  # e.g. ctx calls still running at the end


class CappedLog:
    """One stream's output, bounded (SEC5): its first and last bytes within `limit`, and how
    many bytes between them were dropped. Memory stays under 2 x limit, whatever is written."""

    __slots__ = ("limit", "head", "tail", "total")

    def __init__(self, limit: int) -> None:
        self.limit, self.head, self.tail, self.total = limit, bytearray(), bytearray(), 0

    def write(self, data: bytes) -> None:
        self.total += len(data)
        room = self.limit // 2 - len(self.head)
        if room > 0:
            self.head += data[:room]
            if len(data) <= room:
                return
            data = data[room:]
        keep = self.limit - self.limit // 2
        if len(data) >= keep:
            self.tail[:] = data[len(data) - keep :]
        else:
            self.tail += data
            if len(self.tail) > 2 * keep:  # trimmed now and then, not on every write
                del self.tail[: len(self.tail) - keep]

    def kept(self) -> tuple[bytes, bytes, int]:
        """(head, tail, bytes dropped between them)."""
        keep = self.limit - self.limit // 2
        tail = bytes(self.tail[-keep:]) if len(self.tail) > keep else bytes(self.tail)
        return bytes(self.head), tail, self.total - len(self.head) - len(tail)


def render_logs(parts: list[tuple[str, CappedLog]], limit: int) -> str:
    """The streams' text, one after the other, within `limit` bytes in all: when they are
    over, the smaller keeps up to half, and each says how much of it was dropped."""
    kept = [(name, *log.kept()) for name, log in parts]
    sizes = [len(h) + len(t) for _, h, t, _ in kept]
    budgets = sizes
    if sum(sizes) > limit and len(sizes) == 2:
        small = 0 if sizes[0] <= sizes[1] else 1
        budgets = [0, 0]
        budgets[small] = min(sizes[small], limit // 2)
        budgets[1 - small] = limit - budgets[small]
    elif sum(sizes) > limit:
        budgets = [limit]
    out = []
    for (name, head, tail, dropped), budget in zip(kept, budgets):
        if len(head) + len(tail) > budget:  # trim to the budget: from the tail first, then head
            t = min(len(tail), budget - budget // 2)
            h = budget - t
            dropped += len(head) - h + len(tail) - t
            head, tail = head[:h], tail[len(tail) - t :]
        if not dropped:
            out.append((head + tail).decode("utf-8", "replace"))
            continue
        head, tail = _utf8_head(head), _utf8_tail(tail)  # no character cut in two
        out.append(
            f"{head.decode('utf-8', 'replace')}\n… [workbench: {dropped:,} bytes of {name} "
            f"dropped; the logs keep its first {len(head):,} and last {len(tail):,} bytes "
            f"(log_bytes = {limit:,})] …\n{tail.decode('utf-8', 'replace')}"
        )
    return "".join(out)


def _utf8_head(b: bytes) -> bytes:
    """`b` without a character cut in two at its end."""
    for i in range(1, min(4, len(b)) + 1):
        c = b[-i]
        if c & 0xC0 != 0x80:  # a lead byte (or ASCII): is its sequence complete?
            need = 1 if c < 0x80 else 2 if c >> 5 == 6 else 3 if c >> 4 == 14 else 4
            return b if need <= i else b[:-i]
    return b


def _utf8_tail(b: bytes) -> bytes:
    """`b` without the continuation bytes of a character cut in two at its start."""
    i = 0
    while i < min(3, len(b)) and b[i] & 0xC0 == 0x80:
        i += 1
    return b[i:]


class CappedWriter(io.TextIOBase):
    """sys.stdout / sys.stderr of a Python tool: text into a CappedLog (SEC5), so a tool that
    prints 500 MB keeps at most log_bytes of it in memory and in res.logs."""

    encoding = "utf-8"

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.log: CappedLog | None = None  # made at the first write: most calls print nothing

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        if self.log is None:
            self.log = CappedLog(self.limit)
        self.log.write(s.encode("utf-8", "surrogatepass"))
        return len(s)

    def getvalue(self) -> str:
        if self.log is None or not self.log.total:
            return ""
        return render_logs([("output", self.log)], self.log.limit)


Modules = dict[Path, tuple[int, ModuleType]]  # a bench's imported tools: file -> (mtime, module)


class _ToolLoader(importlib.machinery.SourceFileLoader):
    """Python's own loader (its bytecode cache included) reading through folder.read_file:
    a tool file swapped for a FIFO after the bench's check is an error, never a read that
    waits for a writer; a cached .pyc that is not a regular file is ignored."""

    def get_data(self, path: str) -> bytes:
        try:
            return read_file(Path(path), MAX_TOOL_BYTES)
        except GemLoadError as exc:
            if path == self.path:
                raise
            raise OSError(exc.message) from None  # the source is read instead


def _load(tool: ToolSpec, fresh: bool, modules: Modules, mtime: int | None = None) -> ModuleType:
    """Import the tool's file; again when it changed on disk (`mtime`: as the bench found it
    just before, else looked at here), or when `fresh` (reuse policy).

    `modules` is the bench's own cache: two benches of one gem never share a module's state."""
    if mtime is None:
        mtime = os.stat(tool.file).st_mtime_ns
    cached = modules.get(tool.file)
    if cached and cached[0] == mtime and not fresh:
        return cached[1]
    name = f"_workbench_tool_{abs(hash(str(tool.file)))}_{tool.name}"
    spec = importlib.util.spec_from_file_location(name, tool.file, loader=_ToolLoader(name, str(tool.file)))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    modules[tool.file] = (mtime, module)
    return module


def _tool_frames(exc: BaseException, root: Path) -> str:
    """The traceback restricted to frames in the gem's own files ("" if it cannot be read:
    a tool's exception may carry any attribute, e.g. an int as a SyntaxError's filename)."""
    try:
        frames = [
            f
            for f in traceback.extract_tb(exc.__traceback__)
            if isinstance(f.filename, str) and Path(f.filename).is_relative_to(root)
        ]
        if (
            isinstance(exc, SyntaxError)
            and isinstance(exc.filename, str)
            and exc.filename
            and Path(exc.filename).is_relative_to(root)
        ):
            return _cut("".join(traceback.format_exception_only(exc)))
        return _cut("".join(traceback.format_list(frames)))
    except Exception:  # noqa: BLE001
        return ""


TEXT_MAX = 64 * 1024  # of an error's message and stack, as on the JS side


def _cut(text: str) -> str:
    return text if len(text) <= TEXT_MAX else text[:TEXT_MAX] + "…"


def _describe(exc: BaseException) -> str:
    """`Name: message` of a tool's exception, bounded; never raises (a tool's __str__ or its
    class's __name__ may)."""
    try:
        name = type(exc).__name__
        name = name if isinstance(name, str) else "Exception"
    except Exception:  # noqa: BLE001
        name = "Exception"
    try:
        message = str(exc)
        if not isinstance(message, str):
            raise TypeError
    except Exception:  # noqa: BLE001
        message = "(its message cannot be read: str() of the exception failed)"
    return _cut(f"{name[:200]}: {message[: TEXT_MAX + 1]}")


def _tool_error(exc: BaseException, root: Path, rel_file: str) -> WorkbenchError:
    """The coded error for what the tool raised: a WorkbenchError (a ctx error it did not catch)
    keeps its code when that is a plain E_ code; anything else, or anything unreadable, is
    E_TOOL_ERROR. Never raises."""
    stack = _tool_frames(exc, root)
    if isinstance(exc, WorkbenchError):
        try:
            code, message = exc.code, exc.message
            details = exc.details
            if (
                type(code) is str
                and code.startswith("E_")
                and len(code) <= 64
                and type(message) is str
                and type(details) is dict
            ):
                extra = {k: _detail(v) for k, v in details.items() if type(k) is str and k != "stack"}
                return WorkbenchError(code, _cut(message), **extra, stack=stack)
        except Exception:  # noqa: BLE001
            pass
    return WorkbenchError("E_TOOL_ERROR", _describe(exc), stack=stack, file=rel_file)


def _detail(value: Any) -> Any:
    """A detail of a tool's WorkbenchError as plain JSON (a copy), or a note that it was not:
    the bench measures, shows and saves details later, where a dict subclass whose items()
    raises, a cycle or an object whose repr raises would fail outside the tool (SEC7)."""
    try:
        plain, err = to_json(value, max_chars=TEXT_MAX, max_depth=16)
    except Exception:  # noqa: BLE001  (the tool's own code ran and raised)
        return _NOT_KEPT
    return _NOT_KEPT if err is not None else plain


_NOT_KEPT = "(not kept: not JSON data of up to 64 KiB)"


def _checked(value: Any, limits: Limits) -> Outcome:
    """The tool's value as plain JSON data, or E_RESULT_NOT_JSON when reading it fails (an int
    past Python's digit limit, a dict subclass whose __iter__ raises, a float whose __repr__
    does...): checked here, where the tool's own code may run, so nothing raises later."""
    try:
        parsed, err = to_json(value, max_chars=limits.result_chars, max_depth=limits.json_depth)
    except Exception as exc:  # noqa: BLE001
        return Outcome(
            error=WorkbenchError(
                "E_RESULT_NOT_JSON",
                f"the tool returned a value that cannot be serialised as JSON: {_describe(exc)}",
            )
        )
    return Outcome(error=err) if err is not None else Outcome(value=parsed, checked=True)


def _run_coroutine(coro: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # a loop already runs in this thread (Jupyter): give the tool its own loop in a thread
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # handed back to the caller's thread
            box["error"] = exc

    t = threading.Thread(target=target, name="workbench-tool")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


_PLAIN = frozenset({dict, list, str, int, float, bool, type(None)})  # never awaitable
# id(entry point) -> (a weak reference to it, whether it is a coroutine function): a reloaded
# module's go with it. (Not a WeakKeyDictionary: its get makes a weak reference per lookup.)
_ASYNC: dict[int, tuple[weakref.ref[Any], bool]] = {}


def _forget(key: int, _: Any) -> None:
    _ASYNC.pop(key, None)


def _is_async(handle: Any) -> bool:
    """Whether the entry point is a coroutine function, asked once per entry point (inspect's
    check cost a call 1 µs)."""
    known = _ASYNC.get(id(handle))
    if known is not None and known[0]() is handle:
        return known[1]
    is_async = inspect.iscoroutinefunction(handle)
    key = id(handle)
    try:
        ref = weakref.ref(handle, functools.partial(_forget, key))
    except TypeError:  # an entry point that cannot be weakly referenced: asked every call
        return is_async
    _ASYNC[key] = (ref, is_async)
    return is_async


def _call(
    tool: ToolSpec, args: Any, caps: Capabilities, modules: Modules, fresh: bool, mtime: int | None
) -> Outcome:
    """Import the tool, call its entry point and check what it returned (N9)."""
    module = _load(tool, fresh, modules, mtime)
    entry = caps.session.profile.entry.python
    handle = getattr(module, entry, None)
    if not callable(handle):
        return Outcome(
            error=WorkbenchError(
                "E_TOOL_ERROR",
                f"{tool.rel_file} defines no {entry}(input, ctx) function",
                file=tool.rel_file,
            )
        )
    is_async = _is_async(handle)
    ctx = PythonCtx(caps, asynchronous=is_async)
    session = caps.session
    value = _run_coroutine(_bounded(handle(args, ctx), session)) if is_async else handle(args, ctx)
    if type(value) not in _PLAIN and inspect.isawaitable(value):  # a sync def returning a coroutine
        value = _run_coroutine(_bounded(value, session))
    return _checked(value, caps.session.limits)


async def _bounded(awaitable: Any, session: Any) -> Any:
    """`awaitable`, cancelled at the session's deadline (what an async tool awaits can be
    stopped there; the timeout is then E_TIMEOUT from `run`). The deadline is read again when
    it comes: a debugger's pause moves it back (CallSession.extend_deadline)."""
    if session.deadline is None:
        return await awaitable
    task = asyncio.ensure_future(awaitable)
    while True:
        left = session.deadline - time.monotonic()
        if left <= 0:
            task.cancel()
            await asyncio.wait({task})  # its cancellation run to its end, as wait_for does
            return None  # (`run` sees the deadline passed and reports it)
        done, _ = await asyncio.wait({task}, timeout=left)
        if done:
            return task.result()  # (the tool's own TimeoutError is raised as it is)


def _timed_out(deadline: float | None, started: float) -> WorkbenchError | None:
    """E_TIMEOUT when the call ended past `deadline`: an in-process tool cannot be stopped at
    its timeout (a sync one that sleeps or loops runs on), so what it returned or raised after
    it is not its result, as a JS tool's would not be (its sandbox is killed at the timeout)."""
    now = time.monotonic()
    if deadline is None or now <= deadline:
        return None
    limit = round(deadline - started, 1)
    return WorkbenchError(
        "E_TIMEOUT",
        f"the call ran over its timeout of {limit:g} s ({now - started:.1f} s): a Python tool "
        "runs in the workbench's own process and cannot be stopped there, so what it returned "
        "after its timeout is discarded",
        limit=limit,
    )


def run(
    tool: ToolSpec,
    args: Any,
    caps: Capabilities,
    *,
    modules: Modules,
    fresh: bool = False,
    mtime: int | None = None,
) -> Outcome:
    """Run one call of a Python tool; `fresh` gives it a new module instance (N5); `modules`
    is the calling bench's cache of imported tools; `mtime`: its file's, as just checked."""
    started = time.monotonic()
    out = CappedWriter(caps.session.limits.log_bytes)
    saved = sys.stdout, sys.stderr  # contextlib's redirect_stdout and redirect_stderr, in one
    sys.stdout = sys.stderr = out
    try:
        outcome = _call(tool, args, caps, modules, fresh, mtime)
    except CtxCrash as exc:  # N7: a simulated crash; the bench reruns the call
        sys.stdout, sys.stderr = saved
        exc.logs = out.getvalue()
        raise
    except KeyboardInterrupt:  # the user pressed stop (which cannot be told from a tool's own)
        raise
    except BaseException as exc:  # noqa: BLE001  SystemExit, GeneratorExit, a tool's own
        # BaseException subclass, a ctx error it did not catch (keeps its code): all coded
        sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, exc.__traceback__
        outcome = Outcome(error=_tool_error(exc, tool.file.parent.parent, tool.rel_file))
    finally:
        sys.stdout, sys.stderr = saved
    late = _timed_out(caps.session.deadline, started)
    # (an E_TIMEOUT of a ctx call the tool let through says more: what was waited for)
    if late is not None and not (outcome.error is not None and outcome.error.code == "E_TIMEOUT"):
        outcome = Outcome(error=late)
    outcome.logs = out.getvalue()
    return outcome


class PythonRunner:
    """The Python runner of one bench: its own imported tool modules (N5)."""

    def __init__(self) -> None:
        self.modules: Modules = {}

    def call(
        self, tool: ToolSpec, args: Any, caps: Capabilities, *, fresh: bool, mtime: int | None = None
    ) -> Outcome:
        return run(tool, args, caps, modules=self.modules, fresh=fresh, mtime=mtime)

    def warm(self) -> None:
        """Nothing to start: tools are imported in-process on their first call."""

    def crash(self) -> str:
        return ""  # in-process: the CtxCrash unwound the tool; its output is on the exception

    def stop(self) -> None:
        self.modules.clear()
