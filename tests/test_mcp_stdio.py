"""`gem-workbench mcp GEM` over stdio, driven by the MCP SDK's own client: the tools listed as
the platform offers them, calls through the bench with every rule (a schema error, a tool's
error as isError results with their code), state kept between calls and in --state-dir, a
client's cancellation ending the call as Ctrl-C does, and nothing a tool prints on the wire."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from _mcp import env, mcp_gem, stdio_session
from conftest import GemBuilder

pytestmark = pytest.mark.deno


def test_tools_list_gives_names_schemas_and_read_only_annotations(gem: GemBuilder, tmp_path: Path) -> None:
    root = mcp_gem(gem)

    async def main() -> Any:
        async with stdio_session(root, home=tmp_path / "home") as s:
            return (await s.list_tools()).tools

    tools = {t.name: t for t in anyio.run(main)}
    assert list(tools) == ["double", "count", "boom", "slow_js", "slow_py"]
    double = tools["double"]
    assert double.description == "n times 2"
    assert double.input_schema == {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }
    assert double.annotations.read_only_hint is True  # sideEffect: "read"
    assert tools["count"].annotations.read_only_hint is False
    assert double.output_schema is None  # Notochord declares no result shape


def test_calls_go_through_the_bench_with_every_rule(gem: GemBuilder, tmp_path: Path) -> None:
    root = mcp_gem(gem)

    async def main() -> list[Any]:
        async with stdio_session(root, home=tmp_path / "home") as s:
            return [
                await s.call_tool("double", {"n": 21}),
                await s.call_tool("double", {"n": "x", "extra": 1}),
                await s.call_tool("boom", {}),
                await s.call_tool("count", {}),
                await s.call_tool("count", {"by": 5}),
            ]

    ok, schema, boom, one, six = anyio.run(main)
    assert not ok.is_error and ok.structured_content == {"doubled": 42}
    assert json.loads(ok.content[0].text) == {"doubled": 42}
    assert ok.meta["dev.gem-workbench/call_id"]
    assert schema.is_error
    err = schema.structured_content["error"]
    assert err["code"] == "E_SCHEMA" and "/n" in err["message"]
    assert any(v["path"] == "/n" for v in err["details"]["violations"])
    assert schema.content[0].text.startswith("E_SCHEMA: ")
    assert boom.is_error and boom.structured_content["error"]["code"] == "E_TOOL_ERROR"
    assert "the tool broke" in boom.structured_content["error"]["message"]
    # state persists between calls (the bench's kv), and the result is structured + text
    assert (one.structured_content, six.structured_content) == ({"result": 1}, {"result": 6})
    assert six.content[0].text == "6"


def test_state_dir_keeps_state_between_servers(gem: GemBuilder, tmp_path: Path) -> None:
    root = mcp_gem(gem)
    state = tmp_path / "state"

    async def count() -> Any:
        async with stdio_session(root, "--real", "--state-dir", str(state), home=tmp_path / "home") as s:
            return (await s.call_tool("count", {"by": 2})).structured_content

    assert anyio.run(count) == {"result": 2}
    assert anyio.run(count) == {"result": 4}  # a second server on the same folder


@pytest.mark.parametrize("tool", ["slow_js", "slow_py"])
def test_cancelling_a_call_interrupts_it_and_the_server_goes_on(
    gem: GemBuilder, tmp_path: Path, tool: str
) -> None:
    root = mcp_gem(gem)

    async def main() -> tuple[float, Any, Any]:
        async with stdio_session(root, home=tmp_path / "home") as s:
            started = anyio.current_time()
            with anyio.move_on_after(3):  # the SDK sends notifications/cancelled when its wait is cancelled
                await s.call_tool(tool, {})
            cancelled_after = anyio.current_time() - started
            after = await s.call_tool("double", {"n": 1})  # waited for the interrupted call only
            took = anyio.current_time() - started
            return cancelled_after, after, took

    cancelled_after, after, took = anyio.run(main)
    assert 2.5 < cancelled_after < 6
    assert after.structured_content == {"doubled": 2}
    assert took < 12, "the next call waited for the cancelled one to run its 20 s"


def test_nothing_a_tool_prints_reaches_the_protocol_stream(gem: GemBuilder, tmp_path: Path) -> None:
    root = mcp_gem(gem)
    with (tmp_path / "stderr.txt").open("w+") as errlog:

        async def main() -> list[Any]:
            async with stdio_session(root, home=tmp_path / "home", errlog=errlog) as s:
                return [await s.call_tool("count", {}), await s.call_tool("double", {"n": 2})]

        count, double = anyio.run(main)
        errlog.seek(0)
        said = errlog.read()
    assert count.structured_content == {"result": 1} and double.structured_content == {"doubled": 4}
    assert "a write to fd 1: never on the protocol stream" in said  # it went to stderr
    assert "a Python tool's print" not in said  # print() is the call's log, as in a notebook


def test_the_sdk_is_imported_only_when_serving(gem: GemBuilder, tmp_path: Path) -> None:
    """`import workbench`, `check` and a first open and call cost what they did: no MCP SDK,
    Starlette or uvicorn loaded until a bench is served."""
    root = mcp_gem(gem)
    code = (
        "import sys, workbench\n"
        "from workbench._check import check\n"
        f"check({str(root)!r})\n"
        f"b = workbench.open({str(root)!r})\n"
        "b.call('count', {})\n"
        "print(sorted(m for m in ('mcp', 'mcp_types', 'starlette', 'uvicorn', 'anyio') if m in sys.modules))\n"
        "b.close()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env(tmp_path)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_open_flags_reach_the_served_bench(gem: GemBuilder, tmp_path: Path) -> None:
    gem.tool("now", "export default async () => new Date().toISOString();\n", ext="js")
    root = mcp_gem(gem)

    async def main() -> Any:
        args = ("--clock", "2030-01-02T03:04:05Z", "--seed", "7")
        async with stdio_session(root, *args, home=tmp_path / "home") as s:
            return (await s.call_tool("now", {})).structured_content

    assert anyio.run(main) == {"result": "2030-01-02T03:04:05.000Z"}
