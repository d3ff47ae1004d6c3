"""ctx.data (D1), ctx.storage.kv (D2), ctx.storage.sql (D3) and the D4 side-effect check.

Every test runs on mock and real providers (the `kind` fixture): a tool must not be able to
tell them apart.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from typing import Any

import pytest
from conftest import GemBuilder

import workbench
from workbench.ctx.data import new_id, where_filter
from workbench.providers.datastore import expr, table, where_sql

# One tool drives any storage method: steps are ["data", coll, method, *args],
# ["kv", method, *args] or ["sql", method, *args]; "fail" raises after the steps ran.
OPS = """
def target(ctx, s):
    if s[0] == "data":
        return ctx.data.collection(s[1]), s[2], s[3:]
    return getattr(ctx.storage, s[0]), s[1], s[2:]

def handle(input, ctx):
    out = []
    for s in input["steps"]:
        obj, method, args = target(ctx, s)
        out.append(getattr(obj, method)(*args))
    if input.get("fail"):
        raise RuntimeError("boom after the writes")
    return out
"""

OPS_ASYNC = """
async def handle(input, ctx):
    out = []
    for s in input["steps"]:
        if s[0] == "data":
            obj, method, args = ctx.data.collection(s[1]), s[2], s[3:]
        else:
            obj, method, args = getattr(ctx.storage, s[0]), s[1], s[2:]
        out.append(await getattr(obj, method)(*args))
    return out
"""

SCHEMA = """
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, qty INTEGER NOT NULL DEFAULT 0);
INSERT INTO items(name, qty) VALUES ('seed', 1);
"""


def make_gem(gem: GemBuilder) -> GemBuilder:
    return (
        gem.tool("ops", OPS)
        .tool("ops_async", OPS_ASYNC)
        .tool("ops_read", OPS, side_effect="read")
        .collections(notes=["status", "priority", "meta.rank"], tasks=[])
        .schema_sql(SCHEMA)
    )


@pytest.fixture
def bench(gem: GemBuilder, open_bench: Callable[..., workbench.Bench]) -> workbench.Bench:
    return open_bench(make_gem(gem))


def run(bench: workbench.Bench, *steps: list, tool: str = "ops", **extra: Any) -> workbench.CallResult:
    return bench.call(tool, {"steps": [list(s) for s in steps], **extra})


def ok(bench: workbench.Bench, *steps: list, tool: str = "ops") -> list:
    res = run(bench, *steps, tool=tool)
    assert res.ok, res.error
    return res.value


def insert_all(bench: workbench.Bench, coll: str, docs: list[dict]) -> list[str]:
    return [r["id"] for r in ok(bench, *(["data", coll, "insert", d] for d in docs))]


def find(bench: workbench.Bench, query: dict | None = None, coll: str = "notes") -> dict:
    return ok(bench, ["data", coll, "find", query])[0]


def titles(page: dict) -> list[str]:
    return [d["title"] for d in page["items"]]


# -- D1: collections -------------------------------------------------------------------------


def test_D1_undeclared_collection_rejected(bench):
    res = run(bench, ["data", "nope", "insert", {"a": 1}])
    assert res.error.code == "E_UNKNOWN_COLLECTION"
    assert "'nope'" in res.error.message and "notes" in res.error.message
    assert bench.data("notes").empty and bench.data("tasks").empty


def test_D1_collection_call_itself_fails_for_undeclared_name(gem, open_bench):
    gem.tool("t", "def handle(input, ctx):\n    ctx.data.collection('missing')\n    return 1\n")
    gem.collections(notes=[])
    res = open_bench(gem).call("t")
    assert res.error.code == "E_UNKNOWN_COLLECTION"
    assert "missing" in res.error.message


def test_D1_no_collections_declared(gem, open_bench):
    gem.tool("ops", OPS)
    res = open_bench(gem).call("ops", {"steps": [["data", "notes", "count"]]})
    assert res.error.code == "E_UNKNOWN_COLLECTION"
    assert "declared: none" in res.error.message


def test_D1_insert_returns_id(bench):
    out = ok(
        bench,
        ["data", "notes", "insert", {"title": "a", "status": "open"}],
        ["data", "notes", "insert", {"title": "b"}],
    )
    assert all(set(r) == {"id"} and isinstance(r["id"], str) and r["id"] for r in out)
    assert out[0]["id"] != out[1]["id"]
    df = bench.data("notes")
    assert list(df["id"]) == [out[0]["id"], out[1]["id"]]
    assert list(df["title"]) == ["a", "b"]


def test_D1_insert_async_tool(bench):
    out = ok(
        bench,
        ["data", "notes", "insert", {"title": "a"}],
        ["data", "notes", "get", "missing"],
        tool="ops_async",
    )
    assert set(out[0]) == {"id"} and out[1] is None
    assert ok(bench, ["data", "notes", "get", out[0]["id"]], tool="ops_async") == [
        {"id": out[0]["id"], "title": "a"}
    ]


def test_D1_collections_are_separate(bench):
    insert_all(bench, "notes", [{"title": "n"}])
    insert_all(bench, "tasks", [{"title": "t1"}, {"title": "t2"}])
    assert ok(bench, ["data", "notes", "count"], ["data", "tasks", "count"]) == [1, 2]


def test_D1_get(bench):
    [a] = insert_all(bench, "notes", [{"title": "a", "meta": {"rank": 2}, "tags": ["x"]}])
    assert ok(bench, ["data", "notes", "get", a], ["data", "notes", "get", "nope"]) == [
        {"id": a, "title": "a", "meta": {"rank": 2}, "tags": ["x"]},
        None,
    ]
    assert ok(bench, ["data", "tasks", "get", a]) == [None]  # ids belong to their collection


def test_D1_update_is_a_merge_patch(bench):
    [a, b] = insert_all(
        bench,
        "notes",
        [
            {"title": "a", "status": "open", "body": "text", "meta": {"rank": 1, "by": "me"}},
            {"title": "b", "status": "open"},
        ],
    )
    out = ok(
        bench,
        [
            "data",
            "notes",
            "update",
            a,
            {"status": "done", "body": None, "meta": {"by": None, "at": 5}, "new": [1]},
        ],
        ["data", "notes", "get", a],
        ["data", "notes", "get", b],
    )
    assert out[0] == {"id": a}
    assert out[1] == {"id": a, "title": "a", "status": "done", "meta": {"rank": 1, "at": 5}, "new": [1]}
    assert out[2] == {"id": b, "title": "b", "status": "open"}  # untouched


def test_D1_update_missing_document(bench):
    res = run(bench, ["data", "notes", "update", "nope", {"a": 1}])
    assert res.error.code == "E_NOT_FOUND"
    assert "nope" in res.error.message


def test_D1_update_rejects_id_and_non_objects(bench):
    [a] = insert_all(bench, "notes", [{"title": "a"}])
    res = run(bench, ["data", "notes", "update", a, {"id": "other"}])
    assert res.error.code == "E_INVALID_ARGUMENT" and "'id'" in res.error.message
    res = run(bench, ["data", "notes", "update", a, ["not", "an", "object"]])
    assert res.error.code == "E_INVALID_ARGUMENT" and "object" in res.error.message
    assert ok(bench, ["data", "notes", "get", a]) == [{"id": a, "title": "a"}]


def test_D1_delete(bench):
    [a, b] = insert_all(bench, "notes", [{"title": "a"}, {"title": "b"}])
    assert ok(
        bench,
        ["data", "notes", "delete", a],
        ["data", "notes", "delete", a],
        ["data", "notes", "get", a],
        ["data", "notes", "count"],
    ) == [{"deleted": True}, {"deleted": False}, None, 1]
    assert list(bench.data("notes")["id"]) == [b]


BAD_DOCS = """
import math

