"""Snapshots of a bench's state: files (bytes), the data store (its dump) and the gem's SQLite
database (a copy), each read and restored through its provider."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from ..providers import DataStore, Providers, SqlDatabase

DIFF_COLUMNS = ["kind", "where", "key", "change", "before", "after"]


@dataclass(eq=False)
class Snapshot:
    """State at one moment; pass it to `Bench.diff` or `Bench.restore`."""

    taken_at: float
    files: dict[tuple[str, str], tuple[str, bytes | None]]
    data: DataStore
    sql_db: SqlDatabase

    def __repr__(self) -> str:
        return (
            f"<Snapshot {time.strftime('%H:%M:%S', time.localtime(self.taken_at))}: "
            f"{sum(t == 'file' for t, _ in self.files.values())} files>"
        )


def _files(p: Providers) -> dict[tuple[str, str], tuple[str, bytes | None]]:
    out: dict[tuple[str, str], tuple[str, bytes | None]] = {}
    for root in p.files.roots():
        for path, e in p.files.walk(root):
            out[(root, path)] = (e.type, p.files.read(root, path) if e.type == "file" else None)
    return out


def take(p: Providers) -> Snapshot:
    return Snapshot(p.now(), _files(p), p.store.dump(), p.sql_db.copy())


def _changes(before: dict, after: dict) -> Iterator[tuple[Any, str, Any, Any]]:
    for k in sorted(before.keys() | after.keys(), key=str):
        a, b = before.get(k), after.get(k)
        if a == b:
            continue
        yield k, "added" if a is None else "deleted" if b is None else "changed", a, b


def diff(snap: Snapshot, p: Providers) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []

    def add(kind: str, where: str, key: Any, change: str, before: Any, after: Any) -> None:
        rows.append(dict(zip(DIFF_COLUMNS, (kind, where, key, change, before, after))))

    now = _files(p)
    for (root, path), ch, a, b in ((k, c, a, b) for k, c, a, b in _changes(snap.files, now)):
        ws = root == "workspace"
        kind = (b or a)[0]
        add(
            kind,
            "workspace" if ws else root,
            f"workspace:{path}" if ws else path,
            ch,
            len(a[1]) if a and a[1] is not None else None,
            len(b[1]) if b and b[1] is not None else None,
        )
    words = {"added": "inserted", "changed": "updated", "deleted": "deleted"}
    for name in sorted(set(snap.data.collections()) | set(p.store.collections())):
        before = {i: json.loads(doc) for i, doc in snap.data.docs(name)}
        after = {i: json.loads(doc) for i, doc in p.store.docs(name)}
        for k, ch, a, b in _changes(before, after):
            add("document", name, k, words[ch], a, b)
    for k, ch, a, b in _changes(dict(snap.data.kv_items()), dict(p.store.kv_items())):
        add("kv", "kv", k, words[ch], a, b)
    for t in sorted(set(snap.sql_db.tables()) | set(p.sql_db.tables())):
        for k, ch, a, b in _changes(snap.sql_db.rows(t), p.sql_db.rows(t)):
            add("sql", t, k, words[ch], a, b)
    # object columns: sizes, documents, values and rows share them; no int -> float/NaN casts
    return pd.DataFrame(rows, columns=DIFF_COLUMNS, dtype=object)


def restore(snap: Snapshot, p: Providers) -> None:
    now = _files(p)
    # new entries, and entries whose type changed (a file where a folder was, or the reverse)
    stale = [k for k in now if k not in snap.files or snap.files[k][0] != now[k][0]]
    for root, path in sorted(stale, key=lambda k: -len(k[1])):
        if p.files.entry(root, path) is not None:
            p.files.remove(root, path, trash=False)
    for (root, path), (kind, data) in sorted(snap.files.items(), key=lambda kv: len(kv[0][1])):
        if now.get((root, path)) == (kind, data) and p.files.entry(root, path) is not None:
            continue
        if kind == "folder":
            p.files.mkdir(root, path)
        elif data is not None:
            p.files.write(root, path, data)
    p.store.restore(snap.data)
    p.sql_db.restore(snap.sql_db)
