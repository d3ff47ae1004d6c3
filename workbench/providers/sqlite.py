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
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn
