"""What a pinned call copies of the shared stores, and how a case shows it.

Each store part (ctx/state_store.py) declares it on its `StatePart`: `reached`, what a ctx
call reaches of it before the method runs (the conversation folder at the first ctx.files call,
all kv at the first kv or account call, a collection at the first ctx.data call naming it, the
tables a SQL statement names); `before_json`, what a case's `before` holds of the copy (the
files and kv entries the call named or changed; collections and tables whole); `changed`, the
case's change entries since the copy. ctx/before.py, pins/case.py and ctx/statejson.py run them
without naming a store.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .parts import Reach, StateContext, keyed
from .paths import hidden
from .stored_json import content_json, sql_json, table_json

if TYPE_CHECKING:
    from .stores import Providers

__all__ = ["DOCUMENTS_PIN", "FILES_PIN", "KV_PIN", "SQL_PIN", "WORKSPACE", "tables_named", "workspace_files"]

WORKSPACE = "workspace"  # the conversation folder's root: the files state a call can find
Entries = dict[tuple[str, str], tuple[str, bytes | None]]


def workspace_files(p: Providers) -> Entries:
    """The conversation folder's entries (no run folder: each call's own, F1, F2; no
    dot-entry: SEC3, no state a call finds) and each file's bytes."""
    out: Entries = {}
    for root in p.files.roots():
        if root != WORKSPACE:
            continue
        for path, e in p.files.walk(root):
            if hidden(root, path):
                continue
            out[(root, path)] = (e.type, p.files.read(root, path) if e.type == "file" else None)
    return out


def _files_reached(cx: StateContext, method: str, args: tuple[Any, ...], reach: Reach) -> None:
    """The whole conversation folder, at the call's first ctx.files call: what any path of it
    was before the call (no run folder: no call finds another's, F1; no dot-entry: SEC3)."""
    if not reach.first("folder"):
        return
    p, copy = cx.providers, reach.copy
    if WORKSPACE in p.files.roots():
        for path, e in p.files.walk(WORKSPACE):
            if hidden(WORKSPACE, path):
                continue
            data = p.files.read(WORKSPACE, path) if e.type == "file" else None
            if not reach.charge(
                len(path) + (len(data) if data is not None else 0), "the conversation folder"
            ):
                return
            copy[(WORKSPACE, path)] = (e.type, data)


def _plain(path: str) -> str:
    return path.split(":", 1)[-1].strip("/")


def _near(path: str, named: set[str]) -> bool:
    """Whether an entry at `path` was named by the call: itself, a folder above or below it."""
    for n in named:
        if n == path or (n and (path.startswith(n + "/") or n.startswith(path + "/"))) or n == "":
            return True
    return False


def _files_before(copy: Entries, named: Mapping[str, set[str]], changed: list[dict[str, Any]]) -> Any:
    """The entries the call named (a path, a folder above or below one) or changed, with
    their content; None when none."""
    paths = {_plain(s) for found in named.values() for s in found if len(s) < 4096}
    paths |= {str(c["key"]) for c in changed}
    out = [
        {"root": root, "path": path, "type": kind, **content_json(data)}
        for (root, path), (kind, data) in sorted(copy.items())
        if _near(path, paths)
    ]
    return out or None


def _files_changed(copy: Entries, cx: StateContext) -> list[dict[str, Any]]:
    now = workspace_files(cx.providers)
    return [
        _entry("file", root, path, ch, None if b is None else {"type": b[0], **content_json(b[1])})
        for (root, path), ch, b in _keyed_now(copy, now)
    ]


def _keyed_now(before: dict[Any, Any], after: dict[Any, Any]) -> Iterator[tuple[Any, str, Any]]:
    """(key, how, value now) of each key whose value differs (ctx/parts.py `keyed`)."""
    return ((k, how, b) for k, how, _, b in keyed(before, after))


def _entry(kind: str, where: str, key: Any, change: str, after: Any) -> dict[str, Any]:
    return {"kind": kind, "where": where, "key": key, "change": change, "after": after}


#: The account capability's name and the prefix its records are kept under in kv. Stated here,
#: with the kv part whose pins read them, and taken by ctx/account.py: the account's module
#: declares its state from this one, which so never imports it back.
ACCOUNT_IMPL, ACCOUNT_PREFIX = "account", "account:"


def _kv_reached(cx: StateContext, method: str, args: tuple[Any, ...], reach: Reach) -> None:
    """All kv at the call's first kv (or account) call: a list's answer depends on all."""
    if reach.first("kv"):
        items = cx.providers.store.kv_items()
        if reach.charge(sum(len(k) + len(v) for k, v in items), "kv"):
            reach.copy.update(items)


