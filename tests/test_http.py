"""ctx.http.fetch (N10): permission, Fetch-shaped requests and responses, connections and
credentialDenied, redirects, masking, the bench.http() log; mock handlers and real httpx.

The "https + granted host" injection path is tested on the mock transport, and on the real
httpx transport through `_TlsShim`, which sends the https:// URL to the plain-http
pytest-httpserver on 127.0.0.1 (standing in for TLS termination) — no certificate needed.
Record/replay (`Cassette`) is tested against the same server.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import GemBuilder

import workbench
from workbench.providers.http import HttpRequest, HttpResponse, RealTransport

pytest_httpserver = pytest.importorskip("pytest_httpserver")
from werkzeug.wrappers import Response  # noqa: E402  (pytest-httpserver's dependency)

SECRET = "s3cr3t-token-value"
# the test servers listen on 127.0.0.1: real HTTP reaches them only when the bench names them
LOCAL = ["127.0.0.1", "localhost"]
GRANT = {
    "http": {
        "connections": {
            "acme": {"hosts": ["api.acme.example", "localhost"], "paths": ["/v1/"]},
            "open": {"hosts": ["*.open.example"]},
        }
    }
}

# the user's side (SEC4): what to send and where it may go; the manifest can only narrow it
CREDS = {
    "acme": {
        "headers": {"Authorization": f"Bearer {SECRET}"},
        "hosts": ["api.acme.example"],
        "paths": ["/v1/"],
    }
}


def local_creds(port: int) -> dict[str, Any]:
    """CREDS for the local test server, reached as https://localhost:<port> through _TlsShim."""
    return {"acme": {**CREDS["acme"], "hosts": [f"localhost:{port}"]}}


def local_grant(port: int) -> dict[str, Any]:
    return {"http": {"connections": {"acme": {"hosts": [f"localhost:{port}"], "paths": ["/v1/"]}}}}


PY_FETCH = """
def handle(input, ctx):
    r = ctx.http.fetch(input["url"], input.get("init"))
    return {"status": r.status, "ok": r.ok, "text": r.text(), "headers": dict(r.headers),
            "denied": r.credentialDenied, "url": r.url, "redirected": r.redirected}
"""
JS_FETCH = """
export default async function (input, ctx) {
  const r = await ctx.http.fetch(input.url, input.init ?? undefined);
  return { status: r.status, ok: r.ok, text: await r.text(),
           headers: Object.fromEntries(r.headers.entries()),
           denied: r.credentialDenied ?? null, url: r.url, redirected: r.redirected };
}
"""
PY_BYTES = """
import base64
async def handle(input, ctx):
    r = await ctx.http.fetch(input["url"], {"method": "POST", "body": bytes([0, 1, 2, 255])})
    return {"b64": base64.b64encode(r.bytes()).decode(), "json": None}
"""
JS_BYTES = """
export default async function (input, ctx) {
  const r = await ctx.http.fetch(new URL(input.url), { method: "POST", body: new Uint8Array([0, 1, 2, 255]),
                                                       headers: new Headers({ "x-kind": "bytes" }) });
  const b = new Uint8Array(await r.arrayBuffer());
  return { b64: btoa(String.fromCharCode(...b)), used: r.bodyUsed };
}
"""
PY_JSON = """
def handle(input, ctx):
    return ctx.http.fetch(input["url"]).json()
"""
JS_JSON = """
export default async function (input, ctx) {
  return await (await ctx.http.fetch(input.url)).json();
}
"""


def http_gem(gem: GemBuilder, *, top: Any = GRANT, tool_perms: Any = None) -> GemBuilder:
    extra = {"permissions": tool_perms} if tool_perms is not None else {}
    gem.tool("fetch_py", PY_FETCH, **extra)
    gem.tool("fetch_js", JS_FETCH, ext="js", **extra)
    gem.tool("bytes_py", PY_BYTES)
    gem.tool("bytes_js", JS_BYTES, ext="js")
    gem.tool("json_py", PY_JSON)
    gem.tool("json_js", JS_JSON, ext="js")
    if top is not None:
        gem.manifest["permissions"] = top
    return gem


