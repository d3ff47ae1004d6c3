"""The data store: where ctx.data's collections (D1), ctx.storage.kv (D2) and the conversation
folder's file history (F8) are kept, and what inspection reads them through.

`DataStore` is storage primitives only, like an HTTP transport: every platform rule (names,
sizes, D4, N7 flushing, SEC5 bounds, the call's transaction) is the ctx layer's. A store never
commits: the ctx layer runs each call in one `transaction()` of the store. Finds and counts
take a neutral `Filter` (ctx.data builds it from a tool's `where`), which the store compiles.

`SqliteDataStore` keeps everything as tables of one SQLite database: a collection `c_<name>
(rid, id, doc)` with each indexed field as an index on `expr(field)`, `kv(key, value)` and
`_wb_history` (never visible to the gem, whose SQL reaches only its own database).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from .engine import TranslatedRows, translating, untouched
from .sqlite import SqlDatabase, as_state_error


@dataclass(frozen=True)
class Cond:
    """One condition on a document field (dotted for a nested one), built by ctx.data's rules.

    eq/ne/gt/gte/lt/lte compare with a scalar (str, int, float, bool); eq None matches a null or
    missing field and ne None the others; ne a value also matches a null or missing field (the
    exact complement of eq). `in` takes a tuple of scalars; None among them also matches a null
    or missing field."""

    field: str
    op: str  # eq | ne | gt | gte | lt | lte | in
    value: Any


# every condition holds; () matches every document
Filter = tuple[Cond, ...]


class Rows(Protocol):
    """Rows read one at a time (a bounded read stops early and closes them)."""

    def __iter__(self) -> Iterator[Any]: ...

    def close(self) -> None: ...


class Version(NamedTuple):
    """One saved version of a conversation-folder file."""

    path: str  # inside the conversation folder
    reason: str  # overwrite | delete | restore
    call_id: str | None
    saved_at: int  # ms since the epoch
    size: int
    content: bytes | None  # None: not kept (over the history cap)


VERSION_COLUMNS = ("version", "path", "reason", "call_id", "saved_at", "size", "kept")


class Transaction(Protocol):
    """A store's one transaction at a time: the ctx layer runs each call in one."""

    @property
    def in_transaction(self) -> bool:
        """Begun and not yet ended (a failure may have ended it: the store rolled it back)."""

    def begin(self, *, wait_seconds: float | None = None) -> None:
        """Begin, as the one writer: wait up to `wait_seconds` for another process's writes
        to end (None: as the last wait given)."""

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def interrupt(self) -> None:
        """Stop the work under way now (safe from another thread)."""


class DataStore(Protocol):
    """Documents as JSON text by collection, kv strings, file history; dumps for snapshots."""

    def transaction(self) -> Transaction:
        """The store's transaction (a store never commits on its own)."""

    def create(self, collections: Mapping[str, Sequence[str]]) -> None:
        """Create what is missing: kv, history, each collection (name -> indexed fields)."""

    # -- documents (ids are given by the caller; docs are JSON object text without "id")
    def insert_docs(self, collection: str, docs: Sequence[tuple[str, str]]) -> None:
        """Add (id, doc) pairs, in order."""

    def get_doc(self, collection: str, id: str) -> str | None: ...

    def update_doc(self, collection: str, id: str, patch: str) -> bool:
        """Merge `patch` into the document (RFC 7396: fields given replace, null removes);
        whether it existed."""

    def delete_doc(self, collection: str, id: str) -> bool: ...

    def count_docs(self, collection: str, where: Filter) -> int: ...

    def find_docs(
        self,
        collection: str,
        where: Filter,
        *,
        order_by: str | None,
        descending: bool,
        limit: int,
        offset: int,
    ) -> Rows:
        """(id, doc) rows matching `where`, by `order_by` (a field) then insertion order."""

    def collections(self) -> list[str]:
        """Names of the stored collections, sorted."""

    def docs(self, collection: str) -> list[tuple[str, str]]:
        """Every (id, doc) of a collection in insertion order; none if it is not stored."""

    def docs_joined(self, collection: str) -> tuple[list[str], bytes]:
        """What `docs` gives, read at once: the ids, and the docs as one JSON array (UTF-8)."""

    # -- kv
    def kv_get(self, key: str) -> str | None: ...

    def kv_set(self, key: str, value: str) -> None: ...

    def kv_delete(self, key: str) -> bool: ...

    def kv_keys(self, prefix: str) -> Rows:
        """(key,) rows of the keys starting with `prefix`, sorted."""

    def kv_items(self) -> list[tuple[str, str]]:
        """Every (key, value), sorted by key."""

    # -- file history
    def history_save(self, versions: Iterable[Version]) -> None: ...

    def history_versions(self, path: str | None) -> list[dict[str, Any]]:
        """VERSION_COLUMNS of every saved version (of `path`, if given), oldest first; `kept`
        says whether its content was kept."""

    def history_load(self, path: str, version: int | None) -> tuple[int, bytes | None] | None:
        """(version, content) of a saved version of `path` (default: the latest)."""

    # -- snapshots
    def dump(self) -> DataStore:
        """A copy of everything, apart from this store, read through the same methods."""

    def restore(self, dump: DataStore) -> None:
        """Hold exactly what `dump` (one of this store's dumps) holds."""


