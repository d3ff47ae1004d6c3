"""ctx.files (F1–F12), each rule against the mock and the real provider alike.

`files_bench` runs one ctx.files method per call (so each call has a fresh run folder);
`ops_bench` runs a list of methods inside ONE call (one run folder) and catches each
WorkbenchError inside the tool, the way a tool author would.
"""

from __future__ import annotations

import base64
import os
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import OPS_TOOL

import workbench
from workbench.ctx import history
from workbench.ctx.files import MAX_BYTES
from workbench.ctx.limits import Limits

BIG_TOOL = """
import base64

def handle(input, ctx):
    n = input["n"]
    if input.get("encoding") == "base64":
        ctx.files.write(input["path"], base64.b64encode(bytes(n)).decode(), {"encoding": "base64"})
    else:
        ctx.files.write(input["path"], "x" * n)
    return n
"""

READLEN_TOOL = """
def handle(input, ctx):
    return len(ctx.files.read(input["path"], {"encoding": input.get("encoding", "utf8")}))
"""

FILES_TOOL = """
def handle(input, ctx):
    fn = getattr(ctx.files, input["op"])
    return {"result": fn(*input.get("args", []), **input.get("kwargs", {}))}
"""

INFO_KEYS = {"name", "type", "size", "modified"}


class Ops:
    """A bench with tools `ops` (many ctx.files calls in one call), `f`, `big`, `readlen`."""

    def __init__(self, bench: workbench.Bench, workspace: Path, state: Path) -> None:
        self.bench, self.workspace, self.state = bench, workspace, state

    def __call__(self, *ops: Any) -> list[dict[str, Any]]:
        res = self.bench.call("ops", {"ops": [list(o) for o in ops]})
        assert res.ok, res.error
        self.last = res
        return res.value

    def ok(self, *ops: Any) -> list[Any]:
        """Run ops in one call; every one must succeed; their return values."""
        out = self(*ops)
        for o, r in zip(ops, out):
            assert "ok" in r, (o, r)
        return [r["ok"] for r in out]

    def one(self, op: str, *args: Any) -> workbench.CallResult:
        return self.bench.call("f", {"op": op, "args": list(args)})

    def store_read(self, path: str) -> bytes:
        """Bytes of a conversation-folder file as stored (also dot-files the gem cannot see)."""
        return self.bench.providers.files.read("workspace", path)

    def store_has(self, path: str) -> bool:
        return self.bench.providers.files.entry("workspace", path) is not None


@pytest.fixture
def ops_bench(gem, open_bench, tmp_path):
    """ops_bench(seed={path: bytes|str}, **open options) -> Ops; seed goes into the workspace
    folder before the bench opens (mock copies it into memory, real uses it in place)."""
    gem.tool("ops", OPS_TOOL).tool("f", FILES_TOOL).tool("big", BIG_TOOL).tool("readlen", READLEN_TOOL)

    def make(seed: dict[str, bytes | str] | None = None, **kw: Any) -> Ops:
        for path, content in (seed or {}).items():
            p = open_bench.workspace / path
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(content.encode() if isinstance(content, str) else content)
        return Ops(open_bench(gem, **kw), open_bench.workspace, tmp_path / "state")

    return make


def value(res: workbench.CallResult) -> Any:
    assert res.ok, res.error
    return res.value["result"]


def error(res: workbench.CallResult, code: str) -> workbench.WorkbenchError:
    assert not res.ok, f"expected {code}, got value {res.value!r}"
    assert res.error.code == code, res.error
    return res.error


def failed(r: dict[str, Any], code: str) -> dict[str, Any]:
    assert r.get("error") == code, r
    return r


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def workspace_paths(bench: workbench.Bench) -> set[str]:
    df = bench.files()
    return {p.removeprefix("workspace:") for p in df[df["area"] == "workspace"]["path"]}


# -- F1 ------------------------------------------------------------------------------------


def test_F1_run_and_conversation_folders_need_nothing_requested(gem, open_bench, kind):
    # the manifest requests no permission at all, top level or on the tool
    gem.tool(
        "t",
        """
        def handle(input, ctx):
            ctx.files.write('out.txt', 'run')
            ctx.files.write('workspace:in.txt', 'conv')
            return [ctx.files.read('out.txt'), ctx.files.read('workspace:in.txt')]
    """,
    )
    assert "permissions" not in gem.manifest
    bench = open_bench(gem)
    res = bench.call("t")
    assert res.ok, res.error
    assert res.value == ["run", "conv"]
    df = bench.files()
    files = set(zip(df["area"], df["path"], df["type"]))
    assert ("run", "out.txt", "file") in files
    assert ("workspace", "workspace:in.txt", "file") in files
    if kind == "real":
        assert (open_bench.workspace / "in.txt").read_text() == "conv"


# -- F2 ------------------------------------------------------------------------------------


def test_F2_list_without_path_is_empty_run_folder_before_any_write(ops_bench):
    fs = ops_bench(seed={"in-workspace.txt": "not in the run folder"})
    assert value(fs.one("list")) == []
    assert fs.ok(["list"], ["list", ""], ["list", "."]) == [[], [], []]


def test_F2_list_entries_are_name_type_size_modified(ops_bench):
    fs = ops_bench()
    before = now_ms()
    *_, listing, sub = fs.ok(
        ["write", "a.txt", "hello"], ["mkdir", "sub"], ["write", "sub/x.bin", "ab"], ["list"], ["list", "sub"]
    )
    assert [set(e) for e in listing] == [INFO_KEYS, INFO_KEYS]
    by_name = {e["name"]: e for e in listing}
    assert set(by_name) == {"a.txt", "sub"}
    assert by_name["a.txt"]["type"] == "file" and by_name["a.txt"]["size"] == 5
    assert by_name["sub"]["type"] == "folder"
    for e in listing:
        assert isinstance(e["modified"], int) and before - 2000 <= e["modified"] <= now_ms() + 2000
    assert [(e["name"], e["type"], e["size"]) for e in sub] == [("x.bin", "file", 2)]


