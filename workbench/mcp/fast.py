"""The stdio transport's path beside the SDK's for a plain `tools/call` (issue 45's 2× target):
the SDK spends about 0.35 ms a message on streams, a task per request and its middleware
chain; a call read here goes from its line straight to the server's worker thread and its
answer from the worker straight to the wire.

Only a request the SDK would serve the same way is taken: a JSON object with exactly
jsonrpc "2.0", an int or string id not in use, method "tools/call" and params of exactly a
known tool's `name` and an object `arguments` (or none: no `_meta`, so no progress token and
no 2026 envelope), on a connection the SDK has initialized in the handshake era (its
ServerSession, read in the `notifications/initialized` handler the SDK runs after it marks
the connection initialized), with `tools/call` still BenchServer's handler and no middleware
or cache hint. Anything else, and any line after a second `initialize`, goes to the SDK as
before, in order. What the SDK does for the call is done here the same way: its params check
for the protocol version, BenchServer's `max_waiting` bound and worker, the result checked
and shaped by the version's surface, the same JSON-RPC response or error, nothing sent for a
cancelled request (the call interrupted as Ctrl-C), "Connection closed" at the end."""

from __future__ import annotations

import asyncio
import contextvars
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.shared.dispatcher import as_request_id, coerce_request_id
from mcp_types import methods as _methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from pydantic_core import from_json

from .._errors import WorkbenchError
from .calls import CallJob
from .server import _answer

if TYPE_CHECKING:
    from .server import BenchServer

RequestId = int | str
MAX_ID = 2**53  # an int id beyond JSON's exact integers goes to the SDK
_TOP = frozenset({"jsonrpc", "id", "method", "params"})
_PARAMS = frozenset({"name", "arguments"})

#: the fast path of the connection being served here (the SDK runs its notification handlers
#: in a copy of the serving task's context, so a server serving two connections tells them apart)
_current: contextvars.ContextVar[FastCalls | None] = contextvars.ContextVar("fast_calls", default=None)

_serving: weakref.WeakKeyDictionary[BenchServer, FastCalls] = weakref.WeakKeyDictionary()


def serving_now(bench_server: BenchServer) -> FastCalls | None:
    """The fast path of the stdio connection `bench_server` serves now, if any (what it took)."""
    return _serving.get(bench_server)


@dataclass(slots=True)
class _Call:
    rid: RequestId
    job: CallJob
    version: str  # the protocol version the SDK would have answered it in
    settled: bool = False  # answered or cancelled: nothing more is sent for it