def table(collection: str) -> str:
    return f'"c_{collection}"'


def expr(field: str) -> str:
    """The SQL for a document field: identical in indexes and queries, or SQLite won't use them."""
    return "id" if field == "id" else f"json_extract(doc, '$.{field}')"


_OPS = {"eq": "=", "ne": "!=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def where_sql(where: Filter) -> tuple[str, list[Any]]:
    """A filter as a SQL condition and its parameters, on the fields as `expr` writes them (so
    SQLite uses the indexes); "1" for no condition."""
    conds, params = [], []
    for c in where:
        e = expr(c.field)
        if c.op == "in":
            known = [x for x in c.value if x is not None]
            sql = f"{e} IN ({','.join('?' * len(known))})"
            conds.append(f"({sql} OR {e} IS NULL)" if None in c.value else sql)
            params += known
        elif c.value is None and c.op in ("eq", "ne"):
            conds.append(f"{e} IS {'NOT ' if c.op == 'ne' else ''}NULL")
        elif c.op == "ne":  # a null or missing field is not equal to a value
            conds.append(f"{e} IS NOT ?")
            params.append(c.value)
        else:
            conds.append(f"{e} {_OPS[c.op]} ?")
            params.append(c.value)
    return " AND ".join(conds) or "1", params


_HISTORY_DDL = (
    """
CREATE TABLE IF NOT EXISTS _wb_history (
    version INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT NOT NULL,
    reason TEXT NOT NULL,
    call_id TEXT,
    saved_at INTEGER NOT NULL,
    size INTEGER NOT NULL,
    content BLOB
)""",
    "CREATE INDEX IF NOT EXISTS _wb_history_path ON _wb_history(path)",
)
_KV_DDL = "CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID"


@translating
class SqliteDataStore:
    """A DataStore on one SQLite connection, opened in autocommit mode (open_database). Its
    failures are EngineError, its rows' too (providers/engine.py): never sqlite3's."""

    def __init__(self, db: sqlite3.Connection | SqlDatabase) -> None:
        self.database = db if isinstance(db, SqlDatabase) else SqlDatabase(db)
        self.db = self.database.conn

    @untouched
    def transaction(self) -> SqlDatabase:
        return self.database

    def create(self, collections: Mapping[str, Sequence[str]]) -> None:
        # one statement at a time: executescript would commit a transaction in progress
        statements = [*_HISTORY_DDL, _KV_DDL]
        for name, indexes in collections.items():
            statements.append(
                f"CREATE TABLE IF NOT EXISTS {table(name)} (rid INTEGER PRIMARY "
                "KEY, id TEXT NOT NULL UNIQUE, doc TEXT NOT NULL)"
            )
            statements += [
                f'CREATE INDEX IF NOT EXISTS "ix_{name}_{f.replace(".", "_")}" ON {table(name)}({expr(f)})'
                for f in indexes
            ]
        with as_state_error():  # at open: a database that is not one is StateError (E_STATE)
            for sql in statements:
                self.db.execute(sql)

    # -- documents
    def insert_docs(self, collection: str, docs: Sequence[tuple[str, str]]) -> None:
        self.db.executemany(f"INSERT INTO {table(collection)}(id, doc) VALUES (?, ?)", docs)

    def get_doc(self, collection: str, id: str) -> str | None:
        row = self.db.execute(f"SELECT doc FROM {table(collection)} WHERE id = ?", (id,)).fetchone()
        return row[0] if row else None

    def update_doc(self, collection: str, id: str, patch: str) -> bool:
        return (
            self.db.execute(
                f"UPDATE {table(collection)} SET doc = json_patch(doc, ?) WHERE id = ?", (patch, id)
            ).rowcount
            > 0
        )

    def delete_doc(self, collection: str, id: str) -> bool:
        return self.db.execute(f"DELETE FROM {table(collection)} WHERE id = ?", (id,)).rowcount > 0

    def count_docs(self, collection: str, where: Filter) -> int:
        cond, params = where_sql(where)
        return int(
            self.db.execute(f"SELECT count(*) FROM {table(collection)} WHERE {cond}", params).fetchone()[0]
        )

    def find_docs(
        self,
        collection: str,
        where: Filter,
        *,
        order_by: str | None,
        descending: bool,
        limit: int,
        offset: int,
    ) -> Rows:
        cond, params = where_sql(where)
        order = "desc" if descending else "asc"
        # rid breaks ties, so pages of equal values keep one order
        by = f"{expr(order_by)} {order}, rid {order}" if order_by else f"rid {order}"
        return TranslatedRows(
            self.db.execute(
                f"SELECT id, doc FROM {table(collection)} WHERE {cond} ORDER BY {by} LIMIT ? OFFSET ?",
                [*params, limit, offset],
            )
        )

    def collections(self) -> list[str]:
        rows = self.db.execute(
            "SELECT substr(name, 3) FROM sqlite_master WHERE type = 'table' "
            "AND name LIKE 'c\\_%' ESCAPE '\\' ORDER BY name"
        )
        return [r[0] for r in rows]

    def docs(self, collection: str) -> list[tuple[str, str]]:
        if collection not in self.collections():
            return []
        return self.db.execute(f"SELECT id, doc FROM {table(collection)} ORDER BY rid").fetchall()

    def docs_joined(self, collection: str) -> tuple[list[str], bytes]:
        if collection not in self.collections():
            return [], b"[]"
        # one row rather than one per document (bench.data of 10^5 documents): both aggregates
        # read the same rows, in rid order (the subquery's, and the order of a scan of the table)
        try:
            n, ids, docs = self.db.execute(
                "SELECT count(*), group_concat(id, ','), CAST('[' || group_concat(doc, ',') || ']' "
                f"AS BLOB) FROM (SELECT id, doc FROM {table(collection)} ORDER BY rid)"
            ).fetchone()
        except sqlite3.DataError:  # longer than a SQLite string can be (1 GB): row by row
            rows = self.docs(collection)
            return [i for i, _ in rows], ("[" + ",".join(d for _, d in rows) + "]").encode()
        if not n:
            return [], b"[]"
        split = ids.split(",")
        if len(split) != n:  # an id with a comma in it
            split = [i for (i,) in self.db.execute(f"SELECT id FROM {table(collection)} ORDER BY rid")]
        return split, docs

    # -- kv
    def kv_get(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def kv_set(self, key: str, value: str) -> None:
        self.db.execute(
            "INSERT INTO kv(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def kv_delete(self, key: str) -> bool:
        return self.db.execute("DELETE FROM kv WHERE key = ?", (key,)).rowcount > 0

    def kv_keys(self, prefix: str) -> Rows:
        return TranslatedRows(
            self.db.execute(
                "SELECT key FROM kv WHERE substr(key, 1, ?) = ? ORDER BY key", (len(prefix), prefix)
            )
        )

    def kv_items(self) -> list[tuple[str, str]]:
        return self.db.execute("SELECT key, value FROM kv ORDER BY key").fetchall()

    # -- file history
    def history_save(self, versions: Iterable[Version]) -> None:
        self.db.executemany(
            "INSERT INTO _wb_history(path, reason, call_id, saved_at, size, "
            "content) VALUES (?, ?, ?, ?, ?, ?)",
            versions,
        )

    def history_versions(self, path: str | None) -> list[dict[str, Any]]:
        q = "SELECT version, path, reason, call_id, saved_at, size, content IS NOT NULL FROM _wb_history"
        rows = self.db.execute(
            q + (" WHERE path = ?" if path else "") + " ORDER BY version", (path,) if path else ()
        )
        return [dict(zip(VERSION_COLUMNS, (*r[:6], bool(r[6])))) for r in rows]

    def history_load(self, path: str, version: int | None) -> tuple[int, bytes | None] | None:
        q = "SELECT version, content FROM _wb_history WHERE path = ?"
        row = self.db.execute(
            q + (" AND version = ?" if version is not None else "") + " ORDER BY version DESC LIMIT 1",
            (path, version) if version is not None else (path,),
        ).fetchone()
        return (row[0], row[1]) if row else None

    # -- snapshots
    def dump(self) -> SqliteDataStore:
        copy = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self.db.backup(copy)
        return SqliteDataStore(copy)

    def restore(self, dump: DataStore) -> None:
        if not isinstance(dump, SqliteDataStore):
            raise TypeError(f"a SqliteDataStore restores its own dumps, not {type(dump).__name__}")
        dump.db.backup(self.db)