def test_F2_each_call_gets_a_fresh_run_folder(files_bench):
    first = files_bench("write", "a.txt", "one")
    assert first.ok, first.error
    assert value(files_bench("list")) == []
    assert value(files_bench("stat", "a.txt")) is None
    error(files_bench("read", "a.txt"), "E_NOT_FOUND")
    df = files_bench.bench.files()
    run_rows = df[df["area"] == "run"]
    assert list(run_rows["call_id"]) == [first.call_id]


def test_F2_list_conversation_folder_and_subfolders(ops_bench):
    fs = ops_bench(seed={"sales.csv": "a,b\n", "inbox/x.pdf": b"%PDF", "inbox/y.txt": "y"})
    top, inbox, inbox_slash = fs.ok(
        ["list", "workspace:"], ["list", "workspace:inbox"], ["list", "workspace:inbox/"]
    )
    assert sorted((e["name"], e["type"]) for e in top) == [("inbox", "folder"), ("sales.csv", "file")]
    assert [(e["name"], e["size"]) for e in inbox] == [("x.pdf", 4), ("y.txt", 1)]
    assert inbox_slash == inbox


def test_F2_list_of_missing_folder_or_of_a_file(ops_bench):
    fs = ops_bench(seed={"f.txt": "x"})
    missing, of_file, ws_missing = fs(
        ["list", "nope"], ["list", "workspace:f.txt"], ["list", "workspace:nope/"]
    )
    failed(missing, "E_NOT_FOUND")
    failed(of_file, "E_NOT_A_FOLDER")
    failed(ws_missing, "E_NOT_FOUND")


def test_F2_seed_example_moves_pdfs_into_a_subfolder(gem, open_bench, kind):
    # the seed's own example, as a Python tool
    gem.tool(
        "sort",
        """
        def handle(input, ctx):
            csv = ctx.files.read('workspace:' + input['table'])
            d = 'workspace:' + input['target']
            for f in ctx.files.list(d):
                if f['type'] == 'file' and f['name'].endswith('.pdf'):
                    ctx.files.move(d + f['name'], d + 'PDF/' + f['name'])
            ctx.files.write('output/report.md', '# 本月汇总\\n' + csv)
            return {'ok': True}
    """,
    )
    ws = open_bench.workspace
    (ws / "inbox").mkdir()
    (ws / "sales.csv").write_text("q,1\n")
    (ws / "inbox" / "a.pdf").write_bytes(b"%PDF-a")
    (ws / "inbox" / "b.txt").write_text("b")
    bench = open_bench(gem)
    res = bench.call("sort", {"table": "sales.csv", "target": "inbox/"})
    assert res.ok, res.error
    assert {"inbox/PDF/a.pdf", "inbox/b.txt"} <= workspace_paths(bench)
    assert "inbox/a.pdf" not in workspace_paths(bench)
    df = bench.files()
    assert "output/report.md" in set(df[df["area"] == "run"]["path"])


# -- F3 ------------------------------------------------------------------------------------


def test_F3_stat_returns_info_or_null(ops_bench):
    fs = ops_bench(seed={"doc.txt": "12345"})
    res = fs.ok(
        ["write", "d/x", ""],
        ["stat", "d"],
        ["stat", "d/x"],
        ["stat", "nope"],
        ["stat", "workspace:doc.txt"],
        ["stat", "workspace:nope/deeper"],
    )
    _, folder, empty, missing, ws, ws_missing = res
    assert set(folder) == INFO_KEYS and folder["type"] == "folder" and folder["name"] == "d"
    assert empty == {**empty, "name": "x", "type": "file", "size": 0}
    assert missing is None and ws_missing is None
    assert set(ws) == INFO_KEYS
    assert (ws["name"], ws["type"], ws["size"]) == ("doc.txt", "file", 5)
    assert abs(ws["modified"] - now_ms()) < 3_600_000


def test_F3_paths_below_a_file_do_not_exist(ops_bench):
    fs = ops_bench(seed={"f.txt": "x"})
    stat, read, lst, delete, move, stat_run = fs(
        ["stat", "workspace:f.txt/x"],
        ["read", "workspace:f.txt/x/y"],
        ["list", "workspace:f.txt/x"],
        ["delete", "workspace:f.txt/x"],
        ["move", "workspace:f.txt/x", "y"],
        ["stat", "nope/x"],
    )
    assert stat == {"ok": None} and stat_run == {"ok": None}
    for r in (read, lst, delete, move):
        failed(r, "E_NOT_FOUND")


def test_F3_stat_of_a_missing_path_is_null_not_an_error(files_bench):
    assert value(files_bench("stat", "missing.txt")) is None
    assert value(files_bench("stat", "workspace:missing.txt")) is None


# -- F4 ------------------------------------------------------------------------------------


def test_F4_read_is_utf8_by_default(ops_bench):
    text = "héllo → 世界 😀\n"
    _, default, explicit, kw = ops_bench().ok(
        ["write", "t.txt", text],
        ["read", "t.txt"],
        ["read", "t.txt", {"encoding": "utf8"}],
        ["read", "t.txt", {}],
    )
    assert default == explicit == kw == text


def test_F4_base64_binary_round_trip_is_exact(ops_bench, kind):
    blob = bytes(range(256)) * 3 + b"\x00\xff\xfe"
    b64 = base64.b64encode(blob).decode()
    fs = ops_bench()
    _, back, _, back_ws, info = fs.ok(
        ["write", "bin/all.bin", b64, {"encoding": "base64"}],
        ["read", "bin/all.bin", {"encoding": "base64"}],
        ["write", "workspace:all.bin", b64, {"encoding": "base64"}],
        ["read", "workspace:all.bin", {"encoding": "base64"}],
        ["stat", "workspace:all.bin"],
    )
    assert base64.b64decode(back) == blob and back == b64
    assert base64.b64decode(back_ws) == blob
    assert info["size"] == len(blob)
    assert fs.store_read("all.bin") == blob
    if kind == "real":
        assert (fs.workspace / "all.bin").read_bytes() == blob


def test_F4_text_read_as_base64_is_its_utf8_bytes(ops_bench):
    fs = ops_bench(seed={"t.txt": "é"})
    assert fs.ok(["read", "workspace:t.txt", {"encoding": "base64"}]) == [
        base64.b64encode("é".encode()).decode()
    ]


