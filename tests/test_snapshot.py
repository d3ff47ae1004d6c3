"""Inspection: state as DataFrames; snapshot, diff and restore. On mock and real providers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest
from conftest import GemBuilder

import workbench

OPS = """
def handle(input, ctx):
    out = []
    for s in input.get("steps", []):
        if s[0] == "data":
            obj, method, args = ctx.data.collection(s[1]), s[2], s[3:]
        else:
            obj, method, args = getattr(ctx.storage, s[0]), s[1], s[2:]
        out.append(getattr(obj, method)(*args))
    if input.get("fail"):
        raise ValueError("asked to fail")
    return out
"""

MUTATE = """
def handle(input, ctx):
    ctx.files.write("workspace:keep.txt", "v2")
    ctx.files.write("workspace:new.txt", "new")
    ctx.files.delete("workspace:gone.txt")
    ctx.files.delete("workspace:sub")
    ctx.files.write("out/report.txt", "run")
    notes = ctx.data.collection("notes")
    new = notes.insert({"title": "n", "status": "open"})
    notes.update(input["a"], {"title": "A2", "status": None})
    notes.delete(input["b"])
    kv = ctx.storage.kv
    kv.set("k3", "new")
    kv.set("k1", "b")
    kv.delete("k2")
    sql = ctx.storage.sql
    sql.execute("INSERT INTO items(name, qty) VALUES ('new', 7)")
    sql.execute("UPDATE items SET qty = 99 WHERE name = 'seed'")
    sql.execute("DELETE FROM items WHERE name = 'old'")
    return new
"""

PEEK = """
def handle(input, ctx):
    out = {}
    for p in ["keep.txt", "new.txt", "gone.txt", "sub/deep.txt", ".hidden"]:
        st = ctx.files.stat("workspace:" + p)
        out[p] = ctx.files.read("workspace:" + p) if st else None
    return out
"""

SWAP = """
def handle(input, ctx):
    ctx.files.delete("workspace:keep.txt")
    ctx.files.write("workspace:keep.txt/inside.txt", "now a folder")
    ctx.files.delete("workspace:sub")
    ctx.files.write("workspace:sub", "now a file")
    return None
"""

SCHEMA = """
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, qty INTEGER NOT NULL DEFAULT 0);
INSERT INTO items(name, qty) VALUES ('seed', 1);
"""


def make_gem(gem: GemBuilder) -> GemBuilder:
    return (
        gem.tool(
            "ops",
            OPS,
            schema={
                "type": "object",
                "properties": {"steps": {"type": "array"}, "fail": {"type": "boolean"}},
                "required": ["steps"],
            },
            description="Run storage steps.",
        )
        .tool("look", OPS, side_effect="read")
        .tool("mutate", MUTATE)
        .tool("peek", PEEK, side_effect="read")
        .tool("swap", SWAP)
        .collections(notes=["status"], empty=[])
        .schema_sql(SCHEMA)
    )


@pytest.fixture
def bench(gem: GemBuilder, open_bench: Callable[..., workbench.Bench]) -> workbench.Bench:
    ws = open_bench.workspace
    (ws / "keep.txt").write_text("v1")
    (ws / "gone.txt").write_text("gone")
    (ws / "sub").mkdir()
    (ws / "sub" / "deep.txt").write_text("deep")
    (ws / ".hidden").write_text("h")
    return open_bench(make_gem(gem))


def ok(bench: workbench.Bench, *steps: list) -> list:
    res = bench.call("ops", {"steps": [list(s) for s in steps]})
    assert res.ok, res.error
    return res.value


def plain(df: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as dicts, missing values as None (whatever dtype pandas chose)."""
    return df.astype(object).where(df.notna(), None).to_dict("records")


# -- DataFrames ------------------------------------------------------------------------------


