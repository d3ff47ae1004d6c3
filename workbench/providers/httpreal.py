"""RealTransport: ctx.http over httpx, bounded (SEC5) and stateless (SEC4); see
`workbench.providers.http`. The total-deadline `Watchdog` and the cookie-less jar serve the
resource downloads too."""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .._errors import WorkbenchError
from .httpbase import HttpRequest, HttpResponse, too_large

_CHUNK = 64 * 1024


class Watchdog:
    """Bounds a blocking httpx exchange by a total deadline (SEC5).

    httpx's timeouts are per phase and per read: a server sending one byte per second never
    trips them. The watchdog records every socket httpx connects (httpcore's `trace`
    extension) and shuts them down when the deadline passes, which wakes a blocked read; the
    caller then sees `fired` and reports a timeout. Use one per exchange, with `trace` passed
    as `extensions={"trace": dog.trace}` and connections not kept alive (a reused connection
    would not be traced). Other clients (smtplib) hand their sockets to `watch`. Each socket is
    kept as a duplicate: shutting that down also stops a TLS socket later wrapped around it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = max(0.0, seconds)
        self.fired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(self.seconds, self._fire)
        self._timer.daemon = True

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._timer.cancel()
        with self._lock:
            for dup in self._socks:
                dup.close()

    def trace(self, name: str, info: dict[str, Any]) -> None:
        if not name.endswith("connect_tcp.complete"):
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            self.watch(sock)

    def watch(self, sock: socket.socket) -> None:
        """Cut `sock` at the deadline (at once if it has passed)."""
        with self._lock:
            self._socks.append(sock.dup())
            if self.fired:  # connected after the deadline: stop at once
                self._shutdown(self._socks[-1])

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            for sock in self._socks:
                self._shutdown(sock)

    @staticmethod
    def _shutdown(sock: socket.socket) -> None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # already closed
            pass


class _NoCookies(DefaultCookiePolicy):
    """A cookie policy that neither stores nor sends cookies: no state between requests."""

    def set_ok(self, cookie: Any, request: Any) -> bool:
        return False

    def return_ok(self, cookie: Any, request: Any) -> bool:
        return False


def no_cookie_jar() -> CookieJar:
    """An httpx `cookies=` jar that stays empty (SEC4: nothing carried between calls)."""
    return CookieJar(policy=_NoCookies())


def stream_body(
    chunks: Iterator[bytes], max_bytes: int | None, on_too_large: Callable[[], Exception]
) -> bytes:
    """Join streamed chunks, stopping as soon as they pass `max_bytes` (never all in memory)."""
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if max_bytes is not None and size > max_bytes:
            raise on_too_large()
        parts.append(chunk)
    return b"".join(parts)


ACCEPT_ENCODING = "gzip, deflate"


class _Inflate:
    """One Content-Encoding layer (gzip, x-gzip, deflate), inflated in bounded steps."""

    def __init__(self, coding: str) -> None:
        import zlib

        self.coding = coding
        self.gzip = coding in ("gzip", "x-gzip")
        self.first = True
        self.z = zlib.decompressobj(16 + zlib.MAX_WBITS if self.gzip else zlib.MAX_WBITS)

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The output for `data`, in pieces of at most _CHUNK bytes (zlib.error on bad data);
        it goes on while zlib fills the whole piece, so nothing waits for a later call."""
        import zlib

        while True:
            if self.z.eof:
                rest = self.z.unused_data + data
                if not (self.gzip and rest[:2] == b"\x1f\x8b"):
                    return  # nothing, or trailing bytes after the stream: ignored
                self.z = zlib.decompressobj(16 + zlib.MAX_WBITS)  # the next gzip member
                data = rest
            try:
                out = self.z.decompress(data, _CHUNK)
            except zlib.error:
                if not (self.first and not self.gzip):
                    raise
                # "deflate" sent as a raw deflate stream (no zlib header), as httpx accepts
                self.z = zlib.decompressobj(-zlib.MAX_WBITS)
                out = self.z.decompress(data, _CHUNK)
            self.first = False
            data = self.z.unconsumed_tail
            if out:
                yield out
            if not data and len(out) < _CHUNK:
                return

    def flush(self) -> Iterator[bytes]:
        yield from self.feed(b"")
        tail = self.z.flush()  # at most what one step left pending (a match, < 64 KiB)
        if tail:
            yield tail