def test_F4_binary_read_as_utf8_is_an_error_that_suggests_base64(ops_bench):
    fs = ops_bench(seed={"img.bin": b"\xff\xd8\xff\x00"})
    r = failed(fs(["read", "workspace:img.bin"])[0], "E_INVALID_ARGUMENT")
    assert "base64" in r["message"]


def test_F4_unknown_encoding_is_invalid_argument(ops_bench):
    fs = ops_bench(seed={"t.txt": "x"})
    out = fs(
        ["read", "workspace:t.txt", {"encoding": "latin1"}],
        ["write", "a.txt", "x", {"encoding": "hex"}],
        ["read", "workspace:t.txt", "base64"],
    )
    for r in out:
        failed(r, "E_INVALID_ARGUMENT")
    assert "latin1" in out[0]["message"] and "hex" in out[1]["message"]
    assert fs.ok(["stat", "a.txt"]) == [None]


def test_F4_reading_a_folder_or_missing_file(ops_bench):
    fs = ops_bench(seed={"dir/x.txt": "x"})
    out = fs(
        ["mkdir", "d"],
        ["read", "d"],
        ["read", "workspace:dir"],
        ["read", "nope.txt"],
        ["read", "workspace:nope.txt"],
    )
    assert "ok" in out[0]
    failed(out[1], "E_IS_A_FOLDER")
    failed(out[2], "E_IS_A_FOLDER")
    failed(out[3], "E_NOT_FOUND")
    failed(out[4], "E_NOT_FOUND")


def test_F4_F5_lone_surrogates_are_written_as_replacement_characters(ops_bench):
    # JS strings are UTF-16; the platform writes them as UTF-8, pairs joined, lone halves as U+FFFD
    _, lone, _, pair = ops_bench().ok(
        ["write", "a.txt", "a\ud800b"],
        ["read", "a.txt"],
        ["write", "b.txt", "\ud83d\ude00"],
        ["read", "b.txt"],
    )
    assert lone == "a\ufffdb"
    assert pair == "😀"


# -- F5 ------------------------------------------------------------------------------------


def test_F5_write_creates_parent_folders(ops_bench, kind):
    fs = ops_bench()
    *_, deep, ws_deep = fs.ok(
        ["write", "a/b/c/d.txt", "x"],
        ["write", "workspace:p/q/r.txt", "y"],
        ["stat", "a/b"],
        ["stat", "workspace:p/q"],
    )
    assert deep["type"] == "folder" and ws_deep["type"] == "folder"
    if kind == "real":
        assert (fs.workspace / "p" / "q" / "r.txt").read_text() == "y"
        assert (fs.state / "runs" / fs.last.call_id / "a" / "b" / "c" / "d.txt").read_text() == "x"


def test_F5_overwrite_in_run_folder_replaces_content(ops_bench):
    *_, content, info = ops_bench().ok(
        ["write", "a.txt", "one"], ["write", "a.txt", "two!"], ["read", "a.txt"], ["stat", "a.txt"]
    )
    assert content == "two!" and (info["type"], info["size"]) == ("file", 4)


def test_F5_overwriting_a_workspace_file_saves_the_old_version(ops_bench, kind):
    fs = ops_bench(seed={"notes.md": "v1"})
    bench = fs.bench
    assert bench.history().empty
    fs.ok(["write", "workspace:notes.md", "v2"])
    first_call = fs.last.call_id
    fs.ok(["write", "workspace:notes.md", "v3 longer"])
    h = bench.history()
    assert list(h["path"]) == ["notes.md", "notes.md"]
    assert list(h["reason"]) == ["overwrite", "overwrite"]
    assert list(h["size"]) == [2, 2]
    assert list(h["kept"]) == [True, True]
    assert h["call_id"].iloc[0] == first_call
    assert fs.ok(["read", "workspace:notes.md"]) == ["v3 longer"]
    v1, v2 = (int(v) for v in h["version"])
    assert bench.restore_file("workspace:notes.md", v1) == v1
    assert fs.ok(["read", "workspace:notes.md"]) == ["v1"]
    # the restore kept the version it replaced
    assert list(bench.history("notes.md")["reason"]) == ["overwrite", "overwrite", "restore"]
    bench.restore_file("notes.md", v2)
    assert fs.store_read("notes.md") == b"v2"
    if kind == "real":
        assert (fs.workspace / "notes.md").read_text() == "v2"


def test_F5_new_files_and_run_folder_overwrites_add_no_history(ops_bench):
    fs = ops_bench()
    fs.ok(["write", "workspace:new.txt", "a"], ["write", "r.txt", "1"], ["write", "r.txt", "2"])
    assert fs.bench.history().empty
    fs.ok(["write", "workspace:new.txt", "b"])
    assert list(fs.bench.history()["path"]) == ["new.txt"]


def test_F5_write_leaves_no_temporary_file(ops_bench, kind):
    fs = ops_bench(seed={"keep.txt": "k"})
    fs.ok(
        ["write", "workspace:keep.txt", "k2"],
        ["write", "workspace:sub/n.txt", "n"],
        ["write", "r.txt", "r"],
        ["list", "workspace:"],
    )
    listing = fs.ok(["list", "workspace:"], ["list", "workspace:sub"])
    assert sorted(e["name"] for e in listing[0]) == ["keep.txt", "sub"]
    assert [e["name"] for e in listing[1]] == ["n.txt"]
    df = fs.bench.files()
    assert not df["hidden"].any(), df
    if kind == "real":
        on_disk = sorted(str(p.relative_to(fs.workspace)) for p in fs.workspace.rglob("*"))
        assert on_disk == ["keep.txt", "sub", "sub/n.txt"]
        run_files = [p.name for p in (fs.state / "runs").rglob("*") if p.is_file()]
        assert sorted(run_files) == ["r.txt"]


