"""Shared by tests/test_mcp_*.py: a gem with a JS and a Python tool, and the MCP SDK's own
clients (stdio: `gem-workbench mcp` started as a subprocess; streamable HTTP) driving it."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from conftest import GemBuilder

EXE = str(Path(sys.executable).parent / "gem-workbench")

DOUBLE_JS = """
export default async function (input, ctx) {
  console.log("a JS tool's console.log: never on the protocol stream");
  return { doubled: input.n * 2 };
}
"""
COUNT_PY = """
import os

def handle(input, ctx):
    print("a Python tool's print: never on the protocol stream")
    os.write(1, b"a write to fd 1: never on the protocol stream\\n")
    n = int(ctx.storage.kv.get("n") or 0) + input.get("by", 1)
    ctx.storage.kv.set("n", str(n))
    return n
"""
BOOM_JS = """
export default async function (input, ctx) {
  throw new Error("the tool broke");
}
"""
SLOW_JS = """
export default async function (input, ctx) {
  await ctx.storage.kv.set("slow", "started");
  await new Promise((resolve) => setTimeout(resolve, 20000));
  return "finished";
}
"""
SLOW_PY = """
import time

def handle(input, ctx):
    ctx.storage.kv.set("slow", "started")
    end = time.monotonic() + 20
    while time.monotonic() < end:
        time.sleep(0.01)
    return "finished"
"""
N_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def mcp_gem(gem: GemBuilder) -> Path:
    """A Notochord gem: `double` (JS, read), `count` (Python, a kv counter that prints), `boom`
    (JS, throws), `slow_js` and `slow_py` (20 s after a kv write: for cancellation)."""
    gem.tool("double", DOUBLE_JS, ext="js", schema=N_SCHEMA, side_effect="read", description="n times 2")
    gem.tool(
        "count",
        COUNT_PY,
        schema={"type": "object", "properties": {"by": {"type": "integer"}}},
        description="counts calls",
    )
    gem.tool("boom", BOOM_JS, ext="js", description="always throws")
    gem.tool("slow_js", SLOW_JS, ext="js", description="takes 20 s")
    gem.tool("slow_py", SLOW_PY, description="takes 20 s")
    return gem.write()


def env(home: Path) -> dict[str, str]:
    """The server's environment: a Deno home of the test's own."""
    return {"GEM_WORKBENCH_HOME": str(home), "PATH": os.environ.get("PATH", "")}


@asynccontextmanager
async def stdio_session(gem: Path, *args: str, home: Path, errlog: Any = None) -> AsyncIterator[Any]:
    """An initialized SDK ClientSession with `gem-workbench mcp GEM ARGS` (ended after)."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=EXE, args=["mcp", str(gem), *args], env=env(home))
    async with stdio_client(params, errlog=errlog or sys.stderr) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


@asynccontextmanager
async def http_session(url: str, token: str) -> AsyncIterator[Any]:
    """An initialized SDK ClientSession over streamable HTTP, carrying the token."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session
