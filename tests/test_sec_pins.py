"""Adversarial tests of pinned calls (issue 29): a case file (tests/calls/<tool>/<name>.json) is
input someone else wrote — a pull request can add one — so its replay refuses, with E_CASE
naming the entry, field or limit, every path, table, answer and number it should not take,
and writes nothing outside its own temporary bench; a pinned case never holds a secret, in
any form the mask knows (else the pin is refused); `res.pin(name)` writes only a plain file
name, never through a link."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import re
import shutil
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_GEM

import workbench
from workbench.pins.replay import load_case, replay_case
from workbench.platforms.base import Limits


# -- helpers ----------------------------------------------------------------------------------
def _tree(root: Path) -> dict[str, str]:
    """Every entry under `root` (links as links) with a digest of its content."""
    out: dict[str, str] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[rel] = "dir"
    return out


@pytest.fixture(autouse=True)
def temp_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary folders a replay makes (its bench), in tmp_path: checked empty after."""
    import tempfile

    here = tmp_path / "tmp"
    here.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(here))
    return here


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[Path]:
    """A folder outside every bench, with a sentinel: after the test, exactly as it was."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "sentinel.txt").write_text("untouched")
    before = _tree(out)
    yield out
    assert _tree(out) == before, "something was written outside the bench's folders"


@pytest.fixture
def notes(tmp_path: Path, outside: Path) -> Path:
    """A copy of the example gem `notes` (with its fixtures/workspace)."""
    return Path(shutil.copytree(EXAMPLE_GEM, tmp_path / "notes"))


def _pin_report(gem: Path, state: Path) -> Path:
    """write_report pinned after a note is added and closed: files, documents (and the path)."""
    with workbench.open(gem, state_dir=state) as bench:
        note = bench.call("add_note", {"title": "a"}).raise_for_error().value["id"]
        bench.call("close_note", {"id": note}).raise_for_error()
        return bench.call("write_report", {}).raise_for_error().pin("base")


def _pin_close(gem: Path, state: Path) -> Path:
    """close_note pinned after an earlier close: a table with rows (SQL)."""
    with workbench.open(gem, state_dir=state) as bench:
        first = bench.call("add_note", {"title": "a"}).value["id"]
        bench.call("close_note", {"id": first}).raise_for_error()
        second = bench.call("add_note", {"title": "b"}).value["id"]
        return bench.call("close_note", {"id": second}).raise_for_error().pin("base")


@pytest.fixture
def report_case(notes: Path, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    path = _pin_report(notes, tmp_path / "state")
    assert replay_case(path).ok  # the untouched case replays: the refusals below are the edits'
    return path, json.loads(path.read_text("utf-8"))


@pytest.fixture
def close_case(notes: Path, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    path = _pin_close(notes, tmp_path / "state")
    case = json.loads(path.read_text("utf-8"))
    assert case["before"]["sql"]["closed"]["rows"] and replay_case(path).ok
    return path, case


def refused(base: tuple[Path, dict[str, Any]], edit: Callable[[dict[str, Any]], Any] | None = None, *,
            raw: bytes | None = None) -> workbench.WorkbenchError:  # fmt: skip
    """The error replaying `base`'s case edited (or `raw` bytes) as evil.json next to it."""
    path, case = base
    evil = path.with_name("evil.json")
    if raw is None:
        changed = copy.deepcopy(case)
        assert edit is not None
        edit(changed)
        raw = json.dumps(changed).encode("utf-8")
    evil.write_bytes(raw)
    gem_before = _tree(path.parents[3])
    with pytest.raises(workbench.WorkbenchError) as err:
        replay_case(evil)
    assert _tree(path.parents[3]) == gem_before, "the replay changed the gem's folder"
    import tempfile

    assert not any(Path(tempfile.gettempdir()).iterdir()), "the replay left its temporary bench"
    return err.value


