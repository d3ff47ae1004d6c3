"""The ctx layer: every platform rule, once, above the providers.

`Capabilities` holds one call's ctx.files / ctx.data / ctx.storage / ctx.email;
`call("files.read", …)` is the single entry both runners use (Python in-process via
`python_ctx`, Deno over RPC), so the trace, the rules and the errors are identical whichever
language the tool is written in.
"""

from __future__ import annotations

import functools
import sqlite3
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Callable

from .._errors import WorkbenchError
from . import data as _data
from . import history as _history
from . import storage as _storage
from ._session import CallSession, CtxCrash
from .data import Data
from .email import METHODS as EMAIL_METHODS
from .email import Email, Grant
from .extract import Extract
from .files import Files, desktop_has_trash
from .http import METHODS as HTTP_METHODS
from .http import FetchResponse, Http
from .limits import DEFAULT, Limits
from .resources import METHODS as RESOURCE_METHODS
from .resources import Resources
from .storage import KV, SQL, busy_error

if TYPE_CHECKING:
    from ..gem import Manifest
    from ..providers import Providers

__all__ = ["Capabilities", "CallSession", "CtxCrash", "Grant", "PythonCtx", "desktop_has_trash", "prepare"]

FILES = ("list", "stat", "read", "write", "mkdir", "move", "delete")
COLLECTION = ("insert", "get", "update", "delete", "find", "count")
KV_METHODS = ("get", "set", "delete", "list")
SQL_METHODS = ("query", "execute")


def prepare(providers: "Providers", manifest: "Manifest", limits: Limits = DEFAULT) -> None:
    """Create the workbench's tables and the manifest's collections; apply db/schema.sql (D3);
    confine both databases (SEC1)."""
    for db in (providers.data_db, providers.sql_db):
        _storage.confine(db, limits)
    providers.data_db.executescript(_history.DDL + _storage.KV_DDL + _data.ddl(manifest))
    _storage.apply_schema(providers.sql_db, manifest.schema_sql, limits)


# "files.read" -> ("files", "read"): which capability object and method serve a ctx method
ROUTES: dict[str, tuple[str, str]] = {
    **{f"files.{m}": ("files", m) for m in FILES},
    **{f"data.{m}": ("data", m) for m in COLLECTION},
    **{f"storage.kv.{m}": ("kv", m) for m in KV_METHODS},
    **{f"storage.sql.{m}": ("sql", m) for m in SQL_METHODS},
    **{f"email.{m}": ("email", m) for m in EMAIL_METHODS},
    **{f"http.{m}": ("http", m) for m in HTTP_METHODS},
    "extract": ("extractor", "extract"),
    **{f"resources.{m}": ("resources", m) for m in RESOURCE_METHODS},
}


