"""The inspector's relay: the port a debugger attaches to, in front of Deno's own.

Deno 2.9 routes a Worker's inspector messages to one WebSocket only and keeps a Worker's
session (its breakpoints, a pause) after that socket closes, so the workbench cannot watch the
Worker beside a debugger on a connection of its own. The debugger attaches here instead; each
connection is relayed to Deno's inspector, and the relay reads the messages as they pass:
Debugger.paused / resumed (the call's timeout stands still while a pause lasts), a Worker
attached and Runtime.runIfWaitingForDebugger (a held call may go), and when the debugger
leaves, it resumes and detaches the Worker sessions the debugger left behind.

Served on 127.0.0.1 only: `/json`, `/json/list`, `/json/version` (what chrome://inspect and
VS Code's attach read) and the WebSocket at `/<token>`; every request is bounded (its head
MAX_HEAD bytes within HEAD_SECONDS, a frame MAX_FRAME bytes).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable
from typing import Any

from .frames import Frame, FrameError, Frames, frame

__all__ = ["HEAD_SECONDS", "MAX_HEAD", "Relay"]

MAX_HEAD = 16 << 10  # an HTTP request's head
HEAD_SECONDS = 5.0  # to send it
MAX_CONNECTIONS = 16  # open at once; more are refused
CHUNK = 1 << 16


class Relay:
    """The relay's listening socket and its connections. `target()` gives Deno's current
    (port, path), or None while no sandbox runs; `seen(conn, message, from_client)` is told
    each protocol message; `left(conn)` each connection's end."""

    def __init__(
        self,
        *,
        token: str,
        target: Callable[[], tuple[int, str] | None],
        seen: Callable[[int, dict[str, Any], bool], None],
        left: Callable[[int], list[str]],
        title: Callable[[], str],
    ) -> None:
        self.token, self._target, self._seen, self._left, self._title = token, target, seen, left, title
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._open: dict[int, tuple[socket.socket, socket.socket | None]] = {}
        self._next = 0
        self.closed = False
        threading.Thread(target=self._accept, name="wb-inspect-accept", daemon=True).start()

    @property
    def address(self) -> tuple[str, int]:
        """Where it listens (127.0.0.1, its port)."""
        host, port = self._server.getsockname()[:2]
        return str(host), int(port)

    @property
    def ws(self) -> str:
        """The WebSocket's address without its scheme (`127.0.0.1:PORT/TOKEN`)."""
        return f"127.0.0.1:{self.port}/{self.token}"

    def close(self) -> None:
        """Stop listening and end every connection."""
        self.closed = True
        with contextlib.suppress(OSError):  # (Linux: wakes the accept, which holds the socket open)
            self._server.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._server.close()
        self.drop(waiting=True)

    def drop(self, *, waiting: bool = False) -> None:
        """End the debuggers' connections to a sandbox (it is gone); `waiting`: those still
        waiting for one to start too."""
        with self._lock:
            conns = [c for c in self._open.values() if waiting or c[1] is not None]
            self._open = {k: c for k, c in self._open.items() if not (waiting or c[1] is not None)}
        for client, upstream in conns:
            for s in (client, upstream):
                if s is not None:
                    with contextlib.suppress(OSError):
                        s.close()

    # -- connections -----------------------------------------------------------------------------
    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            with self._lock:
                if len(self._open) >= MAX_CONNECTIONS:
                    client.close()
                    continue
                self._next += 1
                cid = self._next
                self._open[cid] = (client, None)
            threading.Thread(
                target=self._serve, args=(cid, client), name="wb-inspect-conn", daemon=True
            ).start()

    def _serve(self, cid: int, client: socket.socket) -> None:
        try:
            got = _head(client)
            if got is None:
                return
            head, rest = got
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            parts = line.split(" ")
            path = parts[1] if len(parts) == 3 and parts[0] == "GET" else ""
            if path.rstrip("/") in ("/json", "/json/list"):
                _answer(client, 200, json.dumps([self._listing()]))
            elif path.rstrip("/") == "/json/version":
                _answer(
                    client, 200, json.dumps({"Browser": "Gem Workbench (Deno)", "Protocol-Version": "1.3"})
                )
            elif path == f"/{self.token}" and b"upgrade: websocket" in head.lower():
                self._relay(cid, client, head, rest)
            else:
                _answer(client, 404, json.dumps({"error": "no such inspector address"}))
        except (OSError, FrameError):
            pass
        finally:
            with self._lock:
                _, upstream = self._open.pop(cid, (client, None))
            for s in (client, upstream):
                if s is not None:
                    with contextlib.suppress(OSError):
                        s.close()

    def _listing(self) -> dict[str, Any]:
        ws = self.ws
        return {
            "description": "Gem Workbench sandbox (Deno)",
            "devtoolsFrontendUrl": f"devtools://devtools/bundled/js_app.html?experiments=true&v8only=true&ws={ws}",
            "id": self.token,
            "title": self._title(),
            "type": "node",
            "url": "file://",
            "webSocketDebuggerUrl": f"ws://{ws}",
        }

    def _relay(self, cid: int, client: socket.socket, head: bytes, rest: bytes) -> None:
        """Relay one WebSocket to Deno's inspector, reading the messages both ways."""
        target = self._target()
        if target is None:
            _answer(client, 503, json.dumps({"error": "the sandbox is not running; call a tool first"}))
            return
        port, path = target
        upstream = socket.create_connection(("127.0.0.1", port), timeout=HEAD_SECONDS)
        upstream.settimeout(None)
        client.settimeout(None)
        with self._lock:
            if cid not in self._open:
                upstream.close()
                return
            self._open[cid] = (client, upstream)
        lines = head.split(b"\r\n")  # (the head ends with two empty lines)
        lines[0] = f"GET {path} HTTP/1.1".encode()
        lines = [
            f"Host: 127.0.0.1:{port}".encode() if ln.lower().startswith(b"host:") else ln for ln in lines
        ]
        upstream.sendall(b"\r\n".join(lines))
        back = threading.Thread(
            target=self._down, args=(cid, upstream, client), name="wb-inspect-down", daemon=True
        )
        back.start()
        try:
            self._up(cid, client, upstream, rest)
        finally:
            # the debugger left: its Worker sessions resumed and detached (Deno keeps them)
            for text in self._left(cid):
                with contextlib.suppress(OSError):
                    upstream.sendall(frame(text, masked=True))
            with contextlib.suppress(OSError):
                upstream.sendall(bytes([0x88, 0x82]) + b"\0\0\0\0" + b"\x03\xe8")  # close 1000
            back.join(2.0)

    def _up(self, cid: int, client: socket.socket, upstream: socket.socket, data: bytes) -> None:
        """The debugger's frames to Deno, whole (its close frame kept back: `_relay` sends it
        after the clean-up), each text message read."""
        frames = Frames()
        while True:
            for got in frames.feed(data):
                if isinstance(got, Frame):
                    if got.opcode == 8:
                        return
                    upstream.sendall(got.raw)
                else:
                    self._message(cid, got, True)
            data = client.recv(CHUNK)
            if not data:
                return

    def _down(self, cid: int, upstream: socket.socket, client: socket.socket) -> None:
        """Deno's bytes to the debugger as they come (its handshake answer first), each text
        message read first (what the relay knows, a pause, is so before the debugger does)."""
        frames: Frames | None = None
        pending = b""
        try:
            while True:
                data = upstream.recv(CHUNK)
                if not data:
                    break
                if frames is None:  # the HTTP answer to the upgrade, then frames
                    pending += data
                    at = pending.find(b"\r\n\r\n")
                    if at < 0:
                        if len(pending) > MAX_HEAD:
                            break
                        client.sendall(data)
                        continue
                    frames, rest = Frames(), pending[at + 4 :]
                else:
                    rest = data
                for got in frames.feed(rest):
                    if isinstance(got, str):
                        self._message(cid, got, False)
                client.sendall(data)
        except (OSError, FrameError):
            pass
        finally:
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RDWR)

    def _message(self, cid: int, text: str, from_client: bool) -> None:
        try:
            msg = json.loads(text)
        except (ValueError, RecursionError):
            return
        if isinstance(msg, dict):
            self._seen(cid, msg, from_client)


def _head(client: socket.socket) -> tuple[bytes, bytes] | None:
    """An HTTP request's head (to its blank line) and what came after it (None: too long,
    too slow, or the client left)."""
    client.settimeout(HEAD_SECONDS)
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            chunk = client.recv(4096)
        except OSError:
            return None
        if not chunk or len(data) + len(chunk) > MAX_HEAD:
            return None
        data += chunk
    at = data.index(b"\r\n\r\n") + 4
    return data[:at], data[at:]


def _answer(client: socket.socket, status: int, body: str) -> None:
    reason = {200: "OK", 404: "Not Found", 503: "Service Unavailable"}[status]
    data = body.encode()
    client.sendall(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json; charset=UTF-8\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
        + data
    )