def files(*entries: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def edit(case: dict[str, Any]) -> None:
        case["before"]["files"] = list(entries)

    return edit


def entry(path: str, root: str = "workspace", type: str = "file", **more: Any) -> dict[str, Any]:
    return {"root": root, "path": path, "type": type, **({"text": "x"} if type == "file" else {}), **more}


# -- before.files: paths, roots, types (SEC2, SEC3) -------------------------------------------
@pytest.mark.parametrize(
    "path",
    [
        "../x",
        "/etc/passwd",
        "workspace:../x",
        "workspace:x",
        "a\\b",
        "..\\..\\x",
        "a\x00b",
        "a\nb",
        "a\x1b[31mb",
        "a/../../x",
        "./a",
        "a//b",
        "a/",
        "",
        "x" * 5000,
        "a/" + "b" * 300,
        "/".join(["abcdefghij"] * 120),
        "\ud800",
    ],
)
def test_SEC2_case_file_path_escape_is_refused(report_case: Any, path: str) -> None:
    err = refused(report_case, files(entry("ok.txt"), entry(path)))
    assert err.code == "E_CASE" and "before: files.1" in err.message, err.message
    assert err.details["field"] == "files.1"


@pytest.mark.parametrize(
    "root", ["run/..", "/", "", "run", "output", "../workspace", "workspace/..", "resources"]
)
def test_SEC2_case_file_root_other_than_workspace_is_refused(report_case: Any, root: str) -> None:
    err = refused(report_case, files(entry("x", root=root)))
    assert err.code == "E_CASE" and "before: files.0" in err.message and "'workspace'" in err.message


@pytest.mark.parametrize(
    "entries",
    [
        [entry("a"), entry("a", type="folder")],  # a file, then a folder of its name
        [entry("a"), entry("a/b")],  # a file inside a file
        [entry("a", type="folder"), entry("a")],
        [entry("a"), entry("a")],
        [entry("a", type="folder"), entry("a", type="folder")],
    ],
)
def test_SEC2_case_file_entry_through_a_file_or_repeated_is_refused(report_case: Any, entries: list) -> None:
    err = refused(report_case, files(*entries))
    assert err.code == "E_CASE" and "before: files.1" in err.message and "'a" in err.message


@pytest.mark.parametrize("kind", ["symlink", "link", "fifo", None, 1, ["file"]])
def test_SEC2_case_file_entry_type_other_than_file_or_folder_is_refused(report_case: Any, kind: Any) -> None:
    err = refused(
        report_case, files({"root": "workspace", "path": "a", "type": kind, "target": "/etc/passwd"})
    )
    assert err.code == "E_CASE" and "before: files.0" in err.message and "type" in err.message


def test_SEC3_case_file_dot_entry_is_refused(report_case: Any) -> None:
    for path in (".git/config", "inbox/.env", ".hidden"):
        err = refused(report_case, files(entry(path)))
        assert err.code == "E_CASE" and "before: files.0" in err.message and "SEC3" in err.message


def test_SEC5_case_file_content_over_file_bytes_is_refused(report_case: Any) -> None:
    big = base64.b64encode(b"\0" * (Limits().file_bytes + 1)).decode()
    err = refused(report_case, files({"root": "workspace", "path": "big", "type": "file", "base64": big}))
    assert err.code == "E_CASE" and "before: files.0" in err.message and "file_bytes" in err.message
    assert err.details["limit"] == Limits().file_bytes


@pytest.mark.parametrize("kind", ["real", "mock"])
def test_SEC3_dot_entries_are_never_copied_into_a_case(notes: Path, tmp_path: Path, kind: str) -> None:
    ws = tmp_path / "ws"
    (ws / "inbox").mkdir(parents=True)
    (ws / "inbox" / ".secret").write_text("hidden-in-inbox")
    (ws / "inbox" / "a.pdf").write_text("pdf")
    with workbench.open(
        notes, state_dir=tmp_path / "state", providers=kind, workspace=ws, headless=True
    ) as b:
        res = b.call("write_report", {}).raise_for_error()
        assert res.value["moved"] == ["a.pdf"]  # it listed the folder holding the dot-entry
        text = res.pin("dots").read_text("utf-8")
    assert "hidden-in-inbox" not in text and ".secret" not in text


# -- the case file itself ---------------------------------------------------------------------
def test_case_file_that_is_a_link_a_fifo_or_a_folder_is_refused(report_case: Any, outside: Path) -> None:
    path, _ = report_case
    evil = path.with_name("evil.json")
    os.symlink(outside / "sentinel.txt", evil)
    with pytest.raises(workbench.WorkbenchError) as err:
        replay_case(evil)
    assert err.value.code == "E_CASE" and "link" in err.value.message and "evil.json" in err.value.message
    evil.unlink()
    evil.mkdir()
    with pytest.raises(workbench.WorkbenchError, match="not a regular file"):
        replay_case(evil)
    evil.rmdir()
    os.mkfifo(evil)  # opening a FIFO waits for a writer: the replay must not
    got: list[BaseException] = []

    def run() -> None:
        try:
            replay_case(evil)
        except BaseException as exc:
            got.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(20)
    if t.is_alive():
        with open(evil, "wb"):  # let the stuck open return, then fail
            pass
        pytest.fail("replaying a FIFO named like a case hung")
    assert isinstance(got[0], workbench.WorkbenchError) and got[0].code == "E_CASE"
    assert "not a regular file" in got[0].message


def test_SEC5_case_file_over_case_bytes_is_refused(report_case: Any) -> None:
    path, _ = report_case
    size = path.stat().st_size
    with pytest.raises(workbench.WorkbenchError) as err:
        load_case(path, limit=size - 1)
    assert err.value.code == "E_CASE" and "case_bytes" in err.value.message
    assert err.value.details["limit"] == size - 1
    assert load_case(path, limit=size)["tool"] == "write_report"


@pytest.mark.parametrize("shape", ["[", '{"a":'])
def test_SEC7_deeply_nested_case_file_is_a_coded_error(report_case: Any, shape: str) -> None:
    raw = (shape * 10_000 + "1" + ("]" if shape == "[" else "}") * 10_000).encode()
    err = refused(report_case, raw=raw)
    assert err.code == "E_CASE" and "nests deeper than" in err.message


@pytest.mark.parametrize(
    "raw, why",
    [
        (b'{"case": 1, "gem": "\xff\xfe"}', "utf-8"),
        (b"\xef\xbb\xbf{}", "BOM"),
        (b"", "Expecting value"),
        (b"[]", "not a case"),
        ('{"case": 1, "x": "\udc80"}'.encode("utf-8", "surrogatepass"), "utf-8"),
    ],
)
def test_SEC7_case_file_that_is_not_json_is_refused(report_case: Any, raw: bytes, why: str) -> None:
    err = refused(report_case, raw=raw)
    assert err.code == "E_CASE" and why in err.message and "evil.json" in err.message


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_SEC7_case_file_with_nan_or_infinity_is_refused(report_case: Any, constant: str) -> None:
    text = json.dumps(report_case[1]).replace('"duration_ms": ', f'"duration_ms": {constant}, "was": ', 1)
    err = refused(report_case, raw=text.encode())
    assert err.code == "E_CASE" and constant.lstrip("-") in err.message


def test_case_file_duplicate_keys_the_last_wins(report_case: Any) -> None:
    """Python's JSON reading: the last of two equal keys is the one read (documented, not refused)."""
    path, case = report_case
    text = json.dumps(case).replace(
        '"tool": "write_report"', '"tool": "close_note", "tool": "write_report"', 1
    )
    dup = path.with_name("dup.json")
    dup.write_text(text)
    assert load_case(dup)["tool"] == "write_report" and replay_case(dup).ok


# -- what the case claims ---------------------------------------------------------------------
def test_case_claiming_another_gem_or_platform_is_refused(report_case: Any) -> None:
    err = refused(report_case, lambda c: c.update(gem="evil.other"))
    assert err.code == "E_CASE" and err.details["field"] == "gem" and "'evil.other'" in err.message
    err = refused(report_case, lambda c: c.update(platform="ekanos"))
    assert err.code == "E_CASE" and err.details["field"] == "platform" and "'ekanos'" in err.message


def test_case_of_a_tool_the_gem_lacks_is_refused(report_case: Any) -> None:
    err = refused(report_case, lambda c: c.update(tool="close_note"))  # not its folder's tool
    assert err.code == "E_CASE" and err.details["field"] == "tool" and "'close_note'" in err.message
    path, case = report_case
    gone = path.parents[1] / "removed_tool" / "x.json"
    gone.parent.mkdir()
    gone.write_text(json.dumps({**case, "tool": "removed_tool"}))
    with pytest.raises(workbench.WorkbenchError) as exc:
        replay_case(gone)
    assert exc.value.code == "E_CASE" and exc.value.details["field"] == "tool"
    assert "'removed_tool'" in exc.value.message and "write_report" in exc.value.message


def test_case_whose_input_no_longer_matches_the_schema_says_so(report_case: Any) -> None:
    path, case = report_case
    stale = path.with_name("stale.json")
    stale.write_text(json.dumps({**case, "input": {"inbox": 5}}))
    out = replay_case(stale)
    assert not out.ok and "inputSchema no longer accepts the pinned input" in out.report()
    assert "/inbox" in out.report()


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda c: c["call"].update(clock_ms=1e300), "call.clock_ms"),
        (lambda c: c["call"].update(clock_ms=-5), "call.clock_ms"),
        (lambda c: c["call"].update(started="yesterday"), "call.started"),
        (lambda c: c["call"].update(started=True), "call.started"),
        (lambda c: c["call"].update(duration_ms="abc"), "call.duration_ms"),
        (lambda c: c["call"].update(frozen="yes"), "call.frozen"),
        (lambda c: c["call"].update(call_id="../../x"), "call.call_id"),
        (lambda c: c["call"].update(call_id={"a": 1}), "call.call_id"),
        (lambda c: c["call"].update(idempotency_key=["k"]), "call.idempotency_key"),
        (lambda c: c["call"].update(seed=2**64), "call.seed"),
        (lambda c: c["call"].update(ids=-1), "call.ids"),
        (lambda c: c["options"].update(as_user={"id": 1}), "options.as_user"),
        (lambda c: c["options"].update(conversation=["../x"]), "options.conversation"),
        (lambda c: c.update(credentials={"acme": {"hosts": [1]}}), "credentials.acme"),
        (lambda c: c.update(credentials={"acme": {"hosts": ["a.example"], "paths": 5}}), "credentials.acme"),
        (lambda c: c.update(secrets=[""]), "secrets"),
        (lambda c: c.update(case=2), "case"),
        (lambda c: c.update(before=[]), "before"),
    ],
)
def test_SEC7_case_fields_of_the_wrong_kind_are_refused(report_case: Any, edit: Callable, field: str) -> None:
    err = refused(report_case, edit)
    assert err.code == "E_CASE" and err.details["field"] == field and field in err.message, err.message


