"""Email-cursor replay: replay_run finds lost and twice-processed mail; the widget from Python."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import GemBuilder

import workbench
from workbench.bench.email_replay import Replayer
from workbench.bench.result import TRACE_COLUMNS, CallResult
from workbench.inspect.replay_cursor import behind, cursor_point, trace_listed, trace_reads, when
from workbench.jupyter.replay import ReplayView

MAIL_DIGEST = Path(__file__).resolve().parent.parent / "notebooks" / "gems" / "mail-digest"
FIXTURE = MAIL_DIGEST / "fixtures" / "mailbox.json"
BOUNDARY = 1709546760000  # four messages share this date: h07, h08 | w13, w14 across page 1's end
LAST = 1709550180000  # the newest fixture message (w19)
READ = {"email": {"read": True}}

# the seed's JS example, line for line, in Python
SEED_PY = """
def handle(input, ctx):
    since = int(ctx.storage.kv.get("cursor") or 0)
    page = ctx.email.listSince({"since": since, "limit": input.get("limit", 20)})
    for m in page["messages"]:
        ctx.email.getMessage({"accountId": m["accountId"], "id": m["id"]})
    ctx.storage.kv.set("cursor", str(page["cursor"]))
    return {"processed": len(page["messages"])}
"""

# envelopes only: what listSince returned is what it processed
LIST_ONLY = """
def handle(input, ctx):
    page = ctx.email.listSince(since=float(ctx.storage.kv.get("cursor") or 0), limit=20)
    ctx.storage.kv.set("cursor", str(page["cursor"]))
    return [m["subject"] for m in page["messages"]]
"""

# reads with keyword arguments
KW_READER = """
def handle(input, ctx):
    for m in ctx.email.listSince(limit=5)["messages"]:
        ctx.email.getMessage(accountId=m["accountId"], id=m["id"])
"""


# what the trace keeps of each ctx call
TRACED = """
def handle(input, ctx):
    page = ctx.email.listSince({"since": -1.5, "limit": 2, "accountId": None})
    first = page["messages"][0]
    ctx.email.getMessage({"accountId": first["accountId"]}, id=first["id"])
    ctx.storage.kv.set("big", "x" * 70_000)
    loop = []
    loop.append(loop)
    for bad in (lambda: ctx.storage.kv.set("loop", loop),
                lambda: ctx.email.getMessage({"accountId": "work", "id": "nope"})):
        try:
            bad()
        except Exception:
            pass
"""


@pytest.fixture
def py_bench(gem: GemBuilder) -> Iterator[workbench.Bench]:
    """The fixture mailbox of mail-digest under a Python copy of the seed tool (no Deno)."""
    gem.manifest["permissions"] = READ
    gem.tool(
        "seed",
        SEED_PY,
        permissions=READ,
        schema={"type": "object", "properties": {"limit": {"type": "integer"}}},
    )
    gem.tool("list_only", LIST_ONLY, permissions=READ)
    gem.tool("kw_reader", KW_READER, permissions=READ)
    gem.tool("traced", TRACED, permissions=READ)
    with workbench.open(gem.write(), mailbox=FIXTURE) as bench:
        bench.email.allow("all")
        yield bench


@pytest.fixture
def digest() -> Iterator[workbench.Bench]:
    """The example gem: the seed's JS tool unmodified, and digest_fixed."""
    with workbench.open(MAIL_DIGEST) as bench:
        bench.email.allow("all")
        yield bench


def same_date(n: int, date: int, account: str = "work", tag: str = "same") -> list[dict[str, Any]]:
    return [{"accountId": account, "subject": f"{tag} {i}", "date": date} for i in range(n)]


