"""One call's view of the ctx layer: dispatch, trace, write tracking (D4), transactions.

Every ctx method a tool uses — from Python in-process or from the Deno sandbox over RPC —
enters through `CallSession.invoke`, so the trace and the platform rules are the same for both.
"""

from __future__ import annotations

import inspect
import json
import sqlite3
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from .._errors import WorkbenchError
from . import limits as _limits
from .storage import sqlite_error

if TYPE_CHECKING:
    from ..gem import Manifest, ToolSpec
    from ..providers import Providers
    from .email import Grant
    from .http import HttpState

_ARG_PREVIEW = 160


def _preview(args: tuple, kwargs: dict) -> str:
    parts = []
    for a in (*args, *(f"{k}={v!r}" for k, v in kwargs.items())):
        if isinstance(a, (str, bytes)) and len(a) > 60:
            parts.append(f"<{len(a)} chars>")
        else:
            try:
                parts.append(json.dumps(a, ensure_ascii=False, default=repr))
            except ValueError:
                parts.append(repr(a))
    text = ", ".join(parts)
    return text if len(text) <= _ARG_PREVIEW else text[: _ARG_PREVIEW - 1] + "…"


def _signature(fn: Callable[..., Any]) -> str:
    return str(inspect.signature(fn))


def _binds(fn: Callable[..., Any], args: tuple, kwargs: dict) -> bool:
    """Whether the arguments fit the method: a TypeError is then ours, not the tool's."""
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return False
    return True


def _internal(method: str, exc: Exception) -> WorkbenchError:
    return WorkbenchError("E_INTERNAL", f"{method} failed in the workbench: "
                          f"{type(exc).__name__}: {exc}", method=method)


class CtxCrash(BaseException):
    """A simulated crash (N7, `bench.call(..., crash=N)`): raised by the ctx layer after the
    tool's N-th ctx call. A BaseException, so a tool's `except Exception` cannot swallow it."""

    def __init__(self, after: int) -> None:
        super().__init__(f"simulated crash after ctx call {after}")
        self.after = after
        self.logs = ""


@dataclass
class CallSession:
    """State of one tool call as seen by the ctx layer."""

    call_id: str
    tool: "ToolSpec"
    manifest: "Manifest"
    providers: "Providers"
    conversation: bool
    strict: bool
    trash: bool
    trace: list[dict[str, Any]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    _flushers: list[Callable[[], None]] = field(default_factory=list)
    email_grant: "Grant | None" = None   # E2: the accounts the user allowed (bench.email.allow)
    http: "HttpState | None" = None      # N10: the bench's transport, credentials and log
    idempotency_key: str = ""            # N7: ctx.idempotencyKey; the same on a crash rerun
    crash_after: int | None = None       # N7: abort after this many ctx calls (None: never)
    limits: _limits.Limits = _limits.DEFAULT  # SEC5: size bounds every capability reads
    deadline: float | None = None        # SEC5: time.monotonic() at which the call times out

    def remaining(self, what: str) -> float | None:
        """Seconds this call has left (None: unbounded); E_TIMEOUT when none are left."""
        return _limits.remaining(self.deadline, what)

    @property
    def run_root(self) -> str:
        return f"run/{self.call_id}"

    def invoke(self, method: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run one ctx method, recording it in the trace; errors stay WorkbenchErrors."""
        if self.crash_after is None:
            return self._invoke(method, fn, *args, **kwargs)
        if self.crash_after <= len(self.trace):  # crash=0: before the first ctx call runs
            raise CtxCrash(len(self.trace))
        try:
            return self._invoke(method, fn, *args, **kwargs)
        finally:  # the N-th call had its effect; the tool never sees its result
            if len(self.trace) >= self.crash_after:
                raise CtxCrash(len(self.trace))

    def _invoke(self, method: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        row: dict[str, Any] = {"seq": len(self.trace) + 1, "method": method,
                               "args": _preview(args, kwargs), "ok": True, "error": None}
        try:
            self.remaining(method)  # SEC5: no ctx call starts after the call's timeout
            return fn(*args, **kwargs)
        except WorkbenchError as exc:
            row.update(ok=False, error=exc.code)
            raise
        except TypeError as exc:
            if _binds(fn, args, kwargs):
                row.update(ok=False, error="E_INTERNAL")
                raise _internal(method, exc) from exc
            row.update(ok=False, error="E_INVALID_ARGUMENT")
            raise WorkbenchError("E_INVALID_ARGUMENT", f"{method}{_signature(fn)}: {exc}",
                                 method=method) from None
        except (sqlite3.Error, UnicodeEncodeError) as exc:  # what the tool's data made fail
            err = (sqlite_error(exc, self.limits, method=method) if isinstance(exc, sqlite3.Error)
                   else WorkbenchError("E_INVALID_ARGUMENT", f"{method}: a string argument is "
                                       f"not valid Unicode (a lone surrogate at {exc.start})",
                                       method=method))
            row.update(ok=False, error=err.code)
            raise err from None
        except Exception as exc:  # a provider failure is still the ctx layer's to explain
            row.update(ok=False, error="E_INTERNAL")
            raise _internal(method, exc) from exc
        finally:
            row["duration_us"] = round((time.perf_counter() - t0) * 1e6, 1)
            self.trace.append(row)

    def writing(self, what: str) -> None:
        """Called before any storage write: D4 says a read tool must not write storage."""
        if self.tool.side_effect != "read":
            return
        msg = (f"D4: tool '{self.tool.name}' is declared sideEffect: \"read\" but wrote storage "
               f"({what}); plan mode runs read tools before the user approves")
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
