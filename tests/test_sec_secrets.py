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


#: 1 MiB texts a hostile tool can print: long runs of one token class, a run ended by a
#: character outside it, percent-escapes with and without a valid %XX, base64 cut by slashes
_HOSTILE = {
    "letters": "'a' * N",
    "dots": "'.' * N",
    "run then '!'": "'A' * (N - 1) + '!'",
    "hex then 'g'": "'f' * (N - 1) + 'g'",
    "escapes": "('%41' * N)[:N]",
    "broken escapes": "('%4g' * N)[:N]",
    "base64 between slashes": "('Zm9vYmFy/' * N)[:N]",
}


def test_K6_masking_a_mebibyte_of_hostile_text_takes_linear_time() -> None:
    """The masker's token patterns start only where a run of their characters starts: the
    percent pattern scanned to a run's end from every position of it (quadratic: 40,000 letters
    took 1.3 s, a mebibyte about 13 minutes), so one long console line held the bench. Run in a
    child process so a regression fails at the timeout instead of hanging the suite; each text
    ends with the secret, which must still be masked."""
    import os
    import subprocess
    import sys

    import workbench

    here = str(Path(workbench.__file__).parents[1])  # the child imports this workbench, not cwd's
    script = (
        "from workbench.ctx.masking import SecretMask\n"
        f"m = SecretMask(); m.add({SECRET!r}); N = 1 << 20\n"
        f"for name, text in {{{', '.join(f'{k!r}: {v}' for k, v in _HOSTILE.items())}}}.items():\n"
        f"    out = m.mask(text + ' ' + {SECRET!r})\n"
        "    print(name, out.endswith(' ***') and len(out) == len(text) + 4)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=here,
        env={**os.environ, "PYTHONPATH": here},
    )
    assert done.stdout.splitlines() == [f"{name} True" for name in _HOSTILE]