def test_data_frame(bench):
    assert list(bench.data("notes").columns) == ["id"] and bench.data("notes").empty
    ids = [
        r["id"]
        for r in ok(
            bench,
            ["data", "notes", "insert", {"title": "a", "status": "open"}],
            ["data", "notes", "insert", {"title": "b", "n": 2}],
            ["data", "notes", "insert", {"title": "c", "meta": {"x": 1}}],
        )
    ]
    df = bench.data("notes")
    assert list(df.columns) == ["id", "title", "status", "n", "meta"]
    assert plain(df) == [
        {"id": ids[0], "title": "a", "status": "open", "n": None, "meta": None},
        {"id": ids[1], "title": "b", "status": None, "n": 2, "meta": None},
        {"id": ids[2], "title": "c", "status": None, "n": None, "meta": {"x": 1}},
    ]
    assert bench.data("empty").empty


def test_data_frame_undeclared_collection(bench):
    with pytest.raises(workbench.UsageError) as e:
        bench.data("nope")
    assert e.value.code == "E_USAGE" and "nope" in e.value.message and "notes" in e.value.message


def test_kv_frame(bench):
    assert list(bench.kv().columns) == ["key", "value"] and bench.kv().empty
    ok(bench, ["kv", "set", "b", "2"], ["kv", "set", "a", "1"], ["kv", "set", "c", ""])
    assert bench.kv().to_dict("records") == [
        {"key": "a", "value": "1"},
        {"key": "b", "value": "2"},
        {"key": "c", "value": ""},
    ]


def test_sql_frame(bench):
    ok(bench, ["sql", "execute", "INSERT INTO items(name, qty) VALUES ('a', 5)"])
    df = bench.sql("SELECT name, qty FROM items ORDER BY id")
    assert list(df.columns) == ["name", "qty"]
    assert df.to_dict("records") == [{"name": "seed", "qty": 1}, {"name": "a", "qty": 5}]
    assert bench.sql("SELECT name FROM items WHERE qty > ?", [2])["name"].tolist() == ["a"]
    assert bench.sql("SELECT name FROM items WHERE 0").empty


@pytest.mark.parametrize(
    "query, word",
    [
        ("SELEC 1", "syntax error"),
        ("SELECT * FROM missing", "no such table"),
    ],
)
def test_sql_frame_bad_sql_raises_E_SQL(bench, query, word):
    with pytest.raises(workbench.WorkbenchError) as e:
        bench.sql(query)
    assert e.value.code == "E_SQL" and word in e.value.message
    assert bench.sql("SELECT count(*) AS n FROM items")["n"].tolist() == [1]  # still usable


def test_sql_frame_error_while_reading_rows(bench):
    ok(bench, ["sql", "execute", "INSERT INTO items(name) VALUES ('{\"a\":1}'), ('not json')"])
    with pytest.raises(workbench.WorkbenchError) as e:  # the first row is fine, the second not
        bench.sql("SELECT json_extract(name, '$.a') FROM items WHERE name <> 'seed' ORDER BY id")
    assert e.value.code == "E_SQL" and "JSON" in e.value.message


def test_calls_frame(bench):
    r1 = bench.call("ops", {"steps": [["kv", "set", "a", "1"], ["kv", "get", "a"]]})
    r2 = bench.call("ops", {"steps": [], "fail": True})
    r3 = bench.call("look", {"steps": [["kv", "set", "b", "2"]]})
    r4 = bench.call("nope", {})
    r5 = bench.call("ops", {"steps": "not a list"})
    df = bench.calls()
    assert list(df.columns) == [
        "call_id",
        "tool",
        "ok",
        "outcome",  # K2: success, expected_failure (Ekanos' {error}) or fault
        "error",
        "message",
        "warnings",
        "duration_ms",
        "ctx_calls",
        "violations",
        "started",
        "idempotency_key",
        "crashed",
        "parent",  # agent tools' nested calls: the calling call's id
    ]
    assert df["parent"].isna().all()  # a Notochord gem's calls are all top-level
    assert df["call_id"].tolist() == [r.call_id for r in (r1, r2, r3, r4, r5)]
    assert df["tool"].tolist() == ["ops", "ops", "look", "nope", "ops"]
    assert df["ok"].tolist() == [True, False, True, False, False]
    assert [r["error"] for r in plain(df)] == [None, "E_TOOL_ERROR", None, "E_UNKNOWN_TOOL", "E_SCHEMA"]
    assert "asked to fail" in df["message"][1]
    assert df["ctx_calls"].tolist() == [2, 0, 1, 0, 0]
    assert df["violations"].tolist() == [0, 0, 1, 0, 0]
    assert (df["duration_ms"] >= 0).all()
    assert pd.api.types.is_datetime64_any_dtype(df["started"])
    assert df["started"].is_monotonic_increasing