# -- replay_run --------------------------------------------------------------------------------
@pytest.mark.deno
def test_seed_js_tool_loses_the_messages_sharing_the_boundary_date(digest: workbench.Bench) -> None:
    df = digest.email.replay_run("digest")
    lost = df[df["lost"]]
    assert list(lost["id"]) == ["w13", "w14"]
    assert set(lost["reason"]) == {"boundary"} and set(lost["status"]) == {"never"}
    assert (lost["date_ms"] == BOUNDARY).all()
    assert list(df.columns[:4]) == ["accountId", "id", "subject", "date"]
    assert len(df) == 30 and (df[~df["lost"]]["status"] == "once").all()
    # h07 and h08 (same date) were read at call 1, the rest of the mail at call 2
    assert df.set_index("id").loc[["h07", "h08", "h09"], "steps"].tolist() == [[1], [1], [2]]
    steps = df.attrs["steps"]
    assert [s["step"] for s in steps] == [1, 2, 3]  # call 3 processed nothing new: stop
    assert [s["cursor_after"] for s in steps] == [str(BOUNDARY), str(LAST), str(LAST)]
    [warning] = df.attrs["warnings"]
    assert warning.startswith(
        "2 messages were never processed: “Re: Lunch on Thursday?” "
        "(work/w13, 2024-03-04 10:06:00 UTC), “New login from Firefox”"
    )
    assert "strictly newer than `since`" in warning and "page boundary" in warning
    assert "Fix:" in warning and "dedupe by (accountId, id)" in warning
    assert digest.kv().set_index("key").loc["cursor", "value"] == str(LAST)
    assert len(digest.calls()) == 3  # every replayed call is a normal call


@pytest.mark.deno
def test_fixed_js_tool_processes_every_message_exactly_once(digest: workbench.Bench) -> None:
    later = LAST + 60_000
    df = digest.email.replay_run(
        "digest_fixed",
        cursor_key="safe_cursor",
        arrivals={2: same_date(25, BOUNDARY, tag="late"), 3: same_date(45, later)},
    )
    # the 25 "late" ones arrive at an already-read date, which the fixed cursor re-reads
    assert len(df) == 30 + 25 + 45
    assert (df["status"] == "once").all() and not df["lost"].any(), df.attrs["warnings"]
    assert df.attrs["warnings"] == []


def test_equal_timestamp_arrivals_across_a_page_boundary(py_bench: workbench.Bench) -> None:
    news = LAST + 60_000
    df = py_bench.email.replay_run("seed", arrivals={2: same_date(22, news, "home")})
    lost = df[df["lost"]]
    # call 2: the 8 older ones + 12 of the 22 sharing one date; the other 10 are behind the cursor
    assert len(lost) == 2 + 10 and set(lost["reason"]) == {"boundary"}
    assert (lost[lost["date_ms"] == news]["accountId"] == "home").all()
    assert df[df["date_ms"] == news]["status"].value_counts().to_dict() == {"never": 10, "once": 12}
    assert (df[df["date_ms"] == news]["arrived"] == 1).all()  # arrived after one call
    [warning] = df.attrs["warnings"]
    assert warning.startswith("12 messages were never processed") and "and 2 more" in warning


def test_an_explicit_number_of_steps(py_bench: workbench.Bench) -> None:
    df = py_bench.email.replay_run("seed", steps=1)
    assert df["status"].value_counts().to_dict() == {"once": 20, "never": 10}
    assert df["lost"].sum() == 2  # the cursor is past w13 and w14 already
    assert len(df.attrs["steps"]) == 1
    assert py_bench.email.replay_run("seed", steps=0).attrs["steps"] == []


def test_rewinding_the_cursor_processes_mail_twice(py_bench: workbench.Bench) -> None:
    df = py_bench.email.replay_run("seed", rewinds={3: None})
    assert (df[~df["lost"]]["processed"] == 2).all()
    assert set(df[~df["lost"]]["status"]) == {"twice+"}
    assert df.set_index("id").loc["w01", "steps"] == [1, 3]
    kinds = [s["kind"] for s in df.attrs["steps"]]
    assert kinds == ["call", "call", "rewind", "call", "call", "call"]
    twice = next(w for w in df.attrs["warnings"] if "more than once" in w)
    assert twice.startswith("28 messages were processed more than once")
    assert "the cursor was rewound (cursor set to none before call 3)" in twice


