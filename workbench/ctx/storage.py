"""ctx.storage: `kv` (D2, string keys and values) and `sql` (D3, the gem's private SQLite).

The rules: when a statement counts as a write (D4), how much it may return (SEC5), when the
schema runs (D3). The engine hardening that enforces SEC1/SEC5 inside SQLite (limits, the
authorizer, the heap limit, the TEMP drop) is providers/sqlguard.py, reached through the
provider's `SqlDatabase`, whose failures are its EngineError (providers/engine.py codes them)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import GemLoadError, WorkbenchError
from .._text import well_formed, well_formed_params
from ..providers.engine import storage_error
from ..providers.sqlite import ScriptError
from . import _watchdog
from ._sqlwrite import writes_storage
from .spec import CapabilitySpec, View
from .state_store import KV as KV_PART
from .state_store import SQL as SQL_PART

if TYPE_CHECKING:
    from ..providers.datastore import DataStore, Rows
    from ..providers.sqlite import Cursor, SqlDatabase
    from ._session import CallSession
    from .limits import Limits


def apply_schema(db: SqlDatabase, schema_sql: str | None, limits: Limits) -> None:
    """D3: run db/schema.sql once, on the first open of the gem's database: while it holds no
    table, view, index or trigger (not `user_version`, which a tool may set back to 0).

    The gem wrote it, so it runs under the same SEC1/SEC5 guard as a tool's SQL."""
    if not schema_sql or not db.is_empty():
        return

    def arm() -> Callable[[], None]:
        token = _watchdog.arm(time.monotonic() + limits.schema_seconds, db.interrupt)
        return lambda: _watchdog.disarm(token)

    try:
        db.run_script(schema_sql, arm=arm)
    except ScriptError as exc:
        why = f"it ran over {limits.schema_seconds:g} s" if exc.interrupted else exc.why
        raise GemLoadError(f"db/schema.sql failed: {why}", file="db/schema.sql") from None


def _str(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"kv {what} must be a string, got "
            f"{type(v).__name__} ({v!r:.40}); convert it with String(…) or "
            "JSON.stringify(…)",
            field=what,
        )
    return well_formed(v)


class KV:
    """ctx.storage.kv: small string settings and cursors."""

    def __init__(self, session: CallSession) -> None:
        self.s = session
        self.store: DataStore = session.providers.store

    def get(self, key: str) -> str | None:
        self.s.flush()
        return self.store.kv_get(_str(key, "key"))

    def set(self, key: str, value: str) -> None:
        self.s.attempt("storage.kv.set")  # D4: the attempt, even one refused below
        key, value = _str(key, "key"), _str(value, "value")
        if len(key) + len(value) > (cap := self.s.limits.sql_value_bytes):
            raise WorkbenchError(
                "E_TOO_LARGE", f"kv entry {key[:40]!r}: over {cap:,} characters", field="value", limit=cap
            )
        self.s.writing("storage.kv.set")
        self.s.flush()
        self.store.kv_set(key, value)

    def delete(self, key: str) -> bool:
        self.s.attempt("storage.kv.delete")
        key = _str(key, "key")
        self.s.writing("storage.kv.delete")
        self.s.flush()
        return self.store.kv_delete(key)

    def list(self, prefix: str = "") -> list[str]:
        """Keys starting with prefix, sorted."""
        self.s.flush()
        prefix = _str(prefix, "prefix")
        rows = bounded_rows(
            self.store.kv_keys(prefix),
            self.s.limits.sql_result_bytes,
            "kv.list; use a longer prefix:",
            field="prefix",
        )
        return [r[0] for r in rows]


def _row_bytes(row: tuple[Any, ...]) -> int:
    return sum(len(v) if isinstance(v, (str, bytes)) else 8 for v in row) + 8


def bounded_rows(cur: Rows, cap: int, what: str, **details: Any) -> list[Any]:
    """All rows of `cur`, or E_TOO_LARGE as soon as they pass `cap` bytes (SEC5): row by row,
    so no more than one row is read past the cap."""
    size, rows = 0, []
    for row in cur:
        size += _row_bytes(row)
        if size > cap:
            cur.close()
            raise WorkbenchError(
                "E_TOO_LARGE", f"{what} returns over {cap:,} bytes (SEC5)", limit=cap, **details
            )
        rows.append(row)
    return rows