class Capabilities:
    """The ctx methods of one call, addressed by name ("files.read", "email.listSince", …)."""

    def __init__(self, session: CallSession) -> None:
        self.session = session
        self.files, self.data = Files(session), Data(session)
        self.kv, self.sql = KV(session), SQL(session)
        self.email = Email(session)
        self.http = Http(session)
        self.extractor = Extract(session)
        self.resources = Resources(session)

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Run a ctx method by name, traced; the one door into the ctx layer."""
        route = ROUTES.get(method)
        if route is None:
            raise WorkbenchError("E_INVALID_ARGUMENT", f"ctx has no method {method!r}", method=method)
        return self.session.invoke(method, getattr(getattr(self, route[0]), route[1]), *args, **kwargs)

    def begin(self) -> None:
        """Open the call's storage transaction, waiting (up to the call's time) for another
        process on the same state folder to finish its call: writes take turns, none is lost."""
        db, left = self.session.providers.data_db, self.session.remaining("storage")
        db.execute(f"PRAGMA busy_timeout = {int((left if left is not None else 60) * 1000)}")
        try:
            # IMMEDIATE: a DEFERRED transaction that read first cannot take the write lock once
            # another process committed, and SQLite refuses it at once instead of waiting
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise busy_error(exc) from None

    def end(self) -> WorkbenchError | None:
        """Write buffered inserts and commit the call's storage writes, success or not; if the
        writes themselves fail, roll them all back and return why (never raise: SEC7)."""
        db, failed = self.session.providers.data_db, None
        try:
            if not db.in_transaction:  # interrupted at the deadline: SQLite rolled it all back
                failed = WorkbenchError("E_TIMEOUT", "the call ran out of time during a storage "
                                        "operation; its storage writes were rolled back")
            else:
                self.session.flush()
        except Exception as exc:
            failed = exc if isinstance(exc, WorkbenchError) else WorkbenchError(
                "E_INTERNAL", f"the call's storage writes failed and were rolled back: "
                f"{type(exc).__name__}: {exc}")
            if db.in_transaction:
                db.execute("ROLLBACK")
        finally:
            if db.in_transaction:
                db.execute("COMMIT")
            sql = self.session.providers.sql_db
            if sql.in_transaction:  # a BEGIN without COMMIT: the platform would not keep it
                sql.execute("ROLLBACK")
                self.session.violations.append("storage.sql: the tool left a transaction open; "
                                               "it was rolled back")
            if self.session.used_sql:
                _storage.drop_temp(sql)
        return failed


class _Methods:
    """One ctx namespace (ctx.files, ctx.storage.kv, a collection); methods made on first use."""

    def __init__(self, caps: Capabilities, prefix: str, names: tuple[str, ...], *bound: Any,
                 asynchronous: bool) -> None:
        self._caps, self._prefix, self._names = caps, prefix, names
        self._bound, self._async = bound, asynchronous

    def __getattr__(self, attr: str) -> Callable[..., Any]:
        if attr.startswith("_") or attr not in self._names:
            raise AttributeError(f"ctx.{self._prefix} has no method {attr!r} (it has: "
                                 f"{', '.join(self._names)})")
        name, caps, bound = f"{self._prefix}.{attr}", self._caps, self._bound
        if self._async:
            async def fn(*args: Any, **kwargs: Any) -> Any:
                return caps.call(name, *bound, *args, **kwargs)

            fn.__name__ = fn.__qualname__ = attr
        else:
            fn = functools.partial(caps.call, name, *bound)
        setattr(self, attr, fn)
        return fn

    def __dir__(self) -> list[str]:
        return list(self._names)

    def __repr__(self) -> str:
        return f"<ctx.{self._prefix}: {', '.join(self._names)}>"


class PythonCtx:
    """The ctx object handed to a Python tool.

    Same method names as the seeds. An `async def handle` gets coroutine methods (`await
    ctx.files.read(…)`); a plain `def handle` gets the same methods returning values directly.
    """

    def __init__(self, caps: Capabilities, *, asynchronous: bool) -> None:
        self._caps, self._async = caps, asynchronous

    def _ns(self, prefix: str, names: tuple[str, ...], *bound: Any) -> _Methods:
        return _Methods(self._caps, prefix, names, *bound, asynchronous=self._async)

    @functools.cached_property
    def files(self) -> _Methods:
        return self._ns("files", FILES)

    @functools.cached_property
    def data(self) -> SimpleNamespace:
        def collection(name: str) -> _Methods:
            self._caps.data.check(name)  # D1: fails at once, like the synchronous collection()
            return self._ns("data", COLLECTION, name)

        return SimpleNamespace(collection=collection)

    @functools.cached_property
    def storage(self) -> SimpleNamespace:
        return SimpleNamespace(kv=self._ns("storage.kv", KV_METHODS),
                               sql=self._ns("storage.sql", SQL_METHODS))

    @property
    def idempotencyKey(self) -> str:  # noqa: N802 (the platform's name)
        """N7: the key of this call; a crash rerun gets the same one. Deduplicate on it."""
        return self._caps.session.idempotency_key

    idempotency_key = idempotencyKey

    @functools.cached_property
    def extract(self) -> Callable[..., Any]:
        """ctx.extract(path, options=None) -> {text, mimeType, pages?} (see ctx/extract.py)."""
        caps = self._caps
        if self._async:
            async def extract(path: str, options: dict | None = None) -> Any:
                return caps.call("extract", path, options)

            return extract

        def extract_sync(path: str, options: dict | None = None) -> Any:
            return caps.call("extract", path, options)

        extract_sync.__name__ = extract_sync.__qualname__ = "extract"
        return extract_sync

    @functools.cached_property
    def email(self) -> _Methods:
        """ctx.email (E1–E6). Present for every Python tool; without the manifest's email
        permission each call raises E_PERM_DENIED naming the missing fields."""
        return self._ns("email", EMAIL_METHODS)

    @functools.cached_property
    def http(self) -> SimpleNamespace:
        """ctx.http.fetch(url, init=None, **init) -> a Response-like FetchResponse (N10):
        .status .ok .headers .text() .json() .bytes() and .credentialDenied when set."""
        caps = self._caps

        def fetch(url: Any, init: Any = None, /, **kw: Any) -> FetchResponse:
            return FetchResponse(caps.call("http.fetch", url, init, **kw))

        if self._async:
            async def afetch(url: Any, init: Any = None, /, **kw: Any) -> FetchResponse:
                return fetch(url, init, **kw)

            afetch.__name__ = afetch.__qualname__ = "fetch"
            return SimpleNamespace(fetch=afetch)
        return SimpleNamespace(fetch=fetch)

    @functools.cached_property
    def resources(self) -> _Methods:
        """ctx.resources (R1): only when the manifest declares `resources`."""
        if not self._caps.session.manifest.resources:
            raise AttributeError(f"ctx has no attribute 'resources': gem "
                                 f"{self._caps.session.manifest.id!r} declares no resources in "
                                 "manifest.json (R1)")
        return self._ns("resources", RESOURCE_METHODS)
