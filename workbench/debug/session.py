"""`bench.debug(...)`: a call the next cells drive, paused at ctx breakpoints.

The call runs in a thread of its own through `bench.call`, with a `CallHooks` that stops at each
ctx call a breakpoint names: the hook waits on the session's condition until a notebook cell
says what the ctx call does — run (`cont`), return a value of the debugger's (`answer`), fail
with a ctx error the tool may catch (`fail`) — or ends the call as Ctrl-C does (`abort`). The
workbench answers every ctx call, so this works for JS, TS and Python tools alike, with no V8
debugger.

Source lines (`"tools/t.ts:12"`, `step`, `next`, `locals`, `eval`) are lines.py's `V8Frames`:
the bench's V8 inspector, through the kernel debugger's link to the Worker; a V8 pause in the
tool's files makes the session paused at a `LinePause`, and `cont`/`step`/`next` resume it.

While paused, the call holds the bench's lock: another call of the bench is refused with E_USAGE
naming this session (not a deadlock), `bench.close()` aborts it, and the time paused is given
back to the call's deadline (`CallSession.extend_deadline`), so a pause is never a timeout.
"""

from __future__ import annotations

import json
import linecache
import os
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .._errors import CallInterrupted, UsageError, WorkbenchError
from ..ctx.hooks import CallHooks
from . import view
from .ctxbreak import Breakpoints, SourceLine, parse_break_at
from .lines import LinePause, Locals, V8Frames

if TYPE_CHECKING:
    from ..bench.bench import Bench
    from ..bench.result import CallResult
    from ..ctx._session import CallSession

__all__ = ["DebugSession", "FrameBackend", "NoInspector", "Pause", "start"]

State = Literal["running", "paused", "ended"]
#: what `start` and each command wait for before they return (the call runs meanwhile)
WAIT_STEP = 0.2  # seconds between checks, so that a notebook's interrupt lands
END_WAIT = 15.0  # abort()/close(): how long the call may take to end once told to
MAX_FRAMES = 10  # a Python tool's frames kept with a pause
MAX_MESSAGE = 10_000  # characters of a fail() message
_CODE = re.compile(r"^E_[A-Z][A-Z0-9_]{0,62}$")
#: the calls' options bench.debug passes on (crash= reruns the call: nothing to debug there)
CALL_OPTIONS = frozenset({"as_user", "conversation", "identity", "fresh", "hooks"})


class Aborted(KeyboardInterrupt):
    """Raised into a paused ctx call by `abort()`: the call ends as Ctrl-C ends it (E_INTERRUPTED,
    its sandbox restarted), a BaseException so that no `except Exception` of a tool takes it."""


class FrameBackend(Protocol):
    """Source-line debugging of the paused call's frames: the seam lines.py's V8Frames fills
    (over the V8 inspector). Each method acts on the frame the call is paused in."""

    def set_breakpoints(self, lines: tuple[SourceLine, ...]) -> None:
        """Stop at these source lines (TS lines: the backend maps them through source maps)."""

    def where(self) -> Any:
        """The paused frame: its file, line and the source around it."""

    def locals(self) -> dict[str, Any]:
        """The paused frame's local variables."""

    def eval(self, expr: str) -> Any:
        """`expr` evaluated in the paused frame."""

    def step(self) -> None:
        """Step into the next call."""

    def next(self) -> None:
        """Step over to the next line."""


class NoInspector:
    """A FrameBackend with no inspector: every source-line request is E_UNSUPPORTED (kept for
    callers that want a session without V8; bench.debug uses lines.V8Frames)."""

    def _unsupported(self, what: str) -> WorkbenchError:
        return WorkbenchError(
            "E_UNSUPPORTED",
            f"{what}: source-line stepping needs the inspector (stage 1); ctx breakpoints "
            '("ctx.files.read", "ctx.*") work now',
            feature="source-line debugging",
        )

    def set_breakpoints(self, lines: tuple[SourceLine, ...]) -> None:
        if lines:
            raise self._unsupported(f"break_at={', '.join(map(str, lines))}")

    def where(self) -> Any:
        raise self._unsupported("where (a source frame)")

    def locals(self) -> dict[str, Any]:
        raise self._unsupported("locals")

    def eval(self, expr: str) -> Any:
        raise self._unsupported("eval")

    def step(self) -> None:
        raise self._unsupported("step()")

    def next(self) -> None:
        raise self._unsupported("next()")