def test_F5_failed_write_keeps_the_old_content_whole(ops_bench, kind, monkeypatch):
    fs = ops_bench(seed={"data.json": '{"v": 1}'})

    def boom(*a: Any, **k: Any) -> Any:
        raise OSError(28, "No space left on device")

    if kind == "real":
        monkeypatch.setattr(os, "fsync", boom)  # after the temp file was written, before rename
    else:
        monkeypatch.setattr(fs.bench.providers.files, "now", boom)  # the clock it stamps `modified` by
    res = fs.one("write", "workspace:data.json", '{"v": 2, "partial": true}')
    assert error(res, "E_INTERNAL")
    res = fs.one("write", "workspace:fresh.txt", "never")
    assert error(res, "E_INTERNAL")
    monkeypatch.undo()
    assert fs.ok(["read", "workspace:data.json"], ["stat", "workspace:fresh.txt"]) == ['{"v": 1}', None]
    assert sorted(e["name"] for e in fs.ok(["list", "workspace:"])[0]) == ["data.json"]
    assert fs.store_read("data.json") == b'{"v": 1}'
    assert not fs.bench.files()["hidden"].any()
    if kind == "real":
        assert sorted(p.name for p in fs.workspace.iterdir()) == ["data.json"]


def test_F5_too_large_write_keeps_the_old_content(ops_bench):
    fs = ops_bench(seed={"a.txt": "old"})
    res = fs.bench.call("big", {"path": "workspace:a.txt", "n": MAX_BYTES + 1})
    error(res, "E_TOO_LARGE")
    assert fs.store_read("a.txt") == b"old"
    assert fs.bench.history().empty


def test_F5_write_bad_input(ops_bench):
    fs = ops_bench(seed={"dir/x": "x", "file.txt": "f"})
    out = fs(
        ["write", "b64.bin", "not base64!!", {"encoding": "base64"}],
        ["write", "b64.bin", "QUJD=", {"encoding": "base64"}],
        ["write", "n.txt", 42],
        ["write", "n.txt", None],
        ["write", "n.txt", {"a": 1}],
        ["write", "n.txt", ["x"]],
        ["write", "workspace:dir", "onto a folder"],
        ["write", "workspace:", "root"],
        ["write", "workspace:file.txt/child.txt", "under a file"],
        ["write", "workspace:file.txt/deeper/child.txt", "under a file"],
    )
    for r in out[:6]:
        failed(r, "E_INVALID_ARGUMENT")
    assert "base64" in out[0]["message"]
    assert "int" in out[2]["message"]
    failed(out[6], "E_IS_A_FOLDER")
    failed(out[7], "E_IS_A_FOLDER")
    failed(out[8], "E_NOT_A_FOLDER")
    failed(out[9], "E_NOT_A_FOLDER")
    assert "file.txt" in out[8]["message"]
    assert fs.ok(["stat", "b64.bin"], ["stat", "n.txt"], ["read", "workspace:file.txt"]) == [None, None, "f"]
    assert fs.store_read("dir/x") == b"x"


# -- F6 ------------------------------------------------------------------------------------


def test_F6_mkdir_creates_folders_with_parents(ops_bench, kind):
    fs = ops_bench()
    _, _, _, a, ws, listing = fs.ok(
        ["mkdir", "a/b/c"],
        ["mkdir", "a/b/c"],
        ["mkdir", "workspace:x/y"],
        ["stat", "a/b/c"],
        ["stat", "workspace:x/y"],
        ["list", "a/b"],
    )
    assert a["type"] == "folder" and ws["type"] == "folder"
    assert [(e["name"], e["type"]) for e in listing] == [("c", "folder")]
    if kind == "real":
        assert (fs.workspace / "x" / "y").is_dir()


def test_F6_mkdir_over_a_file_or_under_a_file(ops_bench):
    fs = ops_bench(seed={"f.txt": "x"})
    over, under, _, run_over = fs(
        ["mkdir", "workspace:f.txt"], ["mkdir", "workspace:f.txt/sub"], ["write", "g", ""], ["mkdir", "g"]
    )
    failed(over, "E_EXISTS")
    failed(under, "E_NOT_A_FOLDER")
    failed(run_over, "E_EXISTS")
    assert fs.store_read("f.txt") == b"x"


# -- F7 ------------------------------------------------------------------------------------


def test_F7_move_renames_in_the_run_folder(ops_bench):
    *_, old, new, content = ops_bench().ok(
        ["write", "a.txt", "A"],
        ["move", "a.txt", "b/renamed.txt"],
        ["stat", "a.txt"],
        ["stat", "b/renamed.txt"],
        ["read", "b/renamed.txt"],
    )
    assert old is None and new["size"] == 1 and content == "A"


def test_F7_move_between_run_and_conversation_folders(ops_bench, kind):
    fs = ops_bench(seed={"in/doc.txt": "from the conversation"})
    out = fs.ok(
        ["write", "report.md", "# report"],
        ["move", "report.md", "workspace:out/report.md"],
        ["move", "workspace:in/doc.txt", "doc.txt"],
        ["read", "doc.txt"],
        ["stat", "workspace:in/doc.txt"],
        ["stat", "report.md"],
        ["read", "workspace:out/report.md"],
    )
    assert out[3:] == ["from the conversation", None, None, "# report"]
    assert fs.store_read("out/report.md") == b"# report"
    assert not fs.store_has("in/doc.txt")
    if kind == "real":
        assert (fs.workspace / "out" / "report.md").read_text() == "# report"
        assert not (fs.workspace / "in" / "doc.txt").exists()
        assert (fs.state / "runs" / fs.last.call_id / "doc.txt").read_text() == "from the conversation"


def test_F7_move_a_folder_with_its_contents(ops_bench):
    fs = ops_bench()
    *_, listing, gone, back = fs.ok(
        ["write", "d/a.txt", "a"],
        ["write", "d/e/b.txt", "b"],
        ["move", "d", "workspace:d2"],
        ["list", "workspace:d2"],
        ["stat", "d"],
        ["read", "workspace:d2/e/b.txt"],
    )
    assert sorted(e["name"] for e in listing) == ["a.txt", "e"]
    assert gone is None and back == "b"


