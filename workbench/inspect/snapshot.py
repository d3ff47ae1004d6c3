"""Snapshots of a bench's state: files (bytes), the data store (its dump) and the gem's SQLite
database (a copy), each read and restored through its provider."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from .._errors import WorkbenchError
from ..providers.base import LinkInPath

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


def _files(p: Providers, *, unread_ok: bool = False) -> dict[tuple[str, str], tuple[str, bytes | None]]:
    """Every entry and each file's bytes; a file another process swapped for a link (or
    removed) between the listing and the read is E_PATH, or, with `unread_ok`, None bytes."""
    out: dict[tuple[str, str], tuple[str, bytes | None]] = {}
    for root in p.files.roots():
        for path, e in p.files.walk(root):
            data = None
            if e.type == "file":
                try:
                    data = p.files.read(root, path)
                except OSError as exc:
                    if not unread_ok:
                        raise _path_error(root, path, exc, doing="snapshot") from None
            out[(root, path)] = (e.type, data)
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


def _where(root: str, path: str) -> str:
    return f"workspace:{path}" if root == "workspace" else f"{root}/{path}"


def _path_error(
    root: str, path: str, exc: OSError, *, failed: int = 1, doing: str = "restore"
) -> WorkbenchError:
    """E_PATH for an entry a snapshot could not read or restore could not put back: another
    process changed it meanwhile (a folder swapped for a link, which the store never follows,
    or an entry it cannot see)."""
    where = _where(root, path)
    why = (
        f"'{exc.filename}' became a symbolic link, which is never followed"
        if isinstance(exc, LinkInPath)
        else f"{exc.strerror or exc}: an entry changed meanwhile, or one the gem cannot see, is in the way"
    )
    more = f" ({failed - 1} more entries too)" if failed > 1 else ""
    outcome = (
        f"it was not put back{more}, the rest of the snapshot was"
        if doing == "restore"
        else "no snapshot was taken"
    )
    return WorkbenchError(
        "E_PATH",
        f"{doing}: {where}: {why}; {outcome}, and nothing outside the bench was written: "
        f"{doing} again once the folder holds still",
        path=where,
        failed=failed,
    )


def restore(snap: Snapshot, p: Providers) -> None:
    """Put `snap` back; E_PATH naming the first entry another process kept it from putting
    back (each entry goes through the store, which follows no link swapped in meanwhile)."""
    failed: list[tuple[str, str, OSError]] = []

    def attempt(root: str, path: str, step: Callable[..., None], *args: Any) -> None:
        try:
            step(p, root, path, *args)
        except OSError as exc:  # LinkInPath too: an OSError the store raises rather than follow
            failed.append((root, path, exc))

    now = _files(p, unread_ok=True)  # a file it cannot read now is written again
    # new entries, and entries whose type changed (a file where a folder was, or the reverse)
    stale = [k for k in now if k not in snap.files or snap.files[k][0] != now[k][0]]
    for root, path in sorted(stale, key=lambda k: -len(k[1])):
        attempt(root, path, _remove)
    for (root, path), (kind, data) in sorted(snap.files.items(), key=lambda kv: len(kv[0][1])):
        attempt(root, path, _put, kind, data, now.get((root, path)))
    p.store.restore(snap.data)
    p.sql_db.restore(snap.sql_db)
    if failed:
        root, path, exc = failed[0]
        raise _path_error(root, path, exc, failed=len(failed))


def _remove(p: Providers, root: str, path: str) -> None:
    try:
        if p.files.entry(root, path) is not None:
            p.files.remove(root, path, trash=False)
    except FileNotFoundError:  # removed meanwhile: as restore would leave it
        pass


def _put(p: Providers, root: str, path: str, kind: str, data: bytes | None, now: Any) -> None:
    if now == (kind, data) and p.files.entry(root, path) is not None:
        return
    if kind == "folder":
        p.files.mkdir(root, path)
    elif data is not None:
        p.files.write(root, path, data)
