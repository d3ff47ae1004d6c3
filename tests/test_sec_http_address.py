"""Adversarial tests of the address rule of every platform's real HTTP: a tool (or a manifest's
resource URL) that aims ctx.http.fetch at this machine — the Jupyter server, a local database,
the cloud metadata address — in every spelling, through the bench's hosts table, through DNS,
or through a redirect.

The servers here listen on 127.0.0.1 and ::1 (the same port) and record every request; a test
of a refusal asserts they received nothing. Fetches go through real httpx (RealTransport);
"hostile DNS" is the system resolver patched in this process, where the bench resolves. JS
tools run in the real Deno sandbox, Python tools in-process.
"""

from __future__ import annotations

import errno
import hashlib
import http.server
import ipaddress
import json
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import GemBuilder
from test_ekanos import integration, tool
from test_sec_egress import _ToPort, hostile_dns  # noqa: F401  (hostile_dns: a fixture)

from workbench import UsageError
from workbench.providers.http import RealTransport

PY_FETCH = """
def handle(input, ctx):
    r = ctx.http.fetch(input["url"])
    return {"status": r.status, "text": r.text()[:200]}
"""
JS_FETCH = """
export default async function (input, ctx) {
  const r = await ctx.http.fetch(input.url);
  return { status: r.status, text: (await r.text()).slice(0, 200) };
}
"""
DATA = b"local model bytes " * 100
DATA_SHA = hashlib.sha256(DATA).hexdigest()


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Records every GET; a path in the server's `redirects` is a 302 there, *.bin the
    resource's bytes, anything else "secret"."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.server.seen.append(self.path)  # type: ignore[attr-defined]
        to = self.server.redirects.get(self.path)  # type: ignore[attr-defined]
        if to is not None:
            self.send_response(302)
            self.send_header("location", to)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        body = DATA if self.path.endswith(".bin") else b"secret"
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class _V6Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6


class Local:
    """Servers on 127.0.0.1 and [::1] at one port: what each was asked."""

    def __init__(self, v4: Any, v6: Any | None) -> None:
        self.port: int = v4.server_address[1]
        self.v4: list[str] = v4.seen
        self.v6: list[str] = v6.seen if v6 is not None else []  # a machine without IPv6: none
        self.redirects: dict[str, str] = v4.redirects  # path -> Location, on both servers

    @property
    def nothing(self) -> bool:
        return self.v4 == [] and self.v6 == []

    @property
    def both(self) -> list[str]:
        """What either got (`localhost` may be ::1 or 127.0.0.1 first, as /etc/hosts says)."""
        return sorted(self.v4 + self.v6)


def _pair() -> tuple[Any, Any | None]:
    """127.0.0.1 and ::1 servers on one free port (no ::1 server where IPv6 is off)."""
    for _ in range(20):
        v4 = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
        try:
            return v4, _V6Server(("::1", v4.server_address[1]), _Recorder)
        except OSError as exc:
            if exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):  # no IPv6 loopback here
                return v4, None
            v4.server_close()  # that port is taken on ::1: another pair
    pytest.fail("no port free on both 127.0.0.1 and ::1")


@pytest.fixture
def local() -> Iterator[Local]:
    """Two recording servers, 127.0.0.1 and ::1, on the same port; stopped after the test."""
    v4, v6 = _pair()
    servers = [srv for srv in (v4, v6) if srv is not None]
    threads, redirects = [], {}
    for srv in servers:
        srv.seen = []  # type: ignore[attr-defined]
        srv.redirects = redirects  # type: ignore[attr-defined]
        threads.append(threading.Thread(target=srv.serve_forever, daemon=True))
        threads[-1].start()
    try:
        yield Local(v4, v6)
    finally:
        for srv, t in zip(servers, threads):
            srv.shutdown()
            srv.server_close()
            t.join()


def fetch_gem(gem: GemBuilder) -> GemBuilder:
    gem.tool("fetch_py", PY_FETCH)
    gem.tool("fetch_js", JS_FETCH, ext="js")
    gem.manifest["permissions"] = {"http": {}}
    return gem


