"""The issue-45 benchmarks: an MCP tools/call of a trivial JS tool, from the SDK's own client,
over stdio (`gem-workbench mcp`, a subprocess) and over streamable HTTP (`bench.serve_mcp()`),
each as a ratio to `bench.call` of the same tool in the same run. Calls are timed one by one, in
alternating blocks of 50 (as bench_deno's warm call). Where the time goes: the floor, a call of
a tool that returns a constant from the SDK's low-level server on the same transport (no bench),
timed in the same run. Nothing here asserts a time: `run.py` compares the figures with the
target (<= 2×). `python bench_mcp.py serve` is the floor's stdio server."""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from bench_deno import ONE, _open, _workbench_home
from benchlib import QUICK, Figures, Sizes, time_ns, write_gem
from benchmarks import _call

BLOCK = 50
EXE = str(Path(sys.executable).parent / "gem-workbench")


async def _timed(call: Callable[[], Awaitable[Any]], n: int) -> list[int]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        res = await call()
        out.append(time.perf_counter_ns() - t0)
        if res.is_error:
            raise RuntimeError(f"MCP call failed: {res.content}")
    return out


class _Constant:
    """The floor's server: the SDK's low-level server with one tool that returns 1, in the
    shape server.py's BenchServer gives the transports (`server`, `options()`)."""

    def __init__(self) -> None:
        import mcp_types as types
        from mcp.server.lowlevel import Server

        async def tools(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult(tools=[types.Tool(name="one", input_schema={"type": "object"})])

        async def call(ctx: Any, params: Any) -> Any:
            text = types.TextContent(type="text", text="1")
            return types.CallToolResult(content=[text], structured_content={"result": 1})

        self.server: Any = Server("floor", on_list_tools=tools, on_call_tool=call)
        self.server.middleware.clear()

    def options(self) -> Any:
        return self.server.create_initialization_options()


async def _floor(session: Any, n: int) -> float:
    """Median ms of n calls of the constant tool (after 20 not counted)."""
    ns = await _timed(lambda: session.call_tool("one", {}), n + 20)
    return statistics.median(ns[20:]) / 1e6


async def _alternate(sizes: Sizes, session: Any, bench: Any) -> Figures:
    """Alternating blocks of MCP calls (through `session`) and bench.call on `bench`: the
    medians and their ratio."""
    mcp_ns: list[int] = []
    call_ns: list[int] = []
    for block in range(-1, max(1, sizes.warm_calls // BLOCK)):  # block -1 warms up
        m = await _timed(lambda: session.call_tool("one", {}), BLOCK)
        c = [time_ns(lambda: _call(bench, "one", {})) for _ in range(BLOCK)]
        if block >= 0:
            mcp_ns.extend(m)
            call_ns.extend(c)
    mcp, call = statistics.median(mcp_ns), statistics.median(call_ns)
    return {"mcp_ms": mcp / 1e6, "call_ms": call / 1e6, "ratio": mcp / call}


def bench_mcp_stdio_call(sizes: Sizes = QUICK) -> Figures:
    """tools/call over stdio to `gem-workbench mcp GEM` vs bench.call in this process."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    with tempfile.TemporaryDirectory() as d, _workbench_home(Path(d)):
        gem = write_gem(Path(d) / "gem", {"one.js": ONE})
        params = StdioServerParameters(
            command=EXE,
            args=["mcp", str(gem), "--state-dir", str(Path(d) / "served"), "--reuse", "always"],
            env={"GEM_WORKBENCH_HOME": os.environ["GEM_WORKBENCH_HOME"], "PATH": os.environ.get("PATH", "")},
        )
        with _open(gem, Path(d) / "state") as bench:

            async def main() -> Figures:
                async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                    await session.initialize()
                    return await _alternate(sizes, session, bench)

            async def floor() -> float:
                constant = StdioServerParameters(
                    command=sys.executable, args=[__file__, "serve"], env=params.env
                )
                async with stdio_client(constant) as (read, write), ClientSession(read, write) as session:
                    await session.initialize()
                    return await _floor(session, sizes.warm_calls)

            figures = anyio.run(main)
            return {**figures, "floor_ms": anyio.run(floor)}


def bench_mcp_http_call(sizes: Sizes = QUICK) -> Figures:
    """tools/call over streamable HTTP to `bench.serve_mcp()` vs bench.call on the same bench."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    with tempfile.TemporaryDirectory() as d, _workbench_home(Path(d)):
        gem = write_gem(Path(d) / "gem", {"one.js": ONE})
        with _open(gem, Path(d) / "state") as bench:
            serving = bench.serve_mcp()

            async def main() -> Figures:
                async with (
                    create_mcp_http_client(headers=serving.headers) as client,
                    streamable_http_client(serving.url, http_client=client) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    return await _alternate(sizes, session, bench)

            try:
                figures = anyio.run(main)
            finally:
                serving.stop()
    return {**figures, "floor_ms": _http_floor(sizes)}


def _http_floor(sizes: Sizes) -> float:
    """The constant tool's calls over workbench/mcp/http.py's app, served from a thread."""
    import asyncio
    import threading

    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from workbench.mcp.http import http_server, listen, url_of

    sock = listen(0)
    server, token = http_server(_Constant(), sock)  # type: ignore[arg-type]
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.005)

    async def main() -> float:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            create_mcp_http_client(headers=headers) as client,
            streamable_http_client(url_of(sock), http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await _floor(session, sizes.warm_calls)

    try:
        return anyio.run(main)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def _serve_constant() -> None:
    from workbench.mcp.stdio import claimed_stdio, serve_streams

    async def main() -> None:
        with claimed_stdio() as (wire_in, wire_out):
            await serve_streams(_Constant(), wire_in, wire_out, max_bytes=1 << 22)  # type: ignore[arg-type]

    anyio.run(main)


if __name__ == "__main__" and sys.argv[1:] == ["serve"]:
    _serve_constant()
