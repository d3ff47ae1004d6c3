"""One call's view of the ctx layer: dispatch, trace, write tracking (D4), transactions.

Every ctx method a tool uses — from Python in-process or from the Deno sandbox over RPC —
enters through `CallSession.invoke`, so the trace and the platform rules are the same for both.
"""

from __future__ import annotations

import inspect
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from ..providers.base import LinkInPath
from ..providers.engine import storage_error
from . import _trace, _watchdog
from . import limits as _limits
from .hooks import CallHooks

if TYPE_CHECKING:
    from ..gem import Manifest, ToolSpec
    from ..platforms import Grants, Profile
    from ..providers import Providers
    from .http_credentials import HttpState


def _notochord() -> Profile:
    """The default profile of a session made outside a bench (tests, tools of the ctx layer)."""
    from ..platforms.notochord import PROFILE

    return PROFILE


def _call_state(impl: str) -> Callable[[CallSession], Any]:
    from .registry import capability

    unit = capability(impl)
    if unit is None or unit.call_state is None:
        raise KeyError(f"capability {impl!r} keeps no per-call state")
    return unit.call_state


def _stateful(profile: Profile) -> list[str]:
    """The capabilities of `profile` that keep a per-call state."""
    from .registry import specs_of

    return [s.impl for s in specs_of(profile) if s.call_state is not None]


_CALLED = re.compile(r"^[\w.]+\(\) ")  # Python's "Files.write() " before its message


def _arguments_error(method: str, params: tuple[str, ...] | None, exc: TypeError, given: int) -> str:
    """A call with the wrong arguments, said in terms of the ctx method as the registry names its
    parameters (the same for a JS and a Python tool), not as a Python signature."""
    text = str(exc)
    head = f"{method}({', '.join(params)})" if params is not None else method
    if m := re.search(r"missing \d+ required (?:positional |keyword-only )?arguments?: (.+)", text):
        names = re.findall(r"'(\w+)'", m.group(1))
        return f"{head}: missing {' and '.join(names)}"
    if "positional argument" in text and "given" in text:
        most = len(params) if params is not None else "fewer"
        return f"{head}: takes at most {most} arguments, got {given}"
    if m := re.search(r"unexpected keyword argument '(\w+)'", text):
        return f"{head}: no argument named {m.group(1)!r}"
    return f"{head}: {_CALLED.sub('', text)}"


def _binds(fn: Callable[..., Any], args: tuple, kwargs: dict) -> bool:
    """Whether the arguments fit the method: a TypeError is then ours, not the tool's."""
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return False
    return True


def _internal(method: str, exc: Exception) -> WorkbenchError:
    return WorkbenchError(
        "E_INTERNAL", f"{method} failed in the workbench: {type(exc).__name__}: {exc}", method=method
    )


_OS_CODES = {
    FileNotFoundError: "E_NOT_FOUND",
    FileExistsError: "E_EXISTS",
    NotADirectoryError: "E_NOT_A_FOLDER",
    IsADirectoryError: "E_IS_A_FOLDER",
}


def _coded(method: str, exc: Exception, limits: _limits.Limits) -> WorkbenchError | None:
    """A failure the tool's own data or a changing folder caused, with the platform's code;
    None when it is the workbench's own (E_INTERNAL). Translated once, here."""
    if (coded := storage_error(exc, limits, method=method)) is not None:
        return coded
    if isinstance(exc, UnicodeEncodeError):
        return WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"{method}: a string argument is not valid Unicode (a lone surrogate at {exc.start})",
            method=method,
        )
    if isinstance(exc, OverflowError):
        return WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"{method}: a number is too large for storage (integers are 64-bit)",
            method=method,
        )
    if isinstance(exc, MemoryError):  # SQLITE_NOMEM: the work hit the heap limit confine() sets
        return WorkbenchError(
            "E_TOO_LARGE",
            f"{method} needs more memory than SQLite may hold ({limits.sqlite_heap_bytes:,} "
            "bytes); ask for less at a time (fewer conditions, smaller documents)",
            method=method,
            limit=limits.sqlite_heap_bytes,
        )
    if isinstance(exc, LinkInPath):  # SEC2: swapped in after the path was resolved
        return WorkbenchError(
            "E_PATH",
            f"{method}: '{exc.filename}' became a symbolic link while the call used it; a link "
            "swapped in after the path was checked is never followed",
            method=method,
            path=exc.filename,
        )
    for kind, code in _OS_CODES.items():
        if isinstance(exc, kind):  # the folder changed under the call (another process), or
            # holds what the gem cannot see (a FIFO where it writes)
            return WorkbenchError(
                code,
                f"{method}: {exc.strerror or exc}: an entry the gem "
                "cannot see, or one changed meanwhile, is in the way",
                method=method,
            )
    return None