def decoded_body(
    chunks: Iterator[bytes], content_encoding: str | None, check: Callable[[], None] = lambda: None
) -> Iterator[bytes]:
    """`chunks` (raw bytes) with every Content-Encoding layer undone, in pieces of at most
    _CHUNK bytes; `check()` runs between steps (it raises to stop). An unknown coding (or
    none) leaves the bytes as they are."""
    codings = [c.strip().lower() for c in (content_encoding or "").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings or any(c not in ("gzip", "x-gzip", "deflate") for c in codings):
        for chunk in chunks:
            check()
            yield chunk
        return
    layers = [_Inflate(c) for c in reversed(codings)]  # the last applied is undone first

    def through(i: int, data: bytes) -> Iterator[bytes]:
        if i == len(layers):
            check()
            yield data
            return
        for out in layers[i].feed(data):
            check()
            yield from through(i + 1, out)

    for chunk in chunks:
        check()
        yield from through(0, chunk)
    for i, layer in enumerate(layers):
        for out in layer.flush():
            yield from through(i + 1, out)


def http_timeout_error(request: HttpRequest, timeout: float, why: str) -> WorkbenchError:
    """E_HTTP reason "timeout"; `why` names what ran out (httpx's ReadTimeout, the deadline)."""
    return WorkbenchError(
        "E_HTTP",
        f"{request.method} {request.url}: no complete answer within "
        f"{timeout:g} s ({why}; the timeout covers connecting, redirects and "
        "the whole body)",
        url=request.url,
        reason="timeout",
        timeout=timeout,
        why=why,
    )


def _resolve(host: str, port: int) -> list[str]:
    """Every address the system resolver gives `host` (an IP literal gives itself)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


Target = tuple[str, dict[str, str], dict[str, Any]]  # (URL to connect to, Host header, extensions)


def pinned(
    method: str,
    url: str,
    guard: Callable[[str], str | None] | None,
    hosts: Mapping[str, str] | None = None,
) -> list[Target]:
    """Where to connect for `url`: one target per address its host resolves to, in the
    resolver's order, each the URL with that address as its host and the Host header and
    httpcore extensions that keep the name for HTTP and TLS; `[url]` as given when there is
    neither a guard nor a hosts-table entry for its host (httpx resolves it then).

    With a guard, the host is resolved here (the hosts table first, then the system resolver)
    and EVERY address is asked of it: one it refuses is E_PERM_DENIED naming the address,
    before anything is sent. Only checked addresses are connected to (the next when one refuses
    the connection, as socket.create_connection does), so DNS cannot answer differently between
    the check and the connection."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    table = hosts or {}
    if host in table:
        addrs = [str(table[host])]
    elif guard is None:
        return [(url, {}, {})]
    else:
        try:
            addrs = _resolve(host, parts.port or (443 if parts.scheme == "https" else 80))
        except (OSError, UnicodeError, ValueError) as exc:
            raise WorkbenchError(
                "E_HTTP",
                f"{method} {url}: {host} does not resolve ({exc})",
                url=url,
                reason="connection",
            ) from None
    if guard is not None:
        for a in addrs:  # every address: a resolver may answer with several, in any order
            why = guard(a)
            if why is not None:
                said = a if host.strip("[]") == a else f"{host} resolves to {a}"
                raise WorkbenchError(
                    "E_PERM_DENIED",
                    f"{method} {url}: {said}, {why}",
                    url=url,
                    host=host,
                    address=a,
                    option="private_hosts",
                )
    port = f":{parts.port}" if parts.port else ""
    return [
        (
            urlunsplit(parts._replace(netloc=(f"[{a}]" if ":" in a else a) + port)),
            {"Host": parts.netloc},
            {"sni_hostname": host},
        )
        for a in addrs
    ]


class RealTransport:
    """httpx, one client per bench (its TLS setup is costly), but no state in it: no cookie
    jar, no kept-alive connection; redirects are never followed here (ctx.http does it).

    A request with a `guard` (ctx.http gives every request one: ctx/http_private.py) is
    resolved here, every address is checked with it, and the connection goes to the first
    checked address, the name kept for the Host header, TLS's SNI and the certificate check: a
    name that resolves to a private address is refused (E_PERM_DENIED) and DNS cannot answer
    differently between the check and the connection.

    `hosts={"api.demo.example": "127.0.0.1"}` is the bench's own hosts table: those names
    connect to those addresses without DNS, as the one who opened the bench said. It is a
    resolver, not a permission: the guard still judges the address (a loopback address needs
    `private_hosts=` naming the host or the address). It exists for tests that reach a server
    on 127.0.0.1 under a public-looking name; nothing a tool or a manifest says reaches it."""

    kind = "real"

    def __init__(self, verify: Any = True, hosts: Mapping[str, str] | None = None) -> None:
        self.verify = verify
        self.hosts = {k.lower(): str(ipaddress.ip_address(v)) for k, v in (hosts or {}).items()}
        self._client: Any = None

    def _pinned(self, request: HttpRequest) -> list[Target]:
        """`pinned` for `request`, with this transport's hosts table."""
        return pinned(request.method, request.url, request.guard, self.hosts)

    def _http(self) -> Any:
        import httpx

        if self._client is None:
            self._client = httpx.Client(
                follow_redirects=False,
                verify=self.verify,
                trust_env=False,
                cookies=no_cookie_jar(),  # SEC4: a Set-Cookie never reaches the next call
                # a fresh connection per request: the watchdog sees (and can cut) every socket
                limits=httpx.Limits(max_keepalive_connections=0),
            )
        return self._client

    def send(self, request: HttpRequest, timeout: float, max_bytes: int | None = None) -> HttpResponse:
        """One exchange within `timeout` seconds in total, its body at most `max_bytes`."""
        import httpx

        client = self._http()
        # resolved here, as httpx would: getaddrinfo has no timeout and no socket to cut
        targets = self._pinned(request)
        # the coding is ours to decode (boundedly): what the tool asked for was dropped upstream
        sent = {k: v for k, v in request.headers.items() if k.lower() != "accept-encoding"}
        sent["Accept-Encoding"] = ACCEPT_ENCODING
        with Watchdog(timeout) as dog:
            try:
                for n, (url, host_header, pin) in enumerate(targets, 1):
                    try:
                        resp = self._exchange(
                            client, request, url, {**sent, **host_header}, pin, dog, max_bytes
                        )
                        break
                    except httpx.ConnectError:  # the next checked address, as create_connection does
                        if n == len(targets) or dog.fired:
                            raise
            except httpx.TimeoutException as exc:
                raise http_timeout_error(request, timeout, type(exc).__name__) from None
            except httpx.HTTPError as exc:
                if dog.fired:  # the watchdog cut the socket: that is the timeout, not the server
                    raise http_timeout_error(request, timeout, "total deadline") from None
                raise WorkbenchError(
                    "E_HTTP",
                    f"{request.method} {request.url}: {type(exc).__name__}: {exc}",
                    url=request.url,
                    reason="connection",
                ) from None
        if dog.fired:  # a body read to "end of stream" after the cut is a truncated body
            raise http_timeout_error(request, timeout, "total deadline")
        return resp

    @staticmethod
    def _exchange(
        client: Any,
        request: HttpRequest,
        url: str,
        headers: dict[str, str],
        pin: dict[str, Any],
        dog: Watchdog,
        max_bytes: int | None,
    ) -> HttpResponse:
        """`request` sent to `url` (one checked address), its body read and decoded."""
        import zlib

        import httpx

        def check() -> None:
            if dog.fired:  # inflating is CPU work the socket cut cannot stop
                raise http_timeout_error(request, dog.seconds, "total deadline")

        with client.stream(
            request.method,
            url,
            headers={k: v.encode("latin-1") for k, v in headers.items()},
            content=request.body or None,
            timeout=httpx.Timeout(dog.seconds),
            extensions={"trace": dog.trace, **pin},
        ) as r:
            declared = _content_length(r.headers)
            if max_bytes is not None and declared is not None and declared > max_bytes:
                raise too_large(request, max_bytes, declared)  # not read at all
            chunks = decoded_body(r.iter_raw(_CHUNK), r.headers.get("content-encoding"), check)
            try:
                body = stream_body(chunks, max_bytes, lambda: too_large(request, max_bytes or 0))
            except zlib.error as exc:
                raise WorkbenchError(
                    "E_HTTP",
                    f"{request.method} {request.url}: the response body is not valid "
                    f"{r.headers.get('content-encoding')} ({exc})",
                    url=request.url,
                    reason="decoding",
                ) from None
            # each byte a character, as fetch's ByteString headers (httpx would decode UTF-8,
            # then the JS Headers class refuses anything past U+00FF)
            headers_out = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in r.headers.raw]
            return HttpResponse(status=r.status_code, headers=headers_out, body=body, reason=r.reason_phrase)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _content_length(headers: Any) -> int | None:
    value = headers.get("content-length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
