"""Adversarial tests of an Ekanos integration's egress (K6): addresses in disguise, names of
this machine, names that resolve to private addresses, and DNS answering differently between
the check and the connection.

Every integration here is hostile on purpose and runs in the real Deno sandbox; its fetches go
through real httpx. The one a test wants reached is a server on 127.0.0.1, which the rule
refuses, so a test reaches it only through the bench's own hosts table
(`RealTransport(hosts=…)`) and `private_hosts=` naming the host, which no tool or manifest can
touch. "Hostile DNS" is the system
resolver (`socket.getaddrinfo`) patched in this process, where the bench resolves.
"""

from __future__ import annotations

import dataclasses
import http.server
import json
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_ekanos import integration, tool

import workbench
from workbench import GemLoadError
from workbench.providers.http import HttpRequest, HttpResponse, RealTransport

pytestmark = pytest.mark.deno

DISGUISES = ["127.0.0.0x1", "127.0x1", "169.254.169.0xfe", "0x7f.1", "2130706433", "017700000001"]
LOCAL = ["localhost", "api.localhost", "*.app.localhost", "metadata.google.internal"]
FETCH = "try { const r = await ctx.fetch(args.url); return ['sent', r.status]; } catch (e) { return [e.code, e.message]; }"
PARAMS = "{ type: 'object', properties: { url: { type: 'string' } } }"


def fetcher(root: Path, egress: list[str]) -> Path:
    """An integration with one tool that fetches `args.url` and says what came of it."""
    root = integration(root, tool("f", FETCH, params=PARAMS))
    text = (root / "integration.ts").read_text().replace("['api.demo.example']", json.dumps(egress))
    (root / "integration.ts").write_text(text)
    return root


class _ToPort(RealTransport):
    """Real httpx, https://<host>/ sent as http://<host>:<port>/ (TLS ends here); the host is
    kept, so the resolver (or the bench's hosts table) decides where it goes, and so is the
    request's guard."""

    def __init__(self, port: int, hosts: dict[str, str] | None = None) -> None:
        super().__init__(hosts=hosts)
        self.port = port

    def send(self, request: HttpRequest, timeout: float, max_bytes: int | None = None) -> HttpResponse:
        scheme, rest = request.url.split("://", 1)
        host, _, path = rest.partition("/")
        url = f"http://{host}:{self.port}/{path}"
        return super().send(dataclasses.replace(request, url=url), timeout, max_bytes)