def test_a_rewind_before_a_lost_message_makes_it_readable_again(py_bench: workbench.Bench) -> None:
    r = Replayer(py_bench, "seed")
    r.run()
    assert r.frame()["lost"].sum() == 2
    r.rewind(BOUNDARY - 1)  # just before the shared date: w13 and w14 are ahead again
    assert r.frame()["lost"].sum() == 0
    r.step()
    df = r.frame()
    assert df.set_index("id").loc[["w13", "w14"], "status"].tolist() == ["once", "once"]
    assert df.set_index("id").loc["h07", "status"] == "twice+"


def test_mail_arriving_at_or_before_the_cursor_is_lost_as_late(py_bench: workbench.Bench) -> None:
    late = {"accountId": "work", "subject": "delayed", "date": BOUNDARY - 5}
    df = py_bench.email.replay_run("seed", arrivals={2: [late]})
    row = df.set_index("subject").loc["delayed"]
    assert row["lost"] and row["reason"] == "late" and row["arrived"] == 1
    late_warning = next(w for w in df.attrs["warnings"] if "delayed" in w)
    assert late_warning.startswith("1 message was never processed: “delayed”")
    assert "email.onNewMessage" in late_warning


def test_a_tool_without_getMessage_processes_what_it_listed(py_bench: workbench.Bench) -> None:
    df = py_bench.email.replay_run("list_only")
    assert df["lost"].sum() == 2 and (df["processed"] == df["listed"]).all()
    assert set(df[~df["lost"]]["status"]) == {"once"}


def test_calls_made_outside_the_replay_count_from_their_trace(py_bench: workbench.Bench) -> None:
    r = Replayer(py_bench, "seed")
    r.step()
    by_hand = py_bench.call("seed")  # e.g. the user calls the tool between steps
    assert by_hand.ok and trace_reads(by_hand) == (
        [
            ("home", "h09"),
            ("work", "w15"),
            ("work", "w16"),
            ("home", "h10"),
            ("work", "w17"),
            ("work", "w18"),
            ("home", "h11"),
            ("work", "w19"),
        ],
        0,
    )
    df = r.frame()
    assert df.set_index("id").loc["w19", "steps"] == [2]
    assert [s["kind"] for s in df.attrs["steps"]] == ["call", "outside"]
    assert df["lost"].sum() == 2 and (df[~df["lost"]]["status"] == "once").all()


def test_events_fire_triggers_and_are_recorded(digest: workbench.Bench) -> None:
    df = digest.email.replay_run("ingest", steps=0)
    assert df["processed"].sum() == 0
    r = Replayer(digest, "ingest")
    added = r.arrive(same_date(2, LAST + 1000), events=True)
    df = r.frame()
    assert [s["kind"] for s in df.attrs["steps"]] == ["arrive", "outside", "outside"]
    ids = [m["id"] for m in added]
    assert df.set_index("id").loc[ids, "status"].tolist() == ["once", "once"]


def test_no_allowed_account_is_said(gem: GemBuilder) -> None:
    gem.manifest["permissions"] = READ
    gem.tool("seed", SEED_PY, permissions=READ)
    with workbench.open(gem.write(), mailbox=FIXTURE) as bench:
        df = bench.email.replay_run("seed")
    assert len(df) == 0 and "No account is allowed" in df.attrs["warnings"][0]


def test_only_allowed_accounts_are_accounted_for(py_bench: workbench.Bench) -> None:
    py_bench.email.allow(["home"])
    df = py_bench.email.replay_run("seed")
    assert set(df["accountId"]) == {"home"} and (df["status"] == "once").all()
    assert df.attrs["warnings"] == []  # no equal dates inside one page boundary of home alone


def test_bad_arguments(py_bench: workbench.Bench) -> None:
    with pytest.raises(workbench.WorkbenchError) as e:
        py_bench.email.replay_run("nope")
    assert e.value.code == "E_UNKNOWN_TOOL"
    for bad in ({"steps": -1}, {"steps": True}, {"arrivals": {0: []}}, {"rewinds": {"1": None}}):
        with pytest.raises(workbench.UsageError):
            py_bench.email.replay_run("seed", **bad)
    with pytest.raises(workbench.UsageError, match="bench.email.add"):
        py_bench.email.replay_run("seed", arrivals={1: [{"accountId": "work", "nope": 1}]})


