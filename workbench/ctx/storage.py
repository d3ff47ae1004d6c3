"""ctx.storage: `kv` (D2, string keys and values) and `sql` (D3, the gem's private SQLite)."""

from __future__ import annotations

import functools
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from .._errors import GemLoadError, WorkbenchError
from .._text import well_formed, well_formed_params
from . import _watchdog
from ._sqlwrite import writes_storage

if TYPE_CHECKING:
    from ..providers.datastore import DataStore, Rows
    from ._session import CallSession
    from .limits import Limits

# authorizer action codes that change a database
_WRITES = {
    getattr(sqlite3, n)
    for n in dir(sqlite3)
    if n.startswith(
        (
            "SQLITE_INSERT",
            "SQLITE_UPDATE",
            "SQLITE_DELETE",
            "SQLITE_CREATE_",
            "SQLITE_DROP_",
            "SQLITE_ALTER_TABLE",
            "SQLITE_REINDEX",
            "SQLITE_ANALYZE",
        )
    )
} - {sqlite3.SQLITE_DROP_TEMP_TABLE}

# SEC1: PRAGMAs a tool may use, all read-only introspection of its own database. A name here
# may take an argument (table_info(t)) because its argument selects, never sets. `user_version`
# is the one setting a tool may change (schema migrations); a write to it counts for D4.
READ_PRAGMAS = frozenset(
    {
        "table_info",
        "table_xinfo",
        "table_list",
        "index_info",
        "index_xinfo",
        "index_list",
        "foreign_key_list",
        "foreign_key_check",
        "integrity_check",
        "quick_check",
        "collation_list",
        "function_list",
        "module_list",
        "pragma_list",
        "compile_options",
        "encoding",
        "page_count",
        "page_size",
        "freelist_count",
        "schema_version",
        "data_version",
        "application_id",
        "foreign_keys",
    }
)
_SETTINGS_READ_ONLY = frozenset(
    {"encoding", "page_size", "schema_version", "application_id", "foreign_keys"}
)  # settings: reading them is fine, setting not
# SEC1: functions that reach outside the database (loadable extensions, FTS3 tokenizer pointers)
_DENIED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer"})


def sqlite_error(exc: sqlite3.Error, limits: Limits, **details: Any) -> WorkbenchError:
    """A SQLite failure on a tool's behalf as a coded error (translated once, here)."""
    msg = str(exc)
    if msg == "interrupted":  # by the watchdog (_watchdog.py) at the call's deadline
        return WorkbenchError(
            "E_TIMEOUT",
            "the storage operation was stopped: the call ran out "
            "of time (its timeout covers the ctx calls it makes)",
            **details,
        )
    if "database is locked" in msg or "database is busy" in msg:
        return busy_error(exc)
    if "database or disk is full" in msg:
        return WorkbenchError(
            "E_TOO_LARGE",
            f"storage is full: each database holds at most {limits.storage_bytes:,} bytes",
            limit=limits.storage_bytes,
            **details,
        )
    if msg == "out of memory":
        return WorkbenchError(
            "E_TOO_LARGE",
            f"SQLite ran out of memory: it may hold at most {limits.sqlite_heap_bytes:,} bytes at once",
            limit=limits.sqlite_heap_bytes,
            **details,
        )
    if "too big" in msg or "too long" in msg or "too large" in msg:
        return WorkbenchError(
            "E_TOO_LARGE",
            f"SQLite: {msg} (strings and blobs up to "
            f"{limits.sql_value_bytes:,} bytes, statements up to "
            f"{limits.sql_statement_bytes:,})",
            **details,
        )
    return WorkbenchError("E_SQL", f"SQLite: {msg}", **details)


def busy_error(exc: sqlite3.Error) -> WorkbenchError:
    """A locked state database (another process's call) as a coded error, not E_INTERNAL."""
    return WorkbenchError(
        "E_BUSY",
        f"the state database stayed locked by another process "
        f"until the call ran out of time ({exc}); try again, or give each "
        "process its own state_dir",
    )


def drop_temp(db: sqlite3.Connection) -> None:
    """Drop the TEMP tables, views and triggers a call made. They are scratch (not storage, so
    not D4), and must not outlive the call: a TEMP table named like a main one would take a
    later call's writes (N5: no memory survives between calls).

    Foreign keys are off for the drops (outside a transaction, where the pragma applies): a
    TEMP table's keys reference TEMP tables only, all of which go, and dropping a parent whose
    rows a child references failed with "FOREIGN KEY constraint failed" out of bench.call."""
    rows = db.execute(
        "SELECT type, name FROM temp.sqlite_master WHERE type IN ('table', 'view', 'trigger')"
    ).fetchall()
    if not rows:
        return
    keys = db.execute("PRAGMA foreign_keys").fetchone()[0]
    db.execute("PRAGMA foreign_keys=OFF")
    try:
        for kind, name in sorted(rows, key=lambda r: r[0] != "trigger"):  # triggers first
            quoted = name.replace('"', '""')
            db.execute(f'DROP {kind.upper()} IF EXISTS temp."{quoted}"')
    finally:
        db.execute(f"PRAGMA foreign_keys={'ON' if keys else 'OFF'}")