def test_F7_move_never_overwrites(ops_bench, kind):
    fs = ops_bench(seed={"a.txt": "A", "b.txt": "B", "dir/x": "x"})
    out = fs(
        ["move", "workspace:a.txt", "workspace:b.txt"],
        ["move", "workspace:a.txt", "workspace:dir"],
        ["move", "workspace:dir", "workspace:a.txt"],
        ["move", "workspace:a.txt", "workspace:"],
        ["write", "r.txt", "R"],
        ["move", "r.txt", "workspace:b.txt"],
        ["move", "workspace:b.txt", "r.txt"],
    )
    for i in (0, 1, 2, 3, 5, 6):
        failed(out[i], "E_EXISTS")
    assert "never overwrites" in out[0]["message"] and "b.txt" in out[0]["message"]
    assert fs.ok(["read", "workspace:a.txt"], ["read", "workspace:b.txt"], ["read", "workspace:dir/x"]) == [
        "A",
        "B",
        "x",
    ]
    assert fs.bench.history().empty
    if kind == "real":
        assert (fs.workspace / "b.txt").read_text() == "B"


def test_F7_move_onto_existing_target_throws_catchable_E_EXISTS(gem, open_bench):
    gem.tool(
        "t",
        """
        import workbench

        def handle(input, ctx):
            ctx.files.write('a.txt', 'A')
            ctx.files.write('b.txt', 'B')
            try:
                ctx.files.move('a.txt', 'b.txt')
            except workbench.WorkbenchError as e:
                return {'code': e.code, 'b': ctx.files.read('b.txt'), 'a': ctx.files.read('a.txt')}
            return {'code': None}
    """,
    )
    gem.tool(
        "u",
        "def handle(input, ctx):\n    ctx.files.write('a', '1')\n    ctx.files.write('b', '2')\n"
        "    ctx.files.move('a', 'b')\n",
    )
    bench = open_bench(gem)
    assert bench.call("t").value == {"code": "E_EXISTS", "b": "B", "a": "A"}
    error(bench.call("u"), "E_EXISTS")


def test_F7_move_missing_source_root_or_into_itself(ops_bench):
    fs = ops_bench()
    out = fs(
        ["move", "nope", "x"],
        ["mkdir", "d/e"],
        ["move", "d", "d/e/f"],
        ["move", "", "x"],
        ["move", "workspace:", "x"],
        ["move", "d", "d"],
    )
    failed(out[0], "E_NOT_FOUND")
    failed(out[2], "E_PATH")
    failed(out[3], "E_PATH")
    failed(out[4], "E_PATH")
    failed(out[5], "E_EXISTS")
    assert fs.ok(["stat", "x"]) == [None]


# -- F8 ------------------------------------------------------------------------------------


def test_F8_delete_keeps_a_history_copy_that_can_be_restored(ops_bench, kind):
    fs = ops_bench(seed={"keep/me.txt": "precious"})
    fs.ok(["delete", "workspace:keep/me.txt"])
    assert fs.ok(["stat", "workspace:keep/me.txt"]) == [None]
    h = fs.bench.history()
    assert list(zip(h["path"], h["reason"], h["size"], h["kept"])) == [("keep/me.txt", "delete", 8, True)]
    if kind == "real":
        assert not (fs.workspace / "keep" / "me.txt").exists()
    fs.bench.restore_file("workspace:keep/me.txt", int(h["version"].iloc[0]))
    assert fs.ok(["read", "workspace:keep/me.txt"]) == ["precious"]


def test_F8_restore_onto_a_folder_is_refused(ops_bench):
    fs = ops_bench(seed={"x": "file"})
    fs.ok(["delete", "workspace:x"], ["write", "workspace:x/inner.txt", "i"])
    with pytest.raises(workbench.WorkbenchError) as exc:
        fs.bench.restore_file("workspace:x")
    assert exc.value.code == "E_IS_A_FOLDER"
    assert fs.ok(["read", "workspace:x/inner.txt"], ["stat", "workspace:x"])[0] == "i"
    assert fs.ok(["stat", "workspace:x"])[0]["type"] == "folder"


def test_F8_delete_a_workspace_folder_keeps_every_file(ops_bench):
    fs = ops_bench(seed={"d/a.txt": "a", "d/e/b.txt": "bb"})
    fs.ok(["delete", "workspace:d"])
    assert fs.ok(["stat", "workspace:d"]) == [None]
    h = fs.bench.history()
    assert sorted(zip(h["path"], h["size"])) == [("d/a.txt", 1), ("d/e/b.txt", 2)]
    assert set(h["reason"]) == {"delete"} and h["kept"].all()


def test_F8_headless_delete_is_permanent(ops_bench, kind, monkeypatch):
    trashed: list[Any] = []
    monkeypatch.setattr("send2trash.send2trash", lambda p: trashed.append(p))
    fs = ops_bench(seed={"gone.txt": "bye"}, headless=True)
    fs.ok(["delete", "workspace:gone.txt"])
    assert trashed == []
    assert not fs.store_has("gone.txt")
    assert list(fs.bench.history()["kept"]) == [True]
    if kind == "real":
        assert not (fs.workspace / "gone.txt").exists()


def test_F8_desktop_delete_goes_to_the_trash(ops_bench, kind, monkeypatch, tmp_path):
    trash = tmp_path / "Trash"
    trash.mkdir()

    def fake_send2trash(p: Any) -> None:
        os.rename(p, trash / Path(p).name)

    monkeypatch.setattr("send2trash.send2trash", fake_send2trash)
    fs = ops_bench(seed={"old.txt": "old"}, headless=False)
    fs.ok(["delete", "workspace:old.txt"])
    assert fs.ok(["stat", "workspace:old.txt"]) == [None]
    assert list(fs.bench.history()["reason"]) == ["delete"]
    if kind == "real":
        assert (trash / "old.txt").read_text() == "old"  # the user's trash has it
    else:
        assert list(trash.iterdir()) == []  # a mock has no trash


def test_F8_history_copy_only_up_to_the_cap(ops_bench):
    fs = ops_bench(
        seed={"small.txt": "0123456789", "big.txt": "0123456789X"}, limits=Limits(history_bytes=10)
    )
    fs.ok(["delete", "workspace:small.txt"], ["delete", "workspace:big.txt"])
    h = fs.bench.history()
    assert list(zip(h["path"], h["size"], h["kept"])) == [("small.txt", 10, True), ("big.txt", 11, False)]
    with pytest.raises(workbench.WorkbenchError) as exc:
        fs.bench.restore_file("big.txt")
    assert exc.value.code == "E_TOO_LARGE"
    fs.bench.restore_file("small.txt")
    assert fs.ok(["read", "workspace:small.txt"]) == ["0123456789"]
    # the delete itself happened either way
    assert fs.ok(["stat", "workspace:big.txt"]) == [None]


