"""The issue-45 benchmarks: an MCP tools/call of a trivial JS tool, from the SDK's own client,
over stdio (`gem-workbench mcp`, a subprocess) and over streamable HTTP (`bench.serve_mcp()`),
each as a ratio to `bench.call` of the same tool in the same run. Calls are timed one by one, in
alternating blocks of 50 (as bench_deno's warm call). Where the time goes: the floor, a call of
a tool that returns a constant from the SDK's low-level server on the same transport (no bench),
timed in the same run. Nothing here asserts a time: `run.py` compares the figures with the
target (<= 2×). `python bench_mcp.py serve` is the floor's stdio server.

The SDK's client costs as much as the server (pydantic models, anyio streams, a task per
message): the `_raw` benchmarks time the same calls from a minimal JSON-RPC client (stdio: write
one line, read one line; HTTP: one POST on a kept-alive http.client connection with the session
id and the token), which is what the workbench's server adds as any client sees it; their floor
is the same raw client against the constant tool."""

from __future__ import annotations

import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
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


def _env() -> dict[str, str]:
    """The served process's environment: this one's workbench (compare.py runs two trees by
    PYTHONPATH) and home."""
    env = {"GEM_WORKBENCH_HOME": os.environ["GEM_WORKBENCH_HOME"], "PATH": os.environ.get("PATH", "")}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


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
            env=_env(),
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
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    with _constant_over_http() as (address, token):

        async def main() -> float:
            headers = {"Authorization": f"Bearer {token}"}
            async with (
                create_mcp_http_client(headers=headers) as client,
                streamable_http_client(f"http://{address[0]}:{address[1]}/mcp", http_client=client) as (
                    read,
                    write,
                ),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await _floor(session, sizes.warm_calls)

        return anyio.run(main)


@contextmanager
def _constant_over_http() -> Iterator[tuple[tuple[str, int], str]]:
    """((host, port), token) of the constant tool served over workbench/mcp/http.py's app from
    a thread, stopped after."""
    import asyncio
    import threading

    from workbench.mcp.http import http_server, listen

    sock = listen(0)
    server, token = http_server(_Constant(), sock)  # type: ignore[arg-type]
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    try:
        while not server.started and thread.is_alive():
            time.sleep(0.005)
        yield sock.getsockname()[:2], token
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "one", "arguments": {}}}


def _checked(answer: bytes) -> None:
    """Raise unless `answer` is the JSON-RPC result of a call that did not fail."""
    message = json.loads(answer)
    if "result" not in message or message["result"].get("isError"):
        raise RuntimeError(f"MCP call failed: {answer[:500]!r}")


class _RawStdio:
    """A minimal MCP client of a stdio server: one JSON line written, one read, per call."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.w, self.r = self.proc.stdin, self.proc.stdout
        self._send(INIT)
        _checked(self.r.readline())
        self._send(INITIALIZED)
        self.line = json.dumps(CALL).encode() + b"\n"

    def _send(self, message: dict[str, Any]) -> None:
        self.w.write(json.dumps(message).encode() + b"\n")
        self.w.flush()

    def call(self) -> None:
        self.w.write(self.line)
        self.w.flush()
        _checked(self.r.readline())

    def close(self) -> None:
        self.w.close()
        try:
            self.proc.wait(10)
        finally:
            self.proc.kill()
            self.r.close()


class _RawHttp:
    """A minimal MCP client of a streamable HTTP server: one POST per call on one kept-alive
    connection, with the session id and the token."""

    def __init__(self, address: tuple[str, int], token: str) -> None:
        self.conn = http.client.HTTPConnection(*address, timeout=30)
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        resp = self._post(INIT)
        _checked(resp.read())
        self.headers["Mcp-Session-Id"] = resp.getheader("mcp-session-id") or ""
        self.headers["Mcp-Protocol-Version"] = "2025-11-25"
        self._post(INITIALIZED).read()
        self.body = json.dumps(CALL).encode()

    def _post(self, message: dict[str, Any]) -> http.client.HTTPResponse:
        self.conn.request("POST", "/mcp", json.dumps(message).encode(), self.headers)
        return self.conn.getresponse()

    def call(self) -> None:
        self.conn.request("POST", "/mcp", self.body, self.headers)
        _checked(self.conn.getresponse().read())

    def close(self) -> None:
        self.conn.close()


def _raw_alternate(sizes: Sizes, call: Callable[[], None], bench: Any) -> Figures:
    """_alternate's blocks, from a raw client."""
    mcp_ns: list[int] = []
    call_ns: list[int] = []
    for block in range(-1, max(1, sizes.warm_calls // BLOCK)):  # block -1 warms up
        m = [time_ns(call) for _ in range(BLOCK)]
        c = [time_ns(lambda: _call(bench, "one", {})) for _ in range(BLOCK)]
        if block >= 0:
            mcp_ns.extend(m)
            call_ns.extend(c)
    mcp, call_median = statistics.median(mcp_ns), statistics.median(call_ns)
    return {"mcp_ms": mcp / 1e6, "call_ms": call_median / 1e6, "ratio": mcp / call_median}


def _raw_floor(call: Callable[[], None], n: int) -> float:
    """Median ms of n raw calls of the constant tool (after 20 not counted)."""
    ns = [time_ns(call) for _ in range(n + 20)]
    return statistics.median(ns[20:]) / 1e6


def bench_mcp_stdio_raw(sizes: Sizes = QUICK) -> Figures:
    """tools/call over stdio to `gem-workbench mcp GEM` from a raw client vs bench.call."""
    with tempfile.TemporaryDirectory() as d, _workbench_home(Path(d)):
        gem = write_gem(Path(d) / "gem", {"one.js": ONE})
        env = _env()
        served = [EXE, "mcp", str(gem), "--state-dir", str(Path(d) / "served"), "--reuse", "always"]
        with _open(gem, Path(d) / "state") as bench:
            client = _RawStdio(served, env)
            try:
                figures = _raw_alternate(sizes, client.call, bench)
            finally:
                client.close()
        client = _RawStdio([sys.executable, __file__, "serve"], env)
        try:
            return {**figures, "floor_ms": _raw_floor(client.call, sizes.warm_calls)}
        finally:
            client.close()


def bench_mcp_http_raw(sizes: Sizes = QUICK) -> Figures:
    """tools/call over streamable HTTP to `bench.serve_mcp()` from a raw client vs bench.call."""
    with tempfile.TemporaryDirectory() as d, _workbench_home(Path(d)):
        gem = write_gem(Path(d) / "gem", {"one.js": ONE})
        with _open(gem, Path(d) / "state") as bench:
            serving = bench.serve_mcp()
            try:
                client = _RawHttp(serving.address, serving.token)
                try:
                    figures = _raw_alternate(sizes, client.call, bench)
                finally:
                    client.close()
            finally:
                serving.stop()
    with _constant_over_http() as (address, token):
        client = _RawHttp(address, token)
        try:
            return {**figures, "floor_ms": _raw_floor(client.call, sizes.warm_calls)}
        finally:
            client.close()


def _serve_constant() -> None:
    from workbench.mcp.stdio import claimed_stdio, serve_streams

    async def main() -> None:
        with claimed_stdio() as (wire_in, wire_out):
            await serve_streams(_Constant(), wire_in, wire_out, max_bytes=1 << 22)  # type: ignore[arg-type]

    anyio.run(main)


if __name__ == "__main__" and sys.argv[1:] == ["serve"]:
    _serve_constant()
