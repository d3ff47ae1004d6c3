"""Transports of ctx.http.fetch (N10): send one request, never follow redirects.

The rules (permission, credentials, redirects, the log) live in `workbench.ctx.http`; a
transport only moves bytes:

    MockTransport   handlers matched in order by URL prefix (or predicate) and method, each
                    returning a response; an unmatched request is E_HTTP listing the handlers.
    RealTransport   httpx, bounded (SEC5): one TOTAL deadline over connect, headers and body
                    (a watchdog shuts the socket down when it passes, so a server dripping
                    bytes cannot hold a call), the body streamed and cut at `max_bytes`
                    (E_TOO_LARGE); no cookie jar and no kept-alive connection, so nothing
                    carries over from one request to the next (SEC4). httpx never decodes:
                    the raw bytes are inflated here, layer by layer, at most 64 KiB of output
                    per zlib step (`max_length`), the cap counted on decoded bytes and the
                    deadline checked between steps, so a gzip(gzip(2 GB)) bomb costs
                    milliseconds and no memory (httpx inflates a whole layer in one call).
                    `Accept-Encoding: gzip, deflate` is sent; another coding (br, zstd, …) is
                    returned as received.
    Cassette        record (through another transport) to a JSON file, or replay from it.

`send(request, timeout, max_bytes=None)`: `timeout` is the total seconds the request may take.
A transport of your own may take just `(request, timeout)`; the ctx layer then checks the body
size and the time once the response is back.

    workbench.open(gem, http=[
        {"match": "https://api.acme.example/", "respond": {"json": {"temperature": 12.4}}},
        {"match": "https://api.acme.example/v2/", "method": "POST",
         "respond": lambda req: {"status": 201, "text": req.text}},
        {"match": lambda req: "flaky" in req.url, "respond": {"status": 503}},
    ])
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any, Protocol

from .._errors import UsageError, WorkbenchError

__all__ = [
    "Cassette",
    "HttpRequest",
    "HttpResponse",
    "MockHandler",
    "MockTransport",
    "RealTransport",
    "Transport",
    "Watchdog",
    "make_transport",
    "too_large",
]

DEFAULT_TIMEOUT = 10.0
_CHUNK = 64 * 1024


@dataclass
class HttpRequest:
    """What goes on the wire (credentials included: never log this object as is)."""

    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.body)

    def __repr__(self) -> str:  # headers may carry credentials
        return f"<HttpRequest {self.method} {self.url}>"


@dataclass
class HttpResponse:
    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    reason: str = ""

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)


class Transport(Protocol):
    kind: str

    def send(self, request: HttpRequest, timeout: float) -> HttpResponse: ...


def too_large(request: HttpRequest, max_bytes: int, declared: int | None = None) -> WorkbenchError:
    """E_TOO_LARGE for a response body over the cap, naming the limit (Limits.http_body_bytes)."""
    said = f" (Content-Length {declared:,})" if declared is not None else ""
    return WorkbenchError(
        "E_TOO_LARGE",
        f"{request.method} {request.url}: the response body is "
        f"over {max_bytes:,} bytes{said}, the limit of one ctx.http.fetch "
        "(Limits.http_body_bytes)",
        url=request.url,
        limit="http_body_bytes",
        max_bytes=max_bytes,
    )


class Watchdog:
    """Bounds a blocking httpx exchange by a total deadline (SEC5).

    httpx's timeouts are per phase and per read: a server sending one byte per second never
    trips them. The watchdog records every socket httpx connects (httpcore's `trace`
    extension) and shuts them down when the deadline passes, which wakes a blocked read; the
    caller then sees `fired` and reports a timeout. Use one per exchange, with `trace` passed
    as `extensions={"trace": dog.trace}` and connections not kept alive (a reused connection
    would not be traced)."""

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

    def trace(self, name: str, info: dict[str, Any]) -> None:
        if not name.endswith("connect_tcp.complete"):
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            with self._lock:
                self._socks.append(sock)
                if self.fired:  # connected after the deadline: stop at once
                    self._shutdown(sock)

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


def _as_response(value: Any) -> HttpResponse:
    """A handler's answer: HttpResponse, {status, headers, json | text | body}, str, bytes."""
    if isinstance(value, HttpResponse):
        return value
    if isinstance(value, (str, bytes)):
        return _as_response({"body": value})
    if isinstance(value, int) and not isinstance(value, bool):
        return HttpResponse(status=value)
    if not isinstance(value, dict):
        raise UsageError(
            f"an http mock handler returned {type(value).__name__}: return a dict "
            "{status, headers, json | text | body}, a str, bytes or an HttpResponse"
        )
    headers = value.get("headers") or {}
    pairs = list(headers.items()) if isinstance(headers, dict) else [tuple(p) for p in headers]
    names = {k.lower() for k, _ in pairs}
    if "json" in value:
        body = json.dumps(value["json"]).encode()
        if "content-type" not in names:
            pairs.append(("content-type", "application/json"))
    else:
        raw = value.get("text", value.get("body")) or b""
        body = raw.encode() if isinstance(raw, str) else bytes(raw)
        if isinstance(raw, str) and "content-type" not in names:
            pairs.append(("content-type", "text/plain; charset=utf-8"))
    return HttpResponse(
        status=int(value.get("status", 200)),
        headers=[(str(k), str(v)) for k, v in pairs],
        body=body,
        reason=str(value.get("statusText", "")),
    )


