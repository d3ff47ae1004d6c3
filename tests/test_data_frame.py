"""bench.data's DataFrame (inspect.frames.collection) read through the store at once
(docs_joined) and decoded by orjson where it reads what json reads: every frame is the one the
row-by-row json.loads reading gives, with orjson and without it."""

from __future__ import annotations

import json
import sqlite3
import sys
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.inspect import frames
from workbench.providers import open_database
from workbench.providers.datastore import SqliteDataStore


@pytest.fixture
def store() -> SqliteDataStore:
    s = SqliteDataStore(open_database(None))
    s.create({"notes": (), "empty": ()})
    return s


def put(store: SqliteDataStore, *docs: dict[str, Any] | str) -> None:
    """Documents as ctx.data stores them (or, given as text, exactly that text)."""
    start = len(store.docs("notes"))
    texts = [
        d if isinstance(d, str) else json.dumps(d, ensure_ascii=False, separators=(",", ":")) for d in docs
    ]
    store.insert_docs("notes", [(f"d{start + i}", t) for i, t in enumerate(texts)])


def reference(store: SqliteDataStore, name: str = "notes") -> pd.DataFrame:
    """The frame as bench.data built it before (row by row, json.loads, pandas finds the columns)."""
    rows = store.docs(name)
    if not rows:
        return pd.DataFrame(columns=["id"])
    df = pd.DataFrame.from_records(json.loads("[" + ",".join(d for _, d in rows) + "]"))
    df.insert(0, "id", [i for i, _ in rows])
    return df


def outcome(read: Any) -> Any:
    try:
        return read()
    except Exception as exc:  # a hand-made store can hold what no tool can write
        return type(exc)


@pytest.fixture(params=["orjson", "json"])
def decoder(request, monkeypatch) -> str:
    if request.param == "json":
        monkeypatch.setitem(sys.modules, "orjson", None)  # import orjson: ImportError
    return request.param


def same_as_before(store: SqliteDataStore) -> pd.DataFrame:
    got, want = outcome(lambda: frames.collection(store, "notes")), outcome(lambda: reference(store))
    if isinstance(want, pd.DataFrame) and isinstance(got, pd.DataFrame):
        pd.testing.assert_frame_equal(got, want)
        assert [type(v) for v in got.to_numpy().ravel()] == [type(v) for v in want.to_numpy().ravel()]
    else:
        assert got == want
    return got


CASES = {
    "booleans": [{"b": True}, {"b": False}],
    "booleans and missing": [{"b": True}, {}, {"b": False}],
    "booleans and numbers": [{"b": True}, {"b": 0}, {"b": 1}],
    "nested": [{"m": {"x": [1, {"y": None}], "z": {}}}, {"m": [1, "2", [3.5]]}, {"m": []}],
    "null and missing": [{"a": None}, {}, {"a": "x"}],
    "null and missing, numbers": [{"a": 1}, {"a": None}, {}],
    "all null": [{"a": None}, {"a": None}],
    "ints": [{"n": 1}, {"n": -2}],
    "ints and floats": [{"n": 1}, {"n": 2.5}, {"n": 1.0}],
    "floats": [{"n": 0.1}, {"n": 1e-300}, {"n": -0.0}, {"n": 1.7976931348623157e308}, {"n": 5e-324}],
    "integers past 64 bits": [{"n": 10**30}, {"n": -(2**63) - 1}, {"n": 2**64}],
    "integers of 64 bits": [{"n": 2**63}, {"n": 2**64 - 1}],
    "int64 extremes": [{"n": -(2**63)}, {"n": 2**63 - 1}],
    "digits in a string": [{"s": "12345678901234567890123"}, {"s": "x"}],
    "mixed column": [
        {"v": "a"},
        {"v": 1},
        {"v": 1.5},
        {"v": True},
        {"v": None},
        {"v": [1]},
        {"v": {"k": 1}},
        {},
    ],
    "unicode": [{"é": "😀", "ключ": '\u2028\x00\n"\\', "中": "\u00e9"}, {"é": "ᾭ"}],
    "keys that look like paths": [
        {"a.b": 1, "a": {"b": 2}, "$": 3, '"x"': 4, "": 5, "[0]": 6, "a\\b": 7, "$.a": 8, "'": 9}
    ],
    "first seen first": [{"b": 1}, {"a": 1, "b": 2}, {"c": 1, "a": 2}],
    "same fields, other orders": [{"a": 1, "b": 2}, {"b": 3, "a": 4}],
    "fewer fields later": [{"a": 1, "b": 2}, {"b": 3}, {}],
    "empty documents": [{}, {}],
    "empty first": [{}, {"a": 1}],
    "text as stored by json_patch or by hand": ['{ "a" : 1 , "b":[ 1 ,2 ] }', '{"a":1,"a":2}', "{}"],
    "what json reads and orjson refuses": ['{"x":1e400}', '{"s":"\\ud800"}', '{"n":NaN}'],
    "escapes": ['{"s":"\\u00e9\\ud83d\\ude00\\/\\t"}'],
}


