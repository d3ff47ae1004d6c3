"""Cassette: ctx.http recorded to a JSON file, or replayed from it (see `workbench.providers.http`)."""

from __future__ import annotations

import json
from typing import Any

from .._errors import UsageError, WorkbenchError
from .httpbase import HttpRequest, HttpResponse, Transport, send
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
