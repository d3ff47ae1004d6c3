"""The data store contract (providers/datastore.py), on SqliteDataStore directly: round trips,
no commit of its own (the ctx layer's call transaction decides), dump and restore."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.providers import make_providers, open_database
from workbench.providers.datastore import Cond, SqliteDataStore, Version, where_sql
from workbench.providers.engine import EngineError

COLLECTIONS = {"notes": ("status", "meta.rank"), "empty": ()}


@pytest.fixture
def store() -> SqliteDataStore:
    s = SqliteDataStore(open_database(None))
    s.create(COLLECTIONS)
    return s


def docs(store: SqliteDataStore, name: str = "notes") -> dict[str, dict]:
    return {i: json.loads(d) for i, d in store.docs(name)}


def test_create_is_idempotent_and_lists_collections(store):
    store.insert_docs("notes", [("a", '{"n":1}')])
    store.create({**COLLECTIONS, "more": ("x",)})
    assert store.collections() == ["empty", "more", "notes"]
    assert docs(store) == {"a": {"n": 1}}  # creating again keeps what is stored
    indexes = {
        r[0]
        for r in store.db.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'ix_%'")
    }
    assert indexes == {"ix_notes_status", "ix_notes_meta_rank", "ix_more_x"}


def test_document_round_trip(store):
    store.insert_docs("notes", [("a", '{"t":"x","n":1}'), ("b", '{"t":"y"}')])
    assert json.loads(store.get_doc("notes", "a") or "") == {"t": "x", "n": 1}
    assert store.get_doc("notes", "zz") is None
    assert store.update_doc("notes", "a", '{"n":null,"k":[1]}')  # RFC 7396 merge patch
    assert docs(store)["a"] == {"t": "x", "k": [1]}
    assert not store.update_doc("notes", "zz", '{"n":1}')
    assert store.delete_doc("notes", "b") and not store.delete_doc("notes", "b")
    assert list(docs(store)) == ["a"]


def test_docs_in_insertion_order_and_unknown_collection(store):
    store.insert_docs("notes", [(i, "{}") for i in ("c", "a", "b")])
    assert [i for i, _ in store.docs("notes")] == ["c", "a", "b"]
    assert store.docs("empty") == [] and store.docs("never_created") == []


def test_count_and_find_with_a_neutral_filter(store):
    store.insert_docs("notes", [(f"d{n}", json.dumps({"n": n % 3})) for n in range(6)])
    where = (Cond("n", "gte", 1),)
    assert store.count_docs("notes", where) == 4
    assert store.count_docs("notes", ()) == 6
    rows = store.find_docs("notes", where, order_by="n", descending=False, limit=3, offset=0)
    assert [i for i, _ in rows] == ["d1", "d4", "d2"]  # equal values keep insertion order
    rows = store.find_docs("notes", where, order_by="n", descending=True, limit=3, offset=1)
    assert [i for i, _ in rows] == ["d2", "d4", "d1"]
    rows = store.find_docs("notes", (), order_by=None, descending=True, limit=2, offset=0)
    assert [i for i, _ in rows] == ["d5", "d4"]


@pytest.mark.parametrize(
    "cond, ids",
    [
        (Cond("t", "eq", "x"), ["a"]),
        (Cond("t", "eq", None), ["c", "d"]),  # null or missing
        (Cond("t", "ne", None), ["a", "b"]),
        (Cond("t", "ne", "x"), ["b", "c", "d"]),  # the exact complement of eq
        (Cond("t", "in", ("y", None)), ["b", "c", "d"]),
        (Cond("t", "in", ()), []),
        (Cond("meta.rank", "lt", 3), ["a"]),
        (Cond("id", "gte", "c"), ["c", "d"]),
    ],
)
def test_filter_conditions(store, cond: Cond, ids: list[str]):
    store.insert_docs(
        "notes",
        [
            ("a", '{"t":"x","meta":{"rank":1}}'),
            ("b", '{"t":"y","meta":{"rank":5}}'),
            ("c", '{"t":null}'),
            ("d", "{}"),
        ],
    )
    rows = store.find_docs("notes", (cond,), order_by=None, descending=False, limit=9, offset=0)
    assert [i for i, _ in rows] == ids
    assert store.count_docs("notes", (cond,)) == len(ids)


def test_filter_compiles_to_the_index_expressions():
    assert where_sql(()) == ("1", [])
    assert where_sql((Cond("status", "eq", "open"), Cond("meta.rank", "in", (1, None)))) == (
        "json_extract(doc, '$.status') = ? AND (json_extract(doc, '$.meta.rank') IN (?) "
        "OR json_extract(doc, '$.meta.rank') IS NULL)",
        ["open", 1],
    )


def test_rows_can_be_closed_early(store):
    store.insert_docs("notes", [(f"d{n}", "{}") for n in range(3)])
    store.kv_set("k", "v")
    for rows in (
        store.find_docs("notes", (), order_by=None, descending=False, limit=9, offset=0),
        store.kv_keys(""),
    ):
        it = iter(rows)
        next(it)
        rows.close()
        with pytest.raises(EngineError, match="closed cursor"):  # the provider's own error
            next(it)


def test_kv_round_trip(store):
    assert store.kv_get("a") is None and store.kv_items() == []
    store.kv_set("b", "2")
    store.kv_set("a", "1")
    store.kv_set("a", "one")  # a second set replaces
    store.kv_set("ab", "")
    assert store.kv_get("a") == "one" and store.kv_get("ab") == ""
    assert store.kv_items() == [("a", "one"), ("ab", ""), ("b", "2")]
    assert [r[0] for r in store.kv_keys("a")] == ["a", "ab"]
    assert [r[0] for r in store.kv_keys("%")] == []  # a prefix, not a pattern
    assert store.kv_delete("a") and not store.kv_delete("a")
    assert store.kv_get("a") is None


def test_history_round_trip(store):
    assert store.history_versions(None) == [] and store.history_load("f", None) is None
    store.history_save(
        iter([Version("f", "overwrite", "c1", 10, 2, b"v1"), Version("g", "delete", None, 11, 9, None)])
    )
    store.history_save([Version("f", "restore", None, 12, 2, b"v2")])
    assert store.history_versions("f") == [
        {
            "version": 1,
            "path": "f",
            "reason": "overwrite",
            "call_id": "c1",
            "saved_at": 10,
            "size": 2,
            "kept": True,
        },
        {
            "version": 3,
            "path": "f",
            "reason": "restore",
            "call_id": None,
            "saved_at": 12,
            "size": 2,
            "kept": True,
        },
    ]
    assert [v["kept"] for v in store.history_versions(None)] == [True, False, True]
    assert store.history_load("f", None) == (3, b"v2")
    assert store.history_load("f", 1) == (1, b"v1")
    assert store.history_load("g", None) == (2, None)  # over the cap: the entry, no content
    assert store.history_load("f", 2) is None


def _write_everything(store: SqliteDataStore) -> None:
    store.create({"later": ()})
    store.insert_docs("notes", [("a", '{"n":1}')])
    store.update_doc("notes", "a", '{"n":2}')
    store.kv_set("k", "v")
    store.history_save([Version("f", "overwrite", None, 1, 1, b"x")])


def test_the_store_never_commits(tmp_path: Path):
    db = open_database(tmp_path / "data.sqlite")
    store = SqliteDataStore(db)
    store.create(COLLECTIONS)
    other = SqliteDataStore(open_database(tmp_path / "data.sqlite"))
    db.execute("BEGIN IMMEDIATE")  # as Capabilities.begin does for a call
    _write_everything(store)
    store.delete_doc("notes", "a")
    store.kv_delete("k")
    _write_everything(store)
    assert db.in_transaction  # no statement of the store ended the call's transaction
    assert other.docs("notes") == [] and other.kv_items() == [] and "later" not in other.collections()
    db.execute("ROLLBACK")
    assert store.docs("notes") == [] and store.kv_items() == []
    assert store.history_versions(None) == [] and "later" not in store.collections()
    db.execute("BEGIN IMMEDIATE")
    _write_everything(store)
    db.execute("COMMIT")
    assert other.kv_items() == [("k", "v")] and "later" in other.collections()


def test_dump_is_a_copy_read_through_the_same_methods(store):
    _write_everything(store)
    dump = store.dump()
    store.kv_set("k", "changed")
    store.insert_docs("notes", [("b", "{}")])
    store.history_save([Version("f", "delete", None, 2, 1, b"y")])
    assert dump.kv_items() == [("k", "v")]
    assert docs(dump) == {"a": {"n": 2}} and dump.collections() == store.collections()
    assert len(dump.history_versions(None)) == 1
    dump.kv_set("k", "in the dump only")
    assert store.kv_get("k") == "changed"


def test_restore_brings_back_everything(store):
    _write_everything(store)
    dump = store.dump()
    store.kv_set("k2", "new")
    store.delete_doc("notes", "a")
    store.history_save([Version("f", "delete", None, 2, 1, b"y")])
    store.restore(dump)
    assert store.kv_items() == [("k", "v")] and docs(store) == {"a": {"n": 2}}
    assert [v["version"] for v in store.history_versions(None)] == [1]
    store.insert_docs("notes", [("b", "{}")])  # the restored store keeps working
    assert list(docs(store)) == ["a", "b"]


def test_restore_reaches_a_file_database(tmp_path: Path, store):
    _write_everything(store)
    on_disk = SqliteDataStore(open_database(tmp_path / "data.sqlite"))
    on_disk.create(COLLECTIONS)
    on_disk.restore(store.dump())
    on_disk.db.close()
    again = SqliteDataStore(open_database(tmp_path / "data.sqlite"))
    assert again.kv_items() == [("k", "v")] and docs(again) == {"a": {"n": 2}}


def test_restore_takes_only_its_own_dumps(store):
    with pytest.raises(TypeError):
        store.restore(object())  # type: ignore[arg-type]


def test_providers_have_one_store_over_the_data_database(tmp_path: Path):
    for kind in ("mock", "real"):
        p = make_providers("g", kind, gem_root=tmp_path, workspace=None, state_dir=tmp_path / kind)
        try:
            assert isinstance(p.store, SqliteDataStore) and p.store.transaction() is p.data_db
        finally:
            p.data_db.close()
            p.sql_db.close()