def spellings(port: int) -> list[tuple[str, str]]:
    """(URL, the address it reaches) for this machine in every spelling a resolver takes, a
    name the bench's hosts table maps, a name DNS answers, and two no server here listens on
    (refused before connecting: the metadata address and a private one)."""
    return [
        (f"http://127.0.0.1:{port}/a", "127.0.0.1"),
        (f"http://localhost:{port}/a", "127.0.0.1"),
        (f"http://2130706433:{port}/a", "127.0.0.1"),
        (f"http://0x7f.1:{port}/a", "127.0.0.1"),
        (f"http://017700000001:{port}/a", "127.0.0.1"),
        (f"http://127.1:{port}/a", "127.0.0.1"),
        (f"http://[::1]:{port}/a", "::1"),
        (f"http://[::ffff:127.0.0.1]:{port}/a", "127.0.0.1"),
        (f"http://0.0.0.0:{port}/a", "0.0.0.0"),
        (f"http://0:{port}/a", "0.0.0.0"),
        (f"http://[::]:{port}/a", "::"),
        (f"http://0x7f000001:{port}/a", "127.0.0.1"),
        (f"http://127.0.0.1.:{port}/a", "127.0.0.1"),
        (f"http://LOCALHOST.:{port}/a", "127.0.0.1"),
        (f"http://\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11:{port}/a", "127.0.0.1"),  # fullwidth
        (f"http://127\u30020\u30020\u30021:{port}/a", "127.0.0.1"),  # ideographic full stops
        (f"http://[0:0:0:0:0:0:0:1]:{port}/a", "::1"),
        (f"http://[::127.0.0.1]:{port}/a", "127.0.0.1"),  # IPv4-compatible
        (f"http://[64:ff9b::7f00:1]:{port}/a", "127.0.0.1"),  # NAT64
        (f"http://[2002:7f00:1::]:{port}/a", "127.0.0.1"),  # 6to4
        (f"http://hosted.demo.example:{port}/a", "127.0.0.1"),  # the bench's hosts table
        (f"http://rebind.demo.example:{port}/a", "127.0.0.1"),  # DNS
        (f"http://mixed.demo.example:{port}/a", "127.0.0.1"),  # DNS: a public address, then this one
        (f"http://169.254.169.254:{port}/latest/meta-data/", "169.254.169.254"),
        (f"http://10.0.0.1:{port}/a", "10.0.0.1"),
    ]


def test_SEC4_every_spelling_of_this_machine_reaches_nothing(
    gem: GemBuilder, opened: Callable, lang: str, local: Local, hostile_dns: Callable
) -> None:
    """ctx.http.fetch with real HTTP, no private_hosts=: each spelling is E_PERM_DENIED naming
    the address and the option, and neither server is asked anything."""
    asked = hostile_dns(
        {"rebind.demo.example": ["127.0.0.1"], "mixed.demo.example": ["93.184.215.14", "127.0.0.1"]}
    )
    bench = opened(fetch_gem(gem), http=RealTransport(hosts={"hosted.demo.example": "127.0.0.1"}))
    for url, addr in spellings(local.port):
        res = bench.call(f"fetch_{lang}", {"url": url})
        err = res.error
        assert err is not None and err.code == "E_PERM_DENIED", (url, res.value)
        assert addr in err.message and "private_hosts=[" in err.message and "--private-host" in err.message
        if lang == "py":
            assert err.details["option"] == "private_hosts" and ipaddress.ip_address(err.details["address"])
    assert local.nothing, (local.v4, local.v6)
    assert asked == ["rebind.demo.example", "mixed.demo.example"]
    assert bench.http()["error"].tolist() == ["E_PERM_DENIED"] * len(spellings(local.port))


