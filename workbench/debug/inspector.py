"""What `open(inspect=True)` adds to a bench: Deno's inspector on the sandbox, behind the
relay a debugger attaches to (proxy.py), the addresses to give the bench's owner, and the
clock of the pauses that a call's timeout does not count.

- The sandbox process gets `--inspect=127.0.0.1:PORT` (a free loopback port, new for each
  process); the relay's port stays the bench's (a recycled sandbox is reached at the same
  address) and closes with the bench.
- `inspect="wait"`: each call is held before it is sent to the sandbox until a debugger has
  attached to the Worker (and sent Runtime.runIfWaitingForDebugger, or a second passed), so a
  breakpoint set on attach binds before the tool's module runs; Ctrl-C ends the wait.
- A pause (Debugger.paused until Debugger.resumed, as the relay sees them) moves the call's
  deadline by its length: `paused_between(start, end)`.
"""

from __future__ import annotations

import json
import secrets
import socket
import sys
import threading
import time
import urllib.request
from typing import IO, Any, Literal

from ..ctx.hooks import CallHooks
from .proxy import Relay

__all__ = ["Inspector", "addresses_text", "free_port", "launch_json", "print_addresses"]

MAX_PAUSES = 1000  # pause intervals kept (older ones are before any running call)
START_SECONDS = 30.0  # a debugger that connects while the sandbox starts waits this long for it
SETTLE_SECONDS = 1.0  # a held call goes this long after attach without runIfWaitingForDebugger
_WAITING = "Runtime.runIfWaitingForDebugger"


def free_port() -> int:
    """A loopback port nobody listens on now (Deno binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Inspector:
    """One bench's inspector: the relay, Deno's current port, the pauses and attaches seen."""

    def __init__(self, *, mode: Literal[True, "wait"] = True, title: str = "gem") -> None:
        self.mode = mode
        self.title = title
        self._cond = threading.Condition()
        self._deno: tuple[int, str] | None = None  # Deno's (port, WebSocket path) once it answers
        self._deno_port: int | None = None  # the port the current process was given
        self._paused: set[tuple[int, str]] = set()  # (connection, session) paused now
        self._since: float | None = None  # when the current pause began
        self._pauses: list[tuple[float, float]] = []  # ended pauses (start, end)
        self._workers: dict[int, set[str]] = {}  # per connection, the Worker sessions attached
        self._ready: dict[int, float] = {}  # per connection: when it attached (or said go: 0)
        self.relay = Relay(
            token=secrets.token_hex(16),
            target=self._target,
            seen=self._seen,
            left=self._left,
            title=lambda: self.title,
        )

    # -- the sandbox's side (runners/deno/lifecycle.py) -------------------------------------------
    def flag(self) -> str:
        """The inspector flag of a new sandbox process (a fresh free port): the debuggers
        attached to the last one (stopped by now) are let go."""
        self.relay.drop()
        with self._cond:
            self._deno, self._deno_port = None, free_port()
            self._paused.clear()
            self._end_pause()
            self._workers.clear()
            self._ready.clear()
            return f"--inspect=127.0.0.1:{self._deno_port}"

    def started(self) -> None:
        """The process is up (its inspector answers: a debugger may already be attached)."""

    def paused_between(self, start: float, end: float) -> float:
        """Seconds of `start`..`end` (time.monotonic()) the Worker spent paused, the current
        pause included."""
        with self._cond:
            spans = list(self._pauses)
            if self._since is not None:
                spans.append((self._since, end))
        return sum(max(0.0, min(b, end) - max(a, start)) for a, b in spans)

    @property
    def paused(self) -> bool:
        """Whether a debugger holds the Worker paused now."""
        with self._cond:
            return bool(self._paused)

    def hold(self) -> None:
        """Until a debugger attached to the Worker and is ready (mode "wait"; Ctrl-C ends it)."""
        with self._cond:
            while not self._attached():
                self._cond.wait(0.1)

    @property
    def attached(self) -> bool:
        """Whether a debugger has attached to the Worker through the relay and is ready."""
        with self._cond:
            return self._attached()

    def _attached(self) -> bool:
        now = time.monotonic()
        return any(t == 0 or now - t >= SETTLE_SECONDS for t in self._ready.values())

    def close(self) -> None:
        """The relay's port closed (the bench closes; the sandbox's is gone with its process)."""
        self.relay.close()

    # -- addresses -------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The port a debugger attaches to (the relay's)."""
        return self.relay.port

    @property
    def deno_port(self) -> int | None:
        """The current sandbox process's own inspector port (behind the relay; None before one)."""
        with self._cond:
            return self._deno_port

    @property
    def devtools_url(self) -> str:
        """The address to open in Chrome."""
        return f"devtools://devtools/bundled/js_app.html?experiments=true&v8only=true&ws={self.relay.ws}"

    @property
    def ws_url(self) -> str:
        """The WebSocket a CDP client connects to."""
        return f"ws://{self.relay.ws}"

    # -- what the relay sees ---------------------------------------------------------------------
    def _target(self) -> tuple[int, str] | None:
        """Deno's (port, WebSocket path) for a debugger that connects: waited for while the
        sandbox starts (at most START_SECONDS); None when none runs by then."""
        end = time.monotonic() + START_SECONDS
        while not self.relay.closed:
            with self._cond:
                if self._deno is not None:
                    return self._deno
                port = self._deno_port
            if port is not None and (path := _listed(port)) is not None:
                with self._cond:
                    if self._deno_port == port:
                        self._deno = (port, path)
                return port, path
            if time.monotonic() >= end:
                return None
            time.sleep(0.1)
        return None

    def _seen(self, cid: int, msg: dict[str, Any], from_client: bool) -> None:
        method = msg.get("method")
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        assert isinstance(params, dict)
        sid = "main"
        if method in ("NodeWorker.receivedMessageFromWorker", "NodeWorker.sendMessageToWorker"):
            sid = str(params.get("sessionId"))
            try:
                inner = json.loads(str(params.get("message")))
            except (ValueError, RecursionError):
                return
            method = inner.get("method") if isinstance(inner, dict) else None
        with self._cond:
            if from_client:
                if method == _WAITING and self._workers.get(cid):
                    self._ready[cid] = 0
                    self._cond.notify_all()
                return
            if method == "NodeWorker.attachedToWorker":
                self._workers.setdefault(cid, set()).add(str(params.get("sessionId")))
                self._ready.setdefault(cid, time.monotonic())
                self._cond.notify_all()
            elif method == "NodeWorker.detachedFromWorker":
                gone = str(params.get("sessionId"))
                self._workers.get(cid, set()).discard(gone)
                self._unpause(lambda k: k == (cid, gone))
            elif method == "Debugger.paused":
                if not self._paused:
                    self._since = time.monotonic()
                self._paused.add((cid, sid))
            elif method == "Debugger.resumed":
                self._unpause(lambda k: k == (cid, sid))

    def _left(self, cid: int) -> list[str]:
        """A debugger's connection ended: what the relay sends Deno for it (each Worker
        session it left resumed, its debugger off, detached)."""
        with self._cond:
            sessions = self._workers.pop(cid, set())
            self._ready.pop(cid, None)
            self._unpause(lambda k: k[0] == cid)
        out = []
        for n, sid in enumerate(sorted(sessions)):
            for i, method in enumerate(("Debugger.resume", "Debugger.disable")):
                inner = json.dumps({"id": 1_000_000 + 2 * n + i, "method": method, "params": {}})
                out.append(
                    _command(-1 - 3 * n - i, "NodeWorker.sendMessageToWorker", sessionId=sid, message=inner)
                )
            out.append(_command(-3 - 3 * n, "NodeWorker.detach", sessionId=sid))
        return out

    def _unpause(self, which: Any) -> None:
        """(under the lock) Drop the pauses `which` picks; the pause ends when none is left."""
        self._paused = {k for k in self._paused if not which(k)}
        if not self._paused:
            self._end_pause()

    def _end_pause(self) -> None:
        if self._since is not None:
            self._pauses.append((self._since, time.monotonic()))
            del self._pauses[:-MAX_PAUSES]
            self._since = None

    # -- hooks ----------------------------------------------------------------------------------
    def hooks(self) -> CallHooks | None:
        """The standing hook of mode "wait" (a call held until a debugger attached)."""
        return _Hold(self) if self.mode == "wait" else None