class Thing:
    pass

BAD = {
    "id": lambda: {"id": "mine", "title": "x"},
    "nan": lambda: {"n": math.nan},
    "inf": lambda: {"n": math.inf},
    "set": lambda: {"tags": {"a", "b"}},
    "object": lambda: {"thing": Thing()},
    "bytes": lambda: {"raw": b"abc"},
    "int_key": lambda: {1: "one"},
    "list": lambda: ["not", "an", "object"],
    "string": lambda: "text",
    "none": lambda: None,
}

def handle(input, ctx):
    return ctx.data.collection("notes").insert(BAD[input["bad"]]())
"""


@pytest.mark.parametrize(
    "bad", ["id", "nan", "inf", "set", "object", "bytes", "int_key", "list", "string", "none"]
)
def test_D1_invalid_documents_rejected(gem, open_bench, bad):
    gem.tool("bad", BAD_DOCS).collections(notes=[])
    b = open_bench(gem)
    res = b.call("bad", {"bad": bad})
    assert not res.ok
    assert res.error.code == "E_INVALID_ARGUMENT", res.error
    assert "document" in res.error.message
    assert b.data("notes").empty


@pytest.mark.parametrize(
    "step",
    [
        ["data", "notes", "get", {"id": "x"}],
        ["data", "notes", "get", 5],
        ["data", "notes", "get", None],
        ["data", "notes", "update", ["x"], {"a": 1}],
        ["data", "notes", "delete", 5],
    ],
)
def test_D1_non_string_ids_rejected(bench, step):
    res = run(bench, step)
    assert res.error.code == "E_INVALID_ARGUMENT", res.error
    assert "id must be a string" in res.error.message


# -- D1: find and count ----------------------------------------------------------------------

DOCS = [
    {"title": "a", "status": "open", "priority": 3, "meta": {"rank": 5}},
    {"title": "b", "status": "done", "priority": 1, "meta": {"rank": 1}},
    {"title": "c", "status": "open", "priority": 5},
    {"title": "d", "status": None, "priority": 2, "meta": {"rank": 3}},
    {"title": "e", "priority": 4, "flag": True},
    {"title": "f", "status": "open", "priority": 3, "flag": False},
]


@pytest.fixture
def seeded(bench):
    insert_all(bench, "notes", DOCS)
    return bench


def test_D1_find_all_in_insertion_order(seeded):
    page = find(seeded)
    assert titles(page) == list("abcdef")
    assert page["cursor"] is None
    assert page["items"][0] == {"id": page["items"][0]["id"], **DOCS[0]}
    assert titles(find(seeded, {"order": "desc"})) == list("fedcba")


@pytest.mark.parametrize(
    "where, expected",
    [
        ({"status": "open"}, "acf"),
        ({"status": {"eq": "done"}}, "b"),
        ({"priority": 3}, "af"),
        ({"priority": 3, "status": "open"}, "af"),
        ({"priority": {"gt": 3}}, "ce"),
        ({"priority": {"gte": 3}}, "acef"),
        ({"priority": {"lt": 3}}, "bd"),
        ({"priority": {"lte": 3}}, "abdf"),
        ({"priority": {"gte": 2, "lt": 4}}, "adf"),
        ({"priority": {"ne": 3}}, "bcde"),
        ({"status": {"in": ["done", "open"]}}, "abcf"),
        ({"status": {"in": []}}, ""),
        ({"meta.rank": {"gte": 3}}, "ad"),
        ({"flag": True}, "e"),
        ({"flag": False}, "f"),
        ({"title": "zzz"}, ""),
    ],
)
def test_D1_find_where(seeded, where, expected):
    assert "".join(titles(find(seeded, {"where": where}))) == expected
    assert ok(seeded, ["data", "notes", "count", where]) == [len(expected)]


def test_D1_find_null_equality(seeded):
    # null matches a null field and a missing one; ne null is "has a value"
    assert titles(find(seeded, {"where": {"status": None}})) == ["d", "e"]
    assert titles(find(seeded, {"where": {"status": {"eq": None}}})) == ["d", "e"]
    assert titles(find(seeded, {"where": {"status": {"ne": None}}})) == ["a", "b", "c", "f"]
    assert titles(find(seeded, {"where": {"meta": None}})) == ["c", "e", "f"]
    assert ok(seeded, ["data", "notes", "count", {"status": None}]) == [2]
    # in: [null, …] matches what eq null matches
    assert titles(find(seeded, {"where": {"status": {"in": [None, "done"]}}})) == ["b", "d", "e"]
    assert titles(find(seeded, {"where": {"status": {"in": [None]}}})) == ["d", "e"]


def test_D1_find_ne_is_the_complement_of_eq(seeded):
    # a document without the field (or with null) is "not equal" to a value
    assert titles(find(seeded, {"where": {"status": {"ne": "open"}}})) == ["b", "d", "e"]
    for where in ({"status": "open"}, {"status": None}, {"flag": True}, {"meta.rank": 1}):
        field, v = next(iter(where.items()))
        eq, ne = ok(seeded, ["data", "notes", "count", where], ["data", "notes", "count", {field: {"ne": v}}])
        assert eq + ne == len(DOCS), where


def test_D1_find_by_id(seeded):
    items = find(seeded)["items"]
    assert find(seeded, {"where": {"id": items[2]["id"]}})["items"] == [items[2]]
    ids = [items[0]["id"], items[4]["id"]]
    assert titles(find(seeded, {"where": {"id": {"in": ids}}})) == ["a", "e"]


def test_D1_find_order_by(seeded):
    # ties keep insertion order (asc) or its reverse (desc); missing fields sort first
    assert titles(find(seeded, {"orderBy": "priority"})) == list("bdafec")
    assert titles(find(seeded, {"orderBy": "priority", "order": "desc"})) == list("cefadb")
    assert titles(
        find(seeded, {"where": {"status": "open"}, "orderBy": "priority", "order": "desc"})
    ) == list("cfa")
    assert titles(find(seeded, {"orderBy": "meta.rank"})) == list("cefbda")
    assert titles(find(seeded, {"orderBy": "title", "order": "desc", "limit": 2})) == ["f", "e"]


def test_D1_find_limit_bounds(seeded):
    assert titles(find(seeded, {"limit": 1})) == ["a"]
    assert len(find(seeded, {"limit": 1000})["items"]) == 6
    for bad in (0, -1, 1001, "5", 2.5, True, None):
        res = run(seeded, ["data", "notes", "find", {"limit": bad}])
        assert res.error.code == "E_INVALID_ARGUMENT", bad
        assert "limit" in res.error.message and "1000" in res.error.message


def test_D1_find_default_limit_is_50(bench):
    insert_all(bench, "tasks", [{"n": i} for i in range(51)])
    page = find(bench, coll="tasks")
    assert [d["n"] for d in page["items"]] == list(range(50))
    assert page["cursor"] is not None
    rest = find(bench, {"cursor": page["cursor"]}, coll="tasks")
    assert [d["n"] for d in rest["items"]] == [50] and rest["cursor"] is None


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"order": "desc"},
        {"orderBy": "g"},
        {"orderBy": "g", "order": "desc"},
        {"where": {"g": {"gte": 1}}, "orderBy": "g"},
    ],
)
def test_D1_find_cursor_pages_through_every_doc_once(bench, query):
    ids = insert_all(bench, "tasks", [{"n": i, "g": i % 3} for i in range(23)])
    expected = [i for i in ids] if "where" not in query else [ids[i] for i in range(23) if i % 3 >= 1]
    seen, cursor, pages = [], None, 0
    while True:
        page = find(bench, {**query, "limit": 5, **({"cursor": cursor} if cursor else {})}, coll="tasks")
        pages += 1
        seen += [d["id"] for d in page["items"]]
        cursor = page["cursor"]
        if cursor is None:
            break
        assert isinstance(cursor, str)
        assert pages < 10
    assert len(seen) == len(set(seen)) == len(expected)
    assert set(seen) == set(expected)
    assert pages == math.ceil(len(expected) / 5)
    # the pages together are the same order as one big page
    assert seen == [d["id"] for d in find(bench, {**query, "limit": 1000}, coll="tasks")["items"]]


@pytest.mark.parametrize(
    "query, word",
    [
        ({"cursor": "garbage"}, "cursor"),
        ({"cursor": 5}, "cursor"),
        ({"cursor": "o:-2"}, "cursor"),
        ({"order": "up"}, "order"),
        ({"orderBy": "a b"}, "field"),
        ({"where": {"priority": {"between": [1, 2]}}}, "operator"),
        ({"where": {"status": {"in": "open"}}}, "list"),
        ({"where": {"status": ["open"]}}, "status"),
        ({"where": {"bad-field": 1}}, "field"),
        ({"where": ["status", "open"]}, "where"),
        ({"sort": "title"}, "unknown"),
    ],
)
def test_D1_find_bad_queries(seeded, query, word):
    res = run(seeded, ["data", "notes", "find", query])
    assert res.error.code == "E_INVALID_ARGUMENT", res.error
    assert word in res.error.message


def test_D1_count(seeded):
    assert ok(
        seeded,
        ["data", "notes", "count"],
        ["data", "notes", "count", None],
        ["data", "notes", "count", {"status": "open", "priority": {"lt": 5}}],
        ["data", "tasks", "count"],
    ) == [6, 6, 2, 0]


# -- D1: indexes -----------------------------------------------------------------------------


def find_sql(coll: str, query: dict) -> tuple[str, list]:
    """The statement `Data.find` runs, built from the same helpers."""
    cond, params = where_sql(where_filter(query.get("where")))
    order = query.get("order", "asc")
    by = f"{expr(query['orderBy'])} {order}, rid {order}" if "orderBy" in query else f"rid {order}"
    return (
        f"SELECT id, doc FROM {table(coll)} WHERE {cond} ORDER BY {by} LIMIT ? OFFSET ?",
        [*params, 51, 0],
    )


def plan(db, sql: str, params: list = ()) -> str:
    return " | ".join(r[3] for r in db.execute(f"EXPLAIN QUERY PLAN {sql}", params))


def uses(plan_text: str, index: str) -> bool:
    return re.search(rf"USING (COVERING )?INDEX {index}\b", plan_text) is not None


def test_D1_indexes_created(bench):
    rows = bench.providers.data_db.conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'c_notes' "
        "AND name LIKE 'ix_%' ORDER BY name"
    ).fetchall()
    assert [r[0] for r in rows] == ["ix_notes_meta_rank", "ix_notes_priority", "ix_notes_status"]
    assert all(expr(f) in sql for f, (_, sql) in zip(["meta.rank", "priority", "status"], rows))


@pytest.mark.parametrize(
    "query, index",
    [
        ({"where": {"status": "open"}}, "ix_notes_status"),
        ({"where": {"status": None}}, "ix_notes_status"),
        ({"where": {"status": {"in": ["open", "done"]}}}, "ix_notes_status"),
        ({"where": {"priority": {"gte": 2, "lt": 4}}}, "ix_notes_priority"),
        ({"where": {"priority": {"gt": 3}}, "orderBy": "priority"}, "ix_notes_priority"),
        ({"where": {"meta.rank": 3}}, "ix_notes_meta_rank"),
        ({"orderBy": "priority", "order": "desc"}, "ix_notes_priority"),
    ],
)
def test_D1_find_uses_manifest_indexes(seeded, query, index):
    db = seeded.providers.data_db.conn
    sql, params = find_sql("notes", query)
    assert uses(plan(db, sql, params), index), plan(db, sql, params)
    # and that is what find really runs: trace its statements and explain them
    ran: list[str] = []
    db.set_trace_callback(ran.append)
    try:
        page = find(seeded, {**query, "limit": 50})
    finally:
        db.set_trace_callback(None)
    # (the call's copy of the collection for res.pin, ctx/before.py, reads it whole, unordered
    # by any index: not find's statement)
    copy = 'SELECT id, doc FROM "c_notes" ORDER BY rid'
    selects = [s for s in ran if s.startswith('SELECT id, doc FROM "c_notes"') and s != copy]
    assert len(selects) == 1
    assert uses(plan(db, selects[0]), index), selects[0]
    assert page["items"]


def test_D1_count_uses_manifest_index(seeded):
    db = seeded.providers.data_db.conn
    cond, params = where_sql(where_filter({"priority": {"gt": 3}}))
    assert uses(plan(db, f"SELECT count(*) FROM {table('notes')} WHERE {cond}", params), "ix_notes_priority")


def test_D1_unindexed_field_scans(seeded):
    sql, params = find_sql("notes", {"where": {"title": "a"}})
    assert "INDEX ix_" not in plan(seeded.providers.data_db.conn, sql, params)


# -- buffered inserts ------------------------------------------------------------------------


def test_D1_inserts_visible_to_reads_in_the_same_call(bench):
    out = ok(
        bench,
        ["data", "notes", "insert", {"title": "a", "status": "open"}],
        ["data", "notes", "insert", {"title": "b", "status": "open"}],
        ["data", "notes", "count"],
        ["data", "notes", "find", {"where": {"status": "open"}}],
        ["data", "notes", "insert", {"title": "c", "status": "done"}],
        ["data", "notes", "count", {"status": "done"}],
        ["kv", "get", "x"],
    )
    assert out[2] == 2
    assert [d["title"] for d in out[3]["items"]] == ["a", "b"]
    assert out[5] == 1


SAME_CALL = """
def handle(input, ctx):
    notes = ctx.data.collection("notes")
    a = notes.insert({"title": "a"})["id"]
    b = notes.insert({"title": "b"})["id"]
    notes.update(a, {"status": "done"})
    notes.delete(b)
    return {"a": notes.get(a), "b": notes.get(b), "n": notes.count()}