# -- before: documents, kv and SQL (SEC1) -----------------------------------------------------
def test_case_documents_for_an_undeclared_collection_are_refused(report_case: Any) -> None:
    for name in ("secret", 'notes"; DROP TABLE documents; --', ""):
        err = refused(report_case, lambda c, n=name: c["before"].update(documents={n: {"a": {"x": 1}}}))
        assert err.code == "E_CASE" and "before: documents." in err.message and "declares" in err.message
    err = refused(report_case, lambda c: c["before"].update(documents={"notes": {"a": [1]}}))
    assert err.code == "E_CASE" and "before: documents.notes" in err.message


def test_case_kv_entries_are_checked(report_case: Any) -> None:
    err = refused(report_case, lambda c: c["before"].update(kv={"a": 1}))
    assert err.code == "E_CASE" and "before: kv" in err.message


@pytest.mark.parametrize(
    "table",
    [
        "other",
        'x"; DROP TABLE closed; --',
        'closed"; DROP TABLE closed; --',
        "sqlite_master",
        "sqlite_schema",
        "sqlite_sequence",
        "sqlite_stat1",
        "main.closed",
        "temp.closed",
    ],
)
def test_SEC1_case_sql_for_a_table_db_schema_does_not_make_is_refused(close_case: Any, table: str) -> None:
    err = refused(close_case, lambda c: c["before"].update(sql={table: {"rows": [{"name": "x", "seq": 1}]}}))
    assert err.code == "E_CASE" and f"before: sql.{table[:40]}" in err.message and "schema.sql" in err.message


def test_SEC1_case_sql_injection_in_column_names_is_refused(close_case: Any) -> None:
    col = 'note_id") VALUES (1); DROP TABLE closed; --'
    err = refused(close_case, lambda c: c["before"]["sql"]["closed"].update(rows=[{col: "a"}], rowids=[1]))
    assert err.code == "E_CASE" and "before: sql.closed.rows.0" in err.message and "columns" in err.message