class SQL:
    """ctx.storage.sql: the gem's own database, with db/schema.sql applied (D3).

    SEC1: it reaches nothing else (no ATTACH, VACUUM INTO, extension, or setting PRAGMA).
    SEC5: a statement stops at the call's deadline, and returns at most
    `limits.sql_result_bytes` of rows.
    """

    def __init__(self, session: CallSession) -> None:
        self.s = session
        self.db = session.providers.sql_db

    def _run(self, sql: Any, params: Any) -> tuple[Cursor, list[Any]]:
        if not isinstance(sql, str):
            raise WorkbenchError("E_INVALID_ARGUMENT", "sql must be a string", field="sql")
        if params is None:
            params = []
        if not isinstance(params, (list, tuple, dict)):
            raise WorkbenchError(
                "E_INVALID_ARGUMENT", "params must be a list (for ?) or an object (for :name)", field="params"
            )
        self.s.of("sql").used = True  # its TEMP objects go at the end of the call
        left = self.s.remaining("storage.sql")
        if left is not None:  # waiting for another process's lock counts against the call too
            self.db.wait_for_locks(min(left, 10))
        guard = self.db.guard(read_only=self.s.strict and self.s.tool.side_effect == "read")
        try:
            cur = self.db.execute(well_formed(sql), well_formed_params(params))
            return cur, self._fetch(cur, sql)  # a row can fail too (e.g. malformed JSON): E_SQL
        except MemoryError:  # SQLITE_NOMEM: the statement hit the heap limit set by confine()
            cap = self.s.limits.sqlite_heap_bytes
            raise WorkbenchError(
                "E_TOO_LARGE",
                f"the statement needs more memory than SQLite may hold ({cap:,} bytes)",
                sql=sql,
                limit=cap,
            ) from None
        except Exception as exc:
            coded = storage_error(exc, self.s.limits, guard=guard, sql=sql)
            if coded is None:  # the ctx layer's own (SEC5 bounds): as raised
                raise
            if not (guard.wrote or guard.denied) and writes_storage(sql):  # D4: failed to compile,
                self.s.attempt("storage.sql")  # so the authorizer never saw it: its words say so
            raise coded from None
        finally:
            guard.remove()
            if guard.wrote:  # D4; in strict mode this raises E_SIDE_EFFECT instead of SQLite's refusal
                self.s.writing("storage.sql")

    def _fetch(self, cur: Cursor, sql: str) -> list[Any]:
        return bounded_rows(
            cur,
            self.s.limits.sql_result_bytes,
            "the query; select fewer columns or add LIMIT/OFFSET:",
            sql=sql,
        )

    def query(self, sql: str, params: Any = None) -> list[dict[str, Any]]:
        """Rows as objects (column name -> value)."""
        cur, rows = self._run(sql, params)
        cols = [d[0] for d in cur.description or ()]
        return [dict(zip(cols, r)) for r in rows]

    def execute(self, sql: str, params: Any = None) -> dict[str, int]:
        """A statement that changes data: {changes, lastInsertRowid}."""
        cur, _ = self._run(sql, params)
        return {"changes": max(cur.rowcount, 0), "lastInsertRowid": cur.lastrowid or 0}


@dataclass(slots=True)
class SqlCall:
    """ctx.storage.sql's state in one call (a nested invocation's is the same)."""

    used: bool = False  # a statement ran: the call's end drops its TEMP objects


#: ctx.storage.kv and ctx.storage.sql as units
KV_SPEC = CapabilitySpec(
    impl="kv",
    state=(KV_PART,),
    title="ctx.storage.kv",
    implementation=KV,
    provider_kinds=("storage",),
    views=(View("kv", "the kv store's keys and values"),),
)
SQL_SPEC = CapabilitySpec(
    impl="sql",
    state=(SQL_PART,),
    title="ctx.storage.sql",
    implementation=SQL,
    provider_kinds=("storage",),
    call_state=lambda session: SqlCall(),
    views=(View("sql", "a query on the gem's database"),),
)