def test_the_trace_keeps_ctx_arguments_and_results(py_bench: workbench.Bench) -> None:
    res = py_bench.call("traced")
    assert res.ok, res.error
    page, read, big, loop, missing = res.trace_rows
    # positional options, JSON's null and negative numbers: the objects themselves
    assert page["params"] == (({"since": -1.5, "limit": 2, "accountId": None},), {})
    assert page["result"]["cursor"] == page["result"]["messages"][-1]["date"]
    assert trace_listed(res) == ([("work", "w01"), ("home", "h01")], 0)
    # an options object and keywords together
    assert read["params"] == (({"accountId": "work"},), {"id": "w01"})
    assert read["result"]["id"] == "w01" and "body" in read["result"]
    assert trace_reads(res) == ([("work", "w01")], 0)  # a failed getMessage read nothing
    # too big or not JSON: not kept; the text preview still says what it was
    assert big["params"] is None and big["args"] == '"big", <70000 chars>'
    assert loop["params"] is None and loop["ok"] is False
    assert missing["params"] == (({"accountId": "work", "id": "nope"},), {})
    assert missing["result"] is None and missing["error"] == "E_NOT_FOUND"
    # the DataFrame keeps the text previews only
    assert list(res.trace.columns) == TRACE_COLUMNS
    assert res.trace["args"][1] == '{"accountId": "work"}, "id=\'w01\'"'


def test_reads_and_pages_the_trace_did_not_keep_are_counted() -> None:
    rows: list[dict[str, Any]] = [
        {"method": "email.getMessage", "ok": True, "params": None, "result": None},
        {"method": "email.getMessage", "ok": True, "params": (("w01",), {}), "result": None},
        {"method": "email.getMessage", "ok": False, "params": ((), {"accountId": "a", "id": "b"})},
        {"method": "email.listSince", "ok": True, "params": ((), {}), "result": None},
        {
            "method": "email.listSince",
            "ok": True,
            "params": ((), {}),
            "result": {"messages": [{"accountId": "a", "id": "m1"}, "changed by the tool"]},
        },
    ]
    res = CallResult("c1", "t", None, trace_rows=rows)
    assert trace_reads(res) == ([], 2) and trace_listed(res) == ([("a", "m1")], 1)


def test_keyword_reads_are_identified_from_the_trace(py_bench: workbench.Bench) -> None:
    res = py_bench.call("kw_reader")
    assert res.ok and trace_reads(res) == (
        [("work", "w01"), ("home", "h01"), ("work", "w02"), ("work", "w03"), ("home", "h02")],
        0,
    )


def test_cursor_points() -> None:
    assert cursor_point("1709546760000") == (1709546760000, True)
    assert cursor_point('{"date": 5, "ids": ["a/b"]}') == (5, False)
    assert cursor_point('{"since": 5}') == (5, True)
    assert cursor_point(None) is None and cursor_point("soon") is None
    assert cursor_point("NaN") is None
    assert behind("10", 10) and not behind('{"date": 10, "ids": []}', 10)
    assert behind('{"date": 10, "ids": []}', 9) and not behind(None, 0)


