"""ctx.storage: `kv` (D2, string keys and values) and `sql` (D3, the gem's private SQLite)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError

if TYPE_CHECKING:
    from ._session import CallSession

KV_DDL = "CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"

# authorizer action codes that change a database
_WRITES = {getattr(sqlite3, n) for n in dir(sqlite3) if n.startswith(
    ("SQLITE_INSERT", "SQLITE_UPDATE", "SQLITE_DELETE", "SQLITE_CREATE_", "SQLITE_DROP_",
     "SQLITE_ALTER_TABLE", "SQLITE_REINDEX", "SQLITE_ANALYZE"))} - {sqlite3.SQLITE_DROP_TEMP_TABLE}


def apply_schema(db: sqlite3.Connection, schema_sql: str | None) -> None:
    """D3: run db/schema.sql once, on the first open of the gem's database (user_version 0)."""
    if not schema_sql or db.execute("PRAGMA user_version").fetchone()[0] != 0:
        return
    try:
        db.executescript(f"BEGIN;\n{schema_sql}\n;COMMIT;")
    except sqlite3.Error as exc:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise WorkbenchError("E_MANIFEST", f"db/schema.sql failed: {exc}", file="db/schema.sql") from None
    if db.execute("PRAGMA user_version").fetchone()[0] == 0:
        db.execute("PRAGMA user_version = 1")


def kv_put(db: sqlite3.Connection, key: str, value: str) -> None:
    """Store one kv entry (the SQL every kv writer shares; rules are the caller's)."""
    db.execute("INSERT INTO kv(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
               "value = excluded.value", (key, value))


def kv_remove(db: sqlite3.Connection, key: str) -> bool:
    """Remove one kv entry; whether it existed."""
    return db.execute("DELETE FROM kv WHERE key = ?", (key,)).rowcount > 0


def _str(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise WorkbenchError("E_INVALID_ARGUMENT", f"kv {what} must be a string, got "
                             f"{type(v).__name__} ({v!r:.40}); convert it with String(…) or "
                             "JSON.stringify(…)", field=what)
    return v


class KV:
    """ctx.storage.kv: small string settings and cursors."""

    def __init__(self, session: "CallSession") -> None:
        self.s = session
        self.db = session.providers.data_db

    def get(self, key: str) -> str | None:
        self.s.flush()
        row = self.db.execute("SELECT value FROM kv WHERE key = ?", (_str(key, "key"),)).fetchone()
        return row[0] if row else None

    def set(self, key: str, value: str) -> None:
        _str(key, "key")
        _str(value, "value")
        self.s.writing("storage.kv.set")
        self.s.flush()
        kv_put(self.db, key, value)

    def delete(self, key: str) -> bool:
        _str(key, "key")
        self.s.writing("storage.kv.delete")
        self.s.flush()
        return kv_remove(self.db, key)

    def list(self, prefix: str = "") -> list[str]:
        """Keys starting with prefix, sorted."""
        self.s.flush()
        _str(prefix, "prefix")
        rows = self.db.execute("SELECT key FROM kv WHERE substr(key, 1, ?) = ? ORDER BY key",
                               (len(prefix), prefix))
        return [r[0] for r in rows]


class SQL:
    """ctx.storage.sql: the gem's own database, with db/schema.sql applied (D3)."""

    def __init__(self, session: "CallSession") -> None:
        self.s = session
        self.db = session.providers.sql_db

    def _run(self, sql: Any, params: Any) -> tuple[sqlite3.Cursor, list[Any]]:
        if not isinstance(sql, str):
            raise WorkbenchError("E_INVALID_ARGUMENT", "sql must be a string", field="sql")
        if params is None:
            params = []
        if not isinstance(params, (list, tuple, dict)):
            raise WorkbenchError("E_INVALID_ARGUMENT", "params must be a list (for ?) or an object "
                                 "(for :name)", field="params")
        wrote: list[int] = []

        def authorizer(action: int, _1: Any, _2: Any, db_name: Any, _4: Any) -> int:
            if action in _WRITES and db_name != "temp":  # temp tables are scratch, not storage
                wrote.append(action)
                if self.s.strict and self.s.tool.side_effect == "read":
                    return sqlite3.SQLITE_DENY
            return sqlite3.SQLITE_OK

        self.db.set_authorizer(authorizer)
        try:
            cur = self.db.execute(sql, params)
            return cur, cur.fetchall()  # a row can fail too (e.g. malformed JSON): still E_SQL
        except sqlite3.Error as exc:
            raise WorkbenchError("E_SQL", f"SQLite: {exc}", sql=sql) from None
        finally:
            self.db.set_authorizer(None)
            if wrote:  # D4; in strict mode this raises E_SIDE_EFFECT instead of SQLite's refusal
                self.s.writing("storage.sql")

    def query(self, sql: str, params: Any = None) -> list[dict[str, Any]]:
        """Rows as objects (column name -> value)."""
        cur, rows = self._run(sql, params)
        cols = [d[0] for d in cur.description or ()]
        return [dict(zip(cols, r)) for r in rows]

    def execute(self, sql: str, params: Any = None) -> dict[str, int]:
        """A statement that changes data: {changes, lastInsertRowid}."""
        cur, _ = self._run(sql, params)
        return {"changes": max(cur.rowcount, 0), "lastInsertRowid": cur.lastrowid or 0}
