"""One call's view of the ctx layer: dispatch, trace, write tracking (D4), transactions.

Every ctx method a tool uses — from Python in-process or from the Deno sandbox over RPC —
enters through `CallSession.invoke`, so the trace and the platform rules are the same for both.
"""

from __future__ import annotations

import inspect
import json
import re
import reprlib
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from .._text import well_formed
from . import _watchdog
from . import limits as _limits
from .storage import sqlite_error

if TYPE_CHECKING:
    from ..gem import Manifest, ToolSpec
    from ..platforms import Grants, Profile
    from ..providers import Providers
    from .email import Grant
    from .http_credentials import HttpState

_ARG_PREVIEW = 160


def _notochord() -> Profile:
    """The default profile of a session made outside a bench (tests, tools of the ctx layer)."""
    from ..platforms.notochord import PROFILE

    return PROFILE


def _short(v: Any, out: list[str], budget: int) -> int:
    """Append a JSON-like rendering of v to out until about `budget` characters are spent:
    a preview costs the same for a 60,000-key document and cannot recurse without end."""
    if budget <= 0:
        return budget
    if isinstance(v, dict):
        out.append("{")
        budget -= 1
        for i, (k, x) in enumerate(v.items()):
            if budget <= 0:
                break
            text = (", " if i else "") + json.dumps(str(k), ensure_ascii=False)[:60] + ": "
            out.append(text)
            budget = _short(x, out, budget - len(text))
        out.append("}")
        return budget - 1
    if isinstance(v, (list, tuple)):
        out.append("[")
        budget -= 1
        for i, x in enumerate(v):
            if budget <= 0:
                break
            if i:
                out.append(", ")
            budget = _short(x, out, budget - (2 if i else 0))
        out.append("]")
        return budget - 1
    if isinstance(v, (str, bytes)) and len(v) > 60:
        text = f"<{len(v)} chars>"
    elif v is None or isinstance(v, (str, bool, int, float)):
        try:
            text = json.dumps(v, ensure_ascii=False)
        except ValueError:
            text = repr(v)
    else:
        text = f"<{type(v).__name__}>"
    out.append(text)
    return budget - len(text)


_REPR = reprlib.Repr()  # bounded in depth and length, safe on cycles
_REPR.maxstring = _REPR.maxother = 60


def _preview(args: tuple, kwargs: dict) -> str:
    out: list[str] = []
    budget = _ARG_PREVIEW + 1
    for i, a in enumerate((*args, *kwargs.items())):
        if budget <= 0:
            break
        if i:
            out.append(", ")
        if i >= len(args):  # a keyword (Python tools): "name=repr(value)"
            text = json.dumps(f"{a[0]}={_REPR.repr(a[1])}", ensure_ascii=False)
            out.append(text)
            budget -= len(text)
            continue
        budget = _short(a, out, budget)
    text = "".join(out)
    text = text if len(text) <= _ARG_PREVIEW else text[: _ARG_PREVIEW - 1] + "…"
    return text if text.isascii() else well_formed(text)  # shown: no lone surrogate


# The trace keeps each call's arguments ("params") and result as the objects themselves (no
# copy: cost), when JSON-able and small: a big write or read is not held for the bench's life.
# Results may be larger than arguments: a full listSince page (200 envelopes) must fit.
_KEEP_PARAMS, _KEEP_RESULT = 64 * 1024, 256 * 1024  # characters of JSON, about
# all a call's trace keeps, about: a tool making thousands of ctx calls with big arguments
# keeps the first ones' and then only the short previews (SEC5)
_KEEP_PER_CALL = 16 * 1024 * 1024
_SAMPLE = 4  # items of a longer list measured; the rest are estimated from them
_DEPTH = 64  # deeper nesting is not kept (nor is a cycle, which nests without end)


def _left(v: Any, budget: int, depth: int = 0) -> int:
    """`budget` less about the characters of `v` as JSON; below 0 when `v` is larger or not
    JSON. An object is measured whole (its fields differ: a message's body is its 7th); a list
    on its first _SAMPLE items, the rest estimated from them (its items are alike), so the
    check costs the same for a 200-message page as for one message."""
    t = type(v)  # exact types first: this runs on every ctx call's arguments and result
    if t is str:
        return budget - len(v) - 2
    if v is None or t is int or t is float or t is bool:
        return budget - 8
    if isinstance(v, str):
        return budget - len(v) - 2
    if v is None or isinstance(v, (int, float)):
        return budget - 8
    is_dict = isinstance(v, dict)
    if not is_dict and not isinstance(v, (list, tuple)):
        return -1  # bytes, a Path, any other object
    n = len(v)
    budget -= 2 + (4 if is_dict else 2) * n  # brackets, separators, a key's quotes and colon
    if budget < 0 or not n:
        return budget
    if depth >= _DEPTH:
        return -1
    if is_dict:
        for key, item in v.items():
            if not isinstance(key, str):
                return -1
            budget = _left(item, budget - len(key), depth + 1)
            if budget < 0:
                return budget
        return budget
    start = budget
    for item in islice(v, _SAMPLE):
        budget = _left(item, budget, depth + 1)
        if budget < 0:
            return budget
    measured = min(n, _SAMPLE)
    return budget - (start - budget) * (n - measured) // measured


def _kept(v: Any, budget: int) -> tuple[Any, int]:
    """(`v` itself, about its size as JSON) when it is JSON-able and within `budget`
    characters, else (None, 0)."""
    left = _left(v, budget)
    return (v, budget - left) if left >= 0 else (None, 0)


