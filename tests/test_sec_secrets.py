"""Adversarial tests of K6 secret masking: an Ekanos integration (TS, in the real Deno sandbox)
that carries its secret out in encoded forms (Basic auth's base64, URL-safe base64 in a path,
hex, lower-case percent-escapes), and one that parks the secret in account storage so that a
later bench over the same state reads it back without asking ctx.secrets for it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from test_ekanos import integration, tool

from workbench._bench import CallResult

pytestmark = pytest.mark.deno

SECRET = "sk/live+9f8e:7d6c_5b4a"
HANDLERS = [{"match": "https://api.demo.example/", "respond": {"json": {}}}]


def shown(res: CallResult, *more: str) -> str:
    """Everything of a call the workbench shows: trace, logger rows, console, the error."""
    error = "" if res.error is None else res.error.message + json.dumps(res.error.details, default=str)
    return json.dumps([res.trace_rows, res.log_rows], default=str) + res.logs + error + "".join(more)


def test_K6_a_secret_is_masked_inside_base64_hex_and_percent_encodings(
    tmp_path: Path, opened: Callable
) -> None:
    run = """
      const k = await ctx.secrets.get('api_key');
      const basic = 'Basic ' + btoa('user:' + k);
      const forms = {
        basic,
        colon: btoa(k + ':'),
        urlsafe: btoa('u:' + k).replace(/[+]/g, '-').replace(/[/]/g, '_').replace(/=+$/, ''),
        hex: [...new TextEncoder().encode(k)].map((b) => b.toString(16).padStart(2, '0')).join(''),
        lower: encodeURIComponent('user:' + k).toLowerCase(),
        twice: btoa(JSON.stringify({ authorization: basic })),
      };
      console.log('sending ' + Object.values(forms).join(' '));
      ctx.logger.info(forms, 'auth ' + basic);
      await ctx.fetch('https://api.demo.example/v1/' + forms.urlsafe + '?auth=' + forms.lower,
                      { headers: { authorization: basic, 'x-sig': forms.hex } });
      throw new Error('refused: ' + Object.values(forms).join(' '));"""
    root = integration(tmp_path / "i", tool("s", run))
    bench = opened(root, secrets={"api_key": SECRET}, fetch_handlers=HANDLERS)
    res = bench.call("s")
    assert res.error is not None and res.error.code == "E_TOOL_ERROR"
    text = shown(res, bench.http().to_string())
    import base64
    from urllib.parse import quote

    def b64(s: str) -> str:
        return base64.b64encode(s.encode()).decode()

    basic = b64("user:" + SECRET)
    forms = {
        "basic": basic,
        "colon": b64(SECRET + ":"),
        "urlsafe": base64.urlsafe_b64encode(("u:" + SECRET).encode()).decode().rstrip("="),
        "hex": SECRET.encode().hex(),
        "lower": quote("user:" + SECRET, safe="").lower(),
        "twice": b64(json.dumps({"authorization": "Basic " + basic}, separators=(",", ":"))),
    }
    assert [name for name, form in forms.items() if form in text] == []
    assert SECRET not in text and text.count("***") >= 12
    assert "Basic ***" in res.error.message  # the rest of the message stays readable


@pytest.mark.parametrize("source", ["given", "environment"])
def test_K6_a_secret_read_back_from_storage_in_a_later_bench_is_masked(
    tmp_path: Path, opened: Callable, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    """Bench 1 reads the secret and stores it in account storage; bench 2, over the same
    state, never calls ctx.secrets.get: it reads the stored copy and shows it everywhere."""
    keep = "const k = await ctx.secrets.get('api_key'); await ctx.storage.account.set('cache/token', { token: k }); return { ok: true };"
    leak = """
      const t = (await ctx.storage.account.get('cache/token')).data.token;
      console.log('token ' + t);
      ctx.logger.warn({ t }, 'token ' + t);
      throw new Error('leaked ' + t + ' ' + btoa('user:' + t));"""
    schema = "storage: { account: { 'cache/token': { type: 'object', properties: { token: { type: 'string' } } } } },"
    root = integration(tmp_path / "i", tool("keep", keep) + tool("leak", leak), extra=schema)
    if source == "environment":
        monkeypatch.setenv("GEM_WORKBENCH_SECRET_DEMO__API_KEY", SECRET)
    secrets = {"api_key": SECRET} if source == "given" else "local"
    state = tmp_path / "state"
    first = opened(root, providers="real", state_dir=state, secrets=secrets)
    assert first.call("keep").value == {"ok": True}
    first.close()
    res = opened(root, providers="real", state_dir=state, secrets=secrets).call("leak")
    assert res.error is not None and res.error.code == "E_TOOL_ERROR"
    text = shown(res)
    assert SECRET not in text and "leaked ***" in res.error.message
    assert [r["method"] for r in res.trace_rows] == ["storage.account.get", "logger.warn"]  # no secrets.get
    assert res.trace_rows[0]["result"] is not None and "***" in json.dumps(res.trace_rows[0]["result"])