def test_SEC1_case_sql_create_is_never_run(close_case: Any) -> None:
    """The case's `create` is the pinned table's, for reading: the replay's tables are
    db/schema.sql's, so a statement in it (ATTACH, a table of its own) never runs."""
    path, case = close_case
    case = copy.deepcopy(case)
    case["before"]["sql"]["closed"]["create"] = "CREATE TABLE evil(a); ATTACH DATABASE 'x.db' AS y"
    other = path.with_name("create.json")
    other.write_text(json.dumps(case))
    assert replay_case(other).ok


@pytest.mark.parametrize(
    "rowids",
    [["1"], [2**64], [True], [1.0], [None], "1", [1, 2]],
)
def test_case_sql_rowids_that_are_not_whole_numbers_one_per_row_are_refused(
    close_case: Any, rowids: Any
) -> None:
    err = refused(close_case, lambda c: c["before"]["sql"]["closed"].update(rowids=rowids))
    assert err.code == "E_CASE" and "before: sql.closed.rowids" in err.message


def test_case_sql_duplicate_rowids_are_refused(close_case: Any) -> None:
    row = {"note_id": "a", "closed_at": "b"}
    err = refused(close_case, lambda c: c["before"]["sql"]["closed"].update(rows=[row, row], rowids=[7, 7]))
    assert err.code == "E_CASE" and "before: sql.closed.rows.1" in err.message and "UNIQUE" in err.message


def test_case_sql_rows_without_rowids_and_bad_values(close_case: Any) -> None:
    path, case = close_case
    case = copy.deepcopy(case)
    del case["before"]["sql"]["closed"]["rowids"]  # a table WITHOUT ROWID's shape: no crash
    plain = path.with_name("plain.json")
    plain.write_text(json.dumps(case))
    replay_case(plain)
    for value, why in (({"base64": "!!!"}, "base64"), ({"base64": 5}, "base64"), (2**70, "SQLite refused")):
        err = refused(
            close_case,
            lambda c, v=value: c["before"]["sql"]["closed"].update(rows=[{"note_id": v}], rowids=[1]),
        )
        assert err.code == "E_CASE" and "before: sql.closed.rows.0" in err.message and why in err.message


# -- recorded HTTP answers (SEC5, SEC7) -------------------------------------------------------
GET = """
def handle(input, ctx):
    r = ctx.http.fetch("https://api.acme.example/v1/x")
    return {"status": r.status, "text": r.text()[:40]}
"""


@pytest.fixture
def http_case(tmp_path: Path, outside: Path) -> tuple[Path, dict[str, Any]]:
    root = tmp_path / "hgem"
    (root / "tools").mkdir(parents=True)
    (root / "tools" / "get.py").write_text(GET)
    (root / "manifest.json").write_text(json.dumps({
        "id": "t.http", "name": "H", "version": "0.1.0",
        "permissions": {"http": {"connections": {"acme": {"hosts": ["api.acme.example"]}}}},
        "tools": [{"name": "get", "file": "tools/get.py", "inputSchema": {"type": "object"}, "sideEffect": "read"}],
    }))  # fmt: skip
    handler = [{"match": "https://api.acme.example/", "respond": {"text": "hello", "headers": {"x-a": "1"}}}]
    with workbench.open(root, state_dir=tmp_path / "hstate", http=handler) as bench:
        path = bench.call("get", {}).raise_for_error().pin("base")
    assert replay_case(path).ok
    return path, json.loads(path.read_text("utf-8"))


def answer(**fields: Any) -> Callable[[dict[str, Any]], None]:
    def edit(case: dict[str, Any]) -> None:
        resp = case["http"][0]["response"]
        for k, v in fields.items():
            resp.pop("text" if k == "base64" else "", None)
            resp[k] = v

    return edit


def test_SEC5_recorded_http_body_over_http_body_bytes_is_E_TOO_LARGE(http_case: Any) -> None:
    path, case = http_case
    limit = Limits().http_body_bytes
    for body in ({"text": "x" * (limit + 1)}, {"base64": base64.b64encode(b"\0" * (limit + 1)).decode()}):
        big = copy.deepcopy(case)
        big["http"][0]["response"].pop("text")
        big["http"][0]["response"].update(body)
        evil = path.with_name("big.json")
        evil.write_text(json.dumps(big))
        out = replay_case(evil)
        assert not out.ok and out.result.error.code == "E_TOO_LARGE"
        assert "http_body_bytes" in out.result.error.message


@pytest.mark.parametrize("status", [999999, "200", None, -1, 0, 99, 600, 1.5, True, [200], 10**30])
def test_SEC7_recorded_http_status_that_is_not_a_status_is_refused(http_case: Any, status: Any) -> None:
    err = refused(http_case, answer(status=status))
    assert err.code == "E_CASE" and err.details["field"] == "http.0.response.status"
    assert "200 to 599" in err.message


@pytest.mark.parametrize(
    "fields, field",
    [
        ({"headers": [["a"]]}, "http.0.response.headers.0"),
        ({"headers": [["a", "b", "c"]]}, "http.0.response.headers.0"),
        ({"headers": [[{"a": 1}, "b"]]}, "http.0.response.headers.0"),
        ({"headers": [["x-a", "1\r\nSet-Cookie: a=b"]]}, "http.0.response.headers.0"),
        ({"headers": [["bad name", "1"]]}, "http.0.response.headers.0"),
        ({"headers": "x-a: 1"}, "http.0.response.headers"),
        ({"headers": {"x-a": "1"}}, "http.0.response.headers"),
        ({"base64": "!!!"}, "http.0.response.base64"),
        ({"base64": 5}, "http.0.response.base64"),
        ({"text": 5}, "http.0.response.text"),
        ({"statusText": {"a": 1}}, "http.0.response.statusText"),
    ],
)
def test_SEC7_recorded_http_answer_of_the_wrong_shape_is_refused(
    http_case: Any, fields: dict, field: str
) -> None:
    err = refused(http_case, answer(**fields))
    assert err.code == "E_CASE" and err.details["field"] == field and field in err.message


