"""The row store: a SQLite connection, in memory (mock) or in a file (real, WAL), and
`SqlDatabase`, the one way the layers above reach it (ctx.storage.sql, the call's transaction,
snapshots, `bench.sql`)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from .._errors import WorkbenchError
from . import sqlguard
from .engine import TranslatedRows, translating
from .sqlguard import EngineLimits, Guard


class StateError(Exception):
    """A state database that cannot be used (corrupt, not a database, locked at open)."""


class ScriptError(Exception):
    """A script (db/schema.sql) failed and was rolled back: `why`, or `interrupted` at its time."""

    def __init__(self, why: str, *, interrupted: bool) -> None:
        super().__init__(why)
        self.why, self.interrupted = why, interrupted


class Cursor(Protocol):
    """A statement's rows, read one at a time, and what it changed."""

    @property
    def description(self) -> Any: ...

    @property
    def rowcount(self) -> int: ...

    @property
    def lastrowid(self) -> int | None: ...

    def __iter__(self) -> Iterator[Any]: ...

    def close(self) -> None: ...


@contextlib.contextmanager
def as_state_error() -> Iterator[None]:
    """A database that cannot be opened or read as one: StateError, with SQLite's words."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        raise StateError(str(exc)) from None


def open_database(path: Path | None) -> sqlite3.Connection:
    """Open a database in autocommit mode; the ctx layer opens its own transactions.

    A file database uses WAL with synchronous=FULL so a kernel killed mid-call leaves the last
    committed state, never a torn one.
    """
    if path is None:
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)
        _wal(conn)
        conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def _wal(conn: sqlite3.Connection, seconds: float = 10.0) -> None:
    """Switch to WAL, waiting for another process doing the same: on a new database file the
    switch needs the lock the other one holds, and SQLite reports "database is locked" at once
    instead of calling its busy handler (two benches opening one new state folder together)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _busy_timeout(seconds: float) -> str:
    """The PRAGMA that makes SQLite wait up to `seconds` for a lock: whole 10 ms below a second
    or more (the statement's text, cached by sqlite3, is then the same from call to call)."""
    ms = int(seconds * 1000)
    return f"PRAGMA busy_timeout = {ms if ms < 1000 else ms - ms % 10}"


#: SQLite's date functions, and how many arguments make 'now' implied when fewer are given
_DATE_FUNCTIONS = {"date": 1, "time": 1, "datetime": 1, "julianday": 1, "unixepoch": 1, "strftime": 2}