def test_SEC4_a_redirect_to_this_machine_is_refused_at_its_hop(
    gem: GemBuilder, opened: Callable, lang: str, local: Local
) -> None:
    """The bench allows 127.0.0.1 on the server's port; the server redirects to ::1, to
    another port of 127.0.0.1 and to the metadata address inside IPv6: each hop is refused."""
    port = local.port
    targets = [f"http://[::1]:{port}/x", f"http://127.0.0.1:{port + 1}/x", "http://[::ffff:a9fe:a9fe]/x"]
    local.redirects.update({f"/go{i}": to for i, to in enumerate(targets)})
    bench = opened(fetch_gem(gem), http="real", private_hosts=[f"127.0.0.1:{port}"])
    assert bench.call(f"fetch_{lang}", {"url": f"http://127.0.0.1:{port}/ok"}).value["text"] == "secret"
    for i, to in enumerate(targets):
        err = bench.call(f"fetch_{lang}", {"url": f"http://127.0.0.1:{port}/go{i}"}).error
        assert err is not None and err.code == "E_PERM_DENIED" and "private_hosts" in err.message, to
    assert local.v4 == ["/ok", "/go0", "/go1", "/go2"] and local.v6 == []


def test_SEC4_private_hosts_names_hosts_never_more(
    gem: GemBuilder, opened: Callable, local: Local, hostile_dns: Callable
) -> None:
    """A name entry lets that name through (not the address it resolves to under another
    name); an address entry that address in any spelling; a port entry that port only."""
    port = local.port
    hostile_dns({"rebind.demo.example": ["127.0.0.1"]})
    by_name = opened(fetch_gem(gem), http="real", private_hosts=["localhost"])
    assert by_name.call("fetch_py", {"url": f"http://localhost:{port}/n"}).value["status"] == 200
    for url in (f"http://127.0.0.1:{port}/n", f"http://rebind.demo.example:{port}/n"):
        assert by_name.call("fetch_py", {"url": url}).error.code == "E_PERM_DENIED"
    by_addr = opened(
        gem.write(), http="real", state_dir=gem.root.parent / "s2", private_hosts=[f"0x7f.1:{port}"]
    )
    for url in (f"http://2130706433:{port}/a", f"http://[::ffff:127.0.0.1]:{port}/a"):
        assert by_addr.call("fetch_js", {"url": url}).value["status"] == 200
    for url in (f"http://[::1]:{port}/a", f"http://127.0.0.1:{port + 1}/a"):
        assert by_addr.call("fetch_js", {"url": url}).error.code == "E_PERM_DENIED"
    assert local.both == ["/a", "/a", "/n"]


def test_SEC4_a_checked_address_that_refuses_the_connection_gives_way_to_the_next(
    gem: GemBuilder, opened: Callable, lang: str, local: Local, hostile_dns: Callable
) -> None:
    """A name answering two addresses, the first with nothing listening (as `localhost` answers
    ::1 first beside a server on 127.0.0.1 only): both are checked, the connection falls back
    to the second as socket.create_connection would; a download does the same."""
    port = local.port
    hostile_dns({"dual.demo.example": ["127.0.0.5", "127.0.0.1"], "gone.demo.example": ["127.0.0.5"]})
    res_gem(fetch_gem(gem), f"http://dual.demo.example:{port}/m.bin", [])
    names = ["dual.demo.example", "gone.demo.example"]
    bench = opened(gem, http="real", providers="real", private_hosts=names)
    assert bench.call(f"fetch_{lang}", {"url": f"http://dual.demo.example:{port}/d"}).value["status"] == 200
    err = bench.call(f"fetch_{lang}", {"url": f"http://gone.demo.example:{port}/d"}).error
    assert err is not None and err.code == "E_HTTP" and "ConnectError" in err.message
    assert Path(bench.call(f"path_{lang}", {}).raise_for_error().value).read_bytes() == DATA
    assert local.v4 == ["/d", "/m.bin"]


