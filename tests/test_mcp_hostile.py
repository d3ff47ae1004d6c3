"""Hostile MCP clients: malformed and oversized messages, unknown tools and methods, arguments
of every wrong type, no token or a wrong one, a wrong Origin or Host, a flood of calls. Each
gets a clear protocol error (or an isError result naming the field) and the server answers
the next request as before. Over stdio the messages are written raw to `gem-workbench mcp`;
over HTTP they are sent raw to `bench.serve_mcp()`."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from _mcp import EXE, env, http_session, mcp_gem
from conftest import GemBuilder

import workbench

pytestmark = pytest.mark.deno

VERSION = "2025-06-18"
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": VERSION,
        "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "0"},
    },
}


class Raw:
    """`gem-workbench mcp GEM` with its stdin and stdout as raw lines."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.next_id = 100

    def send(self, data: bytes | dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        line = data if isinstance(data, bytes) else json.dumps(data).encode()
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def recv(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed its output"
        return json.loads(line)

    def request(self, method: str, params: Any = None) -> dict[str, Any]:
        self.next_id += 1
        self.send(
            {
                "jsonrpc": "2.0",
                "id": self.next_id,
                "method": method,
                **({} if params is None else {"params": params}),
            }
        )
        while True:
            got = self.recv()
            if got.get("id") == self.next_id:
                return got

    def alive(self) -> None:
        """The server still lists and calls."""
        res = self.request("tools/call", {"name": "double", "arguments": {"n": 3}})
        assert res["result"]["structuredContent"] == {"doubled": 6}, res


@pytest.fixture
def raw(gem: GemBuilder, tmp_path: Path) -> Iterator[Raw]:
    proc = subprocess.Popen(
        [EXE, "mcp", str(mcp_gem(gem))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env(tmp_path / "home"),
    )
    try:
        r = Raw(proc)
        r.send(INIT)
        assert r.recv()["result"]["protocolVersion"] == VERSION
        r.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield r
    finally:
        proc.kill()
        proc.wait(30)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()


@pytest.mark.parametrize(
    "line, code",
    [
        (b"{not json", -32700),
        (b"[1, 2", -32700),
        (b"\xff\xfe garbage", -32700),
        (b'"a string"', -32600),
        (b'{"jsonrpc": "1.0", "id": 7, "method": "tools/list"}', -32600),
        (b'{"id": 7}', -32600),
        (b"[" * 100_000 + b"]" * 100_000, -32700),
    ],
    ids=["broken", "truncated", "not-utf8", "a-string", "old-jsonrpc", "no-method", "deep"],
)
def test_a_malformed_message_gets_a_protocol_error(raw: Raw, line: bytes, code: int) -> None:
    raw.send(line)
    got = raw.recv()
    assert got["error"]["code"] == code and got["error"]["message"], got
    raw.alive()


def test_an_oversized_message_is_refused_unread(raw: Raw) -> None:
    big = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "double", "arguments": {"s": "x" * (5 << 20)}},
    }
    raw.send(big)
    got = raw.recv()
    assert got["error"]["code"] == -32600 and "at most 4,194,304" in got["error"]["message"]
    raw.alive()


def test_unknown_tools_and_methods_get_protocol_errors(raw: Raw) -> None:
    got = raw.request("tools/call", {"name": "doubel", "arguments": {}})
    assert got["error"]["code"] == -32602
    assert (
        got["error"]["message"].startswith("E_UNKNOWN_TOOL: ")
        and "did you mean 'double'?" in got["error"]["message"]
    )
    assert got["error"]["data"]["code"] == "E_UNKNOWN_TOOL"
    assert raw.request("tools/call", {"name": "x" * 100_000})["error"]["code"] == -32602
    assert raw.request("no/such/method")["error"]["code"] == -32601
    raw.alive()


@pytest.mark.parametrize("arguments", [[1, 2], "n=1", 5, True])
def test_arguments_that_are_not_an_object_get_a_protocol_error(raw: Raw, arguments: Any) -> None:
    got = raw.request("tools/call", {"name": "double", "arguments": arguments})
    assert got["error"]["code"] == -32602, got
    raw.alive()


@pytest.mark.parametrize(
    "arguments, path",
    [
        ({"n": "1"}, "/n"),
        ({"n": 1.5}, "/n"),
        ({"n": None}, "/n"),
        ({"n": [1]}, "/n"),
        ({"n": {"a": 1}}, "/n"),
        ({}, "/n"),
    ],
)
def test_arguments_of_a_wrong_type_are_an_E_SCHEMA_result(raw: Raw, arguments: Any, path: str) -> None:
    got = raw.request("tools/call", {"name": "double", "arguments": arguments})["result"]
    err = got["structuredContent"]["error"]
    assert got["isError"] and err["code"] == "E_SCHEMA"
    assert any(v["path"] == path for v in err["details"]["violations"]), err
    raw.alive()


def test_params_of_a_wrong_shape_get_a_protocol_error(raw: Raw) -> None:
    for params in ([1], "x"):  # not an object: no request at all
        assert raw.request("tools/call", params)["error"]["code"] == -32600
    for params in ({"name": 5}, {"arguments": {}}, {"name": "double", "arguments": {"n": 1}, "_meta": 3}):
        got = raw.request("tools/call", params)
        assert got["error"]["code"] == -32602, (params, got)
    raw.alive()


def test_a_flood_of_calls_is_bounded_and_the_server_goes_on(raw: Raw) -> None:
    ids = list(range(1000, 1040))
    for i in ids:  # 40 slow calls at once: one runs, 15 wait, the rest are refused at once
        raw.send(
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "slow_py", "arguments": {}},
            }
        )
    refused = [raw.recv() for _ in range(len(ids) - 16)]
    assert all(r["error"]["code"] == -32000 and r["error"]["data"]["code"] == "E_LIMIT" for r in refused), (
        refused[:2]
    )
    for i in ids:  # the client gives up on the rest
        raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i}})
    raw.alive()


