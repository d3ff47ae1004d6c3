"""Storage backends under the ctx layer: mock (memory) and real (folders, SQLite files)."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from .base import Entry, FileStore
from .folder import FolderFileStore
from .memory import MemoryFileStore
from .sqlite import open_database

__all__ = ["Entry", "FileStore", "FolderFileStore", "MemoryFileStore", "Providers",
           "default_state_dir", "make_providers", "open_database"]


def default_state_dir(gem_id: str) -> Path:
    """Where real state of a gem lives unless `state_dir=` says otherwise."""
    base = os.environ.get("GEM_WORKBENCH_HOME") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "gem-workbench")
    return Path(base) / gem_id


@dataclass
class Providers:
    """The storage a bench sits on: one file store and two SQLite databases."""

    kind: dict[str, str]   # capability -> "mock" | "real"
    files: FileStore
    data_db: sqlite3.Connection   # ctx.data, ctx.storage.kv, file history
    sql_db: sqlite3.Connection    # ctx.storage.sql: the gem's private database
    state_dir: Path | None


def make_providers(gem_id: str, spec: str | dict[str, str], *, workspace: Path | None,
                   state_dir: Path | None) -> Providers:
    """Build providers from "mock", "real", or a mix like {"files": "real", "storage": "mock"}."""
    from .._errors import UsageError

    given = {"files": spec, "storage": spec} if isinstance(spec, str) else dict(spec)
    if set(given) - {"files", "storage"} or set(given.values()) - {"mock", "real"}:
        raise UsageError(f"providers={spec!r}: use 'mock', 'real', or a dict with keys 'files' "
                         "and 'storage' and values 'mock' or 'real'")
    kinds = {"files": "mock", "storage": "mock", **given}
    # mock providers keep nothing there, but caches (the sandbox's DENO_DIR) use it when given
    state: Path | None = Path(state_dir) if state_dir else None
    if "real" in kinds.values():
        state = state or default_state_dir(gem_id)
        state.mkdir(parents=True, exist_ok=True)
    files: FileStore = MemoryFileStore()
    if kinds["files"] == "real" and state is not None:
        ws = Path(workspace) if workspace else state / "workspace"
        ws.mkdir(parents=True, exist_ok=True)
        files = FolderFileStore(workspace=ws, runs=state / "runs")
    db_dir = state if kinds["storage"] == "real" else None
    return Providers(
        kind=kinds, files=files,
        data_db=open_database(db_dir / "data.sqlite" if db_dir else None),
        sql_db=open_database(db_dir / "sql.sqlite" if db_dir else None),
        state_dir=state)
