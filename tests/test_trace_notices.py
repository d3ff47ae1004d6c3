"""Why a call failed, at a glance (issue 28, point 3): a ctx call that returned but says it
failed — an error envelope (agent built-ins), a fetch answered with status >= 400, a credential
not sent (N10 credentialDenied) — is marked in its trace row (`notice`, ⚠ in the display, not
✓); a failed call's and an expected failure's headline names the ctx call that led to it
(`CallResult.cause`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from conftest import GemBuilder
from test_agent import FIXTURE, SEARCH, agent_gem
from test_ekanos import integration, tool
from test_http import CREDS, Recorder, fetch, http_gem

from workbench.jupyter.display import result_html, result_text

RAISE_AFTER_SEARCH = {
    "py": "def handle(input, ctx):\n"
    "    r = ctx.tools.web_search({'query': input['q']})\n"
    "    if 'error' in r:\n"
    "        raise RuntimeError('no results')\n"
    "    return r\n",
    "js": "export async function handle(input, ctx) {\n"
    "  const r = await ctx.tools.web_search({ query: input.q });\n"
    "  if (r.error) throw new Error('no results');\n"
    "  return r;\n}\n",
}


def test_an_error_envelope_is_marked_in_the_trace_with_its_message(
    gem: GemBuilder, opened: Callable, lang: str
) -> None:
    root = agent_gem(gem, s=(SEARCH[lang], lang), r=(RAISE_AFTER_SEARCH[lang], lang))
    (root / "fixtures").mkdir()
    (root / "fixtures" / "web_search.json").write_text(json.dumps(FIXTURE))
    bench = opened(root)
    res = bench.call("s", {"q": "nothing here"})
    (row,) = res.trace_rows
    assert row["ok"] is True and row["method"] == "tools.web_search"
    assert row["notice"].startswith("search_failed: ") and "nothing here" in row["notice"], row["notice"]
    html = result_html(res)
    assert "<span class=nt>⚠</span>" in html and "search_failed" in html
    assert res.ok and res.cause is None  # the tool returned the envelope itself: not a failure
    good = bench.call("s", {"q": "deno sandbox"})
    assert "notice" not in good.trace_rows[0] and "⚠</span>" not in result_html(good)
    failed = bench.call("r", {"q": "nothing here"})
    assert not failed.ok and failed.cause is not None and failed.cause["method"] == "tools.web_search"
    assert "after <code>tools.web_search</code> (#1): search_failed" in result_html(failed)
    assert "after ctx call #1 tools.web_search: search_failed: " in result_text(failed)


def test_a_fetch_answered_500_or_without_its_credential_is_marked(
    gem: GemBuilder, opened: Callable, lang: str
) -> None:
    rec = Recorder(status=500)
    bench = opened(http_gem(gem), http=[{"match": lambda r: True, "respond": rec}], credentials=CREDS)
    res = fetch(bench, lang, "https://api.acme.example/v1/x")
    assert res.ok and res.value["status"] == 500
    (row,) = res.trace_rows
    assert row["ok"] is True and row["notice"] == "HTTP 500 Internal Server Error", row
    denied = fetch(bench, lang, "https://api.acme.example/v2/x", connection="acme")
    assert denied.trace_rows[0]["notice"] == (
        "HTTP 500 Internal Server Error; credential not sent to api.acme.example: path not granted"
    )
    rec.status = 200
    assert "notice" not in fetch(bench, lang, "https://api.acme.example/v1/x").trace_rows[0]


def test_an_expected_failure_names_the_fetch_that_led_to_it(tmp_path: Path, opened: Callable) -> None:
    run = """
      const r = await ctx.fetch('https://api.demo.example/v1/x');
      if (!r.ok) return { error: `upstream said ${r.status}` };
      return { ok: true };"""
    root = integration(tmp_path / "i", tool("f", run))
    res = opened(
        root, fetch_handlers=[{"match": "https://api.demo.example/", "respond": {"status": 503}}]
    ).call("f")
    assert res.expected_failure and res.cause is not None
    assert res.cause["notice"] == "HTTP 503 Service Unavailable"
    assert "after <code>fetch</code> (#1): HTTP 503 Service Unavailable" in result_html(res)  # its name