def test_SEC7_recorded_http_request_of_the_wrong_shape_is_refused(http_case: Any) -> None:
    for bad in (
        [1],
        [{"request": {"url": ["x"]}, "response": {}}],
        [{"request": {"url": "u", "method": 5}, "response": {}}],
    ):
        err = refused(http_case, lambda c, b=bad: c.update(http=b))
        assert err.code == "E_CASE" and err.details["field"] == "http.0"


# -- served answers (email, built-ins) ---------------------------------------------------------
SEARCH = "def handle(input, ctx):\n    return ctx.tools.web_search({'query': 'deno sandbox', 'count': 2})\n"


@pytest.fixture
def served_case(tmp_path: Path, outside: Path) -> tuple[Path, dict[str, Any]]:
    root = tmp_path / "agem"
    (root / "tools").mkdir(parents=True)
    (root / "fixtures").mkdir()
    (root / "tools" / "s.py").write_text(SEARCH)
    hit = {"title": "Deno", "url": "https://deno.example/", "snippet": "s"}
    (root / "fixtures" / "web_search.json").write_text(
        json.dumps([{"query": "deno sandbox", "results": [hit]}])
    )
    (root / "manifest.json").write_text(json.dumps({
        "platform": "agent", "id": "t.served", "name": "S", "version": "0.1.0",
        "agent": {"id": "a1", "name": "A"}, "builtins": ["web_search"],
        "tools": [{"name": "s", "file": "tools/s.py", "description": "d", "parameters": {"type": "object"}}],
    }))  # fmt: skip
    with workbench.open(root, state_dir=tmp_path / "astate") as bench:
        path = bench.call("s", {}).raise_for_error().pin("base")
    case = json.loads(path.read_text("utf-8"))
    assert case["served"][0]["method"] == "tools.web_search" and replay_case(path).ok
    return path, case


@pytest.mark.parametrize(
    "entry, field",
    [
        ("x", "served.0"),
        (1, "served.0"),
        ({"ok": True}, "served.0"),
        ({"method": ["tools.web_search"]}, "served.0"),
        ({"method": "tools.web_search", "ok": "no", "result": 1}, "served.0"),
        ({"method": "tools.web_search", "ok": False, "error": "boom"}, "served.0.error"),
        (
            {"method": "tools.web_search", "ok": False, "error": {"code": {"a": 1}, "message": "m"}},
            "served.0.error",
        ),
        (
            {
                "method": "tools.web_search",
                "ok": False,
                "error": {"code": "E_X\n\x1b[31mPWNED", "message": "m"},
            },
            "served.0.error",
        ),
        (
            {"method": "tools.web_search", "ok": False, "error": {"code": "E_X", "message": ["m"]}},
            "served.0.error",
        ),
    ],
)
def test_SEC7_served_entry_of_the_wrong_shape_is_refused(served_case: Any, entry: Any, field: str) -> None:
    err = refused(served_case, lambda c: c.update(served=[entry]))
    assert err.code == "E_CASE" and err.details["field"] == field and field in err.message


def test_served_error_is_raised_with_its_code_and_shown_terminal_safe(served_case: Any) -> None:
    path, case = served_case
    evil = path.with_name("err.json")
    bad = {"code": "E_MAILBOX", "message": "down \x1b[2J\x1b[31mred\u202e"}
    evil.write_text(
        json.dumps({**case, "served": [{"method": "tools.web_search", "ok": False, "error": bad}]})
    )
    out = replay_case(evil)
    assert not out.ok and "E_MAILBOX" in out.report()
    assert "\x1b" not in out.report() and "\u202e" not in out.report()


def test_SEC5_served_result_huge_or_deep_is_a_coded_error(served_case: Any) -> None:
    path, case = served_case
    huge = path.with_name("huge.json")
    huge.write_text(
        json.dumps(
            {**case, "served": [{"method": "tools.web_search", "ok": True, "result": "x" * 2_000_000}]}
        )
    )
    out = replay_case(huge)
    assert not out.ok and out.result.error.code == "E_RESULT_TOO_LARGE"
    deep = '{"served": [{"method": "tools.web_search", "result": ' + "[" * 10_000 + "]" * 10_000 + "}]}"
    err = refused(served_case, raw=deep.encode())
    assert err.code == "E_CASE" and "nests deeper than" in err.message