def test_calls_frame_empty(bench):
    df = bench.calls()
    assert df.empty and "tool" in df.columns


def test_tools_frame(bench):
    df = bench.tools()
    assert list(df.columns) == ["name", "language", "file", "sideEffect", "inputs", "description"]
    assert df["name"].tolist() == ["ops", "look", "mutate", "peek", "swap"]
    assert df["sideEffect"].tolist() == ["write", "read", "write", "read", "write"]
    assert set(df["language"]) == {"python"}
    row = df.iloc[0].to_dict()
    assert row["file"] == "tools/ops.py"
    assert row["inputs"] == "steps*, fail"
    assert row["description"] == "Run storage steps."


# -- snapshot / diff / restore ---------------------------------------------------------------


@pytest.fixture
def setup(bench):
    """Documents a, b, c; kv k1, k2; sql rows seed, old."""
    ids = [
        r["id"]
        for r in ok(bench, *(["data", "notes", "insert", {"title": t, "status": "open"}] for t in "abc"))
    ]
    ok(
        bench,
        ["kv", "set", "k1", "a"],
        ["kv", "set", "k2", "x"],
        ["sql", "execute", "INSERT INTO items(name, qty) VALUES ('old', 3)"],
    )
    return bench, ids


def state(bench: workbench.Bench) -> dict[str, Any]:
    """Everything a restore must bring back, read through public views and the tool's eyes."""
    files = bench.files()
    peek = bench.call("peek")
    assert peek.ok, peek.error
    return {
        "files": files[["area", "path", "type", "size"]].to_dict("records"),
        "contents": peek.value,
        "notes": plain(bench.data("notes")),
        "kv": bench.kv().to_dict("records"),
        "sql": bench.sql("SELECT * FROM items ORDER BY id").to_dict("records"),
        "history": bench.history()[["path", "reason", "size"]].to_dict("records"),
    }


def test_diff_empty_right_after_snapshot(setup):
    bench, _ = setup
    snap = bench.snapshot()
    d = bench.diff(snap)
    assert list(d.columns) == ["kind", "where", "key", "change", "before", "after"]
    assert d.empty
    assert bench.call("look", {"steps": [["kv", "get", "k1"], ["data", "notes", "count"]]}).ok
    assert bench.diff(snap).empty  # reads change nothing