class _Hold(CallHooks):
    """Holds a top call until a debugger is attached; its deadline then starts anew."""

    def __init__(self, inspector: Inspector) -> None:
        self.inspector = inspector

    def on_call_start(self, *, session: Any, **_: Any) -> None:
        language = getattr(getattr(session, "tool", None), "language", None)
        if self.inspector.attached or language not in ("javascript", "typescript"):
            return  # (a Python tool runs in the kernel, not in the sandbox)
        start = time.monotonic()
        self.inspector.hold()
        if session.deadline is not None:
            session.deadline += time.monotonic() - start


def _listed(port: int) -> str | None:
    """The WebSocket path of the target Deno's inspector at `port` lists (None: not up yet)."""
    try:
        url = f"http://127.0.0.1:{port}/json/list"
        with urllib.request.urlopen(url, timeout=2) as answer:  # noqa: S310  (loopback http)
            listed = json.loads(answer.read(1 << 16))
        return "/" + str(listed[0]["webSocketDebuggerUrl"]).split("/", 3)[3]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


def _command(mid: int, method: str, **params: Any) -> str:
    return json.dumps({"id": mid, "method": method, "params": params})


def launch_json(inspector: Inspector) -> dict[str, Any]:
    """A VS Code `launch.json` configuration that attaches to the bench's sandbox."""
    return {
        "type": "node",
        "request": "attach",
        "name": f"Gem Workbench: {inspector.title}",
        "address": "127.0.0.1",
        "port": inspector.port,
        "websocketAddress": inspector.ws_url,  # the relay's target, whatever /json/list says
        "sourceMaps": True,  # Deno's inline maps: breakpoints in the .ts file bind to its lines
        "skipFiles": ["<node_internals>/**"],
    }


def addresses_text(inspector: Inspector) -> str:
    """What the bench's owner is told: the addresses and the launch.json snippet."""
    snippet = json.dumps({"version": "0.2.0", "configurations": [launch_json(inspector)]}, indent=2)
    wait = "\nEach call waits until a debugger attaches (inspect='wait')." if inspector.mode == "wait" else ""
    return (
        f"Inspector for {inspector.title} on 127.0.0.1:{inspector.port} (loopback only; closes with the bench)\n"
        f"  Chrome: open {inspector.devtools_url}\n"
        f"          or chrome://inspect -> Configure… -> add 127.0.0.1:{inspector.port}\n"
        f"  VS Code: .vscode/launch.json\n{snippet}{wait}\n"
    )


def print_addresses(inspector: Inspector, *, file: IO[str] | None = None) -> None:
    """Print the addresses (stderr unless `file`): `gem-workbench call` and `%gem open` both."""
    print(addresses_text(inspector), file=file or sys.stderr, flush=True)