_text_of = sqlite3.connect(":memory:", check_same_thread=False)  # SQLite's own CAST AS TEXT


def _as_text(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return _text_of.execute("SELECT CAST(? AS TEXT)", (v,)).fetchone()[0]


def _instr(haystack: Any, needle: Any) -> int | None:
    """SQLite's instr(X, Y) in linear time. The built-in is quadratic (0.5 s at 200 kB, minutes
    at the length limit) and cannot be interrupted inside one call; Python's find is linear."""
    if haystack is None or needle is None:
        return None
    if isinstance(haystack, bytes) and isinstance(needle, bytes):
        return haystack.find(needle) + 1
    return _as_text(haystack).find(_as_text(needle)) + 1


def confine(db: sqlite3.Connection, limits: Limits) -> None:
    """SEC1/SEC5 limits on a connection a tool's SQL can reach: no attached database (so no
    ATTACH and no VACUUM, which attaches one), a linear instr(), bounded strings, statements,
    database size and SQLite heap."""
    db.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    db.create_function("instr", 2, _instr, deterministic=True)
    db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limits.sql_value_bytes)
    db.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, limits.sql_statement_bytes)
    page = db.execute("PRAGMA page_size").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {max(limits.storage_bytes // page, 1)}")
    # SQLite's heap is the process's: a statement may not make SQLite hold more than this at
    # once (a row of 2,000 × 30 MB blobs, a mock database grown without end). Process-wide:
    # the bench opened last sets it.
    set_heap_limit(db, limits.sqlite_heap_bytes)


def set_heap_limit(db: sqlite3.Connection, limit: int) -> None:
    """SQLite's process-wide hard heap limit, up or down. The PRAGMA only ever lowers it (so a
    tool's SQL cannot raise it): a bench opened with a small limit would leave every later one
    of the process under it. The C call, from the library the sqlite3 module runs on, sets it
    either way; where that library cannot be reached, the PRAGMA at least lowers it."""
    hard_heap_limit = _c_hard_heap_limit()
    if hard_heap_limit is not None:
        hard_heap_limit(limit)
    else:
        db.execute(f"PRAGMA hard_heap_limit = {limit}")


@functools.cache
def _c_hard_heap_limit() -> Any:
    """sqlite3_hard_heap_limit64 of the library the sqlite3 module runs on, or None."""
    import _sqlite3
    import ctypes

    try:
        fn = ctypes.CDLL(_sqlite3.__file__).sqlite3_hard_heap_limit64
    except (OSError, AttributeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_int64, [ctypes.c_int64]
    return fn


def apply_schema(db: sqlite3.Connection, schema_sql: str | None, limits: Limits) -> None:
    """D3: run db/schema.sql once, on the first open of the gem's database: while it holds no
    table, view, index or trigger (not `user_version`, which a tool may set back to 0).

    The gem wrote it, so it runs under the same SEC1/SEC5 guard as a tool's SQL."""
    if not schema_sql or db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
        return
    guard = _Guard(read_only=False).install(db)
    token = _watchdog.arm(time.monotonic() + limits.schema_seconds, db.interrupt)
    try:
        try:
            db.executescript(f"BEGIN;\n{schema_sql}\n;COMMIT;")
        finally:  # before the ROLLBACK: the watchdog repeats its interrupt until disarmed
            _watchdog.disarm(token)
    except sqlite3.Error as exc:
        if db.in_transaction:
            db.execute("ROLLBACK")
        why = (
            f"it ran over {limits.schema_seconds:g} s"
            if str(exc) == "interrupted"
            else f"{guard.denied} (SEC1)"
            if guard.denied
            else str(exc)
        )
        raise GemLoadError(f"db/schema.sql failed: {why}", file="db/schema.sql") from None
    finally:
        guard.remove(db)
    if db.execute("PRAGMA user_version").fetchone()[0] == 0:
        db.execute("PRAGMA user_version = 1")


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


class _Guard:
    """The authorizer and progress handler of one ctx.storage.sql statement (SEC1, SEC5, D4)."""

    def __init__(self, *, read_only: bool) -> None:
        self.read_only, self.wrote, self.denied = read_only, False, ""

    def install(self, db: sqlite3.Connection) -> _Guard:
        db.set_authorizer(self.authorize)
        return self

    @staticmethod
    def remove(db: sqlite3.Connection) -> None:
        db.set_authorizer(None)

    def authorize(self, action: int, arg1: Any, arg2: Any, db_name: Any, _src: Any) -> int:
        if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
            return self._deny("ATTACH/DETACH: the gem's SQL reaches only its own database")
        if action == sqlite3.SQLITE_PRAGMA:
            name = str(arg1).lower()
            if name == "user_version" and arg2 is not None:
                return self._write()
            if name == "user_version" or (
                name in READ_PRAGMAS and not (arg2 is not None and name in _SETTINGS_READ_ONLY)
            ):
                return sqlite3.SQLITE_OK
            return self._deny(
                f"PRAGMA {name}{'' if arg2 is None else ' = …'}: only read-only "
                f"PRAGMAs ({', '.join(sorted(READ_PRAGMAS))}) and user_version "
                "are available"
            )
        if action == sqlite3.SQLITE_FUNCTION and str(arg2).lower() in _DENIED_FUNCTIONS:
            return self._deny(f"{arg2}(): not available to gems")
        if action in _WRITES and db_name != "temp":  # temp tables are scratch, not storage
            return self._write()
        return sqlite3.SQLITE_OK

    def _write(self) -> int:
        self.wrote = True
        return sqlite3.SQLITE_DENY if self.read_only else sqlite3.SQLITE_OK

    def _deny(self, why: str) -> int:
        self.denied = self.denied or why
        return sqlite3.SQLITE_DENY


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

    def _run(self, sql: Any, params: Any) -> tuple[sqlite3.Cursor, list[Any]]:
        if not isinstance(sql, str):
            raise WorkbenchError("E_INVALID_ARGUMENT", "sql must be a string", field="sql")
        if params is None:
            params = []
        if not isinstance(params, (list, tuple, dict)):
            raise WorkbenchError(
                "E_INVALID_ARGUMENT", "params must be a list (for ?) or an object (for :name)", field="params"
            )
        self.s.used_sql = True
        left = self.s.remaining("storage.sql")
        if left is not None:  # waiting for another process's lock counts against the call too
            self.db.execute(f"PRAGMA busy_timeout = {int(min(left, 10) * 1000)}")
        guard = _Guard(read_only=self.s.strict and self.s.tool.side_effect == "read").install(self.db)
        try:
            cur = self.db.execute(well_formed(sql), well_formed_params(params))
            return cur, self._fetch(cur, sql)  # a row can fail too (e.g. malformed JSON): E_SQL
        except sqlite3.Error as exc:
            if not (guard.wrote or guard.denied) and writes_storage(sql):  # D4: failed to compile,
                self.s.attempt("storage.sql")  # so the authorizer never saw it: its words say so
            raise self._error(exc, guard, sql) from None
        except MemoryError:  # SQLITE_NOMEM: the statement hit the heap limit set by confine()
            cap = self.s.limits.sqlite_heap_bytes
            raise WorkbenchError(
                "E_TOO_LARGE",
                f"the statement needs more memory than SQLite may hold ({cap:,} bytes)",
                sql=sql,
                limit=cap,
            ) from None
        finally:
            guard.remove(self.db)
            if guard.wrote:  # D4; in strict mode this raises E_SIDE_EFFECT instead of SQLite's refusal
                self.s.writing("storage.sql")

    def _fetch(self, cur: sqlite3.Cursor, sql: str) -> list[Any]:
        return bounded_rows(
            cur,
            self.s.limits.sql_result_bytes,
            "the query; select fewer columns or add LIMIT/OFFSET:",
            sql=sql,
        )

    def _error(self, exc: sqlite3.Error, guard: _Guard, sql: str) -> WorkbenchError:
        if guard.denied:
            return WorkbenchError("E_PERM_DENIED", f"SQLite: {guard.denied} (SEC1)", sql=sql)
        if "too many attached databases" in str(exc):
            return WorkbenchError(
                "E_PERM_DENIED",
                "ATTACH and VACUUM are not available: the gem's SQL reaches only its own database (SEC1)",
                sql=sql,
            )
        return sqlite_error(exc, self.s.limits, sql=sql)

    def query(self, sql: str, params: Any = None) -> list[dict[str, Any]]:
        """Rows as objects (column name -> value)."""
        cur, rows = self._run(sql, params)
        cols = [d[0] for d in cur.description or ()]
        return [dict(zip(cols, r)) for r in rows]

    def execute(self, sql: str, params: Any = None) -> dict[str, int]:
        """A statement that changes data: {changes, lastInsertRowid}."""
        cur, _ = self._run(sql, params)
        return {"changes": max(cur.rowcount, 0), "lastInsertRowid": cur.lastrowid or 0}
