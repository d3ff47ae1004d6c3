"""MockTransport: ctx.http answered by handlers, no network (see `workbench.providers.http`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .._errors import UsageError, WorkbenchError
from .httpbase import HttpRequest, HttpResponse


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

    def __init__(self, handlers: Iterable[Any] = (), *, option: str = "http", hint: str = "") -> None:
        self.handlers: list[MockHandler] = []
        self.option = option  # the open() option its handlers come from, in the platform's words
        # how to add a handler in the words of the surface that opened the bench (a CLI flag)
        self.hint = hint or f"workbench.open(..., {option}=[{{'match': url_prefix, 'respond': …}}])"
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
            f"{request.url} (handlers: {listed}); add one with {self.hint}",
            url=request.url,
            method=request.method,
            handlers=[h.describe() for h in self.handlers],
        )