class Recorder:
    """A mock handler answer that records the requests it saw (headers included)."""

    def __init__(self, status: int = 200, body: Any = None, headers: dict | None = None) -> None:
        self.seen: list[HttpRequest] = []
        self.status, self.body, self.headers = status, body, headers or {}

    def __call__(self, req: HttpRequest) -> dict[str, Any]:
        self.seen.append(req)
        return {
            "status": self.status,
            "headers": self.headers,
            "json": self.body if self.body is not None else {"got": req.method},
        }

    @property
    def auth(self) -> list[str | None]:
        return [r.headers.get("Authorization") for r in self.seen]


def fetch(bench: workbench.Bench, lang: str, url: str, **init: Any) -> workbench.CallResult:
    return bench.call(f"fetch_{lang}", {"url": url, "init": init or None})


# -- permission -----------------------------------------------------------------------------
def test_N10_without_http_permission_is_denied(gem: GemBuilder, opened: Callable, lang: str) -> None:
    """Without permissions.http, ctx.http is absent (as on the platform): touching it fails,
    naming the manifest field to add, and no request leaves."""
    bench = opened(http_gem(gem, top=None), http=[{"match": "https://", "respond": {"text": "x"}}])
    res = fetch(bench, lang, "https://api.acme.example/v1/x")
    assert res.error.code == "E_TOOL_ERROR"
    assert "ctx" in res.error.message and "/permissions/http" in res.error.message
    assert len(bench.http()) == 0


PY_PROBE = """
def handle(input, ctx):
    try:
        getattr(ctx, "http").fetch("https://api.acme.example/v1/x")
        reached = True
    except AttributeError as exc:
        reached = str(exc)
    return {"keys": sorted(dir(ctx)), "has": hasattr(ctx, "http"), "reached": reached}
"""
JS_PROBE = """
export default async function (input, ctx) {
  let reached = false;
  try { await ctx["ht" + "tp"].fetch("https://api.acme.example/v1/x"); reached = true; }
  catch (e) { reached = String(e); }
  return { keys: Object.keys(ctx).sort(), has: "http" in ctx, own: Reflect.ownKeys(ctx).includes("http"),
           reached };
}
"""


@pytest.mark.deno
def test_N10_http_is_absent_without_the_permission_in_both_languages(
    gem: GemBuilder, opened: Callable
) -> None:
    """dir(ctx) and Object.keys(ctx) list no `http` without permissions.http (the seed: the rest
    depends on the permissions requested); a probe by a computed name reaches nothing."""
    gem.tool("probe_py", PY_PROBE)
    gem.tool("probe_js", JS_PROBE, ext="js")
    gem.tool("granted_py", PY_PROBE, permissions=GRANT)
    gem.tool("granted_js", JS_PROBE, ext="js", permissions=GRANT)
    for t in gem.manifest["tools"][:2]:  # the gem grants http, these two tools do not take it
        t["permissions"] = {"email": {"read": True}}
    gem.manifest["permissions"] = {**GRANT, "email": {"read": True}}
    bench = opened(gem, http=[{"match": "https://", "respond": {"text": "x"}}])
    py, js = bench.call("probe_py").value, bench.call("probe_js").value
    assert "http" not in py["keys"] and not py["has"]
    assert "/tools/0/permissions/http" in py["reached"]
    assert "http" not in js["keys"] and not js["has"] and not js["own"]
    assert "TypeError" in js["reached"]
    assert len(bench.http()) == 0
    granted_py, granted_js = bench.call("granted_py").value, bench.call("granted_js").value
    assert "http" in granted_py["keys"] and granted_py["reached"] is True
    assert granted_js["has"] and granted_js["reached"] is True
    assert sorted(k for k in granted_py["keys"] if k != "idempotency_key") == sorted(granted_js["keys"])
    assert len(bench.http()) == 2


# -- mock transport -------------------------------------------------------------------------
def test_N10_mock_response_has_the_fetch_shape(gem: GemBuilder, opened: Callable, lang: str) -> None:
    bench = opened(
        http_gem(gem),
        http=[
            {
                "match": "https://api.acme.example/",
                "respond": {"json": {"temperature": 12.4}, "headers": {"X-Unit": "celsius"}},
            }
        ],
    )
    res = fetch(bench, lang, "https://api.acme.example/weather")
    res.raise_for_error()
    v = res.value
    assert (v["status"], v["ok"], json.loads(v["text"])) == (200, True, {"temperature": 12.4})
    assert v["headers"]["x-unit"] == "celsius" and v["headers"]["content-type"] == "application/json"
    assert v["denied"] is None and v["redirected"] is False
    assert bench.call(f"json_{lang}", {"url": "https://api.acme.example/w"}).value == {"temperature": 12.4}
    row = bench.http().iloc[0]
    assert (row.method, row.url, row.status, row.connection) == (
        "GET",
        "https://api.acme.example/weather",
        200,
        None,
    )


