"""The stdio transport's `tools/call` path beside the SDK's (workbench/mcp/fast.py): the same
calls served with it and without it give the same lines, byte for byte (but each call's own
id); it takes only plain calls on an initialized connection; a cancelled call is interrupted
(a queued one never runs) and answered by nothing. The server is `serve_streams` on OS pipes,
in a thread of the test's process, so the test reads what the fast path took."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import re
import select
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from _mcp import mcp_gem
from conftest import GemBuilder

import workbench
from workbench.mcp.fast import serving_now
from workbench.mcp.server import BenchServer
from workbench.mcp.stdio import MAX_MESSAGE_BYTES, serve_streams

#: see _collected: the one ResourceWarning a landed interrupt can leave, whenever it is collected
COMM_FILE = r"ignore:unclosed file.*/comm:ResourceWarning"
pytestmark = [pytest.mark.deno, pytest.mark.filterwarnings(COMM_FILE)]

GEMS = Path(__file__).resolve().parent.parent / "notebooks" / "gems"
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
BIG_PY = """
def handle(input, ctx):
    return {"text": "é" * 600_000, "n": 1.5e300, "list": list(range(20_000))}
"""


@pytest.fixture(autouse=True)
def _collected() -> Iterator[None]:
    """A KeyboardInterrupt raised in the worker (a cancelled call, as Ctrl-C) can land inside
    the Deno runner's `with open(/proc/…/comm)` (runners/deno/affinity.py) and leave that file
    to the collector, whose ResourceWarning would fail whichever test runs next in this process:
    collected here, after each test of this module, that one warning ignored."""
    yield
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"unclosed file.*/comm", category=ResourceWarning)
        warnings.filterwarnings(
            "ignore", message=r".*/comm", category=pytest.PytestUnraisableExceptionWarning
        )
        gc.collect()


CALL_ID = re.compile(rb'"dev\.gem-workbench/call_id":"[^"]*"')


class Piped:
    """`serve_streams(BenchServer(bench), …)` on OS pipes, served in a thread until closed."""

    def __init__(self, bench: workbench.Bench, *, fast: bool) -> None:
        self.server = BenchServer(bench)
        r_in, self.w = os.pipe()
        self.r, w_out = os.pipe()
        self.buf = b""
        wire_in, wire_out = os.fdopen(r_in, "rb", buffering=0), os.fdopen(w_out, "wb", buffering=0)
        run = partial(serve_streams, self.server, wire_in, wire_out, max_bytes=MAX_MESSAGE_BYTES, fast=fast)

        def serve() -> None:
            try:
                anyio.run(run)
            finally:
                for f in (wire_in, wire_out):
                    with contextlib.suppress(OSError):
                        f.close()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()

    def send(self, message: dict[str, Any] | bytes) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        os.write(self.w, data + b"\n")

    def recv(self, timeout: float = 60) -> bytes:
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            ready, _, _ = select.select([self.r], [], [], max(0.0, end - time.monotonic()))
            assert ready, f"no answer in {timeout} s"
            chunk = os.read(self.r, 1 << 20)
            assert chunk, "the server closed its output"
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def quiet(self, seconds: float) -> bool:
        """Whether nothing at all is written for `seconds`."""
        return not self.buf and not select.select([self.r], [], [], seconds)[0]

    def initialize(self) -> None:
        """The handshake, then a ping answered: the SDK has run `notifications/initialized`."""
        self.send(INIT)
        assert b'"protocolVersion":"2025-06-18"' in self.recv()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.send({"jsonrpc": "2.0", "id": "ping", "method": "ping"})
        assert json.loads(self.recv()) == {"jsonrpc": "2.0", "id": "ping", "result": {}}

    def close(self) -> None:
        os.close(self.w)
        self.thread.join(60)
        os.close(self.r)
        assert not self.thread.is_alive()


@contextlib.contextmanager
def piped(bench: workbench.Bench, *, fast: bool) -> Iterator[Piped]:
    p = Piped(bench, fast=fast)
    try:
        yield p
    finally:
        p.close()


def kv(bench: workbench.Bench) -> dict[str, Any]:
    frame = bench.kv()
    return dict(zip(frame.key, frame.value, strict=True)) if len(frame) else {}


def wait_started(bench: workbench.Bench) -> None:
    """Until slow_py's first write is seen (it then sleeps 20 s)."""
    deadline = time.monotonic() + 60
    while kv(bench).get("slow") != "started":
        assert time.monotonic() < deadline, "slow_py never started"
        time.sleep(0.05)