class CtxCrash(BaseException):
    """A simulated crash (N7, `bench.call(..., crash=N)`): raised by the ctx layer after the
    tool's N-th ctx call. A BaseException, so a tool's `except Exception` cannot swallow it."""

    def __init__(self, after: int) -> None:
        super().__init__(f"simulated crash after ctx call {after}")
        self.after = after
        self.logs = ""


@dataclass
class Invocation:
    """What one invocation shares with the tools it calls through ctx.tools (A5): the names of
    its cross-tool calls, in order, the error that aborted it, the opening of its storage
    transaction, due at its first ctx call (Capabilities.begin), and its traces' budget."""

    calls: list[str] = field(default_factory=list)
    aborted: WorkbenchError | None = None
    opening: Callable[[], None] | None = None
    opened: bool = False  # the storage transaction is open (its end commits it)
    # a tool's threads making their first ctx calls at once: one opens, the others wait for it
    opening_lock: threading.Lock = field(default_factory=threading.Lock)
    # what its traces keep and list, its nested calls' included: together Limits.trace_chars
    # and Limits.trace_rows (SEC5; with a budget each, 50 nested calls kept 50 times as much)
    trace_kept: int = 0
    trace_listed: int = 0


@dataclass(slots=True)
class CallSession:
    """State of one tool call as seen by the ctx layer."""

    call_id: str
    tool: ToolSpec
    manifest: Manifest
    providers: Providers
    conversation: bool
    strict: bool
    trash: bool
    trace: list[dict[str, Any]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    _flushers: list[Callable[[], None]] = field(default_factory=list)
    http: HttpState | None = None  # N10: the bench's transport, credentials and log
    idempotency_key: str = ""  # N7: ctx.idempotencyKey; the same on a crash rerun
    limits: _limits.Limits = _limits.DEFAULT  # SEC5: size bounds every capability reads
    deadline: float | None = None  # SEC5: time.monotonic() at which the call times out
    profile: Profile = field(default_factory=lambda: _notochord())  # whose rules and shape
    ended: bool = False  # the call returned: its ctx refuses every method
    values: dict[str, Any] = field(default_factory=dict)  # the platform's per-call values (A2)
    invocation: Invocation = field(default_factory=lambda: Invocation())  # A5: shared when nested
    # runs a tool of the gem for ctx.tools.<name> (set by the bench: the ctx layer runs no tool)
    nest: Callable[[CallSession, ToolSpec, Any], Any] | None = None
    # each capability's own state for this call, {impl: its CapabilitySpec.call_state(session)},
    # made at its first use (`of`): ctx.audit's row counters, ctx.tools' surfaced files, …
    state: dict[str, Any] = field(default_factory=dict)
    kept: int = 0  # characters of ctx arguments and results this call's trace keeps, about (SEC5)
    ctx_calls: int = 0  # ctx calls made (the trace lists the first limits.trace_rows of them)
    warnings: list[str] = field(default_factory=list)  # for the result: what the call did oddly
    # the bench's clock and seed as the sandbox takes them (issue 29; ctx/clock.py): its virtual
    # now in ms since the epoch at the call's start (None: the wall clock), whether it is frozen,
    # and the call's own 32-bit seed drawn from the bench's seed= and its sequence (None: no seed)
    clock_ms: float | None = None
    clock_frozen: bool = False
    seed: int | None = None
    # the seed of the ids the ctx layer draws for it (document ids) when it has no `seed`: drawn
    # per call on a bench that can pin, so a replay repeats them (None: the system's randomness)
    ids_seed: int | None = None
    # a running clock's reads in the sandbox, in ms since the call's start: the ones a replay
    # serves back before the call, the ones it drew after it (what its pin keeps; None: none)
    ticks: list[float] | None = None
    # its clock reads are kept (a call that can be pinned): on the wall clock, the sandbox
    # reports the time the call started at and what the tool read
    keeps_reads: bool = False
    # the features taking part in its ctx calls (ctx/hooks.py: only those overriding
    # on_ctx_call), in order; shared with its nested calls
    hooks: tuple[CallHooks, ...] = ()

    def of(self, impl: str) -> Any:
        """Capability `impl`'s state of this call, made from its spec on first use."""
        try:
            return self.state[impl]
        except KeyError:
            made = self.state[impl] = _call_state(impl)(self)
            return made

    def rng(self) -> Any:
        """The call's seeded random stream (document ids), or None when the call has no seed."""
        seed = self.seed if self.seed is not None else self.ids_seed
        if seed is None:
            return None
        found = self.state.get("rng")
        if found is None:
            import random

            found = self.state["rng"] = random.Random(seed)
        return found

    def child_state(self) -> dict[str, Any]:
        """The per-capability state of a nested invocation (A5, ctx.tools.<own tool>): each of
        this call's capabilities' `nested()` of its own (made first, so what they share is
        shared), or the same object when it has no `nested`."""
        out: dict[str, Any] = {}
        for impl in _stateful(self.profile):
            own = self.of(impl)
            nested = getattr(own, "nested", None)
            out[impl] = nested() if nested is not None else own
        return out

    def finish(self, res: Any) -> None:
        """What each capability's state puts on the call's result (`into(res)`: ctx.tools'
        surfaced files and nested calls, ctx.logger's rows)."""
        for own in self.state.values():
            into = getattr(own, "into", None)
            if into is not None:
                into(res)

    def warn(self, text: str) -> None:
        """A warning on the call's result (once each)."""
        if text not in self.warnings:
            self.warnings.append(text)

    @property
    def aborted(self) -> WorkbenchError | None:
        """A5: what aborted this invocation (every later ctx call of it fails with it)."""
        return self.invocation.aborted

    def value(self, impl: str) -> Any:
        """A per-call value of the registry: a session attribute, or "values.<name>"."""
        if impl.startswith("values."):
            return self.values.get(impl[7:])
        return getattr(self, impl)

    @property
    def grants(self) -> Grants:
        """What this tool may use, decided once per (gem, tool) by the profile."""
        return self.profile.grants(self.manifest, self.tool)

    def extend_deadline(self, seconds: float) -> None:
        """Push the call's deadline back by `seconds` (> 0): the time a debugger held the call
        paused, which must not count against its timeout (workbench/debug). Runners read
        `deadline` where they enforce it, so a pause is not a timeout."""
        if self.deadline is not None and seconds > 0:
            self.deadline += seconds

    def remaining(self, what: str) -> float | None:
        """Seconds this call has left (None: unbounded); E_TIMEOUT when none are left."""
        return _limits.remaining(self.deadline, what)

    @property
    def run_root(self) -> str:
        return f"run/{self.call_id}"

    def invoke(self, method: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Run one ctx method, recording it in the trace; errors stay WorkbenchErrors."""
        if self.ended:  # a ctx kept by the tool past its call: its run folder, trace are gone
            raise WorkbenchError(
                "E_STATE",
                f"{method}: this ctx belongs to a call that has "
                "ended; a tool uses the ctx of the call it is running in",
                method=method,
            )
        if self.aborted is not None:  # A5: the invocation is over, whatever the tool catches
            raise self.aborted
        invocation = self.invocation
        if invocation.opening is not None:  # its first ctx call: the storage transaction opens
            with invocation.opening_lock:
                opening = invocation.opening
                if opening is not None:
                    try:
                        opening()
                    except WorkbenchError as exc:  # E_BUSY: no ctx call of it can run
                        invocation.aborted = exc
                    else:
                        invocation.opened = True
                    finally:  # only now: another thread's first ctx call waits until here
                        invocation.opening = None
            if invocation.aborted is not None:
                raise invocation.aborted
        if self.hooks:
            return self._hooked(0, method, fn, args, kwargs)
        return self._invoke(method, fn, *args, **kwargs)

    def _hooked(self, i: int, method: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """The ctx call through hook `i` and the ones after it, then the ctx layer itself."""
        if i == len(self.hooks):
            return self._invoke(method, fn, *args, **kwargs)
        return self.hooks[i].on_ctx_call(
            session=self,
            method=method,
            fn=fn,
            args=args,
            kwargs=kwargs,
            answer=lambda given: self._hooked(i + 1, method, given, args, kwargs),
        )

    def _invoke(self, method: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        invocation = self.invocation  # its budgets are shared with nested calls (SEC5)
        room = self.limits.trace_chars - invocation.trace_kept
        traced = invocation.trace_listed < self.limits.trace_rows  # later ones are only counted
        invocation.trace_listed += traced
        given = _trace.arguments(args, kwargs, min(_trace.KEEP_PARAMS, room)) if traced else _trace.UNKEPT
        ok, error = True, None
        failure: WorkbenchError | None = None
        token = None
        result: Any = None
        try:
            if self.deadline is not None:  # SEC5: none starts after the deadline, none runs past it
                self.remaining(method)
                token = _watchdog.arm(self.deadline, self._interrupt)
            result = fn(*args, **kwargs)
            return result
        except WorkbenchError as exc:
            failure = exc
            raise
        except TypeError as exc:
            if _binds(fn, args, kwargs):
                failure = _internal(method, exc)
                raise failure from exc
            failure = WorkbenchError(
                "E_INVALID_ARGUMENT",
                _arguments_error(method, self.profile.params.get(method), exc, len(args) + len(kwargs)),
                method=method,
            )
            raise failure from None
        except Exception as exc:  # a provider failure is still the ctx layer's to explain
            coded = _coded(method, exc, self.limits)
            if coded is not None:
                failure = coded
                raise coded from None
            failure = _internal(method, exc)
            raise failure from exc
        finally:
            if token is not None:
                _watchdog.disarm(token)
            if failure is not None:
                ok, error = False, failure.code
                self._rolled_back(method, failure)
            duration_us = round((time.perf_counter() - t0) * 1e6, 1)
            self.ctx_calls += 1
            if traced:
                self._traced(method, given, (ok, error, duration_us), result, room)
            else:  # counted in the trace's last row
                _trace.untraced(self.trace, self.ctx_calls, self.limits.trace_rows)

    def _traced(
        self,
        method: str,
        given: tuple[str | None, Any, Any, int],
        outcome: tuple[bool, str | None, float],
        result: Any,
        room: int,
    ) -> None:
        """The trace row of the ctx call just made, keeping what fits in `room` characters."""
        size = given[3]
        # a secret's value (K6 secrets.get) is never kept: the trace is shown and shared
        secret = method in self.profile.secret_methods
        kept, more = (
            _trace.kept(result, min(_trace.KEEP_RESULT, room - size))
            if outcome[0] and not secret
            else (None, 0)
        )
        self.kept += size + more
        self.invocation.trace_kept += size + more
        row = _trace.row(self.ctx_calls, method, given, outcome, kept)
        if outcome[0] and type(result) is dict and (notice := self._notice(method, result)):
            row["notice"] = notice  # returned, but says it failed: not a ✓ (an envelope, HTTP 500)
        if self.http is not None and self.http.has_secrets:  # K6/SEC4: shown masked
            row["args"] = self.http.mask(row["args"])
            row["params"] = self.http.mask_value(row["params"])
            row["result"] = self.http.mask_value(row["result"])
            if "notice" in row:
                row["notice"] = self.http.mask(row["notice"])
        self.trace.append(row)

    def _notice(self, method: str, result: dict[str, Any]) -> str | None:
        """The capability's line for a result that says it failed (CapabilitySpec.notice)."""
        from .registry import capability

        route = self.profile.routes.get(method)
        impl = route[0] if route else self.profile.dispatch.get(method.rpartition(".")[0])
        unit = capability(impl) if impl else None
        return unit.notice(method, result) if unit is not None and unit.notice is not None else None

    def _rolled_back(self, method: str, failure: WorkbenchError) -> None:
        """SQLite ends the call's storage transaction itself when a statement is interrupted at
        the deadline or runs out of memory. A later write would then commit on its own, outside
        the transaction the call's end commits or reports as lost: the invocation is over."""
        invocation = self.invocation
        if (
            invocation.opened
            and invocation.aborted is None
            and not self.providers.store.transaction().in_transaction
        ):
            invocation.aborted = WorkbenchError(
                failure.code,
                f"{failure.message}; SQLite rolled back the call's storage writes, so no "
                "later ctx call of this call runs",
                **failure.details,
            )

    def _interrupt(self) -> None:
        """Stop whatever SQLite work this call is doing (the watchdog calls it at the deadline)."""
        self.providers.store.transaction().interrupt()
        self.providers.sql_db.interrupt()

    def attempt(self, what: str) -> str | None:
        """A storage write attempt, recorded before its arguments are checked: D4 says a read
        tool must not write storage, and one that tries has a violation whether or not the write
        then happens (refused in strict mode, or failing on its own arguments). Its message."""
        if self.tool.side_effect != "read":
            return None
        msg = (
            f"D4: tool '{self.tool.name}' is declared sideEffect: \"read\" but wrote storage "
            f"({what}); plan mode runs read tools before the user approves"
        )
        if msg not in self.violations:
            self.violations.append(msg)
        return msg

    def writing(self, what: str) -> None:
        """Called before any storage write, its arguments checked: recorded (attempt), and
        refused with E_SIDE_EFFECT in strict mode."""
        msg = self.attempt(what)
        if msg is not None and self.strict:
            raise WorkbenchError("E_SIDE_EFFECT", msg, tool=self.tool.name, method=what)

    def on_flush(self, fn: Callable[[], None]) -> None:
        """Register work to finish before any other storage access and at the end of the call."""
        if fn not in self._flushers:
            self._flushers.append(fn)

    def flush(self) -> None:
        for fn in self._flushers:
            fn()
