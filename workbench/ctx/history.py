"""File history of the conversation folder (F5, F8): old versions kept so a rollback can restore.

Kept in the bench's state database (table `_wb_history`), next to the gem's storage but never
visible to the gem. A copy larger than 100 MB is not kept; its row says so.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from .limits import DEFAULT

if TYPE_CHECKING:
    import sqlite3

    from ..providers.base import FileStore
    from ._session import CallSession
    from .paths import GemPath

MAX_HISTORY_BYTES = DEFAULT.history_bytes

DDL = """
CREATE TABLE IF NOT EXISTS _wb_history (
    version INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT NOT NULL,            -- inside the conversation folder
    reason TEXT NOT NULL,          -- overwrite | delete | restore
    call_id TEXT,
    saved_at INTEGER NOT NULL,     -- ms since the epoch
    size INTEGER NOT NULL,
    content BLOB                   -- NULL when the copy was over the 100 MB cap
);
CREATE INDEX IF NOT EXISTS _wb_history_path ON _wb_history(path);
"""


def _files_under(store: "FileStore", root: str, rel: str) -> list[tuple[str, int]]:
    """(path, size) of every file at or below rel; symlinks are not followed, and dot-entries
    (which do not exist for the gem, F10) are never copied into history (SEC3)."""
    out, todo = [], [(rel, store.entry(root, rel))]
    while todo:  # iterative: a deep tree cannot exhaust the stack
        path, e = todo.pop()
        if e is None or e.type == "link" or path.rsplit("/", 1)[-1].startswith("."):
            continue
        if e.type == "file":
            out.append((path, e.size))
        else:
            todo += [(f"{path}/{c.name}" if path else c.name, c)
                     for c in reversed(store.list(root, path))]
    return out


def record(db: "sqlite3.Connection", store: "FileStore", rel: str, *, reason: str,
           call_id: str | None, limit: int = MAX_HISTORY_BYTES) -> None:
    """Save the current version(s) of a workspace path (file or folder) into history."""
    files = _files_under(store, "workspace", rel)
    keep = sum(size for _, size in files) <= limit
    now = time.time_ns() // 1_000_000
    db.executemany(
        "INSERT INTO _wb_history(path, reason, call_id, saved_at, size, content) VALUES (?,?,?,?,?,?)",
        [(path, reason, call_id, now, size, store.read("workspace", path) if keep else None)
         for path, size in files])


def save(session: "CallSession", p: "GemPath", *, reason: str) -> None:
    session.flush()
    record(session.providers.data_db, session.providers.files, p.rel, reason=reason,
           call_id=session.call_id, limit=session.limits.history_bytes)


def versions(db: "sqlite3.Connection", path: str | None = None) -> list[dict[str, Any]]:
    q = "SELECT version, path, reason, call_id, saved_at, size, content IS NOT NULL AS kept FROM _wb_history"
    rows = db.execute(q + (" WHERE path = ?" if path else "") + " ORDER BY version",
                      (path,) if path else ()).fetchall()
    cols = ("version", "path", "reason", "call_id", "saved_at", "size", "kept")
    return [dict(zip(cols, r)) for r in rows]


def restore(db: "sqlite3.Connection", store: "FileStore", path: str, version: int | None, *,
            limit: int = MAX_HISTORY_BYTES) -> int:
    """Put a saved version back (the current one goes to history first); returns its version."""
    path = path.removeprefix("workspace:")
    q = "SELECT version, content FROM _wb_history WHERE path = ?"
    row = db.execute(q + (" AND version = ?" if version is not None else "") +
                     " ORDER BY version DESC LIMIT 1",
                     (path, version) if version is not None else (path,)).fetchone()
    if row is None:
        raise WorkbenchError("E_NOT_FOUND", f"no saved version of workspace:{path}"
                             + (f" with version {version}" if version is not None else ""), path=path)
    if row[1] is None:
        raise WorkbenchError("E_TOO_LARGE", f"version {row[0]} of workspace:{path} was over "
                             f"the history cap ({limit:,} bytes) and was not kept", path=path)
    current = store.entry("workspace", path)
    if current is not None and current.type == "folder":
        raise WorkbenchError("E_IS_A_FOLDER", f"workspace:{path} is now a folder; move it away "
                             "before restoring the file", path=path)
    if current is not None and current.type == "file":
        record(db, store, path, reason="restore", call_id=None, limit=limit)
    store.write("workspace", path, row[1])
    return row[0]
