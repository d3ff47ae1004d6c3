"""Pinned calls (issue 29 points 1-3): `res.pin(name)` keeps a call with the state it reached,
its effects and its result as `tests/calls/<tool>/<name>.json`; a replay on a fresh mock bench
serves the recorded answers back and reports what differs, expected vs got."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from workbench import UsageError, WorkbenchError
from workbench.pins.replay import load_case
from workbench.platforms.base import Limits
from workbench.testing import replay_case

GEMS = Path(__file__).resolve().parent.parent / "notebooks" / "gems"


def copy_gem(tmp_path: Path, name: str) -> Path:
    dest = tmp_path / name
    shutil.copytree(GEMS / name, dest, ignore=shutil.ignore_patterns(".gem-workbench", "calls"))
    return dest


@pytest.fixture
def notes_copy(tmp_path: Path) -> Path:
    return copy_gem(tmp_path, "notes")


def test_pin_writes_one_readable_case(notes_copy: Path, opened) -> None:
    bench = opened(notes_copy)
    added = bench.call("add_note", {"title": "milk", "priority": 2})
    path = added.pin("first")
    assert path == notes_copy / "tests" / "calls" / "add_note" / "first.json"
    text = path.read_text(encoding="utf-8")
    case = json.loads(text)
    assert text.startswith("{\n") and text.endswith("}\n")  # indented: a diff shows lines
    assert case["tool"] == "add_note" and case["input"] == {"title": "milk", "priority": 2}
    assert case["gem"] == "acme.notes" and case["platform"] == "notochord"
    assert case["options"]["providers"] == {"files": "mock", "storage": "mock"}
    assert case["result"] == {"ok": True, "value": added.value, "error": None}
    assert case["before"] == {"documents": {"notes": {}}}  # what it reached: the empty collection
    [change] = case["changes"]
    assert change["kind"] == "document" and change["key"] == added.value["id"] and change["change"] == "added"
    assert [e["method"] for e in case["effects"]] == ["data.insert"]


def test_case_keeps_only_what_the_call_reached(notes_copy: Path, opened) -> None:
    bench = opened(notes_copy)
    a = bench.call("add_note", {"title": "a"}).value["id"]
    bench.call("count_views")  # kv, which close_note never reaches
    closed = bench.call("close_note", {"id": a})
    case = json.loads(closed.pin("close").read_text())
    assert set(case["before"]) == {"documents", "sql"}  # not kv, not the workspace's files
    assert list(case["before"]["documents"]["notes"]) == [a]
    assert case["before"]["sql"]["closed"]["rows"] == []
    kinds = sorted((c["kind"], c["change"]) for c in case["changes"])
    assert kinds == [("document", "changed"), ("sql", "added")]


def test_pinned_calls_replay_on_a_fresh_mock_bench(notes_copy: Path, open_bench, kind: str) -> None:
    """Pinned on mock or real providers, each replays on mocks, passing."""
    bench = open_bench(notes_copy)
    a = bench.call("add_note", {"title": "a", "tags": ["x"]})
    a.pin("add")
    bench.call("close_note", {"id": a.value["id"]}).pin("close")  # SQL DEFAULT strftime('now')
    bench.call("list_notes", {}).pin("list")
    bench.call("write_report", {}).pin("report")  # files in the conversation folder
    bench.call("count_views").pin("views")  # kv (and its D4 violation)
    cases = sorted((notes_copy / "tests" / "calls").rglob("*.json"))
    assert len(cases) == 5
    for path in cases:
        out = replay_case(path)
        assert out.ok, out.report()
        assert out.result.call_id == load_case(path)["call"]["call_id"]
    assert json.loads((notes_copy / "tests/calls/add_note/add.json").read_text())["options"]["providers"] == {
        "files": kind,
        "storage": kind,
    }


def test_a_changed_tool_fails_its_replay_with_a_diff(notes_copy: Path, opened) -> None:
    bench = opened(notes_copy)
    a = bench.call("add_note", {"title": "a", "priority": 3})
    path = a.pin("add")
    tool = notes_copy / "tools" / "add_note.py"
    tool.write_text(
        tool.read_text().replace(
            "return await notes.insert(doc)", 'return {**await notes.insert(doc), "ok": True}'
        )
    )
    out = replay_case(path)
    assert not out.ok
    assert "value.ok: expected nothing, got true" in out.lines
    assert out.report().splitlines()[0].endswith("the pinned call of add_note replayed otherwise")
    # and what it stored
    tool.write_text(tool.read_text().replace('input.get("priority", 3)', "5"))
    lines = replay_case(path).lines
    assert any(
        line.startswith("changes: document notes:") and "after.priority: expected 3, got 5" in line
        for line in lines
    ), lines


def test_update_pins_writes_the_case_again(notes_copy: Path, opened) -> None:
    bench = opened(notes_copy)
    path = bench.call("add_note", {"title": "a"}).pin("add")
    tool = notes_copy / "tools" / "add_note.py"
    tool.write_text(
        tool.read_text().replace(
            "return await notes.insert(doc)", 'return {**await notes.insert(doc), "ok": True}'
        )
    )
    before = path.read_text()
    out = replay_case(path, update=True)
    assert out.updated and path.read_text() != before
    assert json.loads(path.read_text())["result"]["value"]["ok"] is True
    assert replay_case(path).ok


def test_a_schema_that_no_longer_accepts_the_input_says_so(notes_copy: Path, opened) -> None:
    bench = opened(notes_copy)
    path = bench.call("add_note", {"title": "a", "priority": 2}).pin("add")
    manifest = notes_copy / "manifest.json"
    m = json.loads(manifest.read_text())
    m["tools"][0]["inputSchema"]["properties"]["priority"]["maximum"] = 1
    manifest.write_text(json.dumps(m))
    [line] = replay_case(path).lines
    assert (
        line.startswith("the tool's inputSchema no longer accepts the pinned input") and "/priority" in line
    )


def test_a_refused_input_can_be_pinned_too(notes_copy: Path, opened) -> None:
    bench = opened(notes_copy)
    bad = bench.call("add_note", {"title": 3})
    case = json.loads(bad.pin("bad").read_text())
    assert case["result"]["error"]["code"] == "E_SCHEMA" and case["effects"] == []
    assert replay_case(notes_copy / "tests/calls/add_note/bad.json").ok


def test_only_the_latest_top_level_call_can_be_pinned(notes_copy: Path, opened) -> None:
    bench = opened(notes_copy)
    first = bench.call("add_note", {"title": "a"})
    bench.call("list_notes", {})
    with pytest.raises(UsageError, match="only the bench's latest call"):
        first.pin("late")
    crashed = bench.call("add_note", {"title": "b"}, crash=1)
    with pytest.raises(UsageError, match="crash="):
        crashed.pin("crashed")
    with pytest.raises(UsageError, match="pin name"):
        bench.call("list_notes", {}).pin("../x")
    assert not (notes_copy / "tests").exists()


def test_a_bench_opened_without_pins_cannot_pin(notes_copy: Path, opened) -> None:
    bench = opened(notes_copy, pins=False)
    with pytest.raises(UsageError, match="pins=False"):
        bench.call("add_note", {"title": "a"}).pin("x")


def test_state_over_the_limit_is_not_copied_and_says_so(notes_copy: Path, opened) -> None:
    bench = opened(notes_copy, limits=Limits(pin_state_bytes=200))
    for i in range(5):
        bench.call("add_note", {"title": f"note {i} " + "x" * 40})
    res = bench.call("list_notes", {})
    assert res.ok  # the call itself is not affected
    with pytest.raises(WorkbenchError) as err:
        res.pin("big")
    assert err.value.code == "E_TOO_LARGE" and "pin_state_bytes (200 bytes)" in err.value.message
    assert "collection 'notes'" in err.value.message


def test_sql_now_follows_the_bench_clock(notes_copy: Path, opened) -> None:
    bench = opened(notes_copy, clock="2026-03-01T12:00:00Z")
    a = bench.call("add_note", {"title": "a"}).value["id"]
    bench.call("close_note", {"id": a})
    assert bench.sql("select closed_at from closed")["closed_at"].tolist() == ["2026-03-01T12:00:00.000Z"]
    bench.clock.advance("1d")
    rows = bench.sql("select date('now') d, datetime() t, strftime('%s') s, date('2020-01-01', '+1 day') o")
    assert rows.iloc[0].tolist() == ["2026-03-02", "2026-03-02 12:00:00", "1772452800", "2020-01-02"]


JS_DRAWS = """
export default async function (input, ctx) {
  const { id } = await ctx.data.collection('notes').insert({ title: input.title });
  return {
    id,
    now: Date.now(),
    iso: new Date().toISOString(),
    random: Math.random(),
    uuid: crypto.randomUUID(),
    key: ctx.idempotencyKey,
  };
}
"""


@pytest.mark.deno
def test_a_seeded_js_call_replays_identical_ids_and_times(gem, opened) -> None:
    gem.tool("draw", JS_DRAWS, ext="js").collections(notes=[])
    bench = opened(gem, seed=7, clock="2026-01-05T09:00:00Z")
    res = bench.call("draw", {"title": "a"})
    assert res.ok, res.error
    path = res.pin("draws")
    out = replay_case(path)
    assert out.ok, out.report()
    assert out.result.value == res.value  # every draw and time, the document id included
    assert res.value["iso"] == "2026-01-05T09:00:00.000Z"


@pytest.mark.deno
def test_an_unseeded_call_still_replays_its_document_ids(gem, opened) -> None:
    gem.tool(
        "draw",
        JS_DRAWS.replace("random: Math.random(),", "").replace("uuid: crypto.randomUUID(),", ""),
        ext="js",
    )
    gem.collections(notes=[])
    bench = opened(gem)
    res = bench.call("draw", {"title": "a"})
    out = replay_case(res.pin("draws"))
    assert out.ok, out.report()  # its id and key repeat; its times fall in each call's span
    assert out.result.value["id"] == res.value["id"]


FETCH_JS = """
export default async function (input, ctx) {
  const r = await ctx.http.fetch(input.url, { connection: 'acme' });
  const body = await r.json();
  await ctx.storage.kv.set('last', String(body.n));
  return { status: r.status, n: body.n, denied: r.credentialDenied ?? null };
}
"""


@pytest.mark.deno
def test_http_answers_are_served_back_and_a_new_request_is_named(gem, opened) -> None:
    gem.tool("get", FETCH_JS, ext="js")
    gem.manifest["permissions"] = {
        "http": {"connections": {"acme": {"hosts": ["api.acme.example"], "paths": ["/v1/"]}}}
    }
    handlers = [{"match": "https://api.acme.example/v1/n", "respond": {"status": 200, "json": {"n": 41}}}]
    creds = {"acme": {"token": "tok-Secret-98765", "hosts": ["api.acme.example"]}}
    bench = opened(gem, http=handlers, credentials=creds)
    res = bench.call("get", {"url": "https://api.acme.example/v1/n"})
    assert res.value == {"status": 200, "n": 41, "denied": None}
    path = res.pin("n")
    case = json.loads(path.read_text())
    assert case["http"][0]["request"] == {"method": "GET", "url": "https://api.acme.example/v1/n"}
    assert case["credentials"] == {"acme": {"hosts": ["api.acme.example"]}}  # where, never the token
    assert "tok-Secret-98765" not in path.read_text()
    out = replay_case(path)  # no handlers, no credentials on the replay's bench: served, stand-ins
    assert out.ok, out.report()
    tool = gem.root / "tools" / "get.js"
    tool.write_text(tool.read_text().replace("input.url", "input.url + '?page=2'"))
    lines = replay_case(path).lines
    assert any(
        "GET https://api.acme.example/v1/n?page=2 is not in the pinned case" in line for line in lines
    ), lines
    assert "http: the pinned call made GET https://api.acme.example/v1/n; the replay did not" in lines


@pytest.mark.deno
def test_mailbox_pages_are_served_back(tmp_path: Path, opened) -> None:
    gem = copy_gem(tmp_path, "mail-digest")
    bench = opened(gem)
    bench.email.allow("all")
    res = bench.call("digest")
    assert res.ok and res.value["processed"] > 0
    case = json.loads(res.pin("first").read_text())
    assert [e["method"] for e in case["served"]][:2] == ["email.listSince", "email.getMessage"]
    (gem / "fixtures" / "mailbox.json").write_text("[]")  # the replay's own mailbox is empty
    out = replay_case(gem / "tests/calls/digest/first.json")
    assert out.ok, out.report()
    assert out.result.value == res.value


@pytest.mark.deno
def test_an_agent_tools_built_ins_are_served_back(tmp_path: Path, opened) -> None:
    gem = copy_gem(tmp_path, "agent-research")
    bench = opened(gem)
    bench.allow_recipients("*@example.com")
    res = bench.call("research", {"topic": "deno", "email": "me@example.com", "domain": "deno.com"})
    assert res.ok, res.error
    path = res.pin("mail")
    case = json.loads(path.read_text())
    assert [e["method"] for e in case["served"]] == ["tools.web_search", "tools.send_email"]
    out = replay_case(path)  # no recipient allowed on the replay's bench: the answer is served
    assert out.ok, out.report()
    assert out.result.value == res.value  # the same message id


@pytest.mark.deno
def test_an_ekanos_secret_is_a_stand_in_on_replay(tmp_path: Path, opened) -> None:
    gem = copy_gem(tmp_path, "acme-payments")
    payments = {"payments": [{"id": "pay_1", "amount": 5.0, "status": "completed"}]}
    handler = {"match": "https://api.acme.example/v1/payments", "respond": {"status": 200, "json": payments}}
    bench = opened(gem, secrets={"api_key": "sk_live_Very-Secret-1"}, fetch_handlers=[handler])
    res = bench.call("acme_payments_list_recent_payments", {"limit": 3})
    assert res.value == payments, res.error
    path = res.pin("recent")
    text = path.read_text()
    assert "sk_live_Very-Secret-1" not in text and json.loads(text)["secrets"] == ["api_key"]
    out = replay_case(path)
    assert out.ok, out.report()


@pytest.mark.parametrize(
    "rel",
    [
        "g/tests/calls/add_note/a.json",
        "g/tests/calls/doctor/add_note/N7.json",
        "g/tests/calls/add_note/a.txt",
        "g/tests/calls/a.json",
        "g/tests/calls/other/add_note/a.json",
        "g/tests/x/add_note/a.json",
        "tests/calls/t/a.json",
    ],
)
def test_collection_and_replay_agree_on_where_cases_live(tmp_path: Path, rel: str) -> None:
    from workbench.pins.replay import calls_folder_of
    from workbench.testing.pinitems import is_case_file

    path = tmp_path / rel
    assert is_case_file(path) == (calls_folder_of(path) is not None)
