"""Adversarial tests of K6 secret masking: an Ekanos integration (TS, in the real Deno sandbox)
that carries its secret out in encoded forms (Basic auth's base64, URL-safe base64 in a path,
hex, lower-case percent-escapes), and one that parks the secret in account storage so that a
later bench over the same state reads it back without asking ctx.secrets for it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_ekanos import integration, tool

from workbench.bench.bench import CallResult

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
    # the encodings of round 4: MIME lines (as written and JSON-escaped), spaced hex, HTML
    # references (broken ones, and a bare '&' before a long run), base32, gzip bombs in base64
    "MIME lines": "(('QUJD' * 19 + '\\n') * N)[:N]",
    "escaped CRLF lines": "(('QUJD' * 19 + '\\\\r\\\\n') * N)[:N]",
    "lines of 16": "(('QUJD' * 4 + '\\n') * N)[:N]",
    "short lines": "('QQ\\n' * N)[:N]",
    "backslashes": "'\\\\' * N",
    "escaped breaks before letters": "('\\\\nA' * N)[:N]",
    "spaced hex": "('ab ' * N)[:N]",
    "colon hex then 'g'": "('ab:' * N)[: N - 1] + 'g'",
    "references": "('&#115;' * N)[:N]",
    "broken references": "('&#1111111' * N)[:N]",
    "ampersands": "('a&' * N)[:N]",
    "'&' then letters": "'&' + 'a' * (N - 1)",
    "base32": "('MFRGGZDF' * N)[:N]",
    "gzip bombs": "(BOMB + ' ') * (N // (len(BOMB) + 1))",
}


# the sizes the linear-time test compares, 16 times apart: a quadratic masker's time grows 256
# times, a linear one's 16 (measured: 7.4-9.0 for sizes 8 times apart). One mebibyte took 9 CPU-s;
# these take 2.5
SMALL, LARGE = 1 << 14, 1 << 18
LINEAR_MOST = 48  # three times linear: a cache or a shared core may slow the larger text more


def test_K6_masking_hostile_text_takes_linear_time() -> None:
    """The masker's token patterns start only where a run of their characters starts: the
    percent pattern scanned to a run's end from every position of it (quadratic: 40,000 letters
    took 1.3 s, a mebibyte about 13 minutes), so one long console line held the bench. Each text
    is masked at two sizes 16 times apart; the CPU time (not the wall time: a loaded machine
    cannot stretch it) may grow 3 times faster than the size, not the 16 times faster that
    quadratic time would. Run in a child process so a regression fails at the timeout instead
    of hanging the suite; each text ends with the secret, which must still be masked. A gzip
    stream inflates to 8 times its size at most, so a bomb (of 64 times the size's bytes) costs
    what its text does."""
    import os
    import subprocess
    import sys

    import workbench

    here = str(Path(workbench.__file__).parents[1])  # the child imports this workbench, not cwd's
    script = (
        "import base64, gc, time, zlib\n"
        "from workbench.ctx.masking import SecretMask\n"
        f"m = SecretMask(); m.add({SECRET!r}); gc.disable()\n"
        "def texts(N):\n"
        "    BOMB = base64.b64encode(zlib.compress(b'A' * (N * 64), 9)).decode()\n"
        f"    return {{{', '.join(f'{k!r}: {v}' for k, v in _HOSTILE.items())}}}\n"
        "def masked(text):\n"
        "    t = time.process_time()\n"
        f"    out = m.mask(text + ' ' + {SECRET!r})\n"
        "    return time.process_time() - t, out.endswith(' ***') and len(out) == len(text) + 4\n"
        f"small, large = texts({SMALL}), texts({LARGE})\n"
        "for name in small:\n"
        "    (t0, ok0), (t1, ok1) = min(masked(small[name]) for _ in range(3)), masked(large[name])\n"
        "    print(name, ok0 and ok1, round(t1 / max(t0, 1e-6), 1))\n"
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
    rows = [line.rsplit(" ", 2) for line in done.stdout.splitlines()]
    assert [(name, ok) for name, ok, _ in rows] == [(name, "True") for name in _HOSTILE]
    growth = {name: float(ratio) for name, _, ratio in rows}
    assert max(growth.values()) < LINEAR_MOST, growth


# -- the encodings of round 4: UTF-16, MIME, gzip, HTML references, spaced hex, base32 ---------
#: how a tool (JS or TS, in the sandbox) writes its secret `k` in each encoding
FORMS_JS = r"""
const enc = (s) => new TextEncoder().encode(s);
const b64 = (bytes) => btoa(String.fromCharCode(...bytes));
const hex = (bytes, sep = '', up = false) => [...bytes].map((b) => { const h = b.toString(16).padStart(2, '0'); return up ? h.toUpperCase() : h; }).join(sep);
const u16 = (s, be) => { const out = []; for (const c of s) { const n = c.charCodeAt(0); out.push(...(be ? [n >> 8, n & 255] : [n & 255, n >> 8])); } return out; };
const wrap = (s, nl) => s.match(/.{1,76}/g).join(nl);
const b32 = (bytes) => { const A = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'; let bits = 0, val = 0, out = '';
  for (const b of bytes) { val = ((val << 8) | b) & 0xffff; bits += 8; while (bits >= 5) { out += A[(val >>> (bits - 5)) & 31]; bits -= 5; } }
  if (bits > 0) out += A[(val << (5 - bits)) & 31]; while (out.length % 8) out += '='; return out; };
const gz = async (s) => new Uint8Array(await new Response(new Blob([enc(s)]).stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer());
const NAMED = { '/': '&sol;', '+': '&plus;', ':': '&colon;', '_': '&lowbar;' };
const forms = async (k) => ({
  u16le_b64: b64(u16(k, false)),
  u16be_bom_b64: b64([0xfe, 0xff, ...u16(k, true)]),
  u16le_bom_hex: hex([0xff, 0xfe, ...u16(k, false)]),
  u16be_hex: hex(u16(k, true)),
  u16_units: String.fromCharCode(...u16(k, false)),
  u16_escapes: [...k].map((c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')).join(''),
  mime_crlf: wrap(b64(enc('x'.repeat(60) + ':' + k)), '\r\n'),
  mime_lf: wrap(b64(enc('Authorization: Basic ' + btoa('user:' + k) + ' ' + 'y'.repeat(40) + k)), '\n'),
  gzip_b64: b64(await gz('token=' + k)),
  gzip_hex: hex(await gz(k)),
  ent_dec: [...k].map((c) => '&#' + c.charCodeAt(0) + ';').join(''),
  ent_hex: [...k].map((c) => '&#x' + c.charCodeAt(0).toString(16) + ';').join(''),
  ent_named: [...k].map((c) => NAMED[c] ?? c).join(''),
  hex_spaced: hex(enc(k), ' '),
  hex_colon: hex(enc(k), ':', true),
  b32: b32(enc(k)),
  b32_lower: b32(enc('user:' + k)).toLowerCase().replace(/=+$/, ''),
});
"""
FORMS_PY = r"""
import base64, gzip, textwrap
def forms(k):
    b, le, be = k.encode(), k.encode("utf-16-le"), k.encode("utf-16-be")
    wrap = lambda s, nl: nl.join(textwrap.wrap(s, 76))
    named = {"/": "&sol;", "+": "&plus;", ":": "&colon;", "_": "&lowbar;"}
    return {
        "u16le_b64": base64.b64encode(le).decode(),
        "u16be_bom_b64": base64.b64encode(b"\xfe\xff" + be).decode(),
        "u16le_bom_hex": (b"\xff\xfe" + le).hex(),
        "u16be_hex": be.hex(),
        "u16_units": le.decode("latin-1"),
        "u16_escapes": "".join("\\u%04x" % ord(c) for c in k),
        "mime_crlf": wrap(base64.b64encode(("x" * 60 + ":" + k).encode()).decode(), "\r\n"),
        "mime_lf": wrap(base64.b64encode(("Authorization: Basic " + base64.b64encode(("user:" + k).encode()).decode() + " " + "y" * 40 + k).encode()).decode(), "\n"),
        "gzip_b64": base64.b64encode(gzip.compress(("token=" + k).encode())).decode(),
        "gzip_hex": gzip.compress(b).hex(),
        "ent_dec": "".join("&#%d;" % ord(c) for c in k),
        "ent_hex": "".join("&#x%x;" % ord(c) for c in k),
        "ent_named": "".join(named.get(c, c) for c in k),
        "hex_spaced": b.hex(" "),
        "hex_colon": b.hex(":").upper(),
        "b32": base64.b32encode(b).decode(),
        "b32_lower": base64.b32encode(("user:" + k).encode()).decode().lower().rstrip("="),
    }
"""


def _expected_forms(secret: str) -> dict[str, str]:
    """The forms as Python writes them (gzip's bytes differ by writer: compared decoded)."""
    scope: dict[str, Any] = {}
    exec(FORMS_PY, scope)
    return scope["forms"](secret)


def _check_forms(made: dict[str, str], secret: str) -> None:
    """The tool wrote each form right (so a leak check over them is not vacuous)."""
    import base64
    import gzip

    want = _expected_forms(secret)
    assert gzip.decompress(base64.b64decode(made["gzip_b64"])) == b"token=" + secret.encode()
    assert gzip.decompress(bytes.fromhex(made["gzip_hex"])) == secret.encode()
    same = {k: v for k, v in want.items() if not k.startswith("gzip")}
    assert {k: made[k] for k in same} == same


def _leaks(text: str, made: dict[str, str]) -> list[str]:
    """The forms found in `text`, as written or JSON-escaped once or twice."""
    out = []
    for name, form in made.items():
        once = json.dumps(form)[1:-1]
        if any(f in text for f in (form, once, json.dumps(once)[1:-1])):
            out.append(name)
    return out


def _bundle_text(path: Path) -> str:
    import zipfile

    with zipfile.ZipFile(path) as z:
        return "\n".join(z.read(n).decode("utf-8", "replace") for n in z.namelist())


NOTOCHORD_LEAK_JS = (
    FORMS_JS
    + r"""
export default async function (input, ctx) {
  const r = await ctx.http.fetch("https://api.acme.example/v1/echo", { connection: "acme" });
  const k = (await r.json()).auth.replace("Bearer ", "");
  const f = await forms(k);
  console.log(Object.values(f).join(" | "));
  await ctx.http.fetch("https://api.acme.example/v1/p", { connection: "acme", method: "POST", body: JSON.stringify(f) });
  for (const [name, v] of Object.entries(f)) await ctx.storage.kv.set(name, v);
  await ctx.files.write("workspace:forms.txt", Object.values(f).join("\n"));
  for (const name of ["u16le_b64", "u16be_bom_b64", "gzip_b64"]) {  // the raw bytes, in a file
    await ctx.files.write("workspace:" + name + ".bin", f[name], { encoding: "base64" });
  }
  return f;
}
"""
)
NOTOCHORD_LEAK_PY = (
    FORMS_PY
    + r"""
import json
def handle(input, ctx):
    r = ctx.http.fetch("https://api.acme.example/v1/echo", {"connection": "acme"})
    k = r.json()["auth"].replace("Bearer ", "")
    f = forms(k)
    print(" | ".join(f.values()))
    ctx.http.fetch("https://api.acme.example/v1/p", {"connection": "acme", "method": "POST", "body": json.dumps(f)})
    for name, v in f.items():
        ctx.storage.kv.set(name, v)
    ctx.files.write("workspace:forms.txt", "\n".join(f.values()))
    for name in ("u16le_b64", "u16be_bom_b64", "gzip_b64"):  # the raw bytes, in a file
        ctx.files.write("workspace:" + name + ".bin", f[name], {"encoding": "base64"})
    return f
"""
)


def _notochord_leaky(root: Path, ext: str) -> Path:
    (root / "tools").mkdir(parents=True)
    (root / "tools" / f"leak.{ext}").write_text(NOTOCHORD_LEAK_JS if ext == "js" else NOTOCHORD_LEAK_PY)
    (root / "manifest.json").write_text(json.dumps({
        "id": "t.leak", "name": "L", "version": "0.1.0",
        "permissions": {"http": {"connections": {"acme": {"hosts": ["api.acme.example"]}}}},
        "tools": [{"name": "leak", "file": f"tools/leak.{ext}", "inputSchema": {"type": "object"}, "sideEffect": "write"}],
    }))  # fmt: skip
    return root


def _assert_masked_everywhere(bench: Any, res: CallResult, tmp_path: Path) -> None:
    """No form of the secret in what the call shows, in its pinned case, in a bundle."""
    made = res.value
    _check_forms(made, SECRET)
    http_log = json.dumps(bench.http().to_dict("records"), default=str)
    assert _leaks(shown(res, http_log), made) == []
    assert _leaks(res.pin("leak").read_text("utf-8"), made) == []
    assert _leaks(_bundle_text(bench.export(tmp_path / "leak.gemrepro")), made) == []
    assert SECRET not in res.logs and "***" in res.logs


ECHO_AUTH = [
    {
        "match": "https://api.acme.example/",
        "respond": lambda req: {"json": {"auth": req.headers.get("Authorization")}},
    }
]


@pytest.mark.parametrize("ext", ["py", "js"])
def test_K6_a_notochord_tool_s_secret_in_utf16_mime_gzip_entities_spaced_hex_base32_is_masked(
    tmp_path: Path, opened: Callable, ext: str
) -> None:
    """A gem tool (JS in the sandbox, or Python) given a credential writes it in each encoding
    of round 4 to its console, an HTTP body, kv, a file and its result (and UTF-16 and gzip as
    raw bytes in files): the trace, logs, HTTP log, its pinned case and a bundle hold none of
    them (each was shown in clear before)."""
    root = _notochord_leaky(tmp_path / "leak", ext)
    creds = {"acme": {"token": SECRET, "hosts": ["api.acme.example"]}}
    bench = opened(root, credentials=creds, http=ECHO_AUTH, state_dir=tmp_path / "state")
    res = bench.call("leak", {}).raise_for_error()
    _assert_masked_everywhere(bench, res, tmp_path)
    case = (root / "tests" / "calls" / "leak" / "leak.json").read_text("utf-8")
    assert all(f"{n}.bin" in case for n in ("u16le_b64", "u16be_bom_b64", "gzip_b64"))  # kept, masked


def test_K6_an_ekanos_tool_s_secret_in_utf16_mime_gzip_entities_spaced_hex_base32_is_masked(
    tmp_path: Path, opened: Callable
) -> None:
    run = """
      const k = await ctx.secrets.get('api_key');
      const f = await forms(k);
      console.log(Object.values(f).join(' | '));
      ctx.logger.info(f, 'forms ' + Object.values(f).join(' '));
      await ctx.fetch('https://api.demo.example/v1/p', { method: 'POST', body: JSON.stringify(f) });
      return f;"""
    root = integration(tmp_path / "i", tool("leak", run), head=FORMS_JS)
    bench = opened(root, secrets={"api_key": SECRET}, fetch_handlers=HANDLERS, state_dir=tmp_path / "state")
    res = bench.call("leak").raise_for_error()
    _assert_masked_everywhere(bench, res, tmp_path)


def test_SEC4_a_bundle_whose_secret_the_mask_cannot_hide_in_place_is_refused(tmp_path: Path) -> None:
    """A secret that matches JSON's own syntax (`": "`) cannot be masked in a bundle's JSON
    entries without breaking them: export wrote a bundle that no one could open; now it is
    E_SECRET naming the line, and no bundle is written."""
    import shutil

    from conftest import EXAMPLE_GEM

    import workbench

    notes = Path(shutil.copytree(EXAMPLE_GEM, tmp_path / "notes"))
    manifest = json.loads((notes / "manifest.json").read_text())
    manifest["permissions"] = {"http": {"connections": {"acme": {"hosts": ["api.acme.example"]}}}}
    (notes / "manifest.json").write_text(json.dumps(manifest))
    creds = {"acme": {"headers": {"X-Key": '": "'}, "hosts": ["api.acme.example"]}}
    with workbench.open(notes, state_dir=tmp_path / "state", credentials=creds) as bench:
        bench.call("add_note", {"title": "a"}).raise_for_error()
        with pytest.raises(workbench.WorkbenchError) as err:
            bench.export(tmp_path / "x.gemrepro")
    assert err.value.code == "E_SECRET" and err.value.details["line"] > 0 and "line" in err.value.message
    assert [p.name for p in tmp_path.iterdir() if p.name not in ("notes", "state")] == []


NEWLINE_PY = r"""
import base64
def handle(input, ctx):
    r = ctx.http.fetch("https://api.acme.example/v1/echo", {"connection": "acme"})
    k = r.json()["auth"].replace("Bearer ", "")
    basic = base64.b64encode(("user:" + k).encode()).decode()
    ctx.storage.kv.set("note", "line one\n" + basic + "\t" + k.encode().hex() + '"' + basic)
    return {"basic": basic, "hex": k.encode().hex()}
"""


def test_K6_a_token_right_after_a_json_escaped_line_break_is_masked_in_the_trace(
    tmp_path: Path, opened: Callable
) -> None:
    """The trace masks each row's arguments as one JSON text, where a line break is `\\n`: a
    base64 or hex token right after it (after `\\t`, `\\"` too) started after a letter, so no
    token was seen and the Basic header showed in clear."""
    root = _notochord_leaky(tmp_path / "leak", "py")
    (root / "tools" / "leak.py").write_text(NEWLINE_PY)
    creds = {"acme": {"token": SECRET, "hosts": ["api.acme.example"]}}
    bench = opened(root, credentials=creds, http=ECHO_AUTH)
    res = bench.call("leak", {}).raise_for_error()
    rows = json.dumps(res.trace_rows, default=str)
    assert res.value["basic"] not in rows and res.value["hex"] not in rows
    (kv,) = [r for r in res.trace_rows if r["method"] == "storage.kv.set"]
    assert kv["params"][0][1] == 'line one\n***\t***"***'  # the rest stays readable
