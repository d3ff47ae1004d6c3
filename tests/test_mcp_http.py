"""`bench.serve_mcp()` and `gem-workbench mcp --port`: streamable HTTP on 127.0.0.1, driven by
the MCP SDK's own client. Calls from the client are the bench's (in `bench.calls()` and the
state views as they arrive), never overlap the notebook's, and a cancelled one is an
E_INTERRUPTED row; stopping the serving or closing the bench ends it."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from _mcp import EXE, env, http_session, mcp_gem
from conftest import GemBuilder

import workbench

pytestmark = pytest.mark.deno


def refused(address: tuple[str, int]) -> bool:
    try:
        socket.create_connection(address, timeout=2).close()
    except OSError:
        return True
    return False


def test_serve_mcp_calls_are_the_benchs_calls(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    bench = opened(mcp_gem(gem))
    serving = bench.serve_mcp()
    try:
        assert serving.address[0] == "127.0.0.1" and serving.url.endswith("/mcp")
        bench.call("count", {"by": 10}).raise_for_error()  # the notebook's call first

        async def main() -> list[Any]:
            async with http_session(serving.url, serving.token) as s:
                names = [t.name for t in (await s.list_tools()).tools]
                one = await s.call_tool("count", {})
                seen = bench.kv().set_index("key").value["n"]  # as it arrives, before the next
                return [names, one, seen, await s.call_tool("double", {"n": "no"})]

        names, one, seen, bad = anyio.run(main)
        assert names == ["double", "count", "boom", "slow_js", "slow_py"]
        assert one.structured_content == {"result": 11} and seen == "11"
        assert bad.is_error and bad.structured_content["error"]["code"] == "E_SCHEMA"
        calls = bench.calls()
        assert list(calls.tool) == ["count", "count", "double"]
        assert list(calls.ok) == [True, True, False]
        assert bench.results[-2].call_id == one.meta["dev.gem-workbench/call_id"]
    finally:
        assert bench.stop_serving() is True
    assert refused(serving.address) and not serving.running
    assert bench.stop_serving() is False


_TRACED_AFTER = """
import sys, anyio, workbench
sys.path.insert(0, {tests!r})
from _mcp import http_session
bench = workbench.open({gem!r})
serving = bench.serve_mcp()

async def main():
    async with http_session(serving.url, serving.token) as s:
        return await s.call_tool("double", {{"n": 2}})

print(anyio.run(main).structured_content, flush=True)
bench.stop_serving()
events = []
def tracer(frame, event, arg):
    events.append(event)
    return tracer
def f(x):
    return x