def test_F8_default_cap_is_100_MB():
    assert history.MAX_HISTORY_BYTES == 100 * 1024 * 1024


def test_F8_delete_in_the_run_folder_and_missing_paths(ops_bench):
    fs = ops_bench()
    out = fs(
        ["write", "a/b.txt", "x"],
        ["delete", "a/b.txt"],
        ["stat", "a/b.txt"],
        ["delete", "a"],
        ["stat", "a"],
        ["delete", "a"],
        ["delete", "workspace:nope"],
        ["delete", ""],
        ["delete", "workspace:"],
    )
    assert [r.get("ok", "err") for r in out[:5]] == [None, None, None, None, None]
    failed(out[5], "E_NOT_FOUND")
    failed(out[6], "E_NOT_FOUND")
    failed(out[7], "E_PATH")
    failed(out[8], "E_PATH")


# -- F9 ------------------------------------------------------------------------------------


def test_F9_relative_path_is_the_run_folder(files_bench, kind, tmp_path):
    res = files_bench("write", "sub/a.txt", "run")
    assert res.ok, res.error
    df = files_bench.bench.files()
    row = df[df["path"] == "sub/a.txt"]
    assert list(row["area"]) == ["run"] and list(row["call_id"]) == [res.call_id]
    assert "sub/a.txt" not in workspace_paths(files_bench.bench)
    if kind == "real":
        assert (tmp_path / "state" / "runs" / res.call_id / "sub" / "a.txt").read_text() == "run"
        assert not (files_bench.workspace / "sub").exists()


def test_F9_workspace_prefix_is_the_conversation_folder(files_bench, kind):
    assert files_bench("write", "workspace:sub/a.txt", "conv").ok
    assert files_bench("write", "workspace:./b.txt", "dot-slash").ok
    assert {"sub/a.txt", "b.txt"} <= workspace_paths(files_bench.bench)
    assert value(files_bench("read", "workspace:sub//a.txt")) == "conv"
    if kind == "real":
        assert (files_bench.workspace / "sub" / "a.txt").read_text() == "conv"


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "workspace:/etc/passwd",
        "//server/share",
        "C:/Windows/win.ini",
        "c:x",
        "workspace:C:\\x",
    ],
)
def test_F9_absolute_paths_are_rejected(ops_bench, path):
    fs = ops_bench()
    out = fs(
        ["read", path],
        ["write", path, "x"],
        ["stat", path],
        ["list", path],
        ["mkdir", path],
        ["delete", path],
        ["write", "ok.txt", ""],
        ["move", "ok.txt", path],
        ["move", path, "y"],
    )
    for i, r in enumerate(out):
        if i != 6:
            failed(r, "E_PATH")
    assert repr(path) in out[0]["message"]


@pytest.mark.parametrize(
    "path",
    [
        "..",
        "../x",
        "a/../../x",
        "workspace:..",
        "workspace:../x",
        "workspace:a/../../x",
        "./../x",
        "a/b/../../../x",
    ],
)
def test_F9_dot_dot_escapes_are_rejected(ops_bench, kind, path, tmp_path):
    fs = ops_bench()
    out = fs(
        ["write", path, "escaped"],
        ["read", path],
        ["stat", path],
        ["list", path],
        ["mkdir", path],
        ["delete", path],
        ["write", "ok.txt", ""],
        ["move", "ok.txt", path],
    )
    for i, r in enumerate(out):
        if i != 6:
            failed(r, "E_PATH")
    assert ".." in out[0]["message"]
    if kind == "real":
        assert not (tmp_path / "x").exists() and not (tmp_path / "escaped").exists()


@pytest.mark.parametrize("path", ["a\x00b", "workspace:a\x00", "a\\b", "workspace:..\\x", "\\x"])
def test_F9_nul_and_backslash_are_rejected(ops_bench, path):
    out = ops_bench()(["write", path, "x"], ["read", path], ["stat", path])
    for r in out:
        failed(r, "E_PATH")


def test_F9_lone_surrogates_in_paths_are_rejected(ops_bench):
    # a JS string can hold one; no file name can, on either provider
    fs = ops_bench()
    for op, *args in (["write", "a\ud800.txt", "x"], ["stat", "workspace:\udcff"], ["list", "\ud83d/"]):
        assert "not valid Unicode" in error(fs.one(op, *args), "E_PATH").message
    assert value(fs.one("stat", "\U0001f600.txt")) is None  # a proper pair is an ordinary name


def test_F9_names_over_255_bytes_are_rejected_alike(ops_bench, kind):
    fs = ops_bench()
    longest = "é" * 127 + "a"  # 255 UTF-8 bytes
    _, back = fs.ok(["write", f"workspace:d/{longest}", "x"], ["read", f"workspace:d/{longest}"])
    assert back == "x"
    out = fs(["write", "a" * 256, "x"], ["stat", "workspace:" + "é" * 128], ["mkdir", "b/" + "c" * 300])
    for r in out:
        failed(r, "E_PATH")
        assert r["details"]["limit"] == 255 and "255 bytes" in r["message"]
    if kind == "real":
        assert (fs.workspace / "d" / longest).read_text() == "x"


def test_F9_path_must_be_a_string(ops_bench):
    out = ops_bench()(
        ["read", 1],
        ["write", None, "x"],
        ["stat", ["a"]],
        ["list", {"p": 1}],
        ["move", "a", 3],
        ["delete", True],
    )
    for r in out[:4]:
        failed(r, "E_INVALID_ARGUMENT")
    failed(out[4], "E_INVALID_ARGUMENT")
    failed(out[5], "E_INVALID_ARGUMENT")


