"""The ctx layer: every platform rule, once, above the providers.

`Capabilities` holds one call's ctx capabilities (ctx.files, ctx.data, …), made on first use
from the capability registry (ctx/registry.py: the built-ins' and plugins'); `call("files.read",
…)` is the single entry both runners use (Python
in-process via `PythonCtx`, Deno over RPC), so the trace, the rules and the errors are identical
whichever language the tool is written in. Which names exist, and how they map to these
implementations, is the call's platform profile's capability registry (workbench.platforms).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from ..providers.engine import storage_error
from . import _pyctx
from . import storage as _storage
from ._pyctx import PythonCtx
from ._session import CallSession, CtxCrash, Invocation
from .email import Grant
from .files import desktop_has_trash
from .http import FetchResponse
from .limits import DEFAULT, Limits
from .registry import IMPLEMENTATIONS, SPECS, capability, implementation, specs, specs_of
from .spec import CapabilitySpec

if TYPE_CHECKING:
    from ..gem import Manifest
    from ..providers import Providers

__all__ = [
    "IMPLEMENTATIONS",
    "SPECS",
    "CapabilitySpec",
    "Capabilities",
    "CallSession",
    "CtxCrash",
    "Invocation",
    "Grant",
    "PythonCtx",
    "close_backends",
    "desktop_has_trash",
    "prepare",
    "capability",
    "specs",
    "specs_of",
]


def close_backends(providers: Any) -> None:
    """Release what the capabilities' backends hold (each CapabilitySpec.close), once."""
    backends, providers.backends = providers.backends, {}
    for impl, backend in backends.items():
        unit = capability(impl)
        if unit is not None and unit.close is not None and backend is not None:
            unit.close(backend)


_pyctx.CODECS["fetch"] = FetchResponse  # ctx.http.fetch's reply, as a Response-like object
_pyctx.CODECS["response"] = FetchResponse  # Python has no Response class: the same object
_pyctx.CODECS["void"] = lambda _: None


def prepare(providers: Providers, manifest: Manifest, limits: Limits = DEFAULT) -> None:
    """Create the data store's kv, history and the manifest's collections; apply db/schema.sql
    (D3); confine both databases (SEC1)."""
    for db in (providers.data_db, providers.sql_db):
        db.confine(limits)
    providers.store.create({c.name: c.indexes for c in manifest.collections.values()})
    _storage.apply_schema(providers.sql_db, manifest.schema_sql, limits)


class Capabilities:
    """The ctx methods of one call, addressed by name ("files.read", "email.listSince", …)."""

    def __init__(self, session: CallSession) -> None:
        self.session = session
        # each method's function by name, found once per call: a tool calling one method in a
        # loop (kv.get from JS: a round trip each) looks it up once, not two getattrs a call
        self._fns: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        """caps.files, caps.data, …: the call's implementation, made on first use."""
        impl = implementation(name)  # a built-in's, or a plugin's (ctx/registry.py)
        if impl is None:
            raise AttributeError(f"the ctx layer has no capability {name!r}")
        obj = impl(self.session)
        setattr(self, name, obj)
        return obj

    def call(self, method: str, /, *args: Any, **kwargs: Any) -> Any:
        """Run a ctx method by name, traced; the one door into the ctx layer."""
        fn = self._fns.get(method)
        if fn is not None:
            return self.session.invoke(method, fn, *args, **kwargs)
        profile = self.session.profile
        route = profile.routes.get(method)
        if route is not None:
            fn = self._fns[method] = getattr(getattr(self, route[0]), route[1])
            return self.session.invoke(method, fn, *args, **kwargs)
        prefix, _, name = method.rpartition(".")
        if prefix in profile.dispatch:  # ctx.tools.<name>(input): the name is an argument
            return self.session.invoke(
                method, getattr(self, profile.dispatch[prefix]).call, name, *args, **kwargs
            )
        raise WorkbenchError("E_INVALID_ARGUMENT", f"ctx has no method {method!r}", method=method)

    def begin(self) -> None:
        """Open the call's storage transaction at its first ctx call (the ctx layer is the only
        way to storage, so a call that makes none needs no lock); see `open`."""
        self.session.invocation.opening = self.open

    def open(self) -> None:
        """Open the call's storage transaction, waiting (up to the call's time) for another
        process on the same state folder to finish its call: writes take turns, none is lost."""
        providers, deadline = self.session.providers, self.session.deadline
        wait = None
        if providers.kind.get("storage") != "mock":  # in memory (mock), no other process waits
            # past the deadline: no wait (the ctx call that opens it then fails with E_TIMEOUT)
            wait = 60 if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            providers.store.transaction().begin(wait_seconds=wait)
        except Exception as exc:  # locked until the deadline, or stopped at it
            coded = storage_error(exc, self.session.limits)
            if coded is None:
                raise
            raise coded from None

    def end(self) -> WorkbenchError | None:
        """Write buffered inserts and commit the call's storage writes, success or not; if the
        writes themselves fail, roll them all back and return why (never raise: SEC7)."""
        session = self.session
        if not session.ctx_calls and not session.invocation.opened:
            # no ctx call: nothing could open a transaction or write (storage is reached only
            # through ctx), so there is nothing to commit or roll back
            session.invocation.opening = None
            session.ended = True
            return None
        db, failed = self.session.providers.store.transaction(), None
        invocation = self.session.invocation
        invocation.opening = None  # no ctx call opens it now
        try:
            if not invocation.opened:  # no ctx call opened it (or it could not): nothing to write
                pass
            elif not db.in_transaction:  # SQLite rolled it all back (the ctx call that saw it said why)
                failed = invocation.aborted or WorkbenchError(
                    "E_TIMEOUT",
                    "the call ran out of time during a storage "
                    "operation; its storage writes were rolled back",
                )
            else:
                self.session.flush()
        except Exception as exc:
            failed = (
                exc
                if isinstance(exc, WorkbenchError)
                else WorkbenchError(
                    "E_INTERNAL",
                    f"the call's storage writes failed and were rolled back: {type(exc).__name__}: {exc}",
                )
            )
            if db.in_transaction:
                db.rollback()
        finally:
            self.session.ended = True  # first: a failure below must not leave the tool's ctx usable
            if db.in_transaction:
                db.commit()
            sql = self.session.providers.sql_db
            if sql.in_transaction:  # a BEGIN without COMMIT: the platform would not keep it
                sql.rollback()
                self.session.violations.append(
                    "storage.sql: the tool left a transaction open; it was rolled back"
                )
            used = self.session.state.get("sql")
            if used is not None and used.used:
                sql.drop_temp()
        return failed
