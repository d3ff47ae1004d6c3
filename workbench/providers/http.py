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

Each lives in its own module (httpmock, httpreal, httpcassette; the request, the response and
`send` in httpbase) and is imported from here.

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

from typing import Any

from .._errors import UsageError
from .httpbase import HttpRequest, HttpResponse, Transport, send, too_large
from .httpcassette import Cassette
from .httpmock import MockHandler, MockTransport
from .httpreal import RealTransport, Watchdog

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
    "send",
    "too_large",
]


def make_transport(spec: Any, *, option: str = "http", hint: str = "") -> Transport:
    """`workbench.open(..., http=spec)`: "mock" (no handlers), "real", a list of handlers, or a
    transport object with `send(request, timeout)`. `option`: the platform's name for it
    (Ekanos: fetch_handlers), which a mock's "no handler matches" names; `hint`: how to add a
    handler, when the surface in use says it otherwise (a CLI flag)."""
    if spec is None or spec == "mock":
        return MockTransport(option=option, hint=hint)
    if spec == "real":
        return RealTransport()
    if isinstance(spec, str):
        raise UsageError(f"http={spec!r}: use 'mock', 'real', or a list of mock handlers")
    if hasattr(spec, "send"):
        return spec
    if isinstance(spec, (list, tuple, dict)):
        return MockTransport([spec] if isinstance(spec, dict) else spec, option=option, hint=hint)
    raise UsageError(f"http={spec!r}: use 'mock', 'real', or a list of mock handlers")