@translating
class SqlDatabase:
    """One SQLite database (autocommit: transactions are the caller's, begin/commit/rollback).

    Its failures are EngineError (providers/engine.py), SQLite's translated in here, a cursor's
    rows included; `storage_error` codes them, so the layers above never see sqlite3's. `conn`
    is the connection, for providers and tests."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._now: Callable[[], float] | None = None  # use_clock's; its functions read it
        self._aux: sqlite3.Connection | None = None  # where they ask SQLite's own date functions

    @classmethod
    def open(cls, path: Path | None) -> SqlDatabase:
        """A database in memory (None) or in a file; StateError when the file is not one."""
        with as_state_error():
            return cls(open_database(path))

    def close(self) -> None:
        self.conn.close()
        if self._aux is not None:
            self._aux.close()

    def use_clock(self, now: Callable[[], float]) -> None:
        """SQL's 'now' (date('now'), strftime(…, 'now'), datetime(), a DEFAULT of them) is
        `now()`'s time, the bench's clock, instead of the system's: the date functions are
        replaced by ones that put that time for 'now' and ask SQLite's own, on a connection of
        their own, for the rest. CURRENT_TIMESTAMP, CURRENT_DATE and CURRENT_TIME are keywords
        SQLite answers itself: they stay the system's (docs/readings.md). Called again (the
        bench's clock replacing open's), it only changes the clock they read."""
        first = self._now is None
        self._now = now
        if not first:
            return
        aux = self._aux = sqlite3.connect(":memory:", check_same_thread=False)
        lock = threading.Lock()

        def dated(name: str, implied: int) -> Callable[..., Any]:
            sql = f"SELECT {name}"

            def fn(*args: Any) -> Any:
                t = self._now() if self._now is not None else time.time()
                stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}"
                given = [stamp if isinstance(a, str) and a.lower() == "now" else a for a in args]
                if len(given) < implied:  # datetime(), strftime('%s'): 'now' is implied
                    given.append(stamp)
                with lock:
                    return aux.execute(f"{sql}({', '.join('?' * len(given))})", given).fetchone()[0]

            return fn

        for name, implied in _DATE_FUNCTIONS.items():
            self.conn.create_function(name, -1, dated(name, implied), deterministic=True)

    def interrupt(self) -> None:
        """Stop the statement running now (safe from another thread)."""
        self.conn.interrupt()

    def confine(self, limits: EngineLimits) -> None:
        """SEC1/SEC5: the engine limits a tool's SQL runs under (sqlguard.confine)."""
        with as_state_error():
            sqlguard.confine(self.conn, limits)

    # -- transactions
    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    def begin(self, *, wait_seconds: float | None = None) -> None:
        """Take the write lock now, waiting up to `wait_seconds` for another connection's
        (None: as the last wait set). IMMEDIATE: a DEFERRED transaction that read first cannot
        take the write lock once another process committed, and SQLite refuses it at once
        instead of waiting."""
        if wait_seconds is not None:
            self.conn.execute(_busy_timeout(max(0.0, wait_seconds)))
        self.conn.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        self.conn.execute("ROLLBACK")

    # -- the gem's SQL (ctx.storage.sql)
    def guard(self, *, read_only: bool) -> Guard:
        """The authorizer for the next statement, until `remove()`d (SEC1, D4)."""
        return Guard(self.conn, read_only=read_only)

    def wait_for_locks(self, seconds: float) -> None:
        """How long the next statements wait for another connection's lock (set it before the
        guard: the authorizer refuses the PRAGMA that sets it)."""
        self.conn.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")

    def execute(self, sql: str, params: Any) -> Cursor:
        """Run one statement; its rows are read from the cursor (a row can fail too)."""
        return TranslatedRows(self.conn.execute(sql, params))

    def drop_temp(self) -> None:
        """Drop the TEMP tables, views and triggers (sqlguard.drop_temp)."""
        sqlguard.drop_temp(self.conn)

    def is_empty(self) -> bool:
        """No table, view, index or trigger yet."""
        with as_state_error():
            return not self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]

    def run_script(self, script: str, *, arm: Callable[[], Callable[[], None]]) -> None:
        """Run `script` in one transaction under the authorizer; `arm()` starts the timer that
        interrupts it and returns what stops the timer. ScriptError (rolled back) when it fails.
        Then `user_version` is 1 unless the script set it."""
        guard = self.guard(read_only=False)
        disarm = arm()
        try:
            try:
                self.conn.executescript(f"BEGIN;\n{script}\n;COMMIT;")
            finally:  # before the ROLLBACK: the timer repeats its interrupt until stopped
                disarm()
        except sqlite3.Error as exc:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            interrupted = str(exc) == "interrupted"
            why = f"{guard.denied} (SEC1)" if guard.denied and not interrupted else str(exc)
            raise ScriptError(why, interrupted=interrupted) from None
        finally:
            guard.remove()
        if self.conn.execute("PRAGMA user_version").fetchone()[0] == 0:
            self.conn.execute("PRAGMA user_version = 1")

    # -- inspection (bench.sql, snapshots)
    def query(self, sql: str, params: Any = ()) -> tuple[list[str], list[Any]]:
        """(columns, rows) of a query the user runs; E_SQL when SQLite refuses it."""
        try:
            cur = self.conn.execute(sql, params)
            rows = cur.fetchall()  # a row can fail too (e.g. malformed JSON)
        except sqlite3.Error as exc:
            raise WorkbenchError("E_SQL", f"SQLite: {exc}", sql=sql) from None
        return [d[0] for d in cur.description or ()], rows

    def copy(self) -> SqlDatabase:
        """A copy in memory, apart from this database."""
        mem = sqlite3.connect(":memory:", check_same_thread=False)
        self.conn.backup(mem)
        return SqlDatabase(mem)

    def restore(self, copy: SqlDatabase) -> None:
        """Hold exactly what `copy` (one of this database's copies) holds."""
        copy.conn.backup(self.conn)

    def tables(self) -> list[str]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]

    def rows(self, name: str) -> dict[Any, dict[str, Any]]:
        """A table's rows keyed by rowid; by their whole content when the table has no rowid,
        or when the gem named columns rowid, _rowid_ and oid so that none of them means it."""
        if name not in self.tables():
            return {}
        db = self.conn
        table = '"' + name.replace('"', '""') + '"'  # the gem chose the name: quote it whole
        cols = {r[1].lower() for r in db.execute("SELECT * FROM pragma_table_info(?)", (name,))}
        alias = next((a for a in ("rowid", "_rowid_", "oid") if a not in cols), None)
        try:
            if alias is None:
                raise sqlite3.OperationalError("every rowid alias is a column")
            cur = db.execute(f"SELECT {alias} AS _rowid, * FROM {table}")
        except sqlite3.OperationalError:  # WITHOUT ROWID: rows are their own keys
            cur = db.execute(f"SELECT * FROM {table}")
            return _by_content([d[0] for d in cur.description], cur)
        names = [d[0] for d in cur.description][1:]
        return {r[0]: dict(zip(names, r[1:])) for r in cur}


def _by_content(names: Sequence[str], rows: Any) -> dict[Any, dict[str, Any]]:
    out: dict[Any, dict[str, Any]] = {}
    for r in rows:  # identical rows stay apart: the second is "…#2"
        key = base = json.dumps(r, default=str)
        n = 1
        while key in out:
            n += 1
            key = f"{base}#{n}"
        out[key] = dict(zip(names, r))
    return out
