"""A small Chrome DevTools Protocol client over websocket-client: a connection to an
inspector's WebSocket, commands with their replies (each within a timeout), events, and the
sessions of Workers (how Deno exposes them: `NodeWorker.enable` announces each Worker with a
session id, `NodeWorker.sendMessageToWorker` carries a command in, events and replies come
back wrapped in `NodeWorker.receivedMessageFromWorker`).

One thread drives a connection: `send` and `event` read the socket themselves and keep what
is not theirs (events, a worker's messages) for the next reader. What the other end sends is
bounded (MAX_MESSAGE characters a message, MAX_KEPT events kept).

Deno 2.9 keeps a Worker's session (its breakpoints, a pause) after the WebSocket that made it
closes, and routes a Worker's messages to one connection only: `WorkerSession.detach` resumes
the Worker and disables its debugger before the connection closes (`Connection.close` does it
for each session it attached).
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections import deque
from typing import Any

import websocket

from .._errors import WorkbenchError

__all__ = ["MAX_MESSAGE", "CDPError", "Connection", "WorkerSession", "targets"]

MAX_MESSAGE = 64 << 20  # characters of one message (a script's source, a big object's preview)
MAX_KEPT = 10_000  # events kept unread; older ones are dropped first


class CDPError(WorkbenchError):
    """A CDP command failed (E_CDP: the inspector's error, or no answer within its timeout)."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__("E_CDP", message, **details)


def targets(host: str, port: int, *, timeout: float = 5.0) -> list[dict[str, Any]]:
    """The inspector's targets (`/json/list`): each has its webSocketDebuggerUrl."""
    url = f"http://{host}:{port}/json/list"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:  # noqa: S310  (loopback http)
            data = json.loads(answer.read(1 << 20))
    except (OSError, ValueError) as exc:
        raise CDPError(f"no inspector answered at {host}:{port} ({exc})", port=port) from None
    if not isinstance(data, list):
        raise CDPError(f"the inspector at {host}:{port} listed no targets", port=port)
    return [t for t in data if isinstance(t, dict)]


class Connection:
    """One WebSocket to an inspector target (`ws://…`)."""

    def __init__(self, url: str, *, timeout: float = 5.0) -> None:
        try:
            self._ws = websocket.create_connection(url, timeout=timeout, enable_multithread=True)
        except (OSError, websocket.WebSocketException) as exc:
            raise CDPError(f"cannot connect to {url} ({exc})", url=url) from None
        self.url = url
        self.timeout = timeout
        self._id = 0
        self._replies: dict[int, dict[str, Any]] = {}
        self._events: deque[dict[str, Any]] = deque(maxlen=MAX_KEPT)
        self._workers: dict[str, WorkerSession] = {}
        self.closed = False

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- commands and events -------------------------------------------------------------------
    def send(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Send a command and return its result; CDPError for its error or no reply in time."""
        mid = self.post(method, params)
        return self.reply(mid, method, timeout=timeout)

    def post(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a command without waiting; its id (for `reply`)."""
        self._id += 1
        self._write({"id": self._id, "method": method, "params": params or {}})
        return self._id

    def reply(self, mid: int, method: str = "", *, timeout: float | None = None) -> dict[str, Any]:
        """The result of command `mid`, read within `timeout` seconds."""
        end = time.monotonic() + (self.timeout if timeout is None else timeout)
        while mid not in self._replies:
            self.pump(end, f"the reply to {method or mid}")
        return _result(self._replies.pop(mid), method)

    def event(self, method: str, *, timeout: float | None = None) -> dict[str, Any]:
        """The params of the next event `method` (kept ones first; others stay kept)."""
        end = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            for ev in self._events:
                if ev.get("method") == method:
                    self._events.remove(ev)
                    return ev.get("params") or {}
            self.pump(end, f"the event {method}")

    def events(self) -> list[dict[str, Any]]:
        """The events kept so far (taken)."""
        out = list(self._events)
        self._events.clear()
        return out

    # -- Workers ---------------------------------------------------------------------------------
    def worker(self, *, timeout: float | None = None) -> WorkerSession:
        """A session in the (first) Worker: NodeWorker.enable, then its attachedToWorker."""
        if self._workers:
            return next(iter(self._workers.values()))
        self.send("NodeWorker.enable", {"waitForDebuggerOnStart": False}, timeout=timeout)
        info = self.event("NodeWorker.attachedToWorker", timeout=timeout)
        sid = str(info.get("sessionId"))
        session = WorkerSession(self, sid, info.get("workerInfo") or {})
        self._workers[sid] = session
        return session

    # -- the socket ------------------------------------------------------------------------------
    def _write(self, message: dict[str, Any]) -> None:
        if self.closed:
            raise CDPError("the inspector connection is closed", url=self.url)
        try:
            self._ws.send(json.dumps(message))
        except (OSError, websocket.WebSocketException) as exc:
            self.closed = True
            raise CDPError(f"the inspector connection broke ({exc})", url=self.url) from None

    def pump(self, end: float, what: str) -> None:
        """Read one message (by `end`, time.monotonic()) into the replies or events, a
        Worker's to its session; CDPError when none came in time or the socket broke."""
        left = end - time.monotonic()
        if left <= 0:
            raise CDPError(f"no {what} within the timeout", url=self.url)
        if self.closed:
            raise CDPError(f"the inspector connection is closed (waiting for {what})", url=self.url)
        self._ws.settimeout(left)
        try:
            text = self._ws.recv()
        except websocket.WebSocketTimeoutException:
            raise CDPError(f"no {what} within the timeout", url=self.url) from None
        except (OSError, websocket.WebSocketException) as exc:
            self.closed = True
            raise CDPError(
                f"the inspector connection broke ({exc}) waiting for {what}", url=self.url
            ) from None
        if not isinstance(text, str) or len(text) > MAX_MESSAGE:
            return  # not the protocol's (binary), or over the bound: dropped
        try:
            msg = json.loads(text)
        except (ValueError, RecursionError):
            return
        if not isinstance(msg, dict):
            return
        if msg.get("method") == "NodeWorker.receivedMessageFromWorker":
            params = msg.get("params") or {}
            session = self._workers.get(str(params.get("sessionId")))
            if session is not None:
                session.take(params.get("message"))
                return
        if isinstance(msg.get("id"), int):
            self._replies[msg["id"]] = msg
        else:
            self._events.append(msg)

    def close(self) -> None:
        """Detach every Worker session (resumed, debugger off), then close the socket."""
        if self.closed:
            return
        for session in list(self._workers.values()):
            session.detach()
        self.closed = True
        try:
            self._ws.close(timeout=1)
        except (OSError, websocket.WebSocketException):
            pass


class WorkerSession:
    """A session inside one Worker, over its host's Connection (`host`): the same commands and
    events."""

    def __init__(self, conn: Connection, session_id: str, info: dict[str, Any]) -> None:
        self.host, self.session_id, self.info = conn, session_id, info
        self._id = 0
        self._replies: dict[int, dict[str, Any]] = {}
        self._events: deque[dict[str, Any]] = deque(maxlen=MAX_KEPT)
        self.detached = False

    @property
    def url(self) -> str:
        """The Worker's main module."""
        return str(self.info.get("url", ""))

    def send(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """A command in the Worker, and its result (CDPError as Connection.send)."""
        mid = self.post(method, params)
        return self.reply(mid, method, timeout=timeout)

    def post(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a command into the Worker without waiting; its id."""
        self._id += 1
        inner = json.dumps({"id": self._id, "method": method, "params": params or {}})
        # the outer command's reply is empty: the inner one's comes as a message from the Worker
        self.host.post("NodeWorker.sendMessageToWorker", {"sessionId": self.session_id, "message": inner})
        return self._id

    def reply(self, mid: int, method: str = "", *, timeout: float | None = None) -> dict[str, Any]:
        """The result of the Worker command `mid`."""
        end = time.monotonic() + (self.host.timeout if timeout is None else timeout)
        while mid not in self._replies:
            self.host.pump(end, f"the Worker's reply to {method or mid}")
        return _result(self._replies.pop(mid), method)

    def event(self, method: str, *, timeout: float | None = None) -> dict[str, Any]:
        """The params of the Worker's next event `method`."""
        end = time.monotonic() + (self.host.timeout if timeout is None else timeout)
        while True:
            for ev in self._events:
                if ev.get("method") == method:
                    self._events.remove(ev)
                    return ev.get("params") or {}
            self.host.pump(end, f"the Worker's event {method}")

    def events(self) -> list[dict[str, Any]]:
        """The Worker's events kept so far (taken)."""
        out = list(self._events)
        self._events.clear()
        return out

    def take(self, text: Any) -> None:
        """One message from the Worker (the connection's reader hands it over)."""
        if not isinstance(text, str) or len(text) > MAX_MESSAGE:
            return
        try:
            msg = json.loads(text)
        except (ValueError, RecursionError):
            return
        if not isinstance(msg, dict):
            return
        if isinstance(msg.get("id"), int):
            self._replies[msg["id"]] = msg
        else:
            self._events.append(msg)

    def detach(self) -> None:
        """Leave the Worker running: its breakpoints off, resumed, its debugger disabled, the
        session detached (Deno would keep them after the socket closes). Best effort: a
        Worker or connection that is gone needs none of it."""
        if self.detached or self.host.closed:
            return
        self.detached = True
        try:
            self.post("Debugger.setBreakpointsActive", {"active": False})
            self.post("Debugger.resume")
            mid = self.post("Debugger.disable")
            self.reply(mid, "Debugger.disable", timeout=1.0)
        except CDPError:
            pass
        try:
            self.host.send("NodeWorker.detach", {"sessionId": self.session_id}, timeout=1.0)
        except CDPError:
            pass


def _result(msg: dict[str, Any], method: str) -> dict[str, Any]:
    err = msg.get("error")
    if err is not None:
        text = err.get("message") if isinstance(err, dict) else str(err)
        raise CDPError(f"{method or 'the command'} failed: {text}", method=method, error=err)
    result = msg.get("result")
    return result if isinstance(result, dict) else {}
