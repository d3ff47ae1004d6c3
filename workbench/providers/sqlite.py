"""The row store: a SQLite connection, in memory (mock) or in a file (real, WAL)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


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
    import time

    deadline = time.monotonic() + seconds
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