# -- HTTP ------------------------------------------------------------------------------------


@pytest.fixture
def served(gem: GemBuilder, opened: Callable[..., workbench.Bench]) -> Iterator[Any]:
    bench = opened(mcp_gem(gem))
    serving = bench.serve_mcp()
    try:
        yield serving
    finally:
        serving.stop()


def post(
    serving: Any, body: Any, *, headers: dict[str, str] | None = None, url: str | None = None
) -> httpx.Response:
    base = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {serving.token}",
    }
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(url or serving.url, content=content, headers={**base, **(headers or {})}, timeout=30)


def http_alive(serving: Any) -> None:
    async def main() -> Any:
        async with http_session(serving.url, serving.token) as s:
            return await s.call_tool("double", {"n": 3})

    assert anyio.run(main).structured_content == {"doubled": 6}


@pytest.mark.parametrize(
    "headers, status",
    [
        ({"Authorization": ""}, 401),
        ({"Authorization": "Bearer wrong"}, 401),
        ({"Authorization": "Basic eDp5"}, 401),
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "http://127.0.0.1.evil.example:80"}, 403),
        ({"Host": "evil.example:80"}, 421),
        ({"Content-Type": "text/plain"}, 400),
    ],
    ids=["no-token", "wrong-token", "basic", "origin", "origin-lookalike", "host", "content-type"],
)
def test_http_refuses_requests_without_the_token_or_from_elsewhere(
    served: Any, headers: dict[str, str], status: int
) -> None:
    res = post(served, INIT, headers=headers)
    assert res.status_code == status, res.text
    http_alive(served)


def test_http_takes_the_token_in_the_query(served: Any) -> None:
    res = post(served, INIT, headers={"Authorization": ""}, url=f"{served.url}?token={served.token}")
    assert res.status_code == 200, res.text
    for wrong in ("x", "%E2%82%AC", "%FF", "", "a&token=b"):
        assert (
            post(served, INIT, headers={"Authorization": ""}, url=f"{served.url}?token={wrong}").status_code
            == 401
        )
    http_alive(served)


def test_http_refuses_oversized_and_malformed_bodies(served: Any) -> None:
    assert post(served, b"x" * (5 << 20)).status_code == 413
    res = post(served, b"{not json")
    assert res.status_code == 400 and res.json()["error"]["code"] == -32700
    res = post(served, b"[" * 100_000 + b"]" * 100_000)
    assert res.status_code == 400
    http_alive(served)


def test_http_unknown_tool_and_wrong_argument_types(served: Any) -> None:
    async def main() -> list[Any]:
        from mcp.shared.exceptions import MCPError

        out: list[Any] = []
        async with http_session(served.url, served.token) as s:
            try:
                await s.call_tool("nope", {})
            except MCPError as exc:
                out.append(exc.code)
            out.append(await s.call_tool("double", {"n": "2"}))
        return out

    unknown, schema = anyio.run(main)
    assert unknown == -32602
    assert schema.is_error and schema.structured_content["error"]["code"] == "E_SCHEMA"
    http_alive(served)