@dataclass
class MockHandler:
    """`match`: a URL prefix or a predicate(request); `method`: None = any; `respond`: a
    response (see `_as_response`) or a function(request) returning one."""

    match: str | Callable[[HttpRequest], bool]
    respond: Any = None
    method: str | None = None

    def matches(self, request: HttpRequest) -> bool:
        if self.method is not None and self.method.upper() != request.method:
            return False
        if callable(self.match):
            return bool(self.match(request))
        return request.url.startswith(self.match)

    def describe(self) -> str:
        what = (
            getattr(self.match, "__name__", "predicate") + "()" if callable(self.match) else repr(self.match)
        )
        return f"{self.method.upper() if self.method else 'any'} {what}"


class MockTransport:
    """Answers from handlers, first match wins; no network."""

    kind = "mock"

    def __init__(self, handlers: Iterable[Any] = ()) -> None:
        self.handlers: list[MockHandler] = []
        for h in handlers:
            self.add(h)

    def add(self, handler: Any = None, /, **kw: Any) -> MockHandler:
        """Add a handler: a MockHandler, a dict {match, respond, method?}, or keywords."""
        h = handler if handler is not None else kw
        if isinstance(h, dict):
            unknown = set(h) - {"match", "respond", "method"}
            if "match" not in h or unknown:
                raise UsageError(f"http mock handler {h!r}: give {{match, respond, method?}}")
            h = MockHandler(h["match"], h.get("respond"), h.get("method"))
        if not isinstance(h, MockHandler):
            raise UsageError(f"http mock handler {h!r}: give a dict {{match, respond, method?}}")
        self.handlers.append(h)
        return h

    def send(self, request: HttpRequest, timeout: float, max_bytes: int | None = None) -> HttpResponse:
        for h in self.handlers:
            if h.matches(request):
                r = h.respond(request) if callable(h.respond) else h.respond
                return _as_response(r)  # size and time: the ctx layer checks them
        listed = "; ".join(h.describe() for h in self.handlers) or "none"
        raise WorkbenchError(
            "E_HTTP",
            f"no mock http handler matches {request.method} "
            f"{request.url} (handlers: {listed}); add one with "
            "workbench.open(..., http=[{'match': url_prefix, 'respond': …}])",
            url=request.url,
            method=request.method,
            handlers=[h.describe() for h in self.handlers],
        )


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


class RealTransport:
    """httpx, one client per bench (its TLS setup is costly), but no state in it: no cookie
    jar, no kept-alive connection; redirects are never followed here (ctx.http does it)."""

    kind = "real"

    def __init__(self, verify: Any = True) -> None:
        self.verify = verify
        self._client: Any = None

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
        import zlib

        import httpx

        client = self._http()
        # the coding is ours to decode (boundedly): what the tool asked for was dropped upstream
        sent = {k: v for k, v in request.headers.items() if k.lower() != "accept-encoding"}
        sent["Accept-Encoding"] = ACCEPT_ENCODING
        with Watchdog(timeout) as dog:

            def check() -> None:
                if dog.fired:  # inflating is CPU work the socket cut cannot stop
                    raise http_timeout_error(request, timeout, "total deadline")

            try:
                with client.stream(
                    request.method,
                    request.url,
                    headers={k: v.encode("latin-1") for k, v in sent.items()},
                    content=request.body or None,
                    timeout=httpx.Timeout(timeout),
                    extensions={"trace": dog.trace},
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
                            f"{request.method} {request.url}: the "
                            f"response body is not valid "
                            f"{r.headers.get('content-encoding')} ({exc})",
                            url=request.url,
                            reason="decoding",
                        ) from None
                    status, headers, reason = r.status_code, list(r.headers.multi_items()), r.reason_phrase
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
        return HttpResponse(status=status, headers=headers, body=body, reason=reason)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


