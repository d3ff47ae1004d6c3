"""Mail and the bench's virtual clock (issue 29 point 4): `bench.email.arrive(..., at=)`
schedules mail for a virtual time, undated mail and sent mail's `Date:` follow the clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import pytest
from conftest import GemBuilder

import workbench
from workbench.providers import outbox as outbox_mod

START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)  # day 0 of the digest's week, a Monday
DAY_MS = 86_400_000
READ = {"email": {"read": True}}

# a daily digest: the messages newer than its kv cursor, each once, then the cursor moves on
DIGEST = """
def handle(input, ctx):
    since = int(ctx.storage.kv.get("cursor") or 0)
    page = ctx.email.listSince({"since": since, "limit": 200})
    ctx.storage.kv.set("cursor", str(page["cursor"]))
    return [m["subject"] for m in page["messages"]]
"""
INGEST = """
def handle(input, ctx):
    return {"subject": input["subject"], "date": input["date"]}
"""


def mail_gem(gem: GemBuilder) -> GemBuilder:
    gem.tool("digest", DIGEST, permissions=READ)
    gem.tool("ingest", INGEST, permissions=READ)
    gem.manifest["permissions"] = READ
    gem.manifest["triggers"] = [{"event": "email.onNewMessage", "tool": "ingest"}]
    (gem.root / "fixtures").mkdir(parents=True, exist_ok=True)
    (gem.root / "fixtures" / "mailbox.json").write_text(
        '[{"accountId": "work", "id": "old", "subject": "before the week", "date": 1000}]'
    )
    return gem


def digest_bench(gem: GemBuilder, opened: Callable) -> workbench.Bench:
    bench = opened(mail_gem(gem), clock=START)
    bench.email.allow("all")
    return bench


def test_digest_over_seven_virtual_days_sees_each_scheduled_mail_once_from_its_day(
    gem: GemBuilder, opened: Callable
) -> None:
    bench = digest_bench(gem, opened)
    assert bench.call("digest").raise_for_error().value == ["before the week"]  # day 0
    day2, day5 = "2026-01-07T08:00:00Z", datetime(2026, 1, 10, 8, tzinfo=UTC)
    assert bench.email.add({"accountId": "work", "subject": "day 2"}, at=day2) == []
    assert bench.email.add({"accountId": "work", "subject": "day 5"}, at=day5) == []
    assert bench.email.scheduled()["subject"].tolist() == ["day 2", "day 5"]
    started = time.perf_counter()
    seen = []
    for _day in range(1, 8):
        bench.clock.advance("1d")
        seen.append(bench.call("digest").raise_for_error().value)
    wall = time.perf_counter() - started
    print(f"\n7 virtual days of the digest: {wall * 1000:.0f} ms wall")
    assert seen == [[], ["day 2"], [], [], ["day 5"], [], []]
    assert bench.email.scheduled().empty
    dates = {e.subject: e.date for e in bench.email.envelopes()}
    assert dates["day 2"] == START.timestamp() * 1000 + 2 * DAY_MS
    assert dates["day 5"] == START.timestamp() * 1000 + 5 * DAY_MS
    assert wall < 2.0, wall


def test_arrive_at_fires_the_trigger_once_when_the_clock_reaches_it(
    gem: GemBuilder, opened: Callable
) -> None:
    bench = digest_bench(gem, opened)
    assert bench.email.arrive({"accountId": "work", "subject": "later"}, at="2d") == []
    assert bench.email.scheduled()["fires"].tolist() == [True]
    bench.clock.advance("1d")
    assert bench.calls().empty  # not yet
    bench.clock.advance("1d")  # reaches it: delivered, ingest fires
    calls = bench.calls()
    assert calls.tool.tolist() == ["ingest"]
    bench.clock.advance("1d")
    bench.call("digest")
    assert bench.calls().tool.tolist() == ["ingest", "digest"]  # once, not again
    at_ms = START.timestamp() * 1000 + 2 * DAY_MS
    (ingest,) = [r for r in bench.results if r.tool == "ingest"]
    assert ingest.value == {"subject": "later", "date": at_ms}  # dated at=, not when it was scheduled


def test_arrive_at_reached_while_the_clock_runs_fires_before_the_next_call(
    gem: GemBuilder, opened: Callable
) -> None:
    bench = opened(mail_gem(gem))  # a real clock: `at` is reached by wall time
    bench.email.allow("all")
    bench.email.arrive({"accountId": "work", "subject": "soon"}, at=time.time() + 0.05)
    time.sleep(0.1)
    assert bench.call("digest").value == ["before the week", "soon"]
    assert bench.calls().tool.tolist() == ["ingest", "digest"]


@pytest.mark.parametrize("bad", ["tomorrow", "2x", True, [1], float("nan")])
def test_bad_at_is_a_usage_error_naming_it(gem: GemBuilder, opened: Callable, bad: Any) -> None:
    bench = digest_bench(gem, opened)
    with pytest.raises(workbench.WorkbenchError) as err:
        bench.email.arrive({"accountId": "work", "subject": "x"}, at=bad)
    assert err.value.code == "E_USAGE" and repr(bad) in err.value.message
    assert bench.email.scheduled().empty


def test_scheduled_mail_with_its_own_date_is_refused(gem: GemBuilder, opened: Callable) -> None:
    bench = digest_bench(gem, opened)
    with pytest.raises(workbench.WorkbenchError) as err:
        bench.email.add({"accountId": "work", "subject": "x", "date": 5}, at="1d")
    assert err.value.code == "E_USAGE" and "date" in err.value.message


def test_undated_mail_gets_the_virtual_now(gem: GemBuilder, opened: Callable) -> None:
    bench = digest_bench(gem, opened)
    bench.clock.advance("3d")
    (env,) = bench.email.add({"accountId": "work", "subject": "now"})
    assert env["date"] == START.timestamp() * 1000 + 3 * DAY_MS


SEND = """
def handle(input, ctx):
    return ctx.tools.send_email({"to": ["ann@acme.example"], "subject": "hi", "body_text": "Hi."})
"""


def test_sent_mail_date_header_is_the_virtual_time(
    gem: GemBuilder, opened: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[Any] = []
    real = outbox_mod.build_message

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        built.append(out.msg)
        return out

    monkeypatch.setattr(outbox_mod, "build_message", spy)
    bench = opened(gem.tool("mail", SEND).as_agent("agent-123", "Mailer").write(), clock=START)
    bench.allow_recipients("*@acme.example")
    bench.clock.advance("2d")
    bench.call("mail").raise_for_error()
    (msg,) = built
    assert parsedate_to_datetime(msg["Date"]) == datetime(2026, 1, 7, 8, tzinfo=UTC)
    assert bench.outbox()["time"].tolist()[0] == datetime(2026, 1, 7, 8, tzinfo=UTC)