def test_diff_lists_every_change(setup):
    bench, (a, b, c) = setup
    snap = bench.snapshot()
    res = bench.call("mutate", {"a": a, "b": b})
    assert res.ok, res.error
    new = res.value["id"]
    run = f"run/{res.call_id}"
    got = plain(bench.diff(snap))
    expected = [
        {"kind": "folder", "where": run, "key": "out", "change": "added", "before": None, "after": None},
        {
            "kind": "file",
            "where": run,
            "key": "out/report.txt",
            "change": "added",
            "before": None,
            "after": 3,
        },
        {
            "kind": "file",
            "where": "workspace",
            "key": "workspace:gone.txt",
            "change": "deleted",
            "before": 4,
            "after": None,
        },
        {
            "kind": "file",
            "where": "workspace",
            "key": "workspace:keep.txt",
            "change": "changed",
            "before": 2,
            "after": 2,
        },
        {
            "kind": "file",
            "where": "workspace",
            "key": "workspace:new.txt",
            "change": "added",
            "before": None,
            "after": 3,
        },
        {
            "kind": "folder",
            "where": "workspace",
            "key": "workspace:sub",
            "change": "deleted",
            "before": None,
            "after": None,
        },
        {
            "kind": "file",
            "where": "workspace",
            "key": "workspace:sub/deep.txt",
            "change": "deleted",
            "before": 4,
            "after": None,
        },
        {
            "kind": "document",
            "where": "notes",
            "key": a,
            "change": "updated",
            "before": {"title": "a", "status": "open"},
            "after": {"title": "A2"},
        },
        {
            "kind": "document",
            "where": "notes",
            "key": b,
            "change": "deleted",
            "before": {"title": "b", "status": "open"},
            "after": None,
        },
        {
            "kind": "document",
            "where": "notes",
            "key": new,
            "change": "inserted",
            "before": None,
            "after": {"title": "n", "status": "open"},
        },
        {"kind": "kv", "where": "kv", "key": "k1", "change": "updated", "before": "a", "after": "b"},
        {"kind": "kv", "where": "kv", "key": "k2", "change": "deleted", "before": "x", "after": None},
        {"kind": "kv", "where": "kv", "key": "k3", "change": "inserted", "before": None, "after": "new"},
        {
            "kind": "sql",
            "where": "items",
            "key": 1,
            "change": "updated",
            "before": {"id": 1, "name": "seed", "qty": 1},
            "after": {"id": 1, "name": "seed", "qty": 99},
        },
        {
            "kind": "sql",
            "where": "items",
            "key": 2,
            "change": "deleted",
            "before": {"id": 2, "name": "old", "qty": 3},
            "after": None,
        },
        {
            "kind": "sql",
            "where": "items",
            "key": 3,
            "change": "inserted",
            "before": None,
            "after": {"id": 3, "name": "new", "qty": 7},
        },
    ]

    def order(r: dict) -> tuple:
        return (r["kind"] != "file" and r["kind"] != "folder", str(r["where"]), str(r["key"]))

    assert sorted(got, key=order) == sorted(expected, key=order)
    assert c not in {r["key"] for r in got}  # untouched document


FILES_ONLY = """
def handle(input, ctx):
    ctx.files.write("workspace:keep.txt", "longer text")
    ctx.files.write("workspace:new.txt", "new")
    return None
"""


def test_diff_file_sizes_are_integers(gem, open_bench):
    (open_bench.workspace / "keep.txt").write_text("v1")
    bench = open_bench(gem.tool("w", FILES_ONLY))
    snap = bench.snapshot()
    assert bench.call("w").ok
    d = bench.diff(snap)  # only files changed: sizes stay integers, "no size" stays None
    assert d[["key", "change", "before", "after"]].to_dict("records") == [
        {"key": "workspace:keep.txt", "change": "changed", "before": 2, "after": 11},
        {"key": "workspace:new.txt", "change": "added", "before": None, "after": 3},
    ]
    assert all(type(v) is int for v in d["after"])


def test_restore_brings_everything_back(setup):
    bench, (a, b, _) = setup
    before = state(bench)
    snap = bench.snapshot()
    assert bench.call("mutate", {"a": a, "b": b}).ok
    assert state(bench) != before
    bench.restore(snap)
    assert bench.diff(snap).empty
    assert state(bench) == before
    assert before["contents"] == {
        "keep.txt": "v1",
        "new.txt": None,
        "gone.txt": "gone",
        "sub/deep.txt": "deep",
        ".hidden": None,
    }  # F10: not visible
    if bench.providers.kind["files"] == "real":
        ws = bench.providers.files.workspace
        assert sorted(p.relative_to(ws).as_posix() for p in ws.rglob("*")) == [
            ".hidden",
            "gone.txt",
            "keep.txt",
            "sub",
            "sub/deep.txt",
        ]
        assert (ws / "keep.txt").read_text() == "v1" and (ws / ".hidden").read_text() == "h"