# -- the widget --------------------------------------------------------------------------------
def test_widget_buttons_driven_from_python(py_bench: workbench.Bench) -> None:
    w = py_bench.email.replay("seed")
    assert isinstance(w, ReplayView)
    assert w.state["calls"] == 0 and w.state["pending"] == 30 and w.warning.value == ""
    assert "no cursor stored" in w.timeline.value

    w.step_button.click()
    assert w.state | {"warnings": None} == {
        "calls": 1,
        "cursor": str(BOUNDARY),
        "cursor_date": BOUNDARY,
        "messages": 30,
        "once": 20,
        "twice": 0,
        "pending": 8,
        "lost": 2,
        "warnings": None,
    }
    assert "never processed" in w.warning.value and "w13" in w.warning.value
    html = w.timeline.value
    assert "×4 same date" in html and html.count("LOST") == 2 and "cursor (kv &#x27;cursor&#x27;)" in html
    # the cursor line comes right after the last message of the shared date
    assert html.index("work/w14") < html.index("class=cur") < html.index("home/h09")
    assert "call 1: processed 20 (20 new)" in w.status.value

    w.arrive_count.value = 4
    w.arrive_dates.value = "same"
    w.arrive_account.value = "home"
    w.arrive_button.click()
    t = w.table
    new = t[t["subject"].str.startswith("arrival 1")]
    assert len(new) == 4 and new["date_ms"].nunique() == 1 and set(new["accountId"]) == {"home"}
    assert "×4 same date" in w.timeline.value and "4 messages arrived" in w.status.value

    w.run_button.click()
    assert w.state["calls"] == 3 and w.state["pending"] == 0 and w.state["lost"] == 2
    assert (w.table.loc[~w.table["lost"], "status"] == "once").all()

    labels = [label for label, _ in w.rewind_to.options]
    assert labels[-1] == "no cursor (start over)" and labels[0].startswith("after call 1")
    w.rewind_to.value = len(labels) - 1
    w.rewind_button.click()
    assert w.state["cursor"] is None and w.state["lost"] == 0  # everything is ahead again
    w.step()
    assert w.state["twice"] == 20 and "more than once" in w.warning.value
    assert list(w.steps["kind"]) == ["call", "arrive", "call", "call", "rewind", "call"]


def test_widget_shows_cursors_as_dates_not_epoch_milliseconds(py_bench: workbench.Bench) -> None:
    w = py_bench.email.replay("seed")
    w.step()
    stored, date = str(BOUNDARY), when(BOUNDARY)
    marker = w.timeline.value.split("class=cur")[1].split("</tr>")[0]
    assert date in marker and f">▶ cursor (kv &#x27;cursor&#x27;): {date}" in marker
    assert marker.count(stored) == 1 and f"title='stored value: {stored}'" in marker  # on hover only
    assert f"cursor none → {date}" in w.status.value and stored not in w.status.value
    w.rewind(stored)
    assert f"cursor rewound to {date}" in w.status.value and stored not in w.status.value
    w.rewind("soon")  # not a date: shown as it is stored
    assert "cursor rewound to &#x27;soon&#x27;" in w.status.value


def test_widget_late_arrival_and_errors(py_bench: workbench.Bench) -> None:
    w = py_bench.email.replay("seed")
    w.run_to_end()
    added = w.arrive(2, dates="cursor", account="work")
    assert [m["date"] for m in added] == [LAST, LAST]
    t = w.table.set_index("id")
    assert t.loc[[m["id"] for m in added], "reason"].tolist() == ["late", "late"]
    w.arrive_dates.value = "apart"
    w.arrive_count.value = 2
    w.arrive_button.click()
    assert w.table["date_ms"].iloc[-1] - w.table["date_ms"].iloc[-2] == 1000
    with pytest.raises(workbench.UsageError):
        w.arrive(0)
    w.rewind("1709546760000")
    assert w.state["cursor"] == "1709546760000"
    py_bench.close()
    w.step_button.click()  # a button never raises: the error is shown
    assert "error E_USAGE: the bench of test.gem is closed" in w.status.value


def test_widget_on_a_big_mailbox_shows_a_window(gem: GemBuilder) -> None:
    gem.manifest["permissions"] = READ
    gem.tool(
        "seed",
        SEED_PY,
        permissions=READ,
        schema={"type": "object", "properties": {"limit": {"type": "integer"}}},
    )
    with workbench.open(gem.write()) as bench:
        bench.email.allow("all")
        bench.email.add([{"accountId": "a", "subject": f"m{i}"} for i in range(1000)])
        w = bench.email.replay("seed", input={"limit": 200})
        w.step()
        html = w.timeline.value
        assert (w.table["listed"] == 1).sum() == 200  # the trace kept the full page
    assert "600 later messages not shown" in html and "earlier messages" not in html
    assert html.count("<tr") < 420 and "class=cur" in html