@dataclass
class Pause:
    """The call, paused before one of its ctx calls."""

    n: int  # this pause's number in the debug session (1, 2, …)
    seq: int  # the ctx call's number in its call (as the trace's `seq` will be)
    method: str  # as the ctx layer names it: "files.read"
    call_id: str  # the paused call's (a nested call's own under ctx.tools.<tool>)
    tool: str
    args: dict[str, Any]  # the arguments as the tool passed them, by parameter name
    trace: list[dict[str, Any]]  # the paused call's trace so far (its earlier ctx calls)
    done: str = ""  # what the debugger did with it: "ran", "answered", "failed E_…", "aborted"
    # a Python tool's frames that made the ctx call, innermost last: (file in the gem, line,
    # function, the lines around it as (number, text)); a JS tool's come with the inspector
    source: list[tuple[str, int, str, list[tuple[int, str]]]] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The method as the tool writes it: "ctx.files.read"."""
        return f"ctx.{self.method}"

    def __repr__(self) -> str:
        return view.pause_text(self)

    def _repr_html_(self) -> str:
        return view.pause_html(self)


@dataclass
class _Shared:
    """What the call's thread and the notebook's share, under `cond`."""

    cond: threading.Condition = field(default_factory=threading.Condition)
    state: State = "running"
    pause: Pause | LinePause | None = None
    command: tuple[str, Any] | None = None
    result: CallResult | None = None
    failure: BaseException | None = None  # the call raised instead of returning a result
    peeked: tuple[bool, Any] | None = None  # what peek()'s function returned (True) or raised


class _Breaker(CallHooks):
    """The debugged call's hook: each ctx call a breakpoint names waits for the session."""

    def __init__(self, debug: DebugSession) -> None:
        self.debug = debug

    def on_ctx_call(
        self,
        *,
        session: CallSession,
        method: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        answer: Callable[[Callable[..., Any]], Any],
        **_: Any,
    ) -> Any:
        self.debug.sessions.setdefault(id(session), session)  # its deadline is given back
        if not self.debug.breakpoints.stops_at(method):
            return answer(fn)
        return self.debug.paused_at(session, method, fn, args, kwargs, answer)