def _kept_params(args: tuple, kwargs: dict, budget: int) -> tuple[Any, int]:
    """(args, kwargs) as `_kept` would keep them; short scalar arguments (most ctx calls: a
    key, a path, an id) without the general walk."""
    if not kwargs and len(args) <= 4:
        size = 8
        for a in args:
            t = type(a)
            if t is str and len(a) < 1024:
                size += len(a) + 3
            elif a is None or t is int or t is float or t is bool:
                size += 8
            else:
                return _kept((args, kwargs), budget)
        return ((args, kwargs), size) if size <= budget else (None, 0)
    return _kept((args, kwargs), budget)


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
    if isinstance(exc, sqlite3.Error):
        return sqlite_error(exc, limits, method=method)
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
    its cross-tool calls, in order, and the error that aborted it."""

    calls: list[str] = field(default_factory=list)
    aborted: WorkbenchError | None = None


@dataclass
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
    email_grant: Grant | None = None  # E2: the accounts the user allowed (bench.email.allow)
    http: HttpState | None = None  # N10: the bench's transport, credentials and log
    idempotency_key: str = ""  # N7: ctx.idempotencyKey; the same on a crash rerun
    crash_after: int | None = None  # N7: abort after this many ctx calls (None: never)
    limits: _limits.Limits = _limits.DEFAULT  # SEC5: size bounds every capability reads
    deadline: float | None = None  # SEC5: time.monotonic() at which the call times out
    used_sql: bool = False  # ctx.storage.sql ran: its TEMP objects go at the end
    profile: Profile = field(default_factory=lambda: _notochord())  # whose rules and shape
    ended: bool = False  # the call returned: its ctx refuses every method
    values: dict[str, Any] = field(default_factory=dict)  # the platform's per-call values (A2)
    invocation: Invocation = field(default_factory=lambda: Invocation())  # A5: shared when nested
    # runs a tool of the gem for ctx.tools.<name> (set by the bench: the ctx layer runs no tool)
    nest: Callable[[CallSession, ToolSpec, Any], Any] | None = None
    audit_log: list[dict[str, Any]] = field(default_factory=list)  # A6: the bench's activity log
    audit_seq: int = 0  # rows this call added to it
    recipients: tuple[str, ...] = ()  # send_email's allowlist (bench.allow_recipients), lower case
    faults: dict[str, list[str]] = field(default_factory=dict)  # bench.inject_fault: per built-in
    surfaced: list[dict[str, Any]] = field(default_factory=list)  # surface_file's files, this call
    children: list[Any] = field(default_factory=list)  # the CallResults of its nested ctx.tools calls
    log_rows: list[dict[str, Any]] = field(default_factory=list)  # ctx.logger's rows (K6)
    kept: int = 0  # characters of ctx arguments and results the trace keeps, about (SEC5)
    warnings: list[str] = field(default_factory=list)  # for the result: what the call did oddly

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
        if self.crash_after is None:
            return self._invoke(method, fn, *args, **kwargs)
        if self.crash_after <= len(self.trace):  # crash=0: before the first ctx call runs
            raise CtxCrash(len(self.trace))
        try:
            return self._invoke(method, fn, *args, **kwargs)
        finally:  # the N-th call had its effect; the tool never sees its result
            if len(self.trace) >= self.crash_after:
                raise CtxCrash(len(self.trace))

    def _invoke(self, method: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        row: dict[str, Any] = {
            "seq": len(self.trace) + 1,
            "method": method,
            "args": _preview(args, kwargs),
            "ok": True,
            "error": None,
        }
        token = None
        result: Any = None
        try:
            if self.deadline is not None:  # SEC5: none starts after the deadline, none runs past it
                self.remaining(method)
                token = _watchdog.arm(self.deadline, self._interrupt)
            result = fn(*args, **kwargs)
            return result
        except WorkbenchError as exc:
            row.update(ok=False, error=exc.code)
            raise
        except TypeError as exc:
            if _binds(fn, args, kwargs):
                row.update(ok=False, error="E_INTERNAL")
                raise _internal(method, exc) from exc
            row.update(ok=False, error="E_INVALID_ARGUMENT")
            raise WorkbenchError(
                "E_INVALID_ARGUMENT",
                _arguments_error(method, self.profile.params.get(method), exc, len(args) + len(kwargs)),
                method=method,
            ) from None
        except Exception as exc:  # a provider failure is still the ctx layer's to explain
            coded = _coded(method, exc, self.limits)
            row.update(ok=False, error=coded.code if coded else "E_INTERNAL")
            if coded is not None:
                raise coded from None
            raise _internal(method, exc) from exc
        finally:
            if token is not None:
                _watchdog.disarm(token)
            row["duration_us"] = round((time.perf_counter() - t0) * 1e6, 1)
            room = _KEEP_PER_CALL - self.kept
            row["params"], size = _kept_params(args, kwargs, min(_KEEP_PARAMS, room))
            # a secret's value (K6 secrets.get) is never kept: the trace is shown and shared
            secret = method in self.profile.secret_methods
            row["result"], more = (
                _kept(result, min(_KEEP_RESULT, room - size)) if row["ok"] and not secret else (None, 0)
            )
            self.kept += size + more
            if self.http is not None and self.http.has_secrets:  # K6/SEC4: shown masked
                row["args"] = self.http.mask(row["args"])
                row["params"] = self.http.mask_value(row["params"])
                row["result"] = self.http.mask_value(row["result"])
            self.trace.append(row)

    def _interrupt(self) -> None:
        """Stop whatever SQLite work this call is doing (the watchdog calls it at the deadline)."""
        self.providers.data_db.interrupt()
        self.providers.sql_db.interrupt()

    def writing(self, what: str) -> None:
        """Called before any storage write: D4 says a read tool must not write storage."""
        if self.tool.side_effect != "read":
            return
        msg = (
            f"D4: tool '{self.tool.name}' is declared sideEffect: \"read\" but wrote storage "
            f"({what}); plan mode runs read tools before the user approves"
        )
        if self.strict:
            raise WorkbenchError("E_SIDE_EFFECT", msg, tool=self.tool.name, method=what)
        if msg not in self.violations:
            self.violations.append(msg)

    def on_flush(self, fn: Callable[[], None]) -> None:
        """Register work to finish before any other storage access and at the end of the call."""
        if fn not in self._flushers:
            self._flushers.append(fn)

    def flush(self) -> None:
        for fn in self._flushers:
            fn()