sys.settrace(tracer)
f(1)
sys.settrace(None)
print("traced", len(events) > 0, flush=True)
bench.close()
"""


def test_tracing_works_in_the_process_after_a_served_call(gem: GemBuilder, tmp_path: Path) -> None:
    # a worker thread's call ended by clearing a pending interrupt with SetAsyncExc(tid, NULL),
    # which left the interpreter's async-exception flag set: in the same process, the next
    # traced or profiled call never got past its first line (the test suite's own tracers hung)
    script = _TRACED_AFTER.format(tests=str(Path(__file__).parent), gem=str(mcp_gem(gem)))
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=90,
        env={**env(tmp_path), "PYTHONPATH": str(Path(workbench.__file__).parent.parent)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "{'doubled': 4}" in out.stdout + out.stderr, out.stdout + out.stderr[-2000:]
    assert out.stdout.splitlines()[-1] == "traced True", out.stdout + out.stderr[-2000:]


def test_a_cancelled_call_is_an_interrupted_row_and_the_next_call_works(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    bench = opened(mcp_gem(gem))
    serving = bench.serve_mcp()

    async def main() -> Any:
        async with http_session(serving.url, serving.token) as s:
            with anyio.move_on_after(2):
                await s.call_tool("slow_js", {})
            return await s.call_tool("double", {"n": 4})

    t0 = time.monotonic()
    after = anyio.run(main)
    assert after.structured_content == {"doubled": 8} and time.monotonic() - t0 < 12
    row = bench.calls().iloc[0]
    assert row.tool == "slow_js" and row.error == "E_INTERRUPTED"
    assert "after 1 ctx call" in row.message and "what it wrote before was kept" in row.message
    assert bench.kv().set_index("key").value["slow"] == "started"  # its write stayed


def test_notebook_and_client_calls_never_run_at_once(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    gem.tool(
        "span",
        "import time\n\ndef handle(input, ctx):\n    t0 = time.monotonic()\n    time.sleep(0.2)\n"
        "    return [t0, time.monotonic()]\n",
    )
    bench = opened(mcp_gem(gem))
    serving = bench.serve_mcp()
    spans: list[list[float]] = []

    def notebook() -> None:
        for _ in range(3):
            spans.append(bench.call("span").raise_for_error().value)

    async def client() -> None:
        async with http_session(serving.url, serving.token) as s:
            for _ in range(3):
                spans.append((await s.call_tool("span", {})).structured_content["result"])

    thread = threading.Thread(target=notebook)
    thread.start()
    anyio.run(client)
    thread.join(30)
    spans.sort()
    assert len(spans) == 6
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans


def test_requests_are_parsed_by_httptools(gem: GemBuilder, opened: Callable[..., workbench.Bench]) -> None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    serving = opened(mcp_gem(gem)).serve_mcp()
    assert serving._server.config.http_protocol_class is HttpToolsProtocol  # h11's is 2x slower

    async def main() -> Any:
        async with http_session(serving.url, serving.token) as s:
            return await s.call_tool("double", {"n": 5})

    assert anyio.run(main).structured_content == {"doubled": 10}


def test_closing_the_bench_stops_serving(gem: GemBuilder, tmp_path: Path) -> None:
    bench = workbench.open(mcp_gem(gem), state_dir=tmp_path / "state")
    serving = bench.serve_mcp()
    with pytest.raises(workbench.UsageError, match="served already"):
        bench.serve_mcp()
    bench.close()
    assert not serving.running and refused(serving.address)


def test_a_port_in_use_is_a_usage_error(gem: GemBuilder, opened: Callable[..., workbench.Bench]) -> None:
    bench = opened(mcp_gem(gem))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        with pytest.raises(workbench.UsageError, match="cannot listen"):
            bench.serve_mcp(port=taken.getsockname()[1])
    with pytest.raises(workbench.UsageError, match="port="):
        bench.serve_mcp(port=-1)


def test_the_command_serves_http_and_prints_the_url_and_token(gem: GemBuilder, tmp_path: Path) -> None:
    root = mcp_gem(gem)
    proc = subprocess.Popen(
        [EXE, "mcp", str(root), "--port", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env(tmp_path / "home"),
    )
    try:
        assert proc.stderr is not None
        lines = [proc.stderr.readline() for _ in range(3)]
        url = re.search(r"at (http://127\.0\.0\.1:\d+/mcp)", lines[0])
        token = re.search(r"token: (\S+)", lines[1])
        assert url and token, lines

        async def main() -> Any:
            async with http_session(url[1], token[1]) as s:
                return await s.call_tool("double", {"n": 5})

        assert anyio.run(main).structured_content == {"doubled": 10}
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stderr is not None:
            proc.stderr.close()


def test_mcp_help_and_a_port_given_to_http(tmp_path: Path, gem: GemBuilder) -> None:
    root = mcp_gem(gem)
    out = subprocess.run([EXE, "mcp", "--help"], capture_output=True, text=True, timeout=60)
    assert "--port PORT" in out.stdout and "--state-dir" in out.stdout and "--seed" in out.stdout
    out = subprocess.run(
        [EXE, "mcp", str(root), "--http", "8000"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2 and "--port 8000" in out.stderr and "Traceback" not in out.stderr


def test_served_calls_are_shown_as_they_arrive(
    gem: GemBuilder, opened: Callable[..., workbench.Bench], capsys: pytest.CaptureFixture[str]
) -> None:
    bench = opened(mcp_gem(gem))
    serving = bench.serve_mcp(show=True)  # (outside a kernel: each result's text, printed)
    try:

        async def main() -> Any:
            async with http_session(serving.url, serving.token) as s:
                return await s.call_tool("double", {"n": 1})

        res = anyio.run(main)
    finally:
        serving.stop()
    # its repr, or the workbench's text form once its display formatters are registered (an
    # earlier test in the same process loaded the extension)
    out = capsys.readouterr().out
    assert re.search(r"double\b.*\bok\b", out) and re.search(r"""["']doubled["']: 2""", out), out
    assert res.meta["dev.gem-workbench/call_id"] == bench.results[-1].call_id