"""


def test_D1_update_and_delete_see_inserts_of_the_same_call(gem, open_bench):
    b = open_bench(gem.tool("t", SAME_CALL).collections(notes=[]))
    res = b.call("t")
    assert res.ok, res.error
    assert res.value["a"]["status"] == "done" and res.value["b"] is None and res.value["n"] == 1
    assert b.data("notes")[["title", "status"]].to_dict("records") == [{"title": "a", "status": "done"}]


def test_D1_writes_committed_when_the_tool_raises(bench):
    res = run(
        bench,
        ["data", "notes", "insert", {"title": "a"}],
        ["data", "notes", "insert", {"title": "b"}],
        ["kv", "set", "k", "v"],
        ["sql", "execute", "INSERT INTO items(name) VALUES ('x')"],
        fail=True,
    )
    assert res.error.code == "E_TOOL_ERROR" and "boom" in res.error.message
    assert list(bench.data("notes")["title"]) == ["a", "b"]
    assert bench.kv().to_dict("records") == [{"key": "k", "value": "v"}]
    assert list(bench.sql("SELECT name FROM items ORDER BY id")["name"]) == ["seed", "x"]


def test_D1_inserts_committed_when_a_later_ctx_call_fails(bench):
    res = run(bench, ["data", "notes", "insert", {"title": "a"}], ["data", "nope", "insert", {"title": "b"}])
    assert res.error.code == "E_UNKNOWN_COLLECTION"
    assert list(bench.data("notes")["title"]) == ["a"]


# -- D2: kv ----------------------------------------------------------------------------------


def test_D2_kv_get_set_delete_list(bench):
    out = ok(
        bench,
        ["kv", "get", "a"],
        ["kv", "set", "b", "2"],
        ["kv", "set", "a", "1"],
        ["kv", "set", "a:x", ""],
        ["kv", "set", "c", "héllo ✓"],
        ["kv", "get", "a"],
        ["kv", "get", "a:x"],
        ["kv", "list"],
        ["kv", "list", "a"],
        ["kv", "list", "zz"],
        ["kv", "set", "a", "one"],
        ["kv", "get", "a"],
        ["kv", "delete", "b"],
        ["kv", "delete", "b"],
        ["kv", "get", "b"],
        ["kv", "list"],
    )
    assert out == [
        None,
        None,
        None,
        None,
        None,
        "1",
        "",
        ["a", "a:x", "b", "c"],
        ["a", "a:x"],
        [],
        None,
        "one",
        True,
        False,
        None,
        ["a", "a:x", "c"],
    ]
    assert bench.kv().to_dict("records") == [
        {"key": "a", "value": "one"},
        {"key": "a:x", "value": ""},
        {"key": "c", "value": "héllo ✓"},
    ]


def test_D2_kv_list_prefix_is_literal(bench):
    ok(bench, ["kv", "set", "a%", "1"], ["kv", "set", "ab", "2"], ["kv", "set", "a_", "3"])
    assert ok(bench, ["kv", "list", "a%"], ["kv", "list", "a_"], ["kv", "list", ""]) == [
        ["a%"],
        ["a_"],
        ["a%", "a_", "ab"],
    ]


@pytest.mark.parametrize(
    "step, word",
    [
        (["kv", "set", 1, "v"], "key"),
        (["kv", "set", None, "v"], "key"),
        (["kv", "set", "k", 1], "value"),
        (["kv", "set", "k", None], "value"),
        (["kv", "set", "k", {"a": 1}], "value"),
        (["kv", "set", "k", ["a"]], "value"),
        (["kv", "set", "k", True], "value"),
        (["kv", "get", 5], "key"),
        (["kv", "delete", 5], "key"),
        (["kv", "list", 5], "prefix"),
    ],
)
def test_D2_kv_non_string_rejected(bench, step, word):
    res = run(bench, step)
    assert res.error.code == "E_INVALID_ARGUMENT", res.error
    assert f"kv {word} must be a string" in res.error.message
    assert res.error.details.get("field") == word
    assert bench.kv().empty


def test_D2_kv_non_string_key_in_read_tool_is_an_argument_error(gem, open_bench):
    b = open_bench(make_gem(gem), strict=True)
    res = b.call("ops_read", {"steps": [["kv", "delete", 5]]})
    assert res.error.code == "E_INVALID_ARGUMENT"


# -- D3: sql ---------------------------------------------------------------------------------


def test_D3_schema_applied(bench):
    assert ok(bench, ["sql", "query", "SELECT name, qty FROM items"]) == [[{"name": "seed", "qty": 1}]]
    assert bench.sql("SELECT name FROM items")["name"].tolist() == ["seed"]


def test_D3_query_and_execute(bench):
    out = ok(
        bench,
        ["sql", "execute", "INSERT INTO items(name, qty) VALUES (?, ?)", ["a", 2]],
        ["sql", "execute", "INSERT INTO items(name, qty) VALUES (:n, :q)", {"n": "b", "q": 3}],
        ["sql", "execute", "UPDATE items SET qty = qty + 10 WHERE qty >= ?", [2]],
        ["sql", "query", "SELECT name, qty FROM items WHERE qty > ? ORDER BY name", [5]],
        ["sql", "query", "SELECT count(*) AS n FROM items"],
        ["sql", "execute", "DELETE FROM items WHERE name = 'nothing'"],
        ["sql", "query", "SELECT * FROM items WHERE 0"],
    )
    assert out[0] == {"changes": 1, "lastInsertRowid": 2}
    assert out[1] == {"changes": 1, "lastInsertRowid": 3}
    assert out[2]["changes"] == 2
    assert out[3] == [{"name": "a", "qty": 12}, {"name": "b", "qty": 13}]
    assert out[4] == [{"n": 3}]
    assert out[5]["changes"] == 0
    assert out[6] == []


@pytest.mark.parametrize(
    "sql, params, word",
    [
        ("SELEC * FROM items", None, "syntax error"),
        ("SELECT * FROM missing", None, "no such table: missing"),
        ("INSERT INTO items(name) VALUES ('seed')", None, "UNIQUE constraint failed"),
        ("SELECT ?", [1, 2], "bindings"),
        ("SELECT 1; SELECT 2", None, "one statement"),
    ],
)
def test_D3_sql_error_carries_sqlite_message(bench, sql, params, word):
    res = run(bench, ["sql", "query", sql, params])
    assert res.error.code == "E_SQL", res.error
    assert word in res.error.message
    # no crash: the bench and the database keep working
    assert ok(bench, ["sql", "query", "SELECT count(*) AS n FROM items"]) == [[{"n": 1}]]


def test_D3_sql_error_while_reading_rows(bench):
    ok(bench, ["sql", "execute", "INSERT INTO items(name) VALUES ('{\"a\":1}'), ('not json')"])
    res = run(
        bench,
        ["sql", "query", "SELECT json_extract(name, '$.a') AS a FROM items WHERE name <> 'seed' ORDER BY id"],
    )
    assert res.error.code == "E_SQL", res.error
    assert "JSON" in res.error.message


def test_D3_sql_bad_arguments(bench):
    assert run(bench, ["sql", "query", 5]).error.code == "E_INVALID_ARGUMENT"
    assert run(bench, ["sql", "query", "SELECT ?", "x"]).error.code == "E_INVALID_ARGUMENT"


def test_D3_schema_applied_on_first_open_only(gem, open_bench, kind):
    make_gem(gem)
    b1 = open_bench(gem)
    ok(b1, ["sql", "execute", "INSERT INTO items(name) VALUES ('kept')"])
    b1.close()
    b2 = open_bench(gem)  # same state_dir; CREATE TABLE would fail if the schema ran again
    names = b2.sql("SELECT name FROM items ORDER BY id")["name"].tolist()
    assert names == (["seed", "kept"] if kind == "real" else ["seed"])


def test_D3_broken_schema_rejected_at_open(gem, open_bench):
    gem.tool("ops", OPS).schema_sql("CREATE TABLE ok_table (a);\nCREATE TABLE oops (;\n")
    with pytest.raises(workbench.WorkbenchError) as e:
        open_bench(gem)
    assert e.value.code == "E_MANIFEST"
    assert "db/schema.sql" in e.value.message and "syntax error" in e.value.message
    # nothing half-applied: fixing the schema makes it apply from scratch
    gem.schema_sql("CREATE TABLE ok_table (a);")
    b = open_bench(gem)
    assert b.sql("SELECT name FROM sqlite_master WHERE type = 'table'")["name"].tolist() == ["ok_table"]


def test_D3_sql_is_separate_from_data(bench):
    res = run(bench, ["sql", "query", "SELECT * FROM kv"])
    assert res.error.code == "E_SQL" and "no such table" in res.error.message
    res = run(bench, ["sql", "query", 'SELECT * FROM "c_notes"'])
    assert res.error.code == "E_SQL"


# -- D4: read tools must not write -----------------------------------------------------------

WRITES = {
    "data": ["data", "notes", "insert", {"title": "x"}],
    "kv": ["kv", "set", "k", "v"],
    "sql": ["sql", "execute", "INSERT INTO items(name) VALUES ('x')"],
}
METHOD = {"data": "data.notes.insert", "kv": "storage.kv.set", "sql": "storage.sql"}


def stored(bench: workbench.Bench) -> dict[str, int]:
    return {
        "data": len(bench.data("notes")),
        "kv": len(bench.kv()),
        "sql": int(bench.sql("SELECT count(*) AS n FROM items")["n"][0]) - 1,
    }


@pytest.mark.parametrize("what", ["data", "kv", "sql"])
def test_D4_read_tool_write_reported(bench, what):
    res = run(bench, WRITES[what], tool="ops_read")
    assert res.ok, res.error
    assert len(res.violations) == 1
    v = res.violations[0]
    assert isinstance(v, str)
    assert "D4" in v and "'ops_read'" in v and 'sideEffect: "read"' in v and METHOD[what] in v
    assert stored(bench)[what] == 1  # reported, not prevented
    assert bench.calls()["violations"].tolist() == [1]


def test_D4_read_tool_all_writes_reported_once_each(bench):
    [a] = insert_all(bench, "notes", [{"title": "a"}])
    res = run(
        bench,
        *WRITES.values(),
        WRITES["kv"],
        ["data", "notes", "update", a, {"s": 1}],
        ["data", "notes", "delete", a],
        ["kv", "delete", "k"],
        ["sql", "execute", "DELETE FROM items WHERE name = 'x'"],
        tool="ops_read",
    )
    assert res.ok, res.error
    for m in (
        "data.notes.insert",
        "storage.kv.set",
        "storage.sql",
        "data.notes.update",
        "data.notes.delete",
        "storage.kv.delete",
    ):
        assert sum(m + ")" in v for v in res.violations) == 1, (m, res.violations)
    assert len(res.violations) == 6


@pytest.mark.parametrize("what", ["data", "kv", "sql"])
def test_D4_strict_read_tool_write_fails_and_writes_nothing(gem, open_bench, what):
    b = open_bench(make_gem(gem), strict=True)
    res = run(b, WRITES[what], tool="ops_read")
    assert res.error.code == "E_SIDE_EFFECT", res.error
    assert "D4" in res.error.message and METHOD[what] in res.error.message
    assert stored(b) == {"data": 0, "kv": 0, "sql": 0}


def test_D4_strict_stops_at_first_write(gem, open_bench):
    b = open_bench(make_gem(gem), strict=True)
    res = run(b, WRITES["kv"], WRITES["data"], WRITES["sql"], tool="ops_read")
    assert res.error.code == "E_SIDE_EFFECT"
    assert stored(b) == {"data": 0, "kv": 0, "sql": 0}


@pytest.mark.parametrize("strict", [False, True])
def test_D4_read_tool_reading_has_no_violation(gem, open_bench, strict):
    b = open_bench(make_gem(gem), strict=strict)
    res = run(
        b,
        ["data", "notes", "find", None],
        ["data", "notes", "count"],
        ["data", "notes", "get", "x"],
        ["kv", "get", "k"],
        ["kv", "list"],
        ["sql", "query", "SELECT * FROM items"],
        tool="ops_read",
    )
    assert res.ok, res.error
    assert res.violations == []


@pytest.mark.parametrize("strict", [False, True])
def test_D4_read_tool_temp_tables_are_not_storage(gem, open_bench, strict):
    b = open_bench(make_gem(gem), strict=strict)
    res = run(
        b,
        ["sql", "execute", "CREATE TEMP TABLE scratch (x)"],
        ["sql", "execute", "INSERT INTO scratch SELECT qty FROM items"],
        ["sql", "execute", "UPDATE scratch SET x = x + 1"],
        ["sql", "query", "SELECT x FROM scratch"],
        ["sql", "execute", "DROP TABLE scratch"],
        tool="ops_read",
    )
    assert res.ok, res.error
    assert res.value[3] == [{"x": 2}]
    assert res.violations == []
    # but the same tool writing the gem's database is caught
    res = run(b, ["sql", "execute", "INSERT INTO main.items(name) SELECT 'y'"], tool="ops_read")
    assert (res.error.code == "E_SIDE_EFFECT") if strict else (len(res.violations) == 1)


@pytest.mark.parametrize("strict", [False, True])
def test_D4_write_tool_has_no_violation(gem, open_bench, strict):
    b = open_bench(make_gem(gem), strict=strict)
    res = run(b, *WRITES.values())
    assert res.ok, res.error
    assert res.violations == []
    assert stored(b) == {"data": 1, "kv": 1, "sql": 1}


# -- persistence -----------------------------------------------------------------------------


def test_real_state_survives_reopen(gem, open_bench, kind):
    make_gem(gem)
    b1 = open_bench(gem)
    [a] = insert_all(b1, "notes", [{"title": "a", "status": "open"}])
    ok(b1, ["kv", "set", "cursor", "42"], ["sql", "execute", "INSERT INTO items(name) VALUES ('x')"])
    b1.close()
    b2 = open_bench(gem)
    if kind == "real":
        assert b2.data("notes").to_dict("records") == [{"id": a, "title": "a", "status": "open"}]
        assert b2.kv().to_dict("records") == [{"key": "cursor", "value": "42"}]
        assert b2.sql("SELECT name FROM items ORDER BY id")["name"].tolist() == ["seed", "x"]
        assert ok(b2, ["data", "notes", "find", {"where": {"status": "open"}}])[0]["items"][0]["id"] == a
    else:  # mock state lives in memory: a new bench starts from the fixtures
        assert b2.data("notes").empty and b2.kv().empty
        assert b2.sql("SELECT name FROM items")["name"].tolist() == ["seed"]


def test_document_ids_are_random_and_a_forked_child_draws_its_own() -> None:
    ids = [new_id() for _ in range(2000)]  # past several draws of 512
    assert len(set(ids)) == 2000 and all(re.fullmatch("[0-9a-f]{16}", i) for i in ids)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the ids the parent drew and has not given are not its own
        os.write(w, new_id().encode())
        os._exit(0)
    os.close(w)
    child = os.read(r, 64).decode()
    os.close(r)
    os.waitpid(pid, 0)
    assert re.fullmatch("[0-9a-f]{16}", child) and child != new_id()