class Cassette:
    """Record/replay: `Cassette(path, "record")` sends through `inner` (default: real httpx) and
    writes every exchange to a JSON file; `Cassette(path, "replay")` answers from the file only,
    in order per (method, url, body), and a request not in it is E_HTTP. Request headers are
    never written (credentials live there); responses are written as received."""

    kind = "cassette"

    def __init__(self, path: Any, mode: str = "replay", inner: Transport | None = None) -> None:
        from pathlib import Path

        if mode not in ("record", "replay"):
            raise UsageError(f"Cassette mode {mode!r}: use 'record' or 'replay'")
        self.path, self.mode = Path(path), mode
        self.inner = inner if inner is not None else RealTransport()
        self.exchanges: list[dict[str, Any]] = []
        if mode == "replay":
            if not self.path.is_file():
                raise UsageError(
                    f"cassette {self.path} does not exist: record it first with Cassette(path, 'record')"
                )
            self.exchanges = json.loads(self.path.read_text("utf-8"))["exchanges"]
        self._used: set[int] = set()

    @staticmethod
    def _key(request: HttpRequest) -> dict[str, Any]:
        import hashlib

        return {
            "method": request.method,
            "url": request.url,
            "body_sha256": hashlib.sha256(request.body).hexdigest(),
        }

    def send(self, request: HttpRequest, timeout: float, max_bytes: int | None = None) -> HttpResponse:
        import base64

        key = self._key(request)
        if self.mode == "replay":
            for i, ex in enumerate(self.exchanges):
                if i not in self._used and ex["request"] == key:
                    self._used.add(i)
                    r = ex["response"]
                    return HttpResponse(
                        r["status"],
                        [(h[0], h[1]) for h in r["headers"]],
                        base64.b64decode(r["body"]),
                        r.get("reason", ""),
                    )
            raise WorkbenchError(
                "E_HTTP",
                f"{request.method} {request.url} is not in cassette "
                f"{self.path} (replay; {len(self.exchanges)} recorded, "
                f"{len(self._used)} used): record it again",
                url=request.url,
                reason="not in cassette",
            )
        resp = send(self.inner, request, timeout, max_bytes)
        self.exchanges.append(
            {
                "request": key,
                "response": {
                    "status": resp.status,
                    "reason": resp.reason,
                    "headers": [list(h) for h in resp.headers],
                    "body": base64.b64encode(resp.body).decode("ascii"),
                },
            }
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps({"version": 1, "exchanges": self.exchanges}, indent=1), "utf-8")
        return resp

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()


def _content_length(headers: Any) -> int | None:
    value = headers.get("content-length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def send(transport: Any, request: HttpRequest, timeout: float, max_bytes: int | None) -> HttpResponse:
    """`transport.send`, passing `max_bytes` when it takes it (a transport of your own may not)."""
    import inspect

    params: Mapping[str, inspect.Parameter]
    try:
        params = inspect.signature(transport.send).parameters
    except (TypeError, ValueError):
        params = {}
    if "max_bytes" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return transport.send(request, timeout, max_bytes=max_bytes)
    return transport.send(request, timeout)


def make_transport(spec: Any) -> Transport:
    """`workbench.open(..., http=spec)`: "mock" (no handlers), "real", a list of handlers, or a
    transport object with `send(request, timeout)`."""
    if spec is None or spec == "mock":
        return MockTransport()
    if spec == "real":
        return RealTransport()
    if isinstance(spec, str):
        raise UsageError(f"http={spec!r}: use 'mock', 'real', or a list of mock handlers")
    if hasattr(spec, "send"):
        return spec
    if isinstance(spec, (list, tuple, dict)):
        return MockTransport([spec] if isinstance(spec, dict) else spec)
    raise UsageError(f"http={spec!r}: use 'mock', 'real', or a list of mock handlers")
