"""workbench._json: what a result or an input may hold (N9, SEC7), and the shortcut for flat values."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench import _json
from workbench._json import dump_flat, flat, to_json, why_not_json

FLAT = [
    {},
    [],
    {"a": 1, "b": True, "c": None, "d": "x", "e": False, "f": 0},
    {"lone": "\ud800x", "wide": "日本", "min": -(2**63) + 1, "max": 2**63 - 1},
    ["a", 1, None, True],
]
NOT_FLAT = [
    {"f": 1.0},  # JS writes it "1"
    {"n": 2**63},  # ints this wide take the general path
    {1: "a"},  # a key JSON would quietly turn into "1"
    {"a": []},
    ("a", 1),
    {"s": type("S", (str,), {})("x")},  # a subclass: its methods are the tool's code
    "text",
    None,
]


@pytest.mark.parametrize("value", FLAT)
def test_a_flat_value_comes_back_as_its_json_round_trip(value: Any) -> None:
    assert flat(value)
    out, err = to_json(value)
    expected = json.loads(json.dumps(value))
    assert err is None and out == expected and out is not value
    assert [type(v) for v in (out.values() if isinstance(out, dict) else out)] == [
        type(v) for v in (expected.values() if isinstance(expected, dict) else expected)
    ]  # True stays True, not 1


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize("value", FLAT)
@pytest.mark.parametrize("encoder", ["c", "stdlib"])
def test_a_flat_value_is_written_as_json_dumps_writes_it(
    value: Any, encoder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _json._CHUNKS is not None  # this Python's C encoder is the one json.dumps uses
    if encoder == "stdlib":  # where it is missing or differs
        monkeypatch.setattr(_json, "_CHUNKS", None)
    assert dump_flat(value) == _dumps(value)


SCALAR = st.one_of(st.text(), st.integers(-(2**63) + 1, 2**63 - 1), st.booleans(), st.none())


@given(st.one_of(st.dictionaries(st.text(), SCALAR), st.lists(SCALAR)))
def test_any_flat_value_is_written_as_json_dumps_writes_it(value: Any) -> None:
    assert flat(value)
    assert dump_flat(value) == _dumps(value)


@pytest.mark.parametrize("value", NOT_FLAT)
def test_anything_else_takes_the_general_path(value: Any) -> None:
    assert not flat(value)


def test_a_flat_value_is_still_measured_and_bounded() -> None:
    assert to_json({"a": "x" * 20}, max_chars=28)[1] is None
    err = to_json({"a": "x" * 20}, max_chars=27)[1]
    assert err is not None and err.code == "E_RESULT_TOO_LARGE" and err.details["size"] == 28
    err = to_json({"a": 1}, max_depth=0)[1]
    assert err is not None and err.code == "E_RESULT_NOT_JSON"


def test_why_not_json_names_the_first_bad_value_by_its_path() -> None:
    loop: list[Any] = []
    loop.append(loop)
    inner: dict[str, Any] = {"k": [1, 2]}
    inner["k"].append(inner)
    deep: list[Any] = []
    cur = deep
    for _ in range(250):
        cur.append([])
        cur = cur[0]
    assert why_not_json({"a": [1, {"b": float("nan")}]}) == "result.a[1].b is nan (JSON has no NaN/Infinity)"
    assert why_not_json({"a": {1: 2}}, "input") == "input.a has a non-string key 1"
    assert why_not_json(loop) == "result[0] contains itself (a cycle)"
    assert why_not_json(inner) == "result.k[2] contains itself (a cycle)"
    assert why_not_json([{"x": 1}, {"y": [None, b"z"]}]) == "result[1].y[1] is a bytes, which is not JSON"
    assert why_not_json(deep, max_depth=3) == "result[0][0][0] is nested deeper than 3 levels"
    assert why_not_json(deep).endswith("[0][0] is nested deeper than 200 levels")
    assert why_not_json({"ok": [1.5, (2, "x")], "n": None}) is None


class _Str(str):
    pass


@pytest.mark.parametrize(
    "doc",
    [
        {},
        {"a": 1, "b": "x", "c": None, "d": True, "e": 1.5},
        {"a": float("nan")},
        {"a": float("-inf")},
        {1: "x"},
        {"a": 1, 2: "x"},
        {_Str("k"): 1},
        {"a": _Str("v")},
        {"a": b"bytes"},
        {"a": [1, 2]},
        {"a": {"b": float("inf")}},
    ],
)
def test_a_flat_object_gets_the_answer_the_full_walk_gives(doc: dict) -> None:
    # the one-pass check of a flat object (the common document) against the general walk,
    # which a one-item list around it always takes
    inner = why_not_json([doc], "doc")
    expected = None if inner is None else inner.replace("doc[0]", "doc", 1)
    assert why_not_json(doc, "doc") == expected
    assert why_not_json(doc, "doc", max_depth=0) is not None  # nor does it skip the depth bound
