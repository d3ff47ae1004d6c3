"""SQLite engine hardening under ctx.storage.sql and the data store (SEC1, SEC5): connection
limits, the authorizer a tool's SQL runs under, the heap limit and the TEMP drop (SQLite's
failures are the providers' EngineError, coded by `storage_error`: providers/engine.py,
which this module still names for the ctx layer's older import). The rules that decide when each applies are the ctx layer's
(ctx/storage.py); this is how SQLite is made to keep them.
"""

from __future__ import annotations

import functools
import sqlite3
from typing import Any

from .engine import EngineLimits, storage_error

__all__ = ["READ_PRAGMAS", "EngineLimits", "Guard", "confine", "drop_temp", "set_heap_limit", "storage_error"]

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


def confine(db: sqlite3.Connection, limits: EngineLimits) -> None:
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


class Guard:
    """The authorizer of one statement (or script) of the gem's SQL (SEC1, D4): what it refused
    (`denied`, the first reason) and whether it wrote storage (`wrote`; refused if `read_only`)."""

    def __init__(self, db: sqlite3.Connection, *, read_only: bool) -> None:
        self.db, self.read_only, self.wrote, self.denied = db, read_only, False, ""
        db.set_authorizer(self.authorize)

    def remove(self) -> None:
        self.db.set_authorizer(None)

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
