"""The MCP server over one Bench, on the SDK's low-level `Server` (tool schemas are the
gem's, given, not inferred from Python signatures). `tools/list` is tools.py's listing of the
bench's current definition; each `tools/call` is `bench.call` with every rule, on the server's
one worker thread, one at a time: the bench's lock keeps them from overlapping with the
notebook's calls, and at most `max_waiting` are running or waiting (the next gets a protocol
error). A client's cancellation interrupts the call (calls.py). The transports run on asyncio
(the CLI's `anyio.run`, uvicorn's loop): a call's end is handed back to the loop directly."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from .._errors import WorkbenchError, internal_error
from .calls import CallJob, Worker
from .results import error_result, tool_result
from .tools import Listed, listing

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.models import InitializationOptions

    from ..bench.bench import Bench
    from ..bench.result import CallResult

MAX_WAITING = 16  # tools/call requests running or waiting at once, over all of a server's clients
SERVER_ERROR = -32000  # JSON-RPC's range for an implementation's own errors


class BenchServer:
    """The MCP server of one bench: `server` (the SDK's) and its `options` for a transport."""

    def __init__(
        self,
        bench: Bench,
        *,
        max_waiting: int = MAX_WAITING,
        on_result: Callable[[CallResult], None] | None = None,
    ) -> None:
        self.bench = bench
        self.on_result = on_result  # told each call's result as it arrives (a notebook shows it)
        self.max_waiting = max_waiting
        self.waiting = 0
        self.worker = Worker(f"gem-workbench mcp {bench.manifest.id}")  # runs the calls in turn
        self._listed: tuple[object, object, dict[str, Listed]] | None = None
        manifest = bench.manifest
        self.server: Server[Any] = Server(
            f"gem-workbench {manifest.id}",
            version=manifest.version or "0",
            instructions=f"The tools of {manifest.name or manifest.id}, run by Gem Workbench as "
            f"{bench.profile.title} run on their platform.",
            on_list_tools=self.list_tools,
        )
        # registered as a plain handler, whose result may be JSON (the `on_call_tool` keyword's
        # type asks for the model, which the SDK would dump and validate again)
        self.server.add_request_handler("tools/call", types.CallToolRequestParams, self.call_tool)
        # the SDK's tracing middleware is a no-op without an exporter: not paid per message
        self.server.middleware.clear()

    def options(self) -> InitializationOptions:
        """What the server tells a client at initialization."""
        return self.server.create_initialization_options()

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """Every tool of the bench's current definition, as its platform offers it."""
        try:
            tools = self.tools()
        except WorkbenchError as exc:
            raise _protocol_error(exc) from None
        return types.ListToolsResult(tools=[types.Tool.model_validate(t.entry) for t in tools.values()])

    def tools(self) -> dict[str, Listed]:
        """tools.py's listing of the bench's current definition, made again only when the
        definition (a reload) or the profile changed: both are replaced, never changed."""
        bench = self.bench
        listed = self._listed
        if listed is None or listed[0] is not bench.manifest or listed[1] is not bench.profile:
            listed = self._listed = (bench.manifest, bench.profile, listing(bench.manifest, bench.profile))
        return listed[2]

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> dict[str, Any]:
        """The tool's result from `bench.call` (an error: an isError result with its code), as
        JSON: the SDK validates it against the protocol version's CallToolResult once."""
        bench = self.bench
        try:
            tools = self.tools()
        except WorkbenchError as exc:
            raise _protocol_error(exc) from None
        listed = tools.get(params.name)
        if listed is None:
            from ..gem.near import meant

            raise _protocol_error(
                WorkbenchError(
                    "E_UNKNOWN_TOOL",
                    f"no tool {params.name[:200]!r} (tools: {', '.join(tools) or 'none'})"
                    f"{meant(params.name, tools) if len(params.name) <= 200 else ''}",
                    field="name",
                )
            )
        if self.waiting >= self.max_waiting:
            raise _protocol_error(
                WorkbenchError(
                    "E_LIMIT",
                    f"{self.waiting} calls are running or waiting on this bench (at most "
                    f"{self.max_waiting}): try again when one ended",
                    limit=self.max_waiting,
                )
            )
        self.waiting += 1
        try:
            loop = asyncio.get_running_loop()
            ended = loop.create_future()
            job = CallJob(bench, listed.key, params.arguments or {})
            self.worker.submit(job, lambda: _settle(loop, ended))
            try:
                await ended
            except asyncio.CancelledError:  # the client cancelled: Ctrl-C the call (or skip it)
                job.interrupt()
                raise
        finally:
            self.waiting -= 1
        if self.on_result is not None and job.result is not None:
            self.on_result(job.result)
        return _answer(job, bench)


def _settle(loop: asyncio.AbstractEventLoop, ended: asyncio.Future[None]) -> None:
    """From the worker: wake the handler waiting on `ended` (gone if the loop has closed)."""

    def wake() -> None:
        if not ended.done():  # a cancelled handler's future is done already
            ended.set_result(None)

    try:
        loop.call_soon_threadsafe(wake)
    except RuntimeError:  # the loop closed: the server stopped, nobody waits for the answer
        pass


def _answer(job: CallJob, bench: Bench) -> dict[str, Any]:
    """The result of a finished job, as JSON."""
    if job.result is not None:
        return tool_result(job.result, bench.profile)
    if job.error is not None:
        return error_result(job.error)
    why = "interrupted before it began" if job.interrupted else "ended without a result"
    return error_result(internal_error("mcp tools/call", RuntimeError(why)))


def _protocol_error(exc: WorkbenchError) -> MCPError:
    """A JSON-RPC error carrying the workbench's code, message and details."""
    code = types.INVALID_PARAMS if exc.code in ("E_UNKNOWN_TOOL", "E_SCHEMA") else SERVER_ERROR
    return MCPError(code, f"{exc.code}: {exc.message}", data=error_result(exc)["structuredContent"]["error"])
