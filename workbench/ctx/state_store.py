"""The state parts of the shared stores (issue 43): the conversation folder (ctx.files), kv
(ctx.storage.kv, and Ekanos' account records kept there), documents (ctx.data) and the SQL rows
(ctx.storage.sql), each declared on its capability's spec and run by ctx/state.py.

Their JSON is the one shape of state folders, bundles and pinned cases (ctx/statejson.py):
files as `{root, path, type, text | base64}`, kv as `{key: text}`, documents as
`{collection: {id: document}}`, SQL as `{table: {create, rows, rowids?}}`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from .parts import Change, Refusal, StateContext, StatePart, keyed, keyed_changes
from .store_pins import DOCUMENTS_PIN, FILES_PIN, KV_PIN, SQL_PIN, WORKSPACE, Entries, workspace_files

if TYPE_CHECKING:
    from ..providers import DataStore, SqlDatabase
    from .stores import Providers

__all__ = ["DOCUMENTS", "FILES", "KV", "SQL", "workspace_files"]

_STORED = {"added": "inserted", "changed": "updated", "deleted": "deleted"}


# -- the conversation folder ---------------------------------------------------------------
def walk_files(p: Providers, *, unread_ok: bool = False) -> Entries:
    """Every entry of every root (run folders too) and each file's bytes; a file another
    process swapped for a link (or removed) between the listing and the read is E_PATH, or,
    with `unread_ok`, None bytes."""
    out: Entries = {}
    for root in p.files.roots():
        for path, e in p.files.walk(root):
            data = None
            if e.type == "file":
                try:
                    data = p.files.read(root, path)
                except OSError as exc:
                    if not unread_ok:
                        raise path_error(root, path, exc, doing="snapshot") from None
            out[(root, path)] = (e.type, data)
    return out


def _files_snapshot(cx: StateContext) -> Entries:
    return walk_files(cx.providers)


def _where(root: str, path: str) -> str:
    return f"workspace:{path}" if root == WORKSPACE else f"{root}/{path}"


def path_error(
    root: str, path: str, exc: OSError, *, failed: int = 1, doing: str = "restore"
) -> WorkbenchError:
    """E_PATH for an entry a snapshot could not read or restore could not put back: another
    process changed it meanwhile (a folder swapped for a link, which the store never follows,
    or an entry it cannot see)."""
    from ..providers.base import LinkInPath

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


def _files_restore(cx: StateContext, snap: Entries) -> None:
    """Put `snap` back; E_PATH naming the first entry another process kept it from putting
    back (each entry goes through the store, which follows no link swapped in meanwhile)."""
    p = cx.providers
    failed: list[tuple[str, str, OSError]] = []

    def attempt(root: str, path: str, step: Callable[..., None], *args: Any) -> None:
        try:
            step(p, root, path, *args)
        except OSError as exc:  # LinkInPath too: an OSError the store raises rather than follow
            failed.append((root, path, exc))

    now = walk_files(p, unread_ok=True)  # a file it cannot read now is written again
    # new entries, and entries whose type changed (a file where a folder was, or the reverse)
    stale = [k for k in now if k not in snap or snap[k][0] != now[k][0]]
    for root, path in sorted(stale, key=lambda k: -len(k[1])):
        attempt(root, path, _remove)
    for (root, path), (kind, data) in sorted(snap.items(), key=lambda kv: len(kv[0][1])):
        attempt(root, path, _put_entry, kind, data, now.get((root, path)))
    if failed:
        root, path, exc = failed[0]
        raise path_error(root, path, exc, failed=len(failed))


def _remove(p: Providers, root: str, path: str) -> None:
    try:
        if p.files.entry(root, path) is not None:
            p.files.remove(root, path, trash=False)
    except FileNotFoundError:  # removed meanwhile: as restore would leave it
        pass


def _put_entry(p: Providers, root: str, path: str, kind: str, data: bytes | None, now: Any) -> None:
    if now == (kind, data) and p.files.entry(root, path) is not None:
        return
    if kind == "folder":
        p.files.mkdir(root, path)
    elif data is not None:
        p.files.write(root, path, data)


def _files_diff(before: Entries, after: Entries) -> Iterator[Change]:
    for (root, path), ch, a, b in keyed(before, after):
        ws = root == WORKSPACE
        yield Change(
            (b or a)[0],
            WORKSPACE if ws else root,
            f"workspace:{path}" if ws else path,
            ch,
            len(a[1]) if a and a[1] is not None else None,
            len(b[1]) if b and b[1] is not None else None,
        )


def _files_dump(cx: StateContext) -> list[dict[str, Any]]:
    from .stored_json import content_json

    return [
        {"root": root, "path": path, "type": kind, **content_json(data)}
        for (root, path), (kind, data) in sorted(workspace_files(cx.providers).items())
    ]


def _files_put(cx: StateContext, value: Any, bad: Refusal) -> None:
    from .stored_json import put_files

    p = cx.providers
    for rel, _ in (
        sorted(p.files.walk(WORKSPACE), key=lambda kv: -len(kv[0])) if WORKSPACE in p.files.roots() else ()
    ):
        if p.files.entry(WORKSPACE, rel) is not None:
            p.files.remove(WORKSPACE, rel, trash=False)
    put_files(bad, p, cx.limits, value)


FILES = StatePart(
    "files",
    dump=_files_dump,
    put=_files_put,
    snapshot=_files_snapshot,
    restore=_files_restore,
    diff=_files_diff,
    blank=list,
    kind="file",
    **FILES_PIN,
)


# -- the data store: kv and documents ------------------------------------------------------
def _store_snapshot(cx: StateContext) -> DataStore:
    return cx.providers.store.dump()


def _store_restore(cx: StateContext, snap: DataStore) -> None:
    cx.providers.store.restore(snap)


def _live_store(cx: StateContext) -> DataStore:
    return cx.providers.store


def _commit(p: Providers) -> None:
    if p.data_db.in_transaction:
        p.data_db.commit()


def _kv_diff(before: DataStore, after: DataStore) -> Iterator[Change]:
    return keyed_changes("kv", "kv", dict(before.kv_items()), dict(after.kv_items()), _STORED)


def _kv_put(cx: StateContext, kv: Any, bad: Refusal) -> None:
    limits, store = cx.limits, cx.providers.store
    if not isinstance(kv, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in kv.items()):
        raise bad("kv", "is not {key: text}")
    for k, v in kv.items():  # what ctx.storage.kv.set takes
        if len(k) + len(v) > limits.sql_value_bytes:
            raise bad(
                f"kv.{k[:40]}",
                f"is over sql_value_bytes ({limits.sql_value_bytes:,})",
                limit=limits.sql_value_bytes,
            )
    for k, _ in list(store.kv_items()):
        store.kv_delete(k)
    for k, v in kv.items():
        store.kv_set(k, v)
    _commit(cx.providers)


KV = StatePart(
    "kv",
    dump=lambda cx: dict(cx.providers.store.kv_items()),
    put=_kv_put,
    snapshot=_store_snapshot,
    restore=_store_restore,
    current=_live_store,
    diff=_kv_diff,
    shared="datastore",
    **KV_PIN,
)


def _docs_diff(before: DataStore, after: DataStore) -> Iterator[Change]:
    for name in sorted(set(before.collections()) | set(after.collections())):
        a = {i: json.loads(doc) for i, doc in before.docs(name)}
        b = {i: json.loads(doc) for i, doc in after.docs(name)}
        yield from keyed_changes("document", name, a, b, _STORED)


def _docs_put(cx: StateContext, docs: Any, bad: Refusal) -> None:
    store = cx.providers.store
    if not isinstance(docs, dict):
        raise bad("documents", "is not {collection: {id: document}}")
    have = set(store.collections())
    for name, rows in docs.items():
        if name not in have:
            raise bad(f"documents.{name[:40]}", "is not a collection the gem declares")
        if not isinstance(rows, dict) or not all(isinstance(d, dict) for d in rows.values()):
            raise bad(f"documents.{name}", "is not {id: document}")
    for name in store.collections():
        for i, _ in list(store.docs(name)):
            store.delete_doc(name, i)
    for name, rows in docs.items():
        store.insert_docs(name, [(str(i), json.dumps(d)) for i, d in rows.items()])
    _commit(cx.providers)


DOCUMENTS = StatePart(
    "documents",
    dump=lambda cx: {
        c: {i: json.loads(d) for i, d in cx.providers.store.docs(c)} for c in cx.providers.store.collections()
    },
    put=_docs_put,
    snapshot=_store_snapshot,
    restore=_store_restore,
    current=_live_store,
    diff=_docs_diff,
    shared="datastore",
    kind="document",
    **DOCUMENTS_PIN,
)


# -- the gem's SQL database ----------------------------------------------------------------
def _sql_dump(cx: StateContext) -> dict[str, Any]:
    from .stored_json import table_json

    db = cx.providers.sql_db
    _, made = db.query("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
    create = {name: sql for name, sql in made}
    return {t: table_json(create.get(t) or "", db.rows(t)) for t in db.tables()}


def _sql_put(cx: StateContext, tables: Any, bad: Refusal) -> None:
    from .stored_json import put_sql

    db = cx.providers.sql_db
    if not isinstance(tables, dict):
        raise bad("sql", "is not {table: {rows}}")
    for table in db.tables():
        db.execute('DELETE FROM "' + table.replace('"', '""') + '"', ())
    put_sql(bad, cx.providers, tables)


def _sql_diff(before: SqlDatabase, after: SqlDatabase) -> Iterator[Change]:
    for t in sorted(set(before.tables()) | set(after.tables())):
        yield from keyed_changes("sql", t, before.rows(t), after.rows(t), _STORED)


def _sql_restore(cx: StateContext, snap: SqlDatabase) -> None:
    cx.providers.sql_db.restore(snap)


SQL = StatePart(
    "sql",
    dump=_sql_dump,
    put=_sql_put,
    snapshot=lambda cx: cx.providers.sql_db.copy(),
    restore=_sql_restore,
    current=lambda cx: cx.providers.sql_db,
    diff=_sql_diff,
    **SQL_PIN,
)