def test_restore_then_keep_working(setup):
    bench, (a, b, _) = setup
    snap = bench.snapshot()
    for _ in range(2):  # the same snapshot restores more than once
        assert bench.call("mutate", {"a": a, "b": b}).ok
        bench.restore(snap)
        assert bench.diff(snap).empty
    out = ok(
        bench,
        ["data", "notes", "find", {"where": {"status": "open"}}],
        ["data", "notes", "insert", {"title": "d"}],
        ["kv", "get", "k2"],
        ["sql", "query", "SELECT name FROM items ORDER BY id"],
    )
    assert [d["title"] for d in out[0]["items"]] == ["a", "b", "c"]
    assert out[2] == "x"
    assert out[3] == [{"name": "seed"}, {"name": "old"}]
    assert bench.diff(snap)["kind"].tolist() == ["document"]


def test_snapshot_is_a_copy(setup):
    bench, _ = setup
    snap = bench.snapshot()
    ok(bench, ["kv", "set", "k1", "changed"])
    snap2 = bench.snapshot()
    assert plain(bench.diff(snap)) == [
        {"kind": "kv", "where": "kv", "key": "k1", "change": "updated", "before": "a", "after": "changed"}
    ]
    assert bench.diff(snap2).empty
    bench.restore(snap)
    assert bench.kv().set_index("key")["value"]["k1"] == "a"
    assert plain(bench.diff(snap2))[0]["after"] == "a"


def test_restore_survives_reopen(gem, open_bench, kind, setup):
    bench, (a, b, _) = setup
    before = state(bench)
    snap = bench.snapshot()
    assert bench.call("mutate", {"a": a, "b": b}).ok
    bench.restore(snap)
    bench.close()
    again = open_bench(gem)
    if kind == "real":  # the restore reached the files and databases on disk
        assert state(again) == before
    else:
        assert again.data("notes").empty and again.kv().empty


def test_restore_file_and_folder_swapped(setup):
    bench, _ = setup
    before = state(bench)
    snap = bench.snapshot()
    res = bench.call("swap")
    assert res.ok, res.error
    kinds = {r["key"]: (r["kind"], r["change"]) for r in plain(bench.diff(snap))}
    assert kinds["workspace:keep.txt/inside.txt"] == ("file", "added")
    assert kinds["workspace:sub/deep.txt"] == ("file", "deleted")
    bench.restore(snap)
    assert bench.diff(snap).empty
    assert state(bench) == before


# -- restore while another process swaps folders for links (SEC2) ----------------------------
def _outside(tmp_path: Any) -> tuple[Any, Callable[[], dict[str, bytes]]]:
    """A folder outside the bench with a sentinel, and a reading of everything in it."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "sentinel.txt").write_text("untouched")

    def tree() -> dict[str, bytes]:
        return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}

    return out, tree


def _swap_for_link(folder: Any, target: Any) -> None:
    import shutil

    shutil.rmtree(folder)
    folder.symlink_to(target, target_is_directory=True)


@pytest.mark.parametrize("kind", ["real"], indirect=True)
def test_SEC2_restore_while_a_folder_becomes_a_link_is_E_PATH_and_writes_nothing_outside(
    setup: Any, tmp_path: Any
) -> None:
    """The red team swapped `sub` for a link to a folder outside between the restore's listing
    and its write of sub/deep.txt: a raw OSError (LinkInPath) escaped. Now E_PATH names the
    entry, the rest of the snapshot is back, and nothing lands outside."""
    bench, (a, b, _) = setup
    out, tree = _outside(tmp_path)
    before = tree()
    snap = bench.snapshot()
    assert bench.call("mutate", {"a": a, "b": b}).ok  # deletes workspace:sub, changes keep.txt
    ws = bench.providers.files.workspace
    store = bench.providers.files
    write = store.write

    def racing_write(root: str, path: str, data: bytes) -> None:
        if path.startswith("sub/") and not (ws / "sub").is_symlink():
            _swap_for_link(ws / "sub", out)  # another process, right before the write
        write(root, path, data)

    store.write = racing_write
    try:
        with pytest.raises(workbench.WorkbenchError) as err:
            bench.restore(snap)
    finally:
        del store.write
    assert err.value.code == "E_PATH" and err.value.details["path"] == "workspace:sub/deep.txt"
    assert "workspace:sub/deep.txt" in err.value.message and "symbolic link" in err.value.message
    assert tree() == before and (ws / "keep.txt").read_text() == "v1"  # the rest was put back
    assert bench.kv().set_index("key")["value"].to_dict() == {"k1": "a", "k2": "x"}
    (ws / "sub").unlink()  # the folder holds still: the same snapshot restores whole
    bench.restore(snap)
    assert bench.diff(snap).empty and tree() == before


_SWAPPER = """
import os, sys, time
ws, out = sys.argv[1], sys.argv[2]
swaps, stop = 0, time.monotonic() + 60
while time.monotonic() < stop and not os.path.exists(os.path.join(out, "..", "stop")):
    for name, target in (("sub", out), ("keep.txt", os.path.join(out, "sentinel.txt"))):
        tmp, where = os.path.join(ws, ".swap-" + name), os.path.join(ws, name)
        try:
            if os.path.lexists(tmp):
                os.unlink(tmp)
            os.symlink(target, tmp)
            if os.path.isdir(where) and not os.path.islink(where):
                os.rename(where, os.path.join(ws, f".old-{swaps}"))  # the folder, moved aside whole
            os.replace(tmp, where)
            swaps += 1
        except OSError:
            pass
