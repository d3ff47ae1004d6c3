"""Cassette: ctx.http recorded to a JSON file, or replayed from it (see `workbench.providers.http`)."""

from __future__ import annotations

import json
from typing import Any

from .._errors import UsageError, WorkbenchError
from .httpbase import HttpRequest, HttpResponse, Transport, send, too_large
from .httpreal import RealTransport


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


class Served:
    """A pinned call's HTTP answers, served back in order (a replay, testing/pins.py): a
    request is answered by the first unused exchange with its method, URL and (when recorded)
    body; one the recording lacks is E_HTTP naming it. `exchanges` are the case's "http" list:
    {request: {method, url, body?}, response: {status, statusText, headers, text | base64}}."""

    kind = "served"

    def __init__(self, exchanges: list[dict[str, Any]], *, where: str = "the pinned case") -> None:
        self.exchanges, self.where = exchanges, where
        self.used: set[int] = set()
        # the case holds URLs and bodies with secrets masked: a request is matched masked too
        # (the bench's mask, set once it is open)
        self.mask: Any = None
        self.reuse = False  # every exchange answers any number of requests (a doctor's recheck)

    def send(self, request: HttpRequest, timeout: float, max_bytes: int | None = None) -> HttpResponse:
        import base64

        mask = self.mask or (lambda text: text)
        url = mask(request.url)
        body = mask(request.body.decode("utf-8", "replace")) if request.body else ""
        for i, ex in enumerate(self.exchanges):
            want = ex["request"]
            if i in self.used or want.get("method") != request.method or want.get("url") != url:
                continue
            if "body" in want and str(want["body"]) != body:
                continue
            if not self.reuse:
                self.used.add(i)
            r = ex["response"]
            data = r["text"].encode("utf-8") if "text" in r else base64.b64decode(r.get("base64", ""))
            if max_bytes is not None and len(data) > max_bytes:
                raise too_large(request, max_bytes, len(data))
            headers = [(str(h[0]), str(h[1])) for h in r.get("headers", [])]
            return HttpResponse(int(r.get("status", 200)), headers, data, str(r.get("statusText", "")))
        raise WorkbenchError(
            "E_HTTP",
            f"{request.method} {url} is not in {self.where} ({len(self.exchanges)} recorded, "
            f"{len(self.used)} used): the tool made a request the pinned call did not",
            url=url,
            reason="not in the pinned case",
        )

    def unused(self) -> list[dict[str, Any]]:
        """The recorded requests no request took (the tool made fewer than when pinned)."""
        return [ex["request"] for i, ex in enumerate(self.exchanges) if i not in self.used]