def test_a_lone_surrogate_in_a_result_or_an_argument_is_answered(gem: GemBuilder, tmp_path: Path) -> None:
    """JS strings hold lone UTF-16 halves, UTF-8 cannot: the answer shows them as U+FFFD (and
    says so) instead of the server failing to write it."""
    mcp_gem(gem)
    gem.tool("lone", "export default async (input) => ({ s: 'a\\ud800b', got: input });\n", ext="js")
    proc = subprocess.Popen(
        [EXE, "mcp", str(gem.write())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env(tmp_path / "home"),
    )
    try:
        raw = Raw(proc)
        raw.send(INIT)
        raw.recv()
        raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        got = raw.request("tools/call", {"name": "lone", "arguments": {"x": "\ud800"}})["result"]
        assert got["structuredContent"] == {"s": "a\ufffdb", "got": {"x": "\ufffd"}}
        assert "U+FFFD" in got["_meta"]["dev.gem-workbench/replaced"]
        bad = raw.request("tools/call", {"name": "double", "arguments": {"n": "\udc00"}})["result"]
        assert bad["isError"] and bad["structuredContent"]["error"]["code"] == "E_SCHEMA"
        raw.alive()
    finally:
        proc.kill()
        proc.wait(30)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()


def test_http_a_flood_of_calls_is_bounded_and_the_server_goes_on(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    gem.tool("nap", "import time\n\ndef handle(input, ctx):\n    time.sleep(0.1)\n    return 'rested'\n")
    bench = opened(mcp_gem(gem))
    serving = bench.serve_mcp()
    try:
        init = post(serving, INIT)
        session = {"mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": VERSION}
        post(serving, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)

        def call(i: int) -> dict[str, Any]:
            body = {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "nap", "arguments": {}},
            }
            return post(serving, body, headers=session).json()

        with ThreadPoolExecutor(40) as pool:
            answers = list(pool.map(call, range(40)))
        done = [a for a in answers if "result" in a]
        refused = [a for a in answers if "error" in a]
        assert (
            len(done) + len(refused) == 40 and done
        )  # (more than 16 end: the first ones end as others come)
        assert refused and all(a["error"]["data"]["code"] == "E_LIMIT" for a in refused)
        assert all(a["result"]["structuredContent"] == {"result": "rested"} for a in done)
        assert len(bench.calls()) == len(done)  # a refused call never reached the bench
    finally:
        serving.stop()


@pytest.mark.parametrize("how", ["pipe", "file"])
def test_the_stdio_line_bound_on_a_pipe_and_on_a_file(tmp_path: Path, how: str) -> None:
    """Lines up to the bound come whole (without their \\r\\n), a longer one as its size, read
    past in pieces; on a pipe (read on the event loop) and a regular file (on a thread)."""
    import os
    import threading

    from workbench.mcp.stdio import _lines

    bound = 10
    data = b"0123456789\n" + b"x" * 11 + b"\nok\r\n" + b"y" * 100_000 + b"\n\nlast"
    want = [b"0123456789", 12, b"ok", 100_001, b"", b"last"]
    if how == "file":
        (tmp_path / "in").write_bytes(data)
        stream = (tmp_path / "in").open("rb")
    else:
        r, w = os.pipe()
        stream = os.fdopen(r, "rb")
        threading.Thread(target=lambda: (os.write(w, data), os.close(w)), daemon=True).start()

    async def main() -> list[Any]:
        read = await _lines(stream, bound)
        got = []
        while (line := await read()) is not None:
            got.append(line)
        return got

    try:
        assert anyio.run(main) == want
    finally:
        stream.close()


def test_a_client_that_goes_away_mid_call_ends_the_server_quietly(gem: GemBuilder, tmp_path: Path) -> None:
    """stdin closed during a 20 s call: the call is interrupted and the server exits at once;
    stdout closed: the answer that cannot be written ends it too, without a traceback."""
    root = mcp_gem(gem)
    for close in ("stdin", "stdout"):
        proc = subprocess.Popen(
            [EXE, "mcp", str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env(tmp_path / "home"),
        )
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        try:
            raw = Raw(proc)
            raw.send(INIT)
            raw.recv()
            raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            if close == "stdout":
                proc.stdout.close()
                raw.send({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
            call = {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "slow_js"}}
            with contextlib.suppress(BrokenPipeError):  # (the server may be gone already)
                raw.send(call)
                time.sleep(1)
                proc.stdin.close()
            assert proc.wait(15) == 0
            assert "Traceback" not in proc.stderr.read().decode()
        finally:
            proc.kill()
            proc.wait(30)
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                with contextlib.suppress(BrokenPipeError):
                    pipe.close()
