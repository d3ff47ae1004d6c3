"""MCP over streamable HTTP, safe to leave running: it listens on 127.0.0.1 only; every request
carries the server's token (`Authorization: Bearer TOKEN` or `?token=TOKEN`, as Jupyter's server
asks); the SDK checks `Host` and `Origin` against DNS rebinding (127.0.0.1 and localhost, any
port) and bounds a request's body; at most MAX_SESSIONS sessions and MAX_REQUESTS requests are
open at once (uvicorn answers 503 beyond), and server.py bounds the calls waiting."""

from __future__ import annotations

import hmac
import json
import secrets
import socket
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

import uvicorn

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from .server import BenchServer

HOST = "127.0.0.1"
PATH = "/mcp"
MAX_BODY_BYTES = 4 * 1024 * 1024  # one request's body (a tool's input is at most 1 MB of JSON)
MAX_SESSIONS = 32  # MCP sessions open at once; an idle one ends after SESSION_IDLE seconds
SESSION_IDLE = 600.0
MAX_REQUESTS = 64  # HTTP connections and requests served at once (uvicorn's limit_concurrency)


class TokenGate:
    """ASGI middleware: a request without the token gets 401 and a JSON-RPC error body."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self.token = app, token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # MCP has none: refused before anything reads it
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] == "http" and not self._allowed(scope):
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {
                        "code": -32001,
                        "message": "E_PERM_DENIED: this server needs its token "
                        "(Authorization: Bearer TOKEN, or ?token=TOKEN)",
                    },
                }
            ).encode()
            headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        given = b""
        for name, value in scope.get("headers", ()):
            if name == b"authorization" and value[:7].lower() == b"bearer ":
                given = value[7:].strip()
        if not given:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get("token") or [""])[0].encode("utf-8", "replace")
        return hmac.compare_digest(given, self.token)


def listen(port: int) -> socket.socket:
    """A socket listening on 127.0.0.1:`port` (0: a free port). UsageError when it is taken."""
    from .._errors import UsageError

    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise UsageError(f"port={port!r}: give a port number from 1 to 65535, or 0 for a free one")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # inherited by each connection: without it a response's body waited for the client's
        # delayed ACK of its headers (Nagle), 44 ms a request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((HOST, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise UsageError(f"port={port}: cannot listen on {HOST}:{port} ({exc.strerror})") from None
    return sock


def app(bench_server: BenchServer, token: str) -> ASGIApp:
    """The ASGI app: the SDK's streamable HTTP endpoint at PATH, behind the token."""
    inner = bench_server.server.streamable_http_app(
        streamable_http_path=PATH,
        host=HOST,  # the SDK's DNS rebinding protection for a loopback host
        max_request_body_size=MAX_BODY_BYTES,
        max_sessions=MAX_SESSIONS,
        session_idle_timeout=SESSION_IDLE,
        json_response=True,  # one JSON body per request, not an SSE stream: a call is one answer
    )
    return TokenGate(inner, token)


def http_server(
    bench_server: BenchServer, sock: socket.socket, *, token: str | None = None
) -> tuple[uvicorn.Server, str]:
    """(the uvicorn server to run on `sock`, its token)."""
    token = token or secrets.token_urlsafe(32)
    config = uvicorn.Config(
        app(bench_server, token),
        # httptools (a dependency) parses requests in C where h11 did in Python: about half
        # the server's time per request, the floor's included
        http="httptools",
        log_level="warning",
        access_log=False,
        lifespan="on",
        limit_concurrency=MAX_REQUESTS,
        timeout_graceful_shutdown=2,
    )
    return uvicorn.Server(config), token


def url_of(sock: socket.socket) -> str:
    """The endpoint's URL (without the token)."""
    host, port = sock.getsockname()[:2]
    return f"http://{host}:{port}{PATH}"
