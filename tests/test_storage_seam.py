"""The storage providers translate SQLite's failures inside themselves (as httpx translates its
transport's errors inside the transport): what crosses into the ctx layer is the providers'
EngineError, a statement's, a row's or a data store call's, and one function gives it its code."""

from __future__ import annotations

import sqlite3

import pytest

from workbench._errors import WorkbenchError
from workbench.platforms import profile
from workbench.providers.datastore import SqliteDataStore
from workbench.providers.engine import EngineError, engine_error, storage_error
from workbench.providers.sqlite import SqlDatabase

LIMITS = profile("notochord").limits


def test_a_statement_that_fails_raises_the_providers_engine_error_not_sqlite3s() -> None:
    db = SqlDatabase.open(None)
    with pytest.raises(EngineError) as caught:
        db.execute("SELEC 1", ())
    assert not isinstance(caught.value, sqlite3.Error)
    assert caught.value.kind == "sql" and "syntax error" in caught.value.text


def test_a_row_that_fails_as_it_is_read_raises_engine_error() -> None:
    """SQLite runs a statement row by row: the second row's malformed JSON fails in the ctx
    layer's loop over the cursor, past `execute`."""
    db = SqlDatabase.open(None)
    rows = db.execute("SELECT json(v) FROM (SELECT '1' AS v UNION ALL SELECT '{')", ())
    with pytest.raises(EngineError, match="malformed JSON"):
        list(rows)


def test_a_data_store_call_and_its_rows_raise_engine_error() -> None:
    store = SqliteDataStore(SqlDatabase.open(None))
    store.create({"notes": []})
    with pytest.raises(EngineError, match="no such table"):
        store.get_doc("missing", "a")
    store.kv_set("a", "1")
    assert [r[0] for r in store.kv_keys("")] == ["a"]  # rows read through the translation
    store.db.execute("DROP TABLE kv")  # (the connection itself is the provider's)
    with pytest.raises(EngineError, match="no such table"):
        store.kv_get("a")
    with pytest.raises(EngineError, match="no such table"):
        store.kv_keys("")


@pytest.mark.parametrize(
    ("words", "kind", "code"),
    [
        ("interrupted", "interrupted", "E_TIMEOUT"),
        ("database is locked", "busy", "E_BUSY"),
        ("database or disk is full", "full", "E_TOO_LARGE"),
        ("out of memory", "memory", "E_TOO_LARGE"),
        ("string or blob too big", "too_big", "E_TOO_LARGE"),
        ('near "SELEC": syntax error', "sql", "E_SQL"),
    ],
)
def test_each_kind_of_engine_failure_gets_its_code_once(words: str, kind: str, code: str) -> None:
    err = engine_error(sqlite3.OperationalError(words))
    assert err.kind == kind
    coded = storage_error(err, LIMITS, method="storage.kv.get")
    assert isinstance(coded, WorkbenchError) and coded.code == code
    if kind != "busy":  # (E_BUSY names the state folder's lock, not the method: as before)
        assert coded.details.get("method") == "storage.kv.get"


def test_only_the_providers_error_is_coded_as_storage() -> None:
    """A raw SQLite exception no longer reaches the ctx layer; if one did, it is not taken for
    storage's (it would be the workbench's own E_INTERNAL, a seam left open)."""
    assert storage_error(sqlite3.OperationalError("database is locked"), LIMITS) is None
    assert storage_error(ValueError("x"), LIMITS) is None


def test_the_attach_limit_is_a_permission_refusal_under_a_guard() -> None:
    db = SqlDatabase.open(None)
    db.confine(LIMITS)
    guard = db.guard(read_only=False)
    try:
        with pytest.raises(EngineError) as caught:
            db.execute("ATTACH ':memory:' AS other", ())
    finally:
        guard.remove()
    coded = storage_error(caught.value, LIMITS, guard=guard, sql="ATTACH")
    assert coded is not None and coded.code == "E_PERM_DENIED"


def test_no_module_outside_providers_reaches_a_databases_connection() -> None:
    """The seam is the providers' methods: the state parts' puts ran their DELETE and INSERT
    on `sql_db.conn`, where SQLite's own exceptions came out."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "workbench"
    found = [
        f"{path.relative_to(root)}:{node.lineno}"
        for path in sorted(root.rglob("*.py"))
        if "providers" not in path.relative_to(root).parts
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and node.attr == "conn"
    ]
    assert found == []