@pytest.mark.parametrize(
    "value", ["127.0.0.1", ["*.example"], ["http://localhost/"], ["127.0.0.1:99999"], [""], [7], ["a b"]]
)
def test_SEC4_a_bad_private_hosts_entry_is_E_USAGE_naming_the_option(
    gem: GemBuilder, opened: Callable, value: Any
) -> None:
    with pytest.raises(UsageError) as err:
        opened(fetch_gem(gem), http="real", private_hosts=value)
    message = err.value.message  # what an entry is, with an example
    assert err.value.code == "E_USAGE" and "private_hosts" in message and "127.0.0.1:8080" in message


def test_SEC4_the_cli_flag_names_a_private_host(
    gem: GemBuilder, tmp_path: Path, local: Local, capsys: pytest.CaptureFixture[str]
) -> None:
    """`gem-workbench call --http real`: refused, the error naming --private-host; with the
    flag the server answers."""
    from workbench.cli import main

    root = fetch_gem(gem).write()
    url = json.dumps({"url": f"http://127.0.0.1:{local.port}/cli"})
    base = [
        "call",
        str(root),
        "fetch_py",
        "--input",
        url,
        "--http",
        "real",
        "--state-dir",
        str(tmp_path / "s"),
    ]
    assert main(base) != 0
    assert "--private-host 127.0.0.1:" in capsys.readouterr().err and local.nothing
    assert main([*base, "--private-host", f"127.0.0.1:{local.port}"]) == 0
    assert "secret" in capsys.readouterr().out and local.v4 == ["/cli"]