def taken(p: Piped) -> int:
    calls = serving_now(p.server)
    return 0 if calls is None else calls.taken


def call(rid: Any, name: str, arguments: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name} if arguments is None else {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def lines_of(bench: workbench.Bench, calls: list[dict[str, Any]], *, fast: bool) -> tuple[list[bytes], int]:
    """Each call's answer line (its call id blanked), one call at a time, and how many the
    fast path took."""
    with piped(bench, fast=fast) as p:
        p.initialize()
        out = []
        for c in calls:
            p.send(c)
            out.append(CALL_ID.sub(b'"dev.gem-workbench/call_id":"-"', p.recv()))
        return out, taken(p)


def test_the_fast_path_answers_byte_for_byte_as_the_sdk(gem: GemBuilder, opened: Callable[..., Any]) -> None:
    gem.tool("big", BIG_PY, description="a result of several MB")
    bench = opened(mcp_gem(gem))
    calls = [
        call(1, "double", {"n": 3}),  # success
        call("two", "boom", {}),  # the tool throws
        call(3, "double", {"n": "x"}),  # E_SCHEMA
        call(4, "double"),  # no arguments: E_SCHEMA
        call(5, "nope", {}),  # unknown: the SDK's in both
        call(6, "count", {"by": 2}),  # Python, state
        call(7, "big", {}),  # a result written on a thread
    ]
    sdk, none = lines_of(bench, calls, fast=False)
    fast, took = lines_of(bench, calls, fast=True)
    assert (none, took) == (0, 6)
    sdk[5] = sdk[5].replace(b'"result":2', b'"result":4').replace(b'"text":"2"', b'"text":"4"')  # the counter
    for c, a, b in zip(calls, sdk, fast, strict=True):
        assert a == b, (c, a[:300], b[:300])
    assert json.loads(fast[0])["result"]["structuredContent"] == {"doubled": 6}
    assert json.loads(fast[1])["result"]["isError"] is True
    assert json.loads(fast[2])["result"]["structuredContent"]["error"]["code"] == "E_SCHEMA"
    assert json.loads(fast[4])["error"]["data"]["code"] == "E_UNKNOWN_TOOL"
    assert len(fast[6]) > 1_000_000


def test_structured_content_and_an_expected_failure_are_the_sdks(opened: Callable[..., Any]) -> None:
    bench = opened(
        GEMS / "acme-payments",
        account_storage={"settings/location": {"label": "SF", "latitude": 37.7, "longitude": -122.4}},
        secrets={},
        fetch_handlers=[
            {
                "match": "https://api.acme.example/v1/weather",
                "respond": {"json": {"temperature": 12.4, "units": "celsius"}},
            }
        ],
    )
    calls = [
        call(1, "acme_payments_get_current_weather", {"units": "celsius"}),  # outputSchema's shape
        call(2, "acme_payments_list_recent_payments", {}),  # {error} returned (K2)
    ]
    sdk, _ = lines_of(bench, calls, fast=False)
    fast, took = lines_of(bench, calls, fast=True)
    assert took == 2
    assert sdk == fast
    weather, failure = (json.loads(x)["result"] for x in fast)
    assert weather["structuredContent"]["temperature"] == 12.4 and weather["isError"] is False
    assert failure["isError"] is True


@pytest.mark.parametrize(
    "line",
    [
        {**call(1, "double", {"n": 1}), "extra": 1},  # a field it does not know
        call(1.0, "double", {"n": 1}),  # a float id
        call(True, "double", {"n": 1}),  # a bool id
        call(2**60, "double", {"n": 1}),  # an id beyond JSON's exact integers
        call(1, "double", "a string"),
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "double", "_meta": {"progressToken": 1}},
        },
        [call(1, "double", {"n": 1})],  # a batch
    ],
    ids=["extra-field", "float-id", "bool-id", "huge-id", "string-arguments", "progress-token", "batch"],
)
def test_lines_it_is_unsure_of_go_to_the_sdk(gem: GemBuilder, opened: Callable[..., Any], line: Any) -> None:
    bench = opened(mcp_gem(gem))
    with piped(bench, fast=True) as p:
        p.initialize()
        p.send(json.dumps(line).encode())  # answered by the SDK or not at all (a float id: a notification)
        p.send(call(9, "double", {"n": 2}))
        while (got := json.loads(p.recv()))["id"] != 9:
            pass
        assert got["result"]["structuredContent"] == {"doubled": 4}
        assert taken(p) == 1