class FastCalls:
    """The `tools/call` path of one stdio connection. `take(line)` serves a line it is sure
    of; `passed(message)` and `answered(message)` are told of every message to and from the
    SDK; `close()` at the end of the input."""

    def __init__(self, bench_server: BenchServer, emit: Callable[[types.JSONRPCMessage], None]) -> None:
        self.bench_server, self.emit = bench_server, emit
        self.loop = asyncio.get_running_loop()
        self.version: str | None = None  # the SDK's protocol version once it initialized; None: off
        self.off = False  # a second `initialize`: the SDK's alone from then on
        self.handshakes = 0  # `initialize` requests handed to the SDK
        self.in_flight: dict[RequestId, _Call] = {}
        self.sdk_ids: set[RequestId] = set()  # requests handed to the SDK and not yet answered
        self.taken = 0  # calls served here (tests and the benchmark read it)

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Make this the fast path of the connection served in this context, meanwhile."""
        _install(self.bench_server)
        token = _current.set(self)
        _serving[self.bench_server] = self
        try:
            yield
        finally:
            _current.reset(token)
            if _serving.get(self.bench_server) is self:
                del _serving[self.bench_server]

    def initialized(self, session: Any) -> None:
        """The SDK marked the connection initialized: its ServerSession's version and client."""
        version = session.protocol_version
        if (
            not self.off
            and session.client_params is not None
            and version in HANDSHAKE_PROTOCOL_VERSIONS
            and version not in MODERN_PROTOCOL_VERSIONS
        ):
            self.version = version

    def take(self, line: bytes) -> bool:
        """Serve `line` here if it is a `tools/call` the SDK would serve the same way."""
        version = self.version
        if version is None:
            return False
        try:
            msg = from_json(line, allow_inf_nan=False)
        except ValueError:
            return False
        if (
            type(msg) is not dict
            or msg.keys() != _TOP
            or msg["method"] != "tools/call"
            or msg["jsonrpc"] != "2.0"
        ):
            return False
        rid, params = msg["id"], msg["params"]
        if not (type(rid) is str or (type(rid) is int and -MAX_ID <= rid <= MAX_ID)):
            return False
        key = coerce_request_id(rid)
        if key in self.in_flight or key in self.sdk_ids or type(params) is not dict:
            return False
        if not params.keys() <= _PARAMS or type(params.get("name")) is not str:
            return False
        if "arguments" in params and type(params["arguments"]) is not dict:
            return False
        return self._start(rid, key, params, version)

    def _start(self, rid: RequestId, key: RequestId, params: dict[str, Any], version: str) -> bool:
        bs = self.bench_server
        server = bs.server
        entry = server.get_request_handler("tools/call")
        if (
            entry is None
            or entry.handler != bs.call_tool
            or server.middleware
            or server.cache_hints.get("tools/call") is not None
            or bs.waiting >= bs.max_waiting  # the SDK's path says E_LIMIT
        ):
            return False
        try:
            listed = bs.tools().get(params["name"])
            if listed is None:  # the SDK's path says E_UNKNOWN_TOOL, with the names meant
                return False
            # the SDK's checks of the params: the version's surface, then the handler's model
            _methods.validate_client_request("tools/call", version, params)
            typed = entry.params_type.model_validate(params, by_name=False)
        except (WorkbenchError, KeyError, ValueError):  # ValidationError is a ValueError
            return False
        bs.waiting += 1
        arguments = getattr(typed, "arguments", None) or {}  # CallToolRequestParams, as registered
        call = _Call(rid, CallJob(bs.bench, listed.key, arguments), version)
        self.in_flight[key] = call
        self.taken += 1
        bs.worker.submit(call.job, lambda: self._from_worker(key, call))
        return True

    def _from_worker(self, key: RequestId, call: _Call) -> None:
        try:
            self.loop.call_soon_threadsafe(self._ended, key, call)
        except RuntimeError:  # the loop closed: the server stopped, nobody waits for the answer
            pass

    def _settle(self, key: RequestId, call: _Call) -> bool:
        """Whether `call` was still open (now settled: nothing more is sent for it)."""
        if call.settled:
            return False
        call.settled = True
        if self.in_flight.get(key) is call:
            del self.in_flight[key]
        self.bench_server.waiting -= 1
        return True

    def _ended(self, key: RequestId, call: _Call) -> None:
        """On the loop: the call's answer, as the SDK's call_tool and dispatcher give it."""
        if not self._settle(key, call):
            return
        bs, job = self.bench_server, call.job
        message: types.JSONRPCMessage
        try:
            if bs.on_result is not None and job.result is not None:
                bs.on_result(job.result)
            result = _methods.serialize_server_result("tools/call", call.version, _answer(job, bs.bench))
            message = types.JSONRPCResponse(jsonrpc="2.0", id=call.rid, result=result)
        except ValidationError:  # the runner's words for a result its surface refuses
            error = types.ErrorData(code=types.INTERNAL_ERROR, message="Handler returned an invalid result")
            message = types.JSONRPCError(jsonrpc="2.0", id=call.rid, error=error)
        except Exception as exc:  # noqa: BLE001  the dispatcher's answer to a handler that raised
            message = types.JSONRPCError(
                jsonrpc="2.0", id=call.rid, error=types.ErrorData(code=0, message=str(exc))
            )
        self.emit(message)

    def passed(self, message: Any) -> None:
        """A message handed to the SDK: its request ids are the SDK's until it answers them; a
        cancellation of a call served here interrupts it (and still reaches the SDK, which
        ignores an id it does not hold)."""
        if isinstance(message, types.JSONRPCRequest):
            if message.method == "initialize":
                self.handshakes += 1
                if self.handshakes > 1:  # a second handshake: the SDK's alone from now on
                    self.version, self.off = None, True
            self.sdk_ids.add(coerce_request_id(message.id))
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            rid = as_request_id((message.params or {}).get("requestId"))
            if rid is None:
                return
            key = coerce_request_id(rid)
            self.sdk_ids.discard(key)  # a cancelled request is never answered
            call = self.in_flight.get(key)
            if call is not None and self._settle(key, call):
                call.job.interrupt()  # as Ctrl-C; a call not begun never runs

    def answered(self, message: Any) -> None:
        """A message the SDK wrote: the id of a request it answered is free again."""
        if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)) and message.id is not None:
            self.sdk_ids.discard(coerce_request_id(message.id))

    def close(self) -> None:
        """The input ended: the SDK cancels its calls and says "Connection closed"; so here."""
        for key, call in list(self.in_flight.items()):
            if self._settle(key, call):
                call.job.interrupt()
                error = types.ErrorData(code=types.CONNECTION_CLOSED, message="Connection closed")
                self.emit(types.JSONRPCError(jsonrpc="2.0", id=call.rid, error=error))


async def _on_initialized(ctx: Any, params: Any) -> None:
    """The server's `notifications/initialized` handler: run by the SDK after it marked the
    connection initialized."""
    fast = _current.get()
    if fast is not None:
        fast.initialized(ctx.session)


def _install(bench_server: BenchServer) -> None:
    """Register `_on_initialized` on the server (once; no handler of its own is replaced)."""
    server = bench_server.server
    entry = server.get_notification_handler("notifications/initialized")
    if entry is None:
        server.add_notification_handler(
            "notifications/initialized", types.NotificationParams, _on_initialized
        )