def test_N10_bytes_body_round_trip(gem: GemBuilder, opened: Callable, lang: str) -> None:
    seen: list[HttpRequest] = []

    def echo(req: HttpRequest) -> HttpResponse:
        seen.append(req)
        return HttpResponse(200, [("content-type", "application/octet-stream")], req.body)

    bench = opened(http_gem(gem), http=[{"match": "https://b.example/", "method": "POST", "respond": echo}])
    res = bench.call(f"bytes_{lang}", {"url": "https://b.example/up"})
    res.raise_for_error()
    assert res.value["b64"] == "AAEC/w==" and seen[0].body == bytes([0, 1, 2, 255])
    if lang == "js":
        assert res.value["used"] is True and seen[0].headers["x-kind"] == "bytes"


def test_N10_unmatched_request_fails_loudly_listing_handlers(
    gem: GemBuilder, opened: Callable, lang: str
) -> None:
    def is_flaky(req: HttpRequest) -> bool:
        return "flaky" in req.url

    bench = opened(
        http_gem(gem),
        http=[
            {"match": "https://api.acme.example/", "method": "POST", "respond": {"status": 201}},
            {"match": is_flaky, "respond": {"status": 503}},
        ],
    )
    assert fetch(bench, lang, "https://x.example/flaky").value["status"] == 503
    res = fetch(bench, lang, "https://api.acme.example/v1/x")  # GET: the POST handler does not match
    assert res.error.code == "E_HTTP"
    assert "POST 'https://api.acme.example/'" in res.error.message and "is_flaky()" in res.error.message
    assert bench.http()["error"].fillna("").tolist() == ["", "E_HTTP"]


def test_N10_bad_arguments_name_the_field(gem: GemBuilder, opened: Callable, lang: str) -> None:
    bench = opened(http_gem(gem), http=[{"match": "https://", "respond": {}}])
    for res, field in [
        (fetch(bench, lang, "ftp://x/"), "url"),
        (fetch(bench, lang, "https://a.example/", colour=1), "colour"),
        (fetch(bench, lang, "https://a.example/", method="GE T"), "method"),
    ]:
        assert res.error.code == "E_INVALID_ARGUMENT" and field in res.error.message
        if lang == "py":
            assert res.error.details["field"] == field


# -- connections and credentialDenied ----------------------------------------------------------
@pytest.mark.parametrize(
    "url, connection, reason",
    [
        ("http://api.acme.example/v1/x", "acme", "not https"),
        ("https://evil.example/v1/x", "acme", "host not granted"),
        ("https://api.acme.example/v2/x", "acme", "path not granted"),
        ("https://api.acme.example/v1/x", "nope", "unknown connection"),
        ("https://sub.open.example/any", "open", "no credentials"),
    ],
)
def test_N10_credentials_denied_with_reason(
    gem: GemBuilder, opened: Callable, lang: str, url: str, connection: str, reason: str
) -> None:
    rec = Recorder(status=401)
    bench = opened(http_gem(gem), http=[{"match": lambda r: True, "respond": rec}], credentials=CREDS)
    res = fetch(bench, lang, url, connection=connection)
    res.raise_for_error()
    host = url.split("/")[2]
    assert res.value["denied"] == {"reason": reason, "host": host}
    assert res.value["status"] == 401 and rec.auth == [None]
    row = bench.http().iloc[0]
    assert (row.connection, row.credential, row.reason) == (connection, "denied", reason)


