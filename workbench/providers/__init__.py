"""Storage backends under the ctx layer: mock (memory) and real (folders, SQLite files)."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .base import Entry, FileStore
from .folder import FolderFileStore
from .memory import MemoryFileStore
from .sqlite import open_database

Kind = Literal["mock", "real"]

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

    kind: dict[str, Kind]
    files: FileStore
    data_db: "sqlite3.Connection"   # ctx.data, ctx.storage.kv, file history
    sql_db: "sqlite3.Connection"    # ctx.storage.sql: the gem's private database
    state_dir: Path | None


def make_providers(gem_id: str, spec: "str | dict[str, Kind]", *, workspace: Path | None,
                   state_dir: Path | None) -> Providers:
    """Build providers from "mock", "real", or a mix like {"files": "real", "storage": "mock"}."""
    from .._errors import UsageError

    kinds: dict[str, Kind] = {"files": "mock", "storage": "mock"}
    if isinstance(spec, str):
        if spec not in ("mock", "real"):
            raise UsageError(f"providers={spec!r}: use 'mock', 'real' or a dict of those")
        kinds = {k: spec for k in kinds}  # type: ignore[misc]
    else:
        unknown = set(spec) - set(kinds)
        bad = {k: v for k, v in spec.items() if v not in ("mock", "real")}
        if unknown or bad:
            raise UsageError(f"providers={spec!r}: keys are {sorted(kinds)}, values 'mock' or 'real'")
        kinds.update(spec)
    if "real" in kinds.values():
        state_dir = Path(state_dir) if state_dir else default_state_dir(gem_id)
        state_dir.mkdir(parents=True, exist_ok=True)
    if kinds["files"] == "real":
        ws = Path(workspace) if workspace else state_dir / "workspace"  # type: ignore[operator]
        ws.mkdir(parents=True, exist_ok=True)
        files: FileStore = FolderFileStore(workspace=ws, runs=state_dir / "runs")  # type: ignore[operator]
    else:
        files = MemoryFileStore()
    real_db = kinds["storage"] == "real"
    return Providers(
        kind=kinds, files=files,
        data_db=open_database(state_dir / "data.sqlite" if real_db else None),  # type: ignore[operator]
        sql_db=open_database(state_dir / "sql.sqlite" if real_db else None),  # type: ignore[operator]
        state_dir=state_dir)