@pytest.fixture
def hostile_dns(monkeypatch: pytest.MonkeyPatch) -> Callable[[dict[str, list[str]]], list[str]]:
    """hostile_dns({name: [addresses] or a function giving them}): the system resolver answers
    those names so; returns the names asked, in order."""
    real = socket.getaddrinfo
    asked: list[str] = []

    def install(answers: dict[str, list[str]]) -> list[str]:
        def fake(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            name = host.decode() if isinstance(host, bytes) else str(host)
            if name not in answers:
                return real(host, port, *args, **kwargs)
            asked.append(name)
            got = answers[name]
            return [
                info
                for addr in (got() if callable(got) else got)
                for info in real(addr, port, *args, **kwargs)
            ]

        monkeypatch.setattr(socket, "getaddrinfo", fake)
        return asked

    return install


# -- at load: an entry that is an address, or this machine -----------------------------------


@pytest.mark.parametrize("entry", DISGUISES + LOCAL)
def test_K6_an_egress_entry_in_disguise_is_refused_at_load(tmp_path: Path, entry: str) -> None:
    root = fetcher(tmp_path / "i", ["api.demo.example", entry])
    with pytest.raises(GemLoadError) as err:
        workbench.open(root)
    e = err.value
    assert e.code == "E_MANIFEST" and e.details["pointer"] == "egress.1", e
    assert entry in e.message and e.details["file"].endswith("integration.ts")


# -- at fetch: the host is, or resolves to, a private address --------------------------------


@pytest.mark.parametrize("spelled", [*DISGUISES, "127.1", "127.0.0.1.", "localhost"])
def test_K6_fetch_to_an_address_in_disguise_reaches_nothing(
    tmp_path: Path, opened: Callable, httpserver: Any, spelled: str
) -> None:
    """A description whose egress got past both entry checks (a regression, or a forged one)
    still reaches no address: the fetch reads the host as the resolver would. The server on
    127.0.0.1 is where each spelling leads (169.254.169.0xfe: nowhere here, still refused)."""
    root = fetcher(tmp_path / "i", ["api.demo.example"])
    bench = opened(root, http=_ToPort(httpserver.port), http_timeout=3)
    bench.manifest.raw["egress"] = ["api.demo.example", spelled]  # before the first call reads it
    code, message = bench.call("f", {"url": f"https://{spelled}/meta"}).value
    assert code == "E_PERM_DENIED" and "egress" in message, message
    assert httpserver.log == []


@pytest.mark.parametrize(
    "answer", [["127.0.0.1"], ["::ffff:127.0.0.1"], ["93.184.215.14", "127.0.0.1"]], ids=str
)
def test_K6_a_name_that_resolves_to_a_private_address_is_refused_at_fetch(
    tmp_path: Path, opened: Callable, httpserver: Any, hostile_dns: Callable, answer: list[str]
) -> None:
    """The egress allows a public-looking name; DNS says it is 127.0.0.1 (first, or after a
    public address: every address is checked). The server there gets no request."""
    asked = hostile_dns({"api.demo.example": answer})
    root = fetcher(tmp_path / "i", ["api.demo.example"])
    bench = opened(root, http=_ToPort(httpserver.port), http_timeout=3)
    code, message = bench.call("f", {"url": "https://api.demo.example/v1"}).value
    assert code == "E_PERM_DENIED" and "resolves to" in message and "public" in message, message
    assert httpserver.log == [] and asked == ["api.demo.example"]


@pytest.mark.parametrize(
    "answer, why",
    [
        ("fec0::1", "site-local"),  # deprecated, still routed inside some networks
        ("::ffff:0:7f00:1", "carries 127.0.0.1"),  # SIIT's IPv4-translated 127.0.0.1
        ("::ffff:0:a9fe:a9fe", "carries 169.254.169.254"),
        ("192.0.0.8", "IETF protocol"),
        ("3fff::1", "documentation"),
        ("5f00::1", "segment-routing"),
    ],
)
def test_K6_a_name_that_resolves_into_a_range_pythons_is_global_misses_is_refused(
    tmp_path: Path, opened: Callable, httpserver: Any, hostile_dns: Callable, answer: str, why: str
) -> None:
    """Ranges Python 3.11's `is_global` calls public: site-local fec0::/10, RFC 2765's
    translated ::ffff:0:a.b.c.d, 192.0.0.0/24, 3fff::/20, 5f00::/16. A fetch there was
    attempted before."""
    hostile_dns({"api.demo.example": [answer]})
    root = fetcher(tmp_path / "i", ["api.demo.example"])
    bench = opened(root, http=_ToPort(httpserver.port), http_timeout=3)
    code, message = bench.call("f", {"url": "https://api.demo.example/v1"}).value
    assert code == "E_PERM_DENIED" and f"resolves to {answer}" in message and why in message, message
    assert httpserver.log == []


def test_K6_every_redirect_hop_is_resolved_and_checked_again(
    tmp_path: Path, opened: Callable, httpserver: Any, hostile_dns: Callable
) -> None:
    """api.demo.example (the bench's hosts table: the test server) redirects to another name
    the wildcard egress allows, which DNS says is 127.0.0.1: the hop is refused, the server
    sees the first request only."""
    from werkzeug import Response

    httpserver.expect_request("/go").respond_with_handler(
        lambda req: Response("", status=302, headers={"location": "https://inner.demo.example/admin"})
    )
    asked = hostile_dns({"inner.demo.example": ["127.0.0.1"]})
    root = fetcher(tmp_path / "i", ["*.demo.example"])
    bench = opened(
        root,
        http=_ToPort(httpserver.port, hosts={"api.demo.example": "127.0.0.1"}),
        private_hosts=["api.demo.example"],
    )
    code, message = bench.call("f", {"url": "https://api.demo.example/go"}).value
    assert code == "E_PERM_DENIED" and "inner.demo.example resolves to 127.0.0.1" in message
    assert [r.path for r, _ in httpserver.log] == ["/go"] and asked == ["inner.demo.example"]


# -- the connection goes to the address that was checked (DNS rebinding) -----------------------


class _Recorder(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.server.paths.append((self.path, self.headers["host"]))  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def two_servers() -> Iterator[tuple[int, list[Any], list[Any]]]:
    """The same port on 127.0.0.1 and 127.0.0.3: (port, the (path, Host) each got)."""
    first = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    port = first.server_address[1]
    second = http.server.ThreadingHTTPServer(("127.0.0.3", port), _Recorder)
    threads = []
    for srv in (first, second):
        srv.paths = []  # type: ignore[attr-defined]
        threads.append(threading.Thread(target=srv.serve_forever, daemon=True))
        threads[-1].start()
    try:
        yield port, first.paths, second.paths  # type: ignore[attr-defined]
    finally:
        for srv, t in zip((first, second), threads):
            srv.shutdown()
            srv.server_close()
            t.join()


def test_K6_the_connection_is_pinned_to_the_checked_address(
    two_servers: tuple[int, list[Any], list[Any]], hostile_dns: Callable
) -> None:
    """DNS answers 127.0.0.1 (which this guard allows) once, then 127.0.0.3: the request goes
    to the address that was checked, the name is asked once, and the Host header keeps it."""
    port, checked, swapped = two_servers
    answers = iter([["127.0.0.1"]] + [["127.0.0.3"]] * 5)
    asked = hostile_dns({"rebind.demo.example": lambda: next(answers)})
    transport = RealTransport()
    try:
        guard = lambda a: None if a == "127.0.0.1" else "not the test's address"  # noqa: E731
        url = f"http://rebind.demo.example:{port}/pinned"
        resp = transport.send(HttpRequest("GET", url, guard=guard), 5)
    finally:
        transport.close()
    assert (resp.status, resp.body) == (200, b"ok")
    assert checked == [("/pinned", f"rebind.demo.example:{port}")] and swapped == []
    assert asked == ["rebind.demo.example"]