print(swaps)
"""


@pytest.mark.parametrize("kind", ["real"], indirect=True)
def test_SEC2_restore_racing_a_link_swap_loop_is_coded_and_writes_nothing_outside(
    setup: Any, tmp_path: Any
) -> None:
    """Another process swaps `sub` for a link to a folder outside (and keep.txt for a link to
    the sentinel) in a loop while restore runs 40 times: each restore ends done or E_PATH,
    never a raw OSError, and nothing outside is written."""
    import subprocess
    import sys

    bench, _ = setup
    out, tree = _outside(tmp_path)
    before = tree()
    snap = bench.snapshot()
    ws = bench.providers.files.workspace
    swapper = subprocess.Popen(
        [sys.executable, "-c", _SWAPPER, str(ws), str(out)], stdout=subprocess.PIPE, text=True
    )
    outcomes: dict[str, int] = {}
    try:
        for _ in range(40):
            try:
                bench.restore(snap)
                outcomes["done"] = outcomes.get("done", 0) + 1
            except workbench.WorkbenchError as exc:
                assert exc.code == "E_PATH" and exc.details["path"].startswith("workspace:"), exc
                outcomes["E_PATH"] = outcomes.get("E_PATH", 0) + 1
    finally:
        (tmp_path / "stop").touch()
        try:
            swaps = int(swapper.communicate(timeout=30)[0] or 0)
        finally:
            if swapper.poll() is None:
                swapper.kill()
                swapper.communicate()
    assert sum(outcomes.values()) == 40 and swaps > 0, (outcomes, swaps)
    assert tree() == before
    for p in ws.iterdir():  # the swapper's leftovers
        if p.is_symlink():
            p.unlink()
    bench.restore(snap)
    assert bench.diff(snap).empty and tree() == before


@pytest.mark.parametrize("kind", ["real"], indirect=True)
def test_SEC2_snapshot_of_a_file_swapped_for_a_link_is_E_PATH(setup: Any, tmp_path: Any) -> None:
    """keep.txt becomes a link to a file outside between the snapshot's listing and its read:
    E_PATH naming it (a raw OSError before), and the link is never read through."""
    bench, _ = setup
    out, tree = _outside(tmp_path)
    ws, store = bench.providers.files.workspace, bench.providers.files
    read = store.read

    def racing_read(root: str, path: str) -> bytes:
        if path == "keep.txt" and not (ws / "keep.txt").is_symlink():
            (ws / "keep.txt").unlink()
            (ws / "keep.txt").symlink_to(out / "sentinel.txt")
        return read(root, path)

    store.read = racing_read
    try:
        with pytest.raises(workbench.WorkbenchError) as err:
            bench.snapshot()
    finally:
        del store.read
    assert err.value.code == "E_PATH" and err.value.details["path"] == "workspace:keep.txt"
    assert (
        err.value.message.startswith("snapshot: workspace:keep.txt: ")
        and tree()["sentinel.txt"] == b"untouched"
    )
