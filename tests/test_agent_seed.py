"""The agent seed's (002) code examples run unmodified as tools of notebooks/gems/agent-research."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

GEM = Path(__file__).parent.parent / "notebooks" / "gems" / "agent-research"
pytestmark = pytest.mark.deno


def test_the_seeds_handler_shapes_run_as_written(opened: Callable) -> None:
    bench = opened(GEM)
    assert bench.call("hello_js").value == {"ok": True}
    assert bench.call("hello_py").value == {"ok": True}


def test_the_seeds_built_in_example_searches_audits_and_mails(opened: Callable) -> None:
    bench = opened(GEM)
    bench.allow_recipients("*@acme.example")
    args = {"email": "ann@acme.example", "topic": "sandbox", "domain": "deno.com"}
    res = bench.call("research", args, as_user="sub-42")
    assert res.ok, res.error
    assert res.value["message_id"].startswith("<")
    sent = bench.outbox().iloc[0]
    assert sent["to"] == ["ann@acme.example"] and sent["subject"] == "Re: sandbox"
    found = json.loads(sent["body_text"].split("\n\n", 1)[1])
    assert [r["title"] for r in found] == ["Security and permissions", "Workers", "deno run"]
    audit = bench.audit()
    assert audit["event"].tolist() == ["tool:web_search", "found_sources", "tool:send_email"]
    assert audit["data"].iloc[1] == {"count": 3}


def test_the_seeds_example_unallowed_recipient_is_an_envelope(opened: Callable) -> None:
    bench = opened(GEM)
    res = bench.call("research", {"email": "eve@evil.example", "topic": "sandbox", "domain": "deno.com"})
    assert res.ok and res.value["error"] == "recipient_not_allowed"  # A4: resolved, not thrown


def test_the_seeds_error_snippet_reports_the_envelope(opened: Callable) -> None:
    res = opened(GEM).call("send_checked")
    assert res.value["ok"] is False and res.value["reason"] == "recipient_not_allowed"
    assert res.value["details"]["recipients"] == ["..."]
