"""The interface of ctx.http's transports (see `workbench.providers.http`): what goes on the
wire (`HttpRequest`), what comes back (`HttpResponse`), the `Transport` protocol, and `send`,
which calls a transport with or without `max_bytes`."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._errors import WorkbenchError


@dataclass
class HttpRequest:
    """What goes on the wire (credentials included: never log this object as is)."""

    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    #: why an address may not be reached (None: it may); RealTransport resolves the host, asks
    #: this of EVERY address and connects to the one it checked. ctx.http gives every request
    #: one (ctx/http_private.py); None: no check (a transport used on its own)
    guard: Callable[[str], str | None] | None = field(default=None, compare=False)

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