class DebugSession:
    """A call being debugged (`bench.debug(...)`): `where`, `args`, `cont()`, `answer(value)`,
    `fail(code, message)`, `abort()`, `result`, `state`; shown as HTML in a notebook."""

    def __init__(
        self,
        bench: Bench,
        tool: str,
        input: Any,
        breakpoints: Breakpoints,
        *,
        options: dict[str, Any],
    ) -> None:
        self.bench, self.tool, self.input = bench, tool, input
        self.breakpoints = breakpoints
        self.frames = V8Frames(bench, self)  # attaches only when break_at has source lines
        self.pauses: list[Pause | LinePause] = []  # every pause so far, with what was done at each
        self.abandoned = False  # a notebook interrupt came while it ran: its next pause aborts
        self.paused_seconds = 0.0  # time the call spent paused (not counted against its timeout)
        self._line_t0 = 0.0  # when the current source-line pause began
        self.sessions: dict[int, CallSession] = {}  # the call's sessions, nested ones too
        self._shared = _Shared()
        self._one_at_a_time = threading.Lock()
        self._streams = sys.stdout, sys.stderr
        self._options = options
        self._thread = threading.Thread(target=self._run, name=f"workbench-debug-{tool}", daemon=True)

    # -- the call's thread ------------------------------------------------------------------
    def _run(self) -> None:
        shared = self._shared
        result: CallResult | None = None
        failure: BaseException | None = None
        try:
            hooks = (*self._options.pop("hooks", ()), _Breaker(self))
            result = self.bench.call(self.tool, self.input, hooks=hooks, **self._options)
        except CallInterrupted as exc:  # abort(): the pipeline kept it as E_INTERRUPTED
            result = exc.result
        except BaseException as exc:  # noqa: BLE001  (handed to the notebook's thread)
            failure = exc
        self.frames.close()  # its breakpoints let go: the bench's later calls run undebugged
        self.sessions.clear()  # (what the call's sessions hold goes with the call)
        with shared.cond:
            shared.result, shared.failure = result, failure
            shared.state, shared.pause, shared.command = "ended", None, None
            shared.cond.notify_all()
        if self.bench.debugging is self:
            self.bench.debugging = None

    def paused_at(
        self,
        session: CallSession,
        method: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        answer: Callable[[Callable[..., Any]], Any],
    ) -> Any:
        """Pause the call before this ctx call until a command, then do what it says."""
        pause = Pause(
            n=len(self.pauses) + 1,
            seq=session.ctx_calls + 1,
            method=method,
            call_id=session.call_id,
            tool=session.tool.name,
            args=_named(session.profile.params.get(method), args, kwargs),
            trace=[dict(r) for r in session.trace],
            source=_tool_frames(session.manifest.root),
        )
        # a Python tool's runner has this process's output while it runs (sys.stdout is its
        # capture): the notebook's cells get theirs back while the call is paused
        with self._one_at_a_time:  # a tool's threads reaching breakpoints at once: in turn
            tool_streams = sys.stdout, sys.stderr
            sys.stdout, sys.stderr = self._streams
            t0 = time.monotonic()
            try:
                kind, given = self._wait_for_command(pause)
            finally:
                sys.stdout, sys.stderr = tool_streams
            held = time.monotonic() - t0
        self.paused_seconds += held
        for s in list(self.sessions.values()):  # the pause is not the call's time
            if not s.ended:
                s.extend_deadline(held)
        if kind == "abort":
            pause.done = "aborted"
            raise Aborted(f"bench.debug: aborted at {pause.name} (pause {pause.n})")
        if kind == "cont":
            pause.done = "ran"
            return answer(fn)
        pause.done = "answered" if kind == "answer" else f"failed {given.code}"
        try:
            return answer((lambda *_a, **_k: given) if kind == "answer" else _raiser(given))
        finally:
            _mark(session, pause)

    def _wait_for_command(self, pause: Pause) -> tuple[str, Any]:
        shared = self._shared
        with shared.cond:
            self.pauses.append(pause)
            if self.abandoned:  # interrupted while it ran: nobody will drive it
                return ("abort", None)
            shared.state, shared.pause, shared.command = "paused", pause, None
            shared.cond.notify_all()
            while True:
                while shared.command is None:
                    shared.cond.wait()
                command = shared.command
                if command[0] != "peek":
                    break
                shared.command, shared.peeked = None, _peek(command[1], self.bench)
                shared.cond.notify_all()
            shared.state, shared.pause, shared.command = "running", None, None
        return command

    # -- the notebook's thread --------------------------------------------------------------
    def begin(self) -> DebugSession:
        """Start the call in its thread; return once it paused or ended."""
        self.frames.set_breakpoints(self.breakpoints.lines)
        self._streams = sys.stdout, sys.stderr  # the notebook's (see paused_at)
        self.bench.debugging = self
        self._thread.start()
        return self._settled()

    def _settled(self) -> DebugSession:
        """Wait until the call is paused at a new ctx call or has ended; an error the call
        raised instead of returning a result (the sandbox could not start) is raised here."""
        shared = self._shared
        with shared.cond:
            try:
                while shared.command is not None or shared.state == "running":
                    shared.cond.wait(WAIT_STEP)
            except KeyboardInterrupt:  # the notebook's interrupt: nobody waits for this call
                self.abandoned = True  # any more: it ends at its next pause, as Ctrl-C ends it
                at_line = isinstance(shared.pause, LinePause)
                if shared.state == "paused" and shared.command is None and not at_line:
                    shared.command = ("abort", None)
                    shared.cond.notify_all()
                if not at_line:
                    raise
            else:
                at_line = False
            failure, shared.failure = shared.failure, None
        if at_line:  # (out of the condition: detaching takes the link's lock, which a pause holds)
            self._let_go("aborted")
            raise KeyboardInterrupt
        if failure is not None:
            raise failure
        return self

    def _command(self, kind: str, given: Any = None) -> DebugSession:
        shared = self._shared
        with shared.cond:
            self._ctx_pause_needed(kind)
            if shared.state != "paused" or shared.command is not None:
                raise UsageError(
                    f"{self.label}: {kind}() needs a paused call, and it is {shared.state}"
                    + (" (its result is .result)" if shared.state == "ended" else ""),
                    session=self.label,
                    state=shared.state,
                )
            shared.command = (kind, given)
            shared.cond.notify_all()
        return self._settled()

    def _ctx_pause_needed(self, kind: str) -> None:
        """E_USAGE for a ctx call's command (answer, fail, peek) at a source-line pause."""
        pause = self._shared.pause
        if isinstance(pause, LinePause):
            raise UsageError(
                f"{self.label}: {kind}() acts on a paused ctx call, and the call is paused at "
                f"{pause.name}: .cont(), .step(), .next(), .locals, .eval(…)",
                session=self.label,
                state="paused",
            )

    # -- source-line pauses (V8Frames' events, from the link's reader thread) ------------------
    def line_paused(self, pause: LinePause) -> None:
        """V8 paused the call at a line of the tool's source: the session is paused there."""
        if self.abandoned:  # interrupted while it ran: nobody drives it, so it runs on
            threading.Thread(target=self.frames.close, daemon=True).start()
            return
        shared = self._shared
        with shared.cond:
            self.pauses.append(pause)
            self._line_t0 = time.monotonic()
            shared.state, shared.pause = "paused", pause
            shared.cond.notify_all()

    def line_resumed(self) -> None:
        """The Worker runs again (resumed, or its sandbox stopped)."""
        shared = self._shared
        with shared.cond:
            if isinstance(shared.pause, LinePause):
                self._line_ended(shared.pause, shared.pause.done or "ran")
                shared.state, shared.pause = "running", None
                shared.cond.notify_all()

    def _line_ended(self, pause: LinePause, done: str) -> None:
        """(under the condition) A line pause is over: what was done, how long it took (the
        sandbox's deadline moved by it already: the inspector relay counts V8 pauses)."""
        pause.done = done
        pause.seconds = time.monotonic() - self._line_t0
        self.paused_seconds += pause.seconds

    def _line(self, kind: str, how: str, done: str) -> DebugSession:
        """Resume a source-line pause as `how` (continue, next, stepIn) and wait for the next
        pause or the end."""
        shared = self._shared
        with shared.cond:
            pause = shared.pause
            if shared.state != "paused" or not isinstance(pause, LinePause):
                raise UsageError(
                    f"{self.label}: {kind}() at a source line needs a call paused at one, "
                    "and it is "
                    + (f"paused before {pause.name}" if pause is not None else shared.state)
                    + ' (give break_at a line: "tools/t.ts:12")',
                    session=self.label,
                    state=shared.state,
                )
            self._line_ended(pause, done)
            shared.state, shared.pause = "running", None
        self.frames.resume(how)
        return self._settled()

    def _let_go(self, done: str) -> None:
        """Detach the V8 debugger from a call paused at a line: the Worker runs on, undebugged."""
        with self._shared.cond:
            pause = self._shared.pause
            if isinstance(pause, LinePause):
                self._line_ended(pause, done)
                self._shared.state, self._shared.pause = "running", None
        self.frames.close()

    @property
    def label(self) -> str:
        """How errors and views name this session: "debug(tool)"."""
        return f"bench.debug({self.tool!r})"

    @property
    def state(self) -> State:
        """ "paused" (at a ctx breakpoint or a source line), "running" (between two), or "ended"."""
        return self._shared.state

    @property
    def paused(self) -> Pause | LinePause | None:
        """The pause the call is at: before a ctx call, or at a source line (None: running or
        ended)."""
        return self._shared.pause

    @property
    def at_line(self) -> bool:
        """Whether the call is paused at a source line (a LinePause), not before a ctx call."""
        return isinstance(self._shared.pause, LinePause)

    @property
    def result(self) -> CallResult | None:
        """The call's CallResult once it ended (None before)."""
        return self._shared.result

    @property
    def where(self) -> Pause | LinePause:
        """Where the call is paused: before ctx call N (its method, arguments and the trace so
        far), or at a TS line (the source around it, the function, the call stack)."""
        pause = self._shared.pause
        if pause is None:
            raise UsageError(
                f"{self.label}: not paused (it is {self.state}"
                + ("; its result is .result)" if self.state == "ended" else ")"),
                session=self.label,
                state=self.state,
            )
        return pause

    @property
    def args(self) -> dict[str, Any]:
        """The paused ctx call's arguments as the tool passed them, by parameter name."""
        where = self.where
        if isinstance(where, LinePause):
            self._ctx_pause_needed("args")
            return {}
        return where.args

    def cont(self) -> DebugSession:
        """Let the paused ctx call run (or, at a source line, the call resume); the call runs on
        to the next breakpoint or its end."""
        if isinstance(self._shared.pause, LinePause):
            return self._line("cont", "continue", "ran")
        return self._command("cont")

    def answer(self, value: Any) -> DebugSession:
        """The paused ctx call returns `value` (JSON, as a ctx method returns) without running;
        the trace shows it, marked `by: debugger`. Runs on to the next pause or the end."""
        _check_value(value, self.bench.limits.bridge_message_bytes)
        return self._command("answer", value)

    def fail(
        self, code_or_error: str | WorkbenchError, message: str | None = None, **details: Any
    ) -> DebugSession:
        """The paused ctx call fails with a ctx error of the platform's kind (E_NOT_FOUND,
        E_PERM_DENIED, …, or a WorkbenchError): the tool gets it as it gets a ctx error (a JS
        CtxError with `.code`, a Python WorkbenchError) and may catch it."""
        self._ctx_pause_needed("fail")
        where = self.where
        assert isinstance(where, Pause)
        return self._command("fail", _error(code_or_error, message, where, details))

    def abort(self) -> DebugSession:
        """End the call as an interrupt (Ctrl-C) does: its result is E_INTERRUPTED, what it
        wrote before is kept, a JS tool's sandbox restarts. Nothing to do once it ended."""
        if self.state == "ended":
            return self
        if isinstance(self._shared.pause, LinePause):
            # a Worker stopped by V8 cannot be interrupted from here: it is let go, undebugged,
            # and ends at its next ctx breakpoint (E_INTERRUPTED) or runs to its end
            self.abandoned = True
            self._let_go("aborted")
            return self._settled()
        return self._command("abort")

    skip = abort  # the same: the call is skipped from here on

    def peek(self, fn: Callable[[Bench], Any]) -> Any:
        """`fn(bench)` run in the paused call's own thread, inside its storage transaction: the
        bench's state as the tool sees it now, its writes so far included (`s.peek(lambda b:
        b.kv())`). Views run from another cell would wait for the call's transaction."""
        shared = self._shared
        with shared.cond:
            self._ctx_pause_needed("peek")
            if shared.state != "paused" or shared.command is not None:
                raise UsageError(
                    f"{self.label}: peek() needs a paused call, and it is {shared.state}",
                    session=self.label,
                    state=shared.state,
                )
            shared.command, shared.peeked = ("peek", fn), None
            shared.cond.notify_all()
            while shared.peeked is None:
                shared.cond.wait(WAIT_STEP)
            (ok, value), shared.peeked = shared.peeked, None
        if not ok:
            raise value
        return value

    def end(self) -> None:
        """Abort a paused call and wait (END_WAIT s at most) for its thread: `bench.close()`."""
        with self._shared.cond:
            at_line = isinstance(self._shared.pause, LinePause)
            if self._shared.state == "paused" and self._shared.command is None and not at_line:
                self._shared.command = ("abort", None)
                self._shared.cond.notify_all()
        self.abandoned = self.abandoned or at_line
        if at_line:
            self._let_go("aborted")
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(END_WAIT)

    def refuse(self, what: str) -> None:
        """E_USAGE for another call of the bench while this one is debugged (it holds the
        bench's lock: waiting would wait for a cell that cannot run)."""
        if self.state != "ended" and threading.current_thread() is not self._thread:
            raise UsageError(
                f"{what}: {self.label} is {self.state} on this bench and holds it; "
                "finish it first (.cont(), .answer(…), .fail(…), or .abort())",
                session=self.label,
                state=self.state,
            )

    # -- source lines: the V8 inspector's (lines.py) ----------------------------------------
    def step(self) -> DebugSession:
        """At a source line: step into the next call (a helper's first line), return at the
        next pause or the end."""
        return self._line("step", "stepIn", "stepped in")

    def next(self) -> DebugSession:
        """At a source line: step over to the next line, return at the next pause or the end."""
        return self._line("next", "next", "stepped over")

    @property
    def locals(self) -> Locals:
        """The paused frame's local variables as JSON-able Python (objects to a bounded depth)."""
        return self.frames.locals()

    def eval(self, expr: str) -> Any:
        """`expr` evaluated in the paused frame, as Python; E_EVAL naming what it threw."""
        return self.frames.eval(expr)

    # -- display ----------------------------------------------------------------------------
    def __repr__(self) -> str:
        return view.session_text(self)

    def _repr_html_(self) -> str:
        return view.session_html(self)


