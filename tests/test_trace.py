"""A call's trace (ctx/_trace.py): rows record a ctx call's arguments as they were passed, and
write the text they show when first read."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest
from conftest import GemBuilder

from workbench.bench.result import TRACE_COLUMNS
from workbench.ctx._trace import TraceRow, arguments, row

MUTATES = """
def handle(input, ctx):
    notes = ctx.data.collection("notes")
    doc = {"title": "first", "tags": ["a"]}
    notes.insert(doc)
    doc["title"] = "changed"  # after the call: the trace keeps what was passed
    doc["tags"].append("b")
    ctx.storage.kv.set("k", "v")
    return doc
"""


def test_the_trace_shows_arguments_as_passed_not_as_changed_later(gem: GemBuilder, opened: Any) -> None:
    gem.collections(notes=[]).tool("mutates", MUTATES)
    res = opened(gem).call("mutates")
    assert res.ok, res.error
    insert, kv = res.trace_rows
    assert insert["params"] == (("notes", {"title": "first", "tags": ["a"]}), {})
    assert insert["args"] == '"notes", {"title": "first", "tags": ["a"]}'
    assert kv["params"] == (("k", "v"), {}) and kv["args"] == '"k", "v"'
    assert res.value == {"title": "changed", "tags": ["a", "b"]}
    assert res.trace["args"].tolist() == [insert["args"], kv["args"]]


def test_flat_arguments_are_copied_so_later_changes_do_not_show() -> None:
    # a document, a patch, SQL params: objects and lists of scalars are copied when passed
    doc, params = {"title": "first", "n": 1, "done": None}, ["a", 2.5]
    r = row(1, "m.x", arguments(("notes", doc, params), {}, 64 * 1024), (True, None, 1.0), None)
    doc["title"], doc["extra"] = "changed", 1
    params.append("b")
    assert r["params"] == (("notes", {"title": "first", "n": 1, "done": None}, ["a", 2.5]), {})
    assert r["args"] == '"notes", {"title": "first", "n": 1, "done": null}, ["a", 2.5]'
    # over the budget: the preview alone, as for any argument
    assert arguments(("notes", {"t": "x" * 500}), {}, 100)[0] is not None


def _row(*args: Any, **kwargs: Any) -> TraceRow:
    return row(1, "m.x", arguments(args, kwargs, 64 * 1024), (True, None, 1.5), {"r": 1})


SHOWN = {
    "seq": 1,
    "method": "m.x",
    "args": '{"a": [1, 2]}, "n=3"',
    "ok": True,
    "error": None,
    "duration_us": 1.5,
    "params": (({"a": [1, 2]},), {"n": 3}),
    "result": {"r": 1},
}


@pytest.mark.parametrize(
    "read",
    [
        lambda r: r,
        dict,
        lambda r: {**r},
        lambda r: r.copy(),
        lambda r: dict(r.items()),
        lambda r: dict(zip(r.keys(), r.values())),
        lambda r: {k: r[k] for k in r},
        lambda r: json.loads(json.dumps(r, default=list)),
        lambda r: copy.deepcopy(r),
        lambda r: pickle.loads(pickle.dumps(r)),
    ],
)
def test_a_row_read_any_way_shows_its_preview_and_arguments(read: Any) -> None:
    shown = read(_row({"a": [1, 2]}, n=3))
    expected = json.loads(json.dumps(SHOWN)) if type(shown["params"]) is list else SHOWN
    assert shown == expected


def test_a_row_is_shown_as_the_dict_it_is() -> None:
    r = _row({"a": [1, 2]}, n=3)
    assert r.get("args") == SHOWN["args"] and r.get("nope", 7) == 7
    assert repr(_row({"a": [1, 2]}, n=3)) == repr(SHOWN)
    assert list(_row({"a": [1, 2]}, n=3)) == TRACE_COLUMNS + ["params", "result"]


def test_arguments_past_the_budget_keep_only_the_preview() -> None:
    assert arguments(("x" * 70_000,), {}, 64 * 1024) == ("<70000 chars>", None, None, 0)


def test_arguments_of_a_tools_own_types_are_kept_as_they_are() -> None:
    class Tag(str):
        pass

    tag = Tag("t")
    text, params, source, _ = arguments(({"tag": tag},), {}, 64 * 1024)
    assert source is None and text == '{"tag": "t"}' and params[0][0]["tag"] is tag


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_SEC5_a_trace_lists_trace_rows_ctx_calls_and_counts_the_rest(
    lang: str, gem: GemBuilder, opened: Any
) -> None:
    """12 ctx calls in one call: the trace lists the first Limits.trace_rows, and one last row
    says which were not listed; the count of ctx calls stays whole (calls(), repr, crash)."""
    from workbench.ctx.limits import Limits

    src = {
        "py": "def handle(i, ctx):\n    for _ in range(i['n']):\n        ctx.storage.kv.get('k')\n    return 1\n",
        "js": "export default async (i, ctx) => { for (let k = 0; k < i.n; k++) await ctx.storage.kv.get('k'); return 1; };\n",
    }
    gem.tool("many", src[lang], ext=lang)
    bench = opened(gem, limits=Limits(trace_rows=5))
    res = bench.call("many", {"n": 12}).raise_for_error()
    assert len(res.trace_rows) == 6 and res.ctx_calls == 12
    assert [r["seq"] for r in res.trace_rows] == [1, 2, 3, 4, 5, 6]
    last = res.trace.iloc[-1]
    assert last["method"] == "(not kept)"
    assert last["args"] == "ctx calls 6 to 12 are not listed: a call's trace lists 5 (Limits.trace_rows)"
    assert bench.calls()["ctx_calls"].tolist() == [12] and "12 ctx calls" in repr(res)
    assert bench.call("many", {"n": 5}).ctx_calls == 5 and len(bench.results[-1].trace_rows) == 5