def test_N10_credentials_injected_on_https_granted_host_and_path(
    gem: GemBuilder, opened: Callable, lang: str
) -> None:
    rec = Recorder()
    bench = opened(
        http_gem(gem), http=[{"match": "https://api.acme.example/", "respond": rec}], credentials=CREDS
    )
    res = fetch(bench, lang, "https://api.acme.example/v1/items", connection="acme")
    res.raise_for_error()
    assert res.value["denied"] is None and rec.auth == [f"Bearer {SECRET}"]
    row = bench.http().iloc[0]
    assert (row.connection, row.credential, row.reason) == ("acme", "injected", None)


def test_N10_credentials_from_the_environment(
    gem: GemBuilder, opened: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = Recorder()
    bench = opened(http_gem(gem), http=[{"match": "https://", "respond": rec}])
    monkeypatch.setenv("GEM_WORKBENCH_CONN_ACME_TOKEN", SECRET)
    monkeypatch.setenv("GEM_WORKBENCH_CONN_ACME_HOSTS", "api.acme.example")
    fetch(bench, "py", "https://api.acme.example/v1/x", connection="acme").raise_for_error()
    assert rec.auth == [f"Bearer {SECRET}"]
    assert SECRET not in bench.http().to_string()


def test_N10_wildcard_host_grant(gem: GemBuilder, opened: Callable) -> None:
    rec = Recorder()
    bench = opened(
        http_gem(gem),
        http=[{"match": "https://", "respond": rec}],
        credentials={"open": {"headers": {"X-Key": SECRET}, "hosts": ["*.open.example"]}},
    )
    assert fetch(bench, "py", "https://a.open.example/x", connection="open").value["denied"] is None
    assert rec.seen[0].headers["X-Key"] == SECRET


def test_N10_redirect_to_another_host_drops_credentials(gem: GemBuilder, opened: Callable, lang: str) -> None:
    first, second = Recorder(302, headers={"Location": "https://evil.example/steal"}), Recorder()
    bench = opened(
        http_gem(gem),
        http=[
            {"match": "https://api.acme.example/", "respond": first},
            {"match": "https://evil.example/", "respond": second},
        ],
        credentials=CREDS,
    )
    res = fetch(bench, lang, "https://api.acme.example/v1/go", connection="acme")
    res.raise_for_error()
    assert first.auth == [f"Bearer {SECRET}"] and second.auth == [None]
    assert res.value["redirected"] is True and res.value["url"] == "https://evil.example/steal"
    assert res.value["denied"] == {"reason": "redirected to another host", "host": "evil.example"}
    row = bench.http().iloc[0]
    assert (row.credential, row.redirects) == ("dropped", 1)


def test_N10_redirect_on_the_same_granted_host_keeps_credentials(gem: GemBuilder, opened: Callable) -> None:
    hop = Recorder(307, headers={"Location": "/v1/next"})
    rec = Recorder()
    bench = opened(
        http_gem(gem),
        http=[
            {"match": "https://api.acme.example/v1/start", "respond": hop},
            {"match": "https://api.acme.example/v1/next", "respond": rec},
        ],
        credentials=CREDS,
    )
    res = fetch(bench, "py", "https://api.acme.example/v1/start", connection="acme")
    assert res.value["denied"] is None and rec.auth == [f"Bearer {SECRET}"]


def test_N10_credentials_are_masked_in_trace_logs_dataframe_and_errors(
    gem: GemBuilder, opened: Callable
) -> None:
    from workbench import WorkbenchError

    def leaky(req: HttpRequest) -> Any:
        print(req)
        raise WorkbenchError(
            "E_HTTP",
            f"server said: bad token {req.headers['Authorization']}",
            header=req.headers["Authorization"],
        )

    gem.tool(
        "log_py",
        """
def handle(input, ctx):
    try:
        ctx.http.fetch("https://api.acme.example/v1/x", {"connection": "acme"})
    except Exception as e:
        print("caught", e)
        raise
""",
    )
    bench = opened(http_gem(gem), http=[{"match": "https://", "respond": leaky}], credentials=CREDS)
    res = bench.call("log_py")
    assert res.error.code == "E_HTTP" and "***" in res.error.message
    everything = " ".join(
        [
            repr(res.error),
            str(res.error.details),
            res.logs,
            str(res.trace_rows),
            bench.http().to_string(),
            bench.calls().to_string(),
            repr(res),
        ]
    )
    assert SECRET not in everything


# -- real transport (httpx) against pytest-httpserver on 127.0.0.1 ---------------------------
class _TlsShim(RealTransport):
    """Real httpx, but https:// goes to the plain-http test server (TLS terminated here)."""

    def send(self, request: HttpRequest, timeout: float) -> HttpResponse:
        url = request.url.replace("https://", "http://", 1)
        return super().send(dataclasses.replace(request, url=url), timeout)


@pytest.fixture
def server(httpserver: Any) -> Any:
    return httpserver


def test_N10_real_fetch_json_and_bytes(gem: GemBuilder, opened: Callable, lang: str, server: Any) -> None:
    server.expect_request("/data").respond_with_json({"n": 1, "s": "é"})
    server.expect_request("/echo", method="POST").respond_with_handler(
        lambda req: Response(req.get_data(), content_type="application/octet-stream")
    )
    bench = opened(http_gem(gem), http="real", private_hosts=LOCAL)
    assert bench.call(f"json_{lang}", {"url": server.url_for("/data")}).value == {"n": 1, "s": "é"}
    res = bench.call(f"bytes_{lang}", {"url": server.url_for("/echo")})
    res.raise_for_error()
    assert res.value["b64"] == "AAEC/w=="
    df = bench.http()
    assert df["status"].tolist() == [200, 200] and (df["duration_ms"] > 0).all()


def test_N10_real_slow_server_times_out(gem: GemBuilder, opened: Callable, lang: str, server: Any) -> None:
    def slow(req: Any) -> Response:
        time.sleep(1.0)
        return Response("late")

    server.expect_request("/slow").respond_with_handler(slow)
    bench = opened(http_gem(gem), http="real", private_hosts=LOCAL, http_timeout=0.2)
    res = fetch(bench, lang, server.url_for("/slow"))
    assert res.error.code == "E_HTTP" and "0.2 s" in res.error.message
    assert "ReadTimeout" in res.error.message or "total deadline" in res.error.message
    if lang == "py":
        assert res.error.details["reason"] == "timeout"
    assert bench.http().iloc[0].error == "E_HTTP"


def test_N10_real_redirect_to_non_granted_host_drops_credentials(
    gem: GemBuilder, opened: Callable, lang: str, server: Any
) -> None:
    auth: dict[str, str | None] = {}

    def start(req: Any) -> Response:
        auth["start"] = req.headers.get("Authorization")
        # 127.0.0.1 -> localhost: the same server, another host (granted for acme, but
        # credentials never follow a redirect to another host)
        return Response("", status=302, headers={"Location": f"https://127.0.0.1:{server.port}/v1/land"})

    def land(req: Any) -> Response:
        auth["land"] = req.headers.get("Authorization")
        return Response("landed")

    server.expect_request("/v1/start").respond_with_handler(start)
    server.expect_request("/v1/land").respond_with_handler(land)
    bench = opened(
        http_gem(gem, top=local_grant(server.port)),
        http=_TlsShim(),
        private_hosts=LOCAL,
        credentials=local_creds(server.port),
    )
    res = fetch(bench, lang, f"https://localhost:{server.port}/v1/start", connection="acme")
    res.raise_for_error()
    assert auth == {"start": f"Bearer {SECRET}", "land": None}
    assert res.value["text"] == "landed"
    assert res.value["denied"] == {"reason": "redirected to another host", "host": "127.0.0.1"}
    assert SECRET not in bench.http().to_string() + str(res.trace_rows)


def test_N10_real_plain_http_never_gets_credentials(gem: GemBuilder, opened: Callable, server: Any) -> None:
    server.expect_request("/v1/x").respond_with_handler(
        lambda req: Response(str(req.headers.get("Authorization")), status=401)
    )
    bench = opened(http_gem(gem), http="real", private_hosts=LOCAL, credentials=CREDS)
    res = fetch(bench, "py", f"http://localhost:{server.port}/v1/x", connection="acme")
    assert res.value["text"] == "None" and res.value["status"] == 401
    assert res.value["denied"] == {"reason": "not https", "host": "localhost"}


# -- record / replay ------------------------------------------------------------------------
def test_N10_cassette_records_then_replays_without_the_server(
    gem: GemBuilder, opened: Callable, lang: str, server: Any, tmp_path: Path
) -> None:
    from workbench.providers.http import Cassette

    server.expect_request("/v1/data").respond_with_json({"n": 7})
    path = tmp_path / "cassette.json"
    rec = opened(
        http_gem(gem), http=Cassette(path, "record", inner=_TlsShim()), private_hosts=LOCAL, credentials=CREDS
    )
    url = f"https://localhost:{server.port}/v1/data"
    assert rec.call(f"json_{lang}", {"url": url}).value == {"n": 7}
    assert SECRET not in path.read_text()
    server.clear()  # the server no longer answers: replay must not need it
    play = opened(gem, http=Cassette(path, "replay"))
    assert play.call(f"json_{lang}", {"url": url}).value == {"n": 7}
    res = play.call(f"json_{lang}", {"url": url})  # recorded once: the second request is not in it
    assert res.error.code == "E_HTTP" and "not in cassette" in res.error.message


def test_N10_cassette_does_not_store_injected_credentials(
    gem: GemBuilder, opened: Callable, tmp_path: Path
) -> None:
    from workbench.providers.http import Cassette, MockTransport

    rec = Recorder()
    path = tmp_path / "c.json"
    bench = opened(
        http_gem(gem),
        http=Cassette(path, "record", inner=MockTransport([{"match": "https://", "respond": rec}])),
        credentials=CREDS,
    )
    fetch(bench, "py", "https://api.acme.example/v1/x", connection="acme").raise_for_error()
    assert rec.auth == [f"Bearer {SECRET}"] and SECRET not in path.read_text()


def test_N10_credentials_from_a_secrets_file(gem: GemBuilder, opened: Callable, tmp_path: Path) -> None:
    secrets = tmp_path / "secrets.json"
    secrets.write_text(json.dumps(CREDS))
    rec = Recorder()
    bench = opened(http_gem(gem), http=[{"match": "https://", "respond": rec}], credentials=secrets)
    fetch(bench, "py", "https://api.acme.example/v1/x", connection="acme").raise_for_error()
    assert rec.auth == [f"Bearer {SECRET}"]
    secrets.write_text("{not json " + SECRET)
    with pytest.raises(workbench.WorkbenchError) as info:
        opened(gem, credentials=secrets)
    assert SECRET not in str(info.value)
    secrets.write_text(json.dumps({"acme": {"Authorization": f"Bearer {SECRET}"}}))  # no hosts
    with pytest.raises(workbench.UsageError) as info:
        opened(gem, credentials=secrets)
    assert "'hosts'" in str(info.value) and SECRET not in str(info.value)


def test_N10_redirect_to_plain_http_on_the_same_host_drops_credentials(
    gem: GemBuilder, opened: Callable
) -> None:
    hop = Recorder(302, headers={"Location": "http://api.acme.example/v1/next"})
    rec = Recorder()
    bench = opened(
        http_gem(gem),
        http=[
            {"match": "https://api.acme.example/", "respond": hop},
            {"match": "http://api.acme.example/", "respond": rec},
        ],
        credentials=CREDS,
    )
    res = fetch(bench, "py", "https://api.acme.example/v1/start", connection="acme")
    assert hop.auth == [f"Bearer {SECRET}"] and rec.auth == [None]
    assert res.value["denied"] == {"reason": "not https", "host": "api.acme.example"}
    assert bench.http().iloc[0].credential == "dropped"


def test_N10_credentials_from_the_keyring(gem: GemBuilder, monkeypatch: Any) -> None:
    """No open(credentials=…) and no env var: the keyring's 'connection:<name>' entry is used."""
    import sys
    import types

    fake = types.ModuleType("keyring")
    fake.get_password = lambda service, user: (  # type: ignore[attr-defined]
        "kr-token-123" if (service, user) == ("gem-workbench", "connection:acme") else None
    )
    monkeypatch.setitem(sys.modules, "keyring", fake)
    from workbench.ctx.http_credentials import HttpState
    from workbench.providers.http import MockTransport

    state = HttpState(MockTransport(), env={})
    assert state.headers_for("acme") == {"Authorization": "Bearer kr-token-123"}
    assert state.headers_for("other") is None
    cred = state.credential("acme")  # no hosts for it anywhere: it goes nowhere (SEC4)
    assert cred is not None and cred.hosts == () and "connection:acme:hosts" in (cred.problem or "")
    assert "kr-token-123" not in state.mask("token kr-token-123")