# -- secrets never reach a case (SEC4) ---------------------------------------------------------
def secret_forms(secret: str) -> dict[str, str]:
    """The forms of `secret` a case must not hold: as written, JSON-escaped, URL-encoded, hex,
    and base64 (standard and URL-safe, padded or not) at each alignment — for an offset, the
    characters that encode the secret's bytes alone (what any base64 holding it contains)."""
    raw = secret.encode()
    forms = {
        "plain": secret,
        "json": json.dumps(secret)[1:-1],
        "quote": urllib.parse.quote(secret, safe=""),
        "quote-slash": urllib.parse.quote(secret),
        "quote_plus": urllib.parse.quote_plus(secret),
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
    }
    for offset in (0, 1, 2):
        skip = (3 - offset) % 3  # the secret's bytes that share a group with the prefix's
        core = raw[skip:][: (len(raw) - skip) // 3 * 3]
        for alphabet, enc in (("std", base64.b64encode), ("url", base64.urlsafe_b64encode)):
            full = enc(b"x" * offset + raw).decode()
            forms[f"b64-{alphabet}-{offset}"] = full
            forms[f"b64-{alphabet}-{offset}-unpadded"] = full.rstrip("=")
            forms[f"b64-{alphabet}-{offset}-core"] = enc(core).decode()
    return forms


def assert_no_secret(text: str, secret: str) -> None:
    leaks = {k: f for k, f in secret_forms(secret).items() if f in text}
    assert not leaks, f"the case holds the secret as {sorted(leaks)}"


def test_secret_forms_finds_each_form() -> None:
    """The check itself can fail: each form it lists is found in a text holding it."""
    s = "s3cr3t-Token-XYZ"
    for name, form in secret_forms(s).items():
        with pytest.raises(AssertionError, match=name):
            assert_no_secret(f"... {form} ...", s)


SECRET = "s3cr3t-Token-XYZ"
ECHO = [
    {
        "match": "https://api.acme.example/",
        "respond": lambda req: {"json": {"auth": req.headers.get("Authorization")}},
    }
]
LEAK_JS = r"""
export default async function (input, ctx) {
  const r = await ctx.http.fetch("https://api.acme.example/v1/echo", { connection: "acme" });
  const tok = (await r.json()).auth.replace("Bearer ", "");
  const b = (s) => btoa(s);
  let hex = ""; for (const c of new TextEncoder().encode(tok)) hex += c.toString(16).padStart(2, "0");
  await ctx.http.fetch("https://api.acme.example/v1/q?t=" + tok + "&e=" + encodeURIComponent(tok + " /+"), { connection: "acme" });
  await ctx.http.fetch("https://api.acme.example/v1/p", { connection: "acme", method: "POST",
    body: JSON.stringify({ tok, b: b(tok), b1: b("x" + tok), b2: b("xx" + tok) }) });
  await ctx.files.write("workspace:leak.txt", [tok, b(tok), b("x" + tok), b("xx" + tok), hex].join(" "));
  await ctx.storage.kv.set("leak", JSON.stringify({ tok, j: JSON.stringify({ tok }), u: b("xx" + tok).replace(/[+]/g, "-").replace(/[/]/g, "_").replace(/=+$/, "") }));
  return { tok, b: b(tok), b1: b("x" + tok), b2: b("xx" + tok), hex, u: encodeURIComponent(tok), j: JSON.stringify({ tok }) };
}
"""
LEAK_PY = r"""
import base64, json, urllib.parse
def handle(input, ctx):
    r = ctx.http.fetch("https://api.acme.example/v1/echo", {"connection": "acme"})
    tok = r.json()["auth"].replace("Bearer ", "")
    forms = {
        "j3": json.dumps({"t": json.dumps({"t": json.dumps({"t": json.dumps({"t": tok})})})}),
        "uni": json.dumps({"t": tok}).replace("c", "\\u0063"),
        "b64j": base64.b64encode(json.dumps({"t": tok}).encode()).decode(),
        "qj": urllib.parse.quote(json.dumps({"t": tok})),
        "b64u1": base64.urlsafe_b64encode(("x" + tok).encode()).decode().rstrip("="),
    }
    for k, v in forms.items():
        ctx.storage.kv.set(k, v)
        ctx.files.write("workspace:" + k + ".txt", v)
    return forms
"""


def _leaky_gem(root: Path, name: str, source: str, ext: str) -> Path:
    (root / "tools").mkdir(parents=True)
    (root / "tools" / f"{name}.{ext}").write_text(source)
    (root / "manifest.json").write_text(json.dumps({
        "id": "t.leak", "name": "L", "version": "0.1.0",
        "permissions": {"http": {"connections": {"acme": {"hosts": ["api.acme.example"]}}}},
        "tools": [{"name": name, "file": f"tools/{name}.{ext}", "inputSchema": {"type": "object"}, "sideEffect": "write"}],
    }))  # fmt: skip
    return root


@pytest.mark.deno
def test_SEC4_a_pinned_notochord_js_call_holds_no_secret(
    tmp_path: Path, opened: Callable, outside: Path
) -> None:
    root = _leaky_gem(tmp_path / "leak", "leak", LEAK_JS, "js")
    creds = {"acme": {"token": SECRET, "hosts": ["api.acme.example"]}}
    bench = opened(root, credentials=creds, http=ECHO)
    res = bench.call("leak", {}).raise_for_error()
    assert res.value["tok"] == SECRET  # the tool did hold it, in every form
    text = res.pin("leak").read_text("utf-8")
    assert_no_secret(text, SECRET)
    case = json.loads(text)
    assert (
        case["before"] == {} and "***" in json.dumps(case["changes"]) and "***" in json.dumps(case["result"])
    )
    assert case["credentials"] == {"acme": {"hosts": ["api.acme.example"]}}  # the reach, never the value


@pytest.mark.parametrize("secret", [SECRET, 'ab"c\\d+e/f=='])
def test_SEC4_a_secret_nested_in_json_or_escaped_oddly_is_masked_in_a_case(
    tmp_path: Path, opened: Callable, secret: str
) -> None:
    root = _leaky_gem(tmp_path / "leak", "leak", LEAK_PY, "py")
    creds = {"acme": {"headers": {"Authorization": "Bearer " + secret}, "hosts": ["api.acme.example"]}}
    bench = opened(root, credentials=creds, http=ECHO)
    res = bench.call("leak", {}).raise_for_error()
    text = res.pin("leak").read_text("utf-8")
    assert_no_secret(text, secret)

    def decoded(v: Any, depth: int = 0) -> Iterator[str]:  # every string, JSON inside read too
        if isinstance(v, dict):
            for k, x in v.items():
                yield k
                yield from decoded(x, depth)
        elif isinstance(v, list):
            for x in v:
                yield from decoded(x, depth)
        elif isinstance(v, str):
            yield v
            yield urllib.parse.unquote(v)
            try:
                yield base64.b64decode(v, validate=True).decode("utf-8", "replace")
            except ValueError:
                pass
            if depth < 8 and v[:1] in '{["':
                try:
                    yield from decoded(json.loads(v), depth + 1)
                except ValueError:
                    pass

    held = [s for s in decoded(json.loads(text)) if secret in s]
    assert not held, f"a string of the case decodes to the secret: {held[0][:80]!r}"


@pytest.mark.deno
def test_SEC4_a_pinned_ekanos_call_holds_no_secret(tmp_path: Path, opened: Callable, outside: Path) -> None:
    from test_ekanos import integration, tool

    run = """
      const k = await ctx.secrets.get('API_KEY');
      const b = (s) => btoa(s);
      let hex = ''; for (const c of new TextEncoder().encode(k)) hex += c.toString(16).padStart(2, '0');
      await ctx.fetch('https://api.demo.example/v1?key=' + k + '&e=' + encodeURIComponent(k));
      await ctx.fetch('https://api.demo.example/v1/p', { method: 'POST', body: JSON.stringify({ k, b: b(k), b2: b('xx' + k) }) });
      ctx.logger.info({ k }, 'using ' + k);
      return { k, b: b(k), b1: b('x' + k), b2: b('xx' + k), hex, j: JSON.stringify({ k }) };"""
    root = integration(tmp_path / "i", tool("leak", run))
    handlers = [{"match": "https://api.demo.example/", "respond": {"json": {"ok": True}}}]
    bench = opened(root, secrets={"API_KEY": SECRET}, fetch_handlers=handlers)
    res = bench.call("leak").raise_for_error()
    assert res.value["k"] == SECRET
    text = res.pin("leak").read_text("utf-8")
    assert_no_secret(text, SECRET)
    assert json.loads(text)["secrets"] == ["API_KEY"]  # its name, for a stand-in, never its value


# -- res.pin's name and where it writes (SEC2) -------------------------------------------------
@pytest.mark.parametrize(
    "name",
    ["../x", "a/b", "a\\b", "", "x" * 1000, ".hidden", "..", "con", "NUL.txt", "com1", "a\x00b", "a\n", "é"],
)
def test_SEC2_pin_name_that_is_not_a_plain_file_name_is_refused(
    notes: Path, tmp_path: Path, name: str
) -> None:
    with workbench.open(notes, state_dir=tmp_path / "state") as bench:
        res = bench.call("list_notes", {})
        with pytest.raises(workbench.UsageError) as err:
            res.pin(name)
    assert "pin name" in err.value.message
    assert not (notes / "tests").exists() and not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("linked", ["tests", "tests/calls", "tests/calls/list_notes"])
def test_SEC2_pin_through_a_linked_calls_folder_is_refused(
    notes: Path, tmp_path: Path, outside: Path, linked: str
) -> None:
    """The gem refuses a link leading outside at open (lint); one made after, before the pin,
    is refused by the pin, before any folder is made through it."""
    target = outside / "elsewhere"
    target.mkdir()
    with workbench.open(notes, state_dir=tmp_path / "state") as bench:
        res = bench.call("list_notes", {})
        link = notes / linked
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, link)
        before = _tree(outside)
        with pytest.raises(workbench.WorkbenchError) as err:
            res.pin("x")
    assert err.value.code == "E_PATH" and str(link) in err.value.message
    assert _tree(outside) == before and not any(target.iterdir())
    target.rmdir()  # so the `outside` fixture sees it as it was