def test_SEC4_gem_open_takes_the_flag_from_the_same_table(
    gem: GemBuilder, tmp_path: Path, local: Local, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`%gem open … --http real --private-host HOST:PORT` in a notebook reaches the server."""
    from _ipython import workbench_shell

    monkeypatch.chdir(tmp_path)
    root = fetch_gem(gem).write()
    ip = workbench_shell(tmp_path / "ipython")
    state = tmp_path / "magic-state"
    try:
        opened = ip.run_cell(
            f"%gem open {root} --http real --private-host 127.0.0.1:{local.port} --state-dir {state}"
        )
        assert opened.success, opened.error_in_exec
        bench = ip.user_ns["bench"]
        assert bench.call("fetch_py", {"url": f"http://127.0.0.1:{local.port}/nb"}).value["status"] == 200
        assert bench.call("fetch_py", {"url": f"http://[::1]:{local.port}/nb"}).error.code == "E_PERM_DENIED"
    finally:
        ip.run_line_magic("gem", "close")
        ip.user_ns.pop("bench", None)
    assert local.v4 == ["/nb"] and local.v6 == []


def test_SEC4_the_checked_address_is_connected_to_with_the_names_tls_check(
    gem: GemBuilder, opened: Callable, tmp_path: Path
) -> None:
    """A TLS server on 127.0.0.1 with a certificate for tls.demo.example, named in private_hosts
    and mapped by the hosts table: the connection goes to the checked address and the
    certificate is still checked against the name (another name for the address fails TLS)."""
    import ssl
    import subprocess

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "2", "-subj", "/CN=tls.demo.example", "-addext", "subjectAltName=DNS:tls.demo.example"],
        check=True, capture_output=True,
    )  # fmt: skip
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.seen, server.redirects = [], {}  # type: ignore[attr-defined]
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        hosts = {"tls.demo.example": "127.0.0.1", "other.demo.example": "127.0.0.1"}
        transport = RealTransport(verify=ssl.create_default_context(cafile=str(cert)), hosts=hosts)
        names = ["tls.demo.example", "other.demo.example"]
        bench = opened(fetch_gem(gem), http=transport, private_hosts=names)
        assert bench.call("fetch_py", {"url": f"https://tls.demo.example:{port}/t"}).value["text"] == "secret"
        err = bench.call("fetch_js", {"url": f"https://other.demo.example:{port}/t"}).error
        assert err is not None and err.code == "E_HTTP" and "CERTIFICATE_VERIFY_FAILED" in err.message
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert server.seen == ["/t"]  # type: ignore[attr-defined]


# -- Ekanos: the hosts table is a resolver, not a permission ---------------------------------------


@pytest.mark.deno
def test_K6_a_hosts_table_name_on_loopback_needs_private_hosts(
    tmp_path: Path, opened: Callable, local: Local
) -> None:
    """An integration whose egress names api.demo.example; the bench's hosts table maps it to
    127.0.0.1. Without private_hosts= the fetch reaches nothing; with it, the server."""
    run = "try { const r = await ctx.fetch('https://api.demo.example/v1'); return r.status; } catch (e) { return e.code + ': ' + e.message; }"
    root = integration(tmp_path / "i", tool("f", run))
    hosts = {"api.demo.example": "127.0.0.1"}
    bench = opened(root, http=_ToPort(local.port, hosts=hosts))
    said = bench.call("f").value
    assert said.startswith("E_PERM_DENIED") and "api.demo.example resolves to 127.0.0.1" in said
    assert "private_hosts=['api.demo.example:443']" in said and local.nothing
    allowed = opened(
        root,
        http=_ToPort(local.port, hosts=hosts),
        state_dir=tmp_path / "s2",
        private_hosts=["api.demo.example"],
    )
    assert allowed.call("f").value == 200 and local.v4 == ["/v1"]


# -- ctx.resources: a manifest's URL, and the redirects it leads to --------------------------------


def res_gem(gem: GemBuilder, url: str, mirrors: list[str]) -> GemBuilder:
    gem.manifest["resources"] = [{"id": "m", "url": url, "mirrors": mirrors, "sha256": DATA_SHA}]
    gem.tool("path_py", "def handle(input, ctx):\n    return ctx.resources.path('m')\n")
    gem.tool("path_js", "export default async (input, ctx) => await ctx.resources.path('m');\n", ext="js")
    return gem


def test_R5_a_resource_url_on_this_machine_downloads_nothing(
    gem: GemBuilder, opened: Callable, lang: str, local: Local, hostile_dns: Callable
) -> None:
    """A gem's resource and its mirrors point at this machine in four spellings: every attempt
    is refused naming private_hosts, and no server is asked."""
    port = local.port
    hostile_dns({"rebind.demo.example": ["127.0.0.1"]})
    mirrors = [
        f"http://localhost:{port}/m.bin",
        f"http://[::1]:{port}/m.bin",
        f"http://rebind.demo.example:{port}/m.bin",
    ]
    bench = opened(res_gem(gem, f"http://2130706433:{port}/m.bin", mirrors), providers="real")
    err = bench.call(f"path_{lang}", {}).error
    assert err is not None and err.code == "E_RESOURCE", err
    if lang == "py":
        reasons = [a["reason"] for a in err.details["attempts"]]
        assert len(reasons) == 4 and all("private_hosts=[" in r for r in reasons), reasons
    assert local.nothing


def test_R5_a_resource_redirect_to_this_machine_is_refused_at_its_hop(
    gem: GemBuilder, opened: Callable, local: Local
) -> None:
    """The bench names 127.0.0.1 on the server's port; the resource's URL redirects to ::1:
    refused at that hop (httpx followed it unchecked before); the direct URL downloads."""
    port = local.port
    local.redirects["/go.bin"] = f"http://[::1]:{port}/m.bin"
    bench = opened(
        res_gem(gem, f"http://127.0.0.1:{port}/go.bin", []),
        providers="real",
        private_hosts=[f"127.0.0.1:{port}"],
    )
    err = bench.call("path_py", {}).error
    assert (
        err is not None and err.code == "E_RESOURCE" and "::1" in err.message and "redirect 1" in err.message
    )
    assert local.v4 == ["/go.bin"] and local.v6 == []
    gem.manifest["resources"][0]["url"] = f"http://127.0.0.1:{port}/m.bin"
    ok = opened(gem, providers="real", state_dir=gem.root.parent / "s2", private_hosts=[f"127.0.0.1:{port}"])
    assert Path(ok.call("path_js", {}).raise_for_error().value).read_bytes() == DATA