def test_before_initialization_and_after_a_second_handshake_the_sdk_answers(
    gem: GemBuilder, opened: Callable[..., Any]
) -> None:
    bench = opened(mcp_gem(gem))
    with piped(bench, fast=True) as p:
        p.send(call(1, "double", {"n": 1}))  # before initialize: the SDK's init gate
        assert json.loads(p.recv())["error"]["code"] == -32602
        p.initialize()
        p.send(call(2, "double", {"n": 1}))
        assert b'"doubled":2' in p.recv() and taken(p) == 1
        p.send(INIT)
        p.recv()
        p.send(call(3, "double", {"n": 1}))
        assert b'"doubled":2' in p.recv() and taken(p) == 1


def test_a_duplicate_id_goes_to_the_sdk(gem: GemBuilder, opened: Callable[..., Any]) -> None:
    bench = opened(mcp_gem(gem))
    with piped(bench, fast=True) as p:
        p.initialize()
        p.send(call(1, "slow_py", {}))
        p.send(call(1, "double", {"n": 1}))  # id 1 is in flight here: the SDK's
        p.send({"jsonrpc": "2.0", "id": "sync", "method": "ping"})
        assert json.loads(p.recv())["id"] == "sync"
        assert taken(p) == 1 and p.server.waiting == 2  # both wait on the worker
        p.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        assert p.quiet(1.0), "a cancelled request is never answered"
        p.send(call(1, "double", {"n": 2}))  # id 1 is free again
        assert json.loads(p.recv())["result"]["structuredContent"] == {"doubled": 4}
        assert taken(p) == 2 and p.server.waiting == 0


def test_cancelling_a_fast_call_interrupts_it_and_skips_the_queued_one(
    gem: GemBuilder, opened: Callable[..., Any]
) -> None:
    bench = opened(mcp_gem(gem))
    with piped(bench, fast=True) as p:
        p.initialize()
        p.send(call(1, "slow_py", {}))
        p.send(call("2", "count", {"by": 5}))  # queued behind it on the worker
        wait_started(bench)
        # the queued one first (cancelled after the running one, it could run and end meanwhile)
        p.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "2"}})
        cancel_1 = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "1"}}
        p.send(cancel_1)  # "1" is id 1, as the SDK correlates it
        assert p.quiet(1.0), f"a cancelled request is never answered: {p.recv()[:300]!r}"
        assert taken(p) == 2
        p.send(call(3, "double", {"n": 4}))
        assert json.loads(p.recv())["result"]["structuredContent"] == {"doubled": 8}
        assert p.server.waiting == 0
    rows = bench.calls()
    assert list(rows.tool) == ["slow_py", "double"]  # count never ran
    assert rows.iloc[0].error == "E_INTERRUPTED"
    assert "n" not in kv(bench)


def test_a_call_in_flight_at_the_end_is_said_closed(gem: GemBuilder, opened: Callable[..., Any]) -> None:
    bench = opened(mcp_gem(gem))
    p = Piped(bench, fast=True)
    try:
        p.initialize()
        p.send(call(1, "slow_py", {}))
        wait_started(bench)
        os.close(p.w)
        got = json.loads(p.recv())
        assert got == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "Connection closed"}}
        p.thread.join(60)
        assert not p.thread.is_alive()
    finally:
        with contextlib.suppress(OSError):
            os.close(p.w)
        os.close(p.r)
    deadline = time.monotonic() + 60  # the interrupt lands on the worker meanwhile
    while not len(rows := bench.calls()):
        assert time.monotonic() < deadline, "the call never ended"
        time.sleep(0.05)
    assert rows.iloc[-1].error == "E_INTERRUPTED"