def test_SEC2_pin_over_a_folder_named_like_the_case_is_a_coded_error(notes: Path, tmp_path: Path) -> None:
    (notes / "tests" / "calls" / "list_notes" / "x.json").mkdir(parents=True)
    with workbench.open(notes, state_dir=tmp_path / "state") as bench:
        res = bench.call("list_notes", {})
        with pytest.raises(workbench.WorkbenchError) as err:
            res.pin("x")
    assert err.value.code == "E_PATH" and "x.json" in err.value.message
    assert [p.name for p in (notes / "tests" / "calls" / "list_notes").iterdir()] == [
        "x.json"
    ]  # no temp left


def test_SEC4_a_secret_the_mask_cannot_hide_in_place_refuses_the_pin(notes: Path, tmp_path: Path) -> None:
    """A secret that matches the case text's own syntax (here `": "`) cannot be masked without
    breaking the JSON: the pin is refused, E_SECRET naming the line, and nothing is written."""
    manifest = json.loads((notes / "manifest.json").read_text())
    manifest["permissions"] = {"http": {"connections": {"acme": {"hosts": ["api.acme.example"]}}}}
    (notes / "manifest.json").write_text(json.dumps(manifest))
    creds = {"acme": {"headers": {"X-Key": '": "'}, "hosts": ["api.acme.example"]}}
    with workbench.open(notes, state_dir=tmp_path / "state", credentials=creds) as bench:
        res = bench.call("list_notes", {})
        with pytest.raises(workbench.WorkbenchError) as err:
            res.pin("x")
    assert err.value.code == "E_SECRET" and "line" in err.value.message and err.value.details["line"] > 0
    assert not (notes / "tests").exists()