def _kv_before(copy: dict[str, str], named: Mapping[str, set[str]], changed: list[dict[str, Any]]) -> Any:
    """The entries whose key the call named (or a prefix of it: a list) or changed; None when
    none. The strings an account call named are its records' keys, kept under a prefix."""
    keys = {str(c["key"]) for c in changed}
    account, prefix = ACCOUNT_IMPL, ACCOUNT_PREFIX
    for impl, found in named.items():
        keys |= {prefix + s for s in found} if impl == account else found
    kv = {k: v for k, v in copy.items() if k in keys or any(k.startswith(p) for p in keys if p)}
    return kv or None


def _kv_changed(copy: dict[str, str], cx: StateContext) -> list[dict[str, Any]]:
    return [
        _entry("kv", "kv", k, ch, b) for k, ch, b in _keyed_now(copy, dict(cx.providers.store.kv_items()))
    ]


def _docs_reached(cx: StateContext, method: str, args: tuple[Any, ...], reach: Reach) -> None:
    """The collection `args[0]` names, whole, at the call's first ctx.data call naming it."""
    name = args[0] if args and isinstance(args[0], str) else None
    if name is not None and reach.first(name):
        store = cx.providers.store
        docs = store.docs(name) if name in store.collections() else []
        if reach.charge(sum(len(i) + len(d) for i, d in docs), f"collection {name!r}"):
            reach.copy[name] = dict(docs)


def _docs_before(copy: dict[str, dict[str, str]], named: Mapping[str, set[str]], changed: Any) -> Any:
    """The collections the call used, whole (a query's answer depends on all); None: none."""
    return {c: {i: json.loads(d) for i, d in rows.items()} for c, rows in copy.items()} or None


def _docs_changed(copy: dict[str, dict[str, str]], cx: StateContext) -> list[dict[str, Any]]:
    store = cx.providers.store
    return [
        _entry("document", name, k, ch, None if b is None else json.loads(b))
        for name in sorted(copy)
        for k, ch, b in _keyed_now(copy[name], dict(store.docs(name)))
    ]


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*|\"(?:[^\"]|\"\")+\"|`[^`]+`|\[[^\]]+\]")


def tables_named(statement: str, tables: list[str]) -> list[str]:
    """The gem's tables a statement names (by word, quoted or not; case-insensitive as SQLite)."""
    if not tables:
        return []
    words = {w.strip('"`[]').replace('""', '"').lower() for w in _WORD.findall(statement[:1_000_000])}
    return [t for t in tables if t.lower() in words]


def _sql_reached(cx: StateContext, method: str, args: tuple[Any, ...], reach: Reach) -> None:
    """Each table the statement `args[0]` names, whole, at the first statement naming it."""
    db = cx.providers.sql_db
    statement = args[0] if args and isinstance(args[0], str) else ""
    for table in tables_named(statement, db.tables()):
        if not reach.first(table):
            continue
        # through the provider's own connection: the call's storage transaction may be open on
        # it, and a backup cannot copy a database its connection is writing
        _, made = db.query("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
        rows = db.rows(table)
        if reach.charge(len(json.dumps(list(rows.values()), default=repr)), f"table {table!r}"):
            reach.copy[table] = (made[0][0] if made else "", rows)


def _sql_before(copy: dict[str, tuple[str, dict[Any, Any]]], named: Any, changed: Any) -> Any:
    """The tables the call's statements named, whole, with rowids; None: none."""
    return {t: table_json(create, rows) for t, (create, rows) in copy.items()} or None


def _sql_changed(copy: dict[str, tuple[str, dict[Any, Any]]], cx: StateContext) -> list[dict[str, Any]]:
    db = cx.providers.sql_db
    return [
        _entry("sql", t, k, ch, None if b is None else sql_json(b))
        for t in sorted(copy)
        for k, ch, b in _keyed_now(copy[t][1], db.rows(t))
    ]


FILES_PIN: dict[str, Any] = {
    "reached": _files_reached,
    "before_json": _files_before,
    "changed": _files_changed,
    "pin_order": 10,
}
KV_PIN: dict[str, Any] = {
    "reached": _kv_reached,
    "before_json": _kv_before,
    "changed": _kv_changed,
    "pin_order": 20,
}
DOCUMENTS_PIN: dict[str, Any] = {
    "reached": _docs_reached,
    "before_json": _docs_before,
    "changed": _docs_changed,
    "pin_order": 30,
}
SQL_PIN: dict[str, Any] = {
    "reached": _sql_reached,
    "before_json": _sql_before,
    "changed": _sql_changed,
    "pin_order": 40,
}
