"""A notebook test's IOPub channel, bounded as messages arrive (SEC5).

Bounding what a cell keeps (_outputs) left what passes through unbounded: every message
still arrived whole and was parsed, and one 300 MB print took the test process to 0.9 GB (a
flood, to 1.9 GB). Here:
- no frame over MESSAGE_LIMIT bytes is received at all: zmq's MAXMSGSIZE on every socket of
  the client drops the connection instead (for good: libzmq 4.3 does not reconnect after a
  protocol error), and the IOPub socket's monitor, seeing the drop with the kernel still
  alive, reports the loss (a dead kernel is nbclient's to report);
- a cell's output messages are counted in bytes as they arrive; once past FLOOD_LIMIT, its
  further output messages are dropped unparsed (a drop costs a receive, nothing more, so the
  kernel cannot outrun the client and fill zmq's queue).
Either way `on_flood` is told once; notebook's client then fails the cell with E_TOO_LARGE
naming the limit, and the kernel is interrupted and shut down.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from queue import Empty
from typing import Any

import zmq
import zmq.asyncio
from jupyter_client.channels import AsyncZMQSocketChannel
from zmq.utils.monitor import parse_monitor_message

#: Bytes one frame of a kernel's message may have (a print, a display's data, a traceback).
MESSAGE_LIMIT = 8 * 1024 * 1024
#: Bytes of output messages one cell may send in all; what passes it fails the cell.
FLOOD_LIMIT = 32 * 1024 * 1024
#: Messages zmq queues for a socket before reading stops (its default, 1,000 of up to
#: MESSAGE_LIMIT each, had a print loop's 256 KiB messages hold 230 MB while a cell's first
#: FLOOD_LIMIT bytes were parsed). What the kernel sends meanwhile waits in its own queue.
QUEUE = 8
#: The messages that are a cell's output (and counted towards FLOOD_LIMIT).
OUTPUT_TYPES = frozenset({"stream", "display_data", "update_display_data", "execute_result", "error"})
#: Cells whose counts are kept (a kernel could name a new parent in every message).
_PARENTS = 64
#: Seconds after a dropped connection before the kernel is looked at (a dying one is gone by then).
LOST_WAIT = 0.5


@dataclass(frozen=True)
class Flood:
    """A cell's output passed a limit: which (`limit`, by its name here) and its `value`."""

    limit: str
    value: int
    parent: str | None  # the execute request whose output it was (None: unknown, lost)

    def message(self) -> str:
        if self.limit == "MESSAGE_LIMIT":
            return (
                f"the kernel sent an output message over the {self.value:,}-byte MESSAGE_LIMIT of "
                "notebook tests; it was dropped, with what followed it: print or display less at once"
            )
        return (
            f"the cell's output passed the {self.value:,}-byte FLOOD_LIMIT of notebook tests; "
            "the rest was dropped and the cell stopped: print or display less"
        )


def limit_messages(context: zmq.Context[Any]) -> None:
    """Make every socket `context` creates from now on refuse frames over MESSAGE_LIMIT and
    queue at most QUEUE messages."""
    context.setsockopt(zmq.MAXMSGSIZE, MESSAGE_LIMIT)
    context.setsockopt(zmq.RCVHWM, QUEUE)


class BoundedIOPubChannel(AsyncZMQSocketChannel):
    """jupyter_client's async IOPub channel, counting and bounding each cell's output."""

    def __init__(self, socket: zmq.asyncio.Socket, session: Any, loop: Any = None) -> None:
        super().__init__(socket, session, loop)
        #: Called once, with the first flood.
        self.on_flood: Callable[[Flood], None] | None = None
        #: Whether the kernel still runs (a dropped connection is then ours).
        self.alive: Callable[[], Awaitable[bool]] | None = None
        self.flood: Flood | None = None
        self._sizes: dict[str, int] = {}
        self._monitor: zmq.asyncio.Socket | None = socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        self._poller = zmq.asyncio.Poller()
        self._poller.register(socket, zmq.POLLIN)
        self._poller.register(self._monitor, zmq.POLLIN)

    async def get_msg(self, timeout: float | None = None) -> dict[str, Any]:  # type: ignore[override]
        """The next message that is not a flooded cell's output, within `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.socket is None:
                _retrieve_at_end()
                raise Empty
            wait = None if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
            ready = dict(await self._poller.poll(wait))
            if not ready:
                raise Empty
            if self._monitor is not None and self._monitor in ready:
                await self._watch()
            if self.socket is not None and self.socket in ready:
                frames = await self.socket.recv_multipart(copy=False)
                msg = self._admit(frames)
                if msg is not None:
                    return msg

    async def msg_ready(self) -> bool:  # type: ignore[override]
        return self.socket is not None and bool(await self.socket.poll(0))

    async def _watch(self) -> None:
        """A dropped connection, the kernel still running a moment later: a frame over
        MESSAGE_LIMIT (an ending kernel closes the connection too)."""
        assert self._monitor is not None
        event = parse_monitor_message(await self._monitor.recv_multipart())
        if event["event"] != zmq.EVENT_DISCONNECTED:
            return
        await asyncio.sleep(LOST_WAIT)
        if self.alive is None or await self.alive():
            self._flooded(Flood("MESSAGE_LIMIT", MESSAGE_LIMIT, None))

    def _admit(self, frames: list[Any]) -> dict[str, Any] | None:
        """The message, or None for a flooded cell's output (counted, not parsed)."""
        parts: list[Any] = self.session.feed_identities(frames, copy=False)[1]
        try:
            header, parent = json.loads(parts[1].bytes), json.loads(parts[2].bytes)
        except (IndexError, ValueError):  # (deserialize says what is wrong with it)
            header = parent = None
        if isinstance(header, dict) and header.get("msg_type") in OUTPUT_TYPES and isinstance(parent, dict):
            key = str(parent.get("msg_id"))
            size = self._sizes.pop(key, 0) + sum(len(f) for f in frames)
            self._sizes[key] = size  # (last in order: the oldest cell is forgotten first)
            while len(self._sizes) > _PARENTS:
                del self._sizes[next(iter(self._sizes))]
            if size > FLOOD_LIMIT:
                self._flooded(Flood("FLOOD_LIMIT", FLOOD_LIMIT, key))
                return None
        return self.session.deserialize(parts, copy=False)

    def _flooded(self, flood: Flood) -> None:
        if self.flood is not None:
            return
        self.flood = flood
        if self.on_flood is not None:
            self.on_flood(flood)

    def close(self) -> None:
        if self._monitor is not None:
            if self.socket is not None:
                try:
                    self.socket.disable_monitor()
                except zmq.ZMQError:
                    pass
            self._monitor.close(linger=0)
            self._monitor = None
        super().close()


def _retrieve_at_end() -> None:
    """Mark the exception of the task raising it retrieved: nbclient's output poll, left behind
    when a cell is stopped, would otherwise log "Task exception was never retrieved" whenever
    the garbage collector finds it — formatting a traceback calls ast.parse (Python 3.11's
    carets), and one nested in another parse (an import being compiled) broke that parse with
    "SystemError: AST constructor recursion depth mismatch" in a test process."""
    task = asyncio.current_task()
    if task is not None:
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