# -- any tool name the manifest accepts can be pinned (SEC2: one naming rule) -----------------
#: tool names Notochord's manifest takes that no plain file name is: a leading '_', Windows'
#: device names in any case, and the workbench's own folder of tests/calls
ODD_TOOLS = {"_x": "__x", "con": "_con", "CON": "_CON", "nul": "_nul", "com1": "_com1", "doctor": "_doctor"}
ECHO_PY = "def handle(input, ctx):\n    return {'tool': input.get('t')}\n"
ECHO_JS = "export default async function (input, ctx) { return { tool: input.t ?? null }; }\n"


def _odd_gem(root: Path, ext: str) -> Path:
    (root / "tools").mkdir(parents=True)
    tools = []
    for i, name in enumerate(ODD_TOOLS):
        (root / "tools" / f"t{i}.{ext}").write_text(ECHO_PY if ext == "py" else ECHO_JS)
        tools.append(
            {
                "name": name,
                "file": f"tools/t{i}.{ext}",
                "inputSchema": {"type": "object"},
                "sideEffect": "read",
            }
        )
    (root / "manifest.json").write_text(
        json.dumps({"id": "t.odd", "name": "O", "version": "0.1.0", "tools": tools})
    )
    return root


@pytest.mark.parametrize("ext", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_SEC2_a_tool_name_the_manifest_accepts_is_pinned_in_an_escaped_folder_and_replays(
    tmp_path: Path, outside: Path, ext: str
) -> None:
    """`_x`, `con`, `CON` (…) were refused by the pin's file-name rule though the manifest took
    them; now each gets its own folder (case_folder), which no other tool's can be, and the
    replay finds the case back there."""
    root = _odd_gem(tmp_path / "odd", ext)
    with workbench.open(root, state_dir=tmp_path / "state") as bench:
        paths = {name: bench.call(name, {"t": name}).raise_for_error().pin("first") for name in ODD_TOOLS}
    assert {n: p.parent.name for n, p in paths.items()} == ODD_TOOLS
    assert all(p.parent.parent == root / "tests" / "calls" for p in paths.values())
    for name, path in paths.items():
        assert json.loads(path.read_text())["tool"] == name
        out = replay_case(path)
        assert out.ok, out.report()
    moved = root / "tests" / "calls" / "_con" / "first.json"  # a case in another tool's folder
    shutil.copy(paths["CON"], moved)
    with pytest.raises(workbench.WorkbenchError) as err:
        replay_case(moved)
    assert err.value.code == "E_CASE" and err.value.details["field"] == "tool"


def test_SEC2_case_folder_is_one_to_one_and_never_a_device_or_plain_name() -> None:
    from workbench.gem.names import case_folder, reserved
    from workbench.pins.replay import calls_folder_of
    from workbench.testing.pinitems import is_case_file

    names = [*ODD_TOOLS, "add_note", "a.b", "Con.txt", "a.", "x" * 300, "y" * 300, "é", "a/b", "", "_" * 99]
    folders = [case_folder(n) for n in names]
    assert len(set(folders)) == len(names)  # one-to-one
    safe = re.compile(r"(?!.*\.\.)[A-Za-z0-9_][A-Za-z0-9._-]{0,99}")
    assert [f for f in folders if not safe.fullmatch(f) or reserved(f)] == []
    assert [(n, f) for n, f in zip(names, folders) if not f.startswith("_") and f != n] == []  # plain: itself
    assert case_folder("add_note") == "add_note" and case_folder("a.b") == "a.b"  # existing cases stay put
    for f in folders:  # collection and replay both take a case (and a doctor's case) in each folder
        for rel in (f"g/tests/calls/{f}/a.json", f"g/tests/calls/doctor/{f}/N7.json"):
            assert is_case_file(Path(rel)) and calls_folder_of(Path(rel)) == Path("g")


def test_SEC2_gem_workbench_test_collects_and_replays_cases_of_odd_tool_names(tmp_path: Path) -> None:
    from test_pins_cli import cli

    root = _odd_gem(tmp_path / "odd", "py")
    with workbench.open(root, state_dir=tmp_path / "state") as bench:
        for name in ("_x", "CON"):
            bench.call(name, {"t": name}).raise_for_error().pin("first")
    out = cli("test", str(root), cwd=tmp_path)
    assert out.returncode == 0 and "2 passed" in out.stdout, out.stdout[-3000:]
    assert "tests/calls/__x/first.json ." in out.stdout and "tests/calls/_CON/first.json ." in out.stdout


def test_SEC2_the_doctor_writes_a_case_for_a_tool_named_like_a_device_and_it_replays(tmp_path: Path) -> None:
    """The doctor writes its findings through the same case folder rule: a tool `con` that throws gets tests/calls/doctor/_con/throw.json (a UsageError before), and the replay
    reads it back as a finding that still occurs, not as a misplaced case."""
    root = tmp_path / "odd"
    (root / "tools").mkdir(parents=True)
    (root / "tools" / "t.py").write_text("def handle(input, ctx):\n    raise ValueError('always')\n")
    name = "con"
    tool = {"name": name, "file": "tools/t.py", "inputSchema": {"type": "object"}, "sideEffect": "read"}
    (root / "manifest.json").write_text(
        json.dumps({"id": "t.odd", "name": "O", "version": "0.1.0", "tools": [tool]})
    )
    with workbench.open(root, state_dir=tmp_path / "state") as bench:
        report = bench.doctor(tool=name, examples=5, seconds=60, seed=1)
    cases = [f.case for f in report.findings if f.case is not None]
    assert cases and {c.parent for c in cases} == {root / "tests" / "calls" / "doctor" / ODD_TOOLS[name]}
    out = replay_case(cases[0])
    assert not out.ok and "still occurs" in out.report()
