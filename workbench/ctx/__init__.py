"""The ctx layer: every platform rule, once, above the providers.

`Capabilities` holds one call's ctx.files / ctx.data / ctx.storage; `call("files.read", …)` is
the single entry both runners use (Python in-process via `python_ctx`, Deno over RPC), so the
trace, the rules and the errors are identical whichever language the tool is written in.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Callable

from .._errors import WorkbenchError
from . import data as _data
from . import history as _history
from . import storage as _storage
from ._session import CallSession
from .data import Data
from .files import Files, desktop_has_trash
from .storage import KV, SQL

if TYPE_CHECKING:
    from ..gem import Manifest
    from ..providers import Providers

__all__ = ["Capabilities", "CallSession", "desktop_has_trash", "prepare", "python_ctx"]

FILES = ("list", "stat", "read", "write", "mkdir", "move", "delete")
COLLECTION = ("insert", "get", "update", "delete", "find", "count")
KV_METHODS = ("get", "set", "delete", "list")
SQL_METHODS = ("query", "execute")


def prepare(providers: "Providers", manifest: "Manifest") -> None:
    """Create the workbench's tables and the manifest's collections; apply db/schema.sql (D3)."""
    providers.data_db.executescript(_history.DDL + _storage.KV_DDL + _data.ddl(manifest))
    _storage.apply_schema(providers.sql_db, manifest.schema_sql)


# "files.read" -> ("files", "read"): which capability object and method serve a ctx method
ROUTES: dict[str, tuple[str, str]] = {
    **{f"files.{m}": ("files", m) for m in FILES},
    **{f"data.{m}": ("data", m) for m in COLLECTION},
    **{f"storage.kv.{m}": ("kv", m) for m in KV_METHODS},
    **{f"storage.sql.{m}": ("sql", m) for m in SQL_METHODS},
}


class Capabilities:
    """The ctx methods of one call, addressed by name ("files.read", "data.insert", …)."""

    def __init__(self, session: CallSession) -> None:
        self.session = session
        self.files, self.data = Files(session), Data(session)
        self.kv, self.sql = KV(session), SQL(session)

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Run a ctx method by name, traced; the one door into the ctx layer."""
        route = ROUTES.get(method)
        if route is None:
            raise WorkbenchError("E_INVALID_ARGUMENT", f"ctx has no method {method!r}", method=method)
        return self.session.invoke(method, getattr(getattr(self, route[0]), route[1]), *args, **kwargs)

    def begin(self) -> None:
        self.session.providers.data_db.execute("BEGIN")

    def end(self) -> None:
        """Write buffered inserts and commit the call's storage writes, success or not."""
        db = self.session.providers.data_db
        try:
            self.session.flush()
        finally:
            if db.in_transaction:
                db.execute("COMMIT")
            sql = self.session.providers.sql_db
            if sql.in_transaction:  # a BEGIN without COMMIT: the platform would not keep it
                sql.execute("ROLLBACK")
                self.session.violations.append("storage.sql: the tool left a transaction open; "
                                               "it was rolled back")


def python_ctx(caps: Capabilities, *, asynchronous: bool) -> SimpleNamespace:
    """The ctx object handed to a Python tool.

    Same method names as the seeds. An `async def handle` gets coroutine methods (`await
    ctx.files.read(…)`); a plain `def handle` gets the same methods returning values directly.
    """

    def method(name: str, *bound: Any) -> Callable[..., Any]:
        if not asynchronous:
            return functools.partial(caps.call, name, *bound)

        async def acall(*args: Any, **kwargs: Any) -> Any:
            return caps.call(name, *bound, *args, **kwargs)

        acall.__name__ = acall.__qualname__ = name.rsplit(".", 1)[-1]
        return acall

    def ns(prefix: str, names: tuple[str, ...], *bound: Any) -> SimpleNamespace:
        return SimpleNamespace(**{m: method(f"{prefix}.{m}", *bound) for m in names})

    def collection(name: str) -> SimpleNamespace:
        caps.data.check(name)  # D1: fails at once, like the platform's synchronous collection()
        return ns("data", COLLECTION, name)

    return SimpleNamespace(
        files=ns("files", FILES),
        data=SimpleNamespace(collection=collection),
        storage=SimpleNamespace(kv=ns("storage.kv", KV_METHODS), sql=ns("storage.sql", SQL_METHODS)),
    )