@pytest.mark.parametrize("docs", CASES.values(), ids=CASES.keys())
def test_frame_is_what_row_by_row_json_gave(store, decoder, docs):
    put(store, *docs)
    same_as_before(store)


def test_what_the_frame_shows(store, decoder):
    put(
        store,
        {"t": "a", "ok": True, "m": {"x": [1]}, "n": 1},
        {"t": "b", "ok": False, "n": 2.5, "big": 10**30},
    )
    df = frames.collection(store, "notes")
    assert list(df.columns) == ["id", "t", "ok", "m", "n", "big"]
    assert df["ok"].dtype == bool and df["n"].dtype == float and df["n"].tolist() == [1.0, 2.5]
    assert df["m"][0] == {"x": [1]} and pd.isna(df["m"][1])
    assert df["big"][1] == 10**30 and type(df["big"][1]) is int


def test_documents_no_tool_can_write(store, decoder):
    for text in ("[1]", '"ab"', "5", "null", '{"a":1},{"b":2}', "", '{"id":"x"}', '{"a":[1'):
        other = SqliteDataStore(open_database(None))
        other.create({"notes": ()})
        put(other, {"a": 1}, text, {"b": 2})
        same_as_before(other)
    put(store, {"ab": 1}, '["ab"]')  # pandas reads ["ab"] as {"a": "b"}: a field the first lacks
    assert list(same_as_before(store).columns) == ["id", "ab", "a"]


def test_thousands_of_fields(store, decoder):
    put(store, *({f"k{i}_{j}": j for j in range(200)} for i in range(25)), {"k0_0": "last"})
    assert same_as_before(store).shape == (26, 5001)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.dictionaries(st.sampled_from(["a", "b", "c.d", "é", ""]), JSON, max_size=4), min_size=1, max_size=6
    )
)
def test_any_documents(docs):
    s = SqliteDataStore(open_database(None))
    s.create({"notes": ()})
    put(s, *docs)
    same_as_before(s)


# -- the store reads a collection at once ---------------------------------------------------


def test_docs_joined_is_docs_at_once(store):
    assert store.docs_joined("empty") == ([], b"[]") and store.docs_joined("never_created") == ([], b"[]")
    store.insert_docs("notes", [("c", '{"n":1}'), ("a", "{}"), ("b", '{"é":"😀"}')])
    assert store.docs_joined("notes") == (["c", "a", "b"], '[{"n":1},{},{"é":"😀"}]'.encode())


def test_docs_joined_with_a_comma_in_an_id(store):
    store.insert_docs("notes", [("a,b", "{}"), ("c", "{}")])
    assert store.docs_joined("notes")[0] == ["a,b", "c"]


def test_docs_joined_longer_than_a_sqlite_string(store):
    store.insert_docs("notes", [(f"d{i}", json.dumps({"t": "x" * 50})) for i in range(40)])
    whole = store.docs_joined("notes")
    store.db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1000)  # the joined text is ~2,500 bytes
    assert store.docs_joined("notes") == whole
    pd.testing.assert_frame_equal(frames.collection(store, "notes"), reference(store))