def start(bench: Bench, tool: str, input: Any = None, *, break_at: Any = (), **options: Any) -> DebugSession:
    """`bench.debug(...)`: run the call in its own thread and return once it paused at a
    breakpoint or ended."""
    bench.check_open()
    if bench.debugging is not None:
        bench.debugging.refuse("bench.debug")
    unknown = sorted(set(options) - CALL_OPTIONS)
    if unknown:
        raise UsageError(
            f"bench.debug: no option {', '.join(unknown)} (it takes {', '.join(sorted(CALL_OPTIONS))})",
            field=unknown[0],
        )
    breakpoints = parse_break_at(break_at, bench.profile, bench.manifest)
    return DebugSession(bench, tool, input, breakpoints, options=dict(options)).begin()


def _named(params: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The ctx call's arguments by the method's parameter names (extra ones by position)."""
    names = list(params or ())
    out = {(names[i] if i < len(names) else f"arg{i}"): a for i, a in enumerate(args)}
    out.update(kwargs)
    return out


def _tool_frames(root: Path, around: int = 3) -> list[tuple[str, int, str, list[tuple[int, str]]]]:
    """The calling thread's frames in the gem's own files (a Python tool's), innermost last,
    each with `around` lines either side (at most MAX_FRAMES frames, lines cut at 200)."""
    bases = tuple({str(root) + os.sep, str(root.resolve()) + os.sep})
    out = []
    for f in traceback.extract_stack()[::-1]:
        base = next((b for b in bases if f.filename.startswith(b)), None)
        if base is None or f.lineno is None:
            continue
        lines = linecache.getlines(f.filename)
        first = max(1, f.lineno - around)
        code = [
            (n, lines[n - 1].rstrip("\n")[:200]) for n in range(first, min(len(lines), f.lineno + around) + 1)
        ]
        out.append((f.filename[len(base) :], f.lineno, f.name, code))
        if len(out) == MAX_FRAMES:
            break
    return out[::-1]


def _peek(fn: Callable[[Bench], Any], bench: Bench) -> tuple[bool, Any]:
    """fn(bench), or what it raised (raised in the notebook's thread instead: a SystemExit
    here would end the paused call's thread and leave the notebook waiting)."""
    try:
        return True, fn(bench)
    except BaseException as exc:  # noqa: BLE001  (handed to the notebook's thread)
        return False, exc


def _check_value(value: Any, limit: int) -> None:
    try:
        size = len(json.dumps(value, allow_nan=False, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise UsageError(f"answer(value): the value is not JSON ({exc})", field="value") from None
    if size > limit:
        raise UsageError(
            f"answer(value): {size:,} JSON characters, over the bridge's {limit:,}",
            field="value",
            limit=limit,
        )


def _error(given: Any, message: str | None, pause: Pause, details: dict[str, Any]) -> WorkbenchError:
    """The WorkbenchError `fail(...)` raises into the tool."""
    if isinstance(given, WorkbenchError):
        return given
    if not isinstance(given, str) or not _CODE.match(given):
        raise UsageError(
            f"fail({given!r}): give an error code like 'E_NOT_FOUND' or a WorkbenchError",
            field="code_or_error",
        )
    if message is not None and (not isinstance(message, str) or len(message) > MAX_MESSAGE):
        raise UsageError(
            f"fail(message=…): a string of up to {MAX_MESSAGE:,} characters",
            field="message",
            limit=MAX_MESSAGE,
        )
    text = message or f"{pause.name}: failed by the debugger"
    return WorkbenchError(given, text, method=pause.method, **details)


def _raiser(error: WorkbenchError) -> Callable[..., Any]:
    def fail(*_a: Any, **_k: Any) -> Any:
        raise error

    return fail


def _mark(session: CallSession, pause: Pause) -> None:
    """The trace row of a ctx call the debugger answered or failed says so (`by`)."""
    if session.trace:
        row = session.trace[-1]
        if row.get("seq") == pause.seq and row.get("method") == pause.method:
            row["by"] = "debugger"