@pytest.fixture
def linked(ops_bench, tmp_path):
    """A real workspace with symlinks: out-file/out-dir escape, in-link stays inside,
    dot-link points at a dot-file inside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret")
    fs = ops_bench(seed={"real.txt": "inside", ".env": "TOKEN=1", "sub/x.txt": "x"})
    ws = fs.workspace
    (ws / "out-file").symlink_to(outside / "secret.txt")
    (ws / "out-dir").symlink_to(outside, target_is_directory=True)
    (ws / "out-rel").symlink_to("../outside")
    (ws / "in-link").symlink_to("real.txt")
    (ws / "in-dir").symlink_to("sub", target_is_directory=True)
    (ws / "dot-link").symlink_to(".env")
    (ws / "dangling-out").symlink_to(outside / "nothing-yet")
    fs.outside = outside  # type: ignore[attr-defined]
    return fs


@pytest.mark.parametrize("kind", ["real"])  # symlinks exist only on a real disk
def test_F9_symlink_escapes_are_rejected(linked, kind):
    fs = linked
    for path in ["workspace:out-file", "workspace:out-dir/secret.txt", "workspace:out-rel/secret.txt"]:
        out = fs(
            ["read", path],
            ["stat", path],
            ["write", path, "overwritten"],
            ["delete", path],
            ["move", path, "stolen.txt"],
        )
        for r in out:
            failed(r, "E_PATH")
        assert "symbolic link" in out[0]["message"]
    out = fs(
        ["list", "workspace:out-dir"],
        ["write", "workspace:out-dir/new.txt", "x"],
        ["mkdir", "workspace:out-dir/newdir"],
        ["write", "workspace:dangling-out", "x"],
        ["write", "r.txt", "r"],
        ["move", "r.txt", "workspace:out-dir/r.txt"],
        ["move", "r.txt", "workspace:dangling-out"],
    )
    for i, r in enumerate(out):
        if i != 4:
            failed(r, "E_PATH")
    assert sorted(p.name for p in fs.outside.iterdir()) == ["secret.txt"]
    assert (fs.outside / "secret.txt").read_text() == "outside secret"


@pytest.mark.parametrize("kind", ["real"])
def test_F9_symlinks_inside_the_folder_are_followed(linked, kind):
    fs = linked
    read, sub, listing = fs.ok(
        ["read", "workspace:in-link"], ["read", "workspace:in-dir/x.txt"], ["list", "workspace:"]
    )
    assert read == "inside" and sub == "x"
    names = {e["name"]: e["type"] for e in listing}
    # escaping links and dot-entries are not part of the folder; inside links show their target
    assert names == {"real.txt": "file", "sub": "folder", "in-link": "file", "in-dir": "folder"}
    # a link to a dot-file is a dot-file (F10)
    assert fs.ok(["stat", "workspace:dot-link"]) == [None]
    failed(fs(["read", "workspace:dot-link"])[0], "E_NOT_FOUND")
    failed(fs(["write", "workspace:dot-link", "x"])[0], "E_PERM_DENIED")
    assert (fs.workspace / ".env").read_text() == "TOKEN=1"


# -- F10 -----------------------------------------------------------------------------------

DOT_SEED = {
    ".env": "TOKEN=secret",
    ".git/config": "[core]",
    "sub/.hidden": "h",
    "sub/ok.txt": "ok",
    "visible.txt": "v",
}


def test_F10_dot_entries_of_the_conversation_folder_are_not_listed(ops_bench):
    fs = ops_bench(seed=DOT_SEED)
    top, sub = fs.ok(["list", "workspace:"], ["list", "workspace:sub"])
    assert sorted(e["name"] for e in top) == ["sub", "visible.txt"]
    assert [e["name"] for e in sub] == ["ok.txt"]
    failed(fs(["list", "workspace:.git"])[0], "E_NOT_FOUND")


def test_F10_dot_entries_cannot_be_read_or_statted(ops_bench):
    fs = ops_bench(seed=DOT_SEED)
    for path in [
        "workspace:.env",
        "workspace:.git/config",
        "workspace:sub/.hidden",
        "workspace:.git",
        "workspace:./.env",
        "workspace:sub//.hidden",
    ]:
        read, stat = fs(["read", path, {"encoding": "base64"}], ["stat", path])
        failed(read, "E_NOT_FOUND")
        assert stat == {"ok": None}
        assert "secret" not in str(read)


def test_F10_dot_entries_cannot_be_written_created_moved_or_deleted(ops_bench, kind):
    fs = ops_bench(seed=DOT_SEED)
    out = fs(
        ["write", "workspace:.env", "TOKEN=stolen"],
        ["write", "workspace:.new", "x"],
        ["write", "workspace:.git/hooks/post-commit", "rm -rf"],
        ["mkdir", "workspace:.cache"],
        ["write", "workspace:sub/.hidden", "x"],
        ["write", "r.txt", "r"],
        ["move", "r.txt", "workspace:.r"],
        ["move", "r.txt", "workspace:.git/r"],
        ["move", "workspace:.env", "stolen.txt"],
        ["delete", "workspace:.env"],
        ["delete", "workspace:.git"],
        ["move", "workspace:visible.txt", "workspace:.v"],
    )
    for i in (0, 1, 2, 3, 4, 6, 7, 11):
        failed(out[i], "E_PERM_DENIED")
    for i in (8, 9, 10):
        failed(out[i], "E_NOT_FOUND")
    assert "'.'" in out[0]["message"]
    assert fs.store_read(".env") == b"TOKEN=secret"
    assert fs.store_read(".git/config") == b"[core]"
    assert not fs.store_has(".new") and not fs.store_has(".cache") and not fs.store_has(".r")
    assert fs.ok(["read", "workspace:visible.txt"], ["stat", "stolen.txt"]) == ["v", None]
    assert fs.bench.history().empty
    if kind == "real":
        assert sorted(p.name for p in fs.workspace.iterdir()) == [".env", ".git", "sub", "visible.txt"]


def test_F10_moving_a_folder_cannot_carry_dot_entries_across(ops_bench, kind):
    fs = ops_bench(seed=DOT_SEED)
    # out of the conversation folder, sub/.hidden would become readable in the run folder
    out = fs(["move", "workspace:sub", "sub"], ["read", "sub/.hidden"])
    failed(out[0], "E_PERM_DENIED")
    assert ".hidden" not in out[0]["message"]  # a hidden entry is not even named
    failed(out[1], "E_NOT_FOUND")
    assert fs.store_read("sub/.hidden") == b"h" and fs.store_read("sub/ok.txt") == b"ok"
    # into the conversation folder, a run folder's dot-file would become a hidden file there
    out = fs(["write", "pkg/.npmrc", "x"], ["write", "pkg/a.txt", "a"], ["move", "pkg", "workspace:pkg"])
    failed(out[2], "E_PERM_DENIED")
    assert "pkg/.npmrc" in out[2]["message"]
    assert not fs.store_has("pkg")
    # SEC3: not within the conversation folder either: the gem never moves what it cannot see
    failed(fs(["move", "workspace:sub", "workspace:sub2"])[0], "E_PERM_DENIED")
    assert fs.store_read("sub/.hidden") == b"h" and not fs.store_has("sub2")
    if kind == "real":
        assert (fs.workspace / "sub" / ".hidden").read_text() == "h"


def test_F10_dot_names_in_the_run_folder_are_ordinary(ops_bench):
    fs = ops_bench()
    *_, content, listing, info, sub = fs.ok(
        ["write", ".config/settings.json", "{}"],
        ["write", ".env", "A=1"],
        ["mkdir", ".cache"],
        ["read", ".env"],
        ["list"],
        ["stat", ".config"],
        ["list", ".config"],
    )
    assert content == "A=1"
    assert sorted(e["name"] for e in listing) == [".cache", ".config", ".env"]
    assert info["type"] == "folder" and [e["name"] for e in sub] == ["settings.json"]
    fs.ok(["write", ".x", "x"], ["move", ".x", ".y"], ["delete", ".y"])


def test_F10_names_merely_containing_a_dot_are_visible(ops_bench):
    fs = ops_bench(seed={"a.b/c.d": "x", "v1.0.txt": "y"})
    top, inner = fs.ok(["list", "workspace:"], ["read", "workspace:a.b/c.d"])
    assert sorted(e["name"] for e in top) == ["a.b", "v1.0.txt"] and inner == "x"


# -- F11 -----------------------------------------------------------------------------------


def test_F11_no_conversation_denies_workspace_paths(ops_bench, kind):
    fs = ops_bench(seed={"a.txt": "conv"}, conversation=False)
    out = fs(
        ["read", "workspace:a.txt"],
        ["write", "workspace:b.txt", "x"],
        ["stat", "workspace:a.txt"],
        ["list", "workspace:"],
        ["mkdir", "workspace:d"],
        ["delete", "workspace:a.txt"],
        ["write", "r.txt", "run ok"],
        ["move", "r.txt", "workspace:r.txt"],
        ["move", "workspace:a.txt", "a.txt"],
        ["read", "r.txt"],
        ["list"],
    )
    for i in (0, 1, 2, 3, 4, 5, 7, 8):
        failed(out[i], "E_PERM_DENIED")
    assert "conversation" in out[0]["message"]
    assert out[9] == {"ok": "run ok"}
    assert [e["name"] for e in out[10]["ok"]] == ["r.txt"]
    if kind == "real":
        assert sorted(p.name for p in fs.workspace.iterdir()) == ["a.txt"]
        assert (fs.workspace / "a.txt").read_text() == "conv"


# -- F12 -----------------------------------------------------------------------------------


def test_F12_write_over_20_MB_is_too_large_and_names_the_limit(ops_bench):
    fs = ops_bench()
    for args in (
        {"path": "big.txt", "n": MAX_BYTES + 1},
        {"path": "workspace:big.bin", "n": MAX_BYTES + 1, "encoding": "base64"},
    ):
        err = error(fs.bench.call("big", args), "E_TOO_LARGE")
        assert "20 MB" in err.message and f"{MAX_BYTES:,}" in err.message
        assert err.details["limit"] == MAX_BYTES == 20 * 1024 * 1024
    assert fs.ok(["stat", "workspace:big.bin"]) == [None]


def test_F12_write_of_exactly_20_MB_is_allowed(ops_bench):
    fs = ops_bench()
    assert fs.bench.call("big", {"path": "workspace:max.bin", "n": MAX_BYTES, "encoding": "base64"}).ok
    assert fs.ok(["stat", "workspace:max.bin"])[0]["size"] == MAX_BYTES


def test_F12_read_over_20_MB_is_too_large(ops_bench):
    fs = ops_bench(seed={"huge.bin": bytes(21 * 1024 * 1024), "max.txt": b"y" * MAX_BYTES})
    info, read, read64 = fs(
        ["stat", "workspace:huge.bin"],
        ["read", "workspace:huge.bin"],
        ["read", "workspace:huge.bin", {"encoding": "base64"}],
    )
    assert info["ok"]["size"] == 21 * 1024 * 1024  # stat and list still work
    for r in (read, read64):
        failed(r, "E_TOO_LARGE")
        assert "20 MB" in r["message"] and r["details"]["limit"] == MAX_BYTES
    res = fs.bench.call("readlen", {"path": "workspace:max.txt"})
    assert res.ok and res.value == MAX_BYTES
    res = fs.bench.call("readlen", {"path": "workspace:huge.bin"})
    error(res, "E_TOO_LARGE")


def test_F9_whole_path_length_limit_same_on_mock_and_real(files_bench):
    deep = "/".join(["d" * 200] * 6)  # names fine, path over 1024 bytes
    res = files_bench("write", deep + "/a.txt", "x")
    assert res.error.code == "E_PATH" and res.error.details["limit"] == 1024


def test_F2_empty_folders_of_the_conversation_folder_exist_on_mock_too(gem, open_bench):
    (open_bench.workspace / "empty").mkdir()
    gem.tool("l", "def handle(input, ctx):\n    return ctx.files.list('workspace:')\n")
    res = open_bench(gem).call("l")
    assert [(e["name"], e["type"]) for e in res.value] == [("empty", "folder")]


def test_F1_a_missing_run_file_that_the_conversation_folder_has_suggests_workspace(ops_bench, kind):
    ops = ops_bench(seed={"notes/x.txt": "hi"})
    e = error(ops.one("read", "notes/x.txt"), "E_NOT_FOUND")
    assert "read 'workspace:notes/x.txt'" in e.message
    e = error(ops.one("read", "workspace:nope.txt"), "E_NOT_FOUND")
    if kind == "real":  # where the real conversation folder is, to look for it
        assert str(ops.bench.providers.files.workspace) in e.message
