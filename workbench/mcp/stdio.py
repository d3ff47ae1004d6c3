"""MCP over stdio: the protocol owns the process's real stdout. While serving, fd 1 points at
stderr (a Deno sandbox, a subprocess or a Python tool writing to fd 1 lands there) and so does
`sys.stdout`, fd 0 at the null device; the wire is a private copy of each. Each message is one
line of at most `max_bytes`; a longer one, a line that is not JSON or not a JSON-RPC message gets
a JSON-RPC error (id null when it cannot be read) and the server reads on."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, BinaryIO

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from .server import BenchServer

MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # one line from the client (the SDK's HTTP body bound)
INLINE_WRITE = 64 * 1024  # a message up to this size is written at once; a longer one on a thread


@contextmanager
def claimed_stdio() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """(the wire's input, its output): private copies of fds 0 and 1, which point at the null
    device and at stderr meanwhile; both put back after."""
    sys.stdout.flush()
    saved_in, saved_out = os.dup(0), os.dup(1)  # what fds 0 and 1 were, to put back
    saved = sys.stdout
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        sys.stdout = sys.stderr  # print() of the workbench or a tool: stderr, never the wire
        with (
            os.fdopen(os.dup(saved_in), "rb", buffering=64 * 1024) as rin,
            os.fdopen(os.dup(saved_out), "wb", buffering=0) as rout,
        ):
            yield rin, rout
    finally:
        sys.stdout = saved
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (null, saved_in, saved_out):
            os.close(fd)


class PipeLines:
    """LineReader's lines, read on the event loop from a pipe or a terminal (a thread hop less
    per message than reading on a thread)."""

    def __init__(self, reader: asyncio.StreamReader, max_bytes: int) -> None:
        self.reader, self.max_bytes = reader, max_bytes
        self.buf = bytearray()
        self.scanned = 0  # bytes of buf known to hold no newline
        self.skipped = 0  # bytes of an oversized line read past so far

    async def read(self) -> bytes | int | None:
        while True:
            nl = self.buf.find(b"\n", self.scanned)
            if nl >= 0:
                line = bytes(self.buf[:nl])
                del self.buf[: nl + 1]
                self.scanned, size, self.skipped = 0, self.skipped + nl + 1, 0
                return line.rstrip(b"\r") if size <= self.max_bytes + 1 else size
            if self.skipped or len(self.buf) > self.max_bytes:  # oversized: counted, not kept
                self.skipped += len(self.buf)
                self.buf.clear()
            self.scanned = len(self.buf)
            chunk = await self.reader.read(64 * 1024)
            if not chunk:  # the end: a last line without its newline, or nothing
                size, self.skipped = self.skipped + len(self.buf), 0
                line, self.buf = bytes(self.buf), bytearray()
                return (line if size <= self.max_bytes else size) if size else None
            self.buf += chunk


async def _lines(wire_in: BinaryIO, max_bytes: int) -> Callable[[], Awaitable[bytes | int | None]]:
    """How to read the wire's next line: on the event loop where it is a pipe or a terminal,
    else (a regular file) on a thread."""
    try:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), wire_in)
    except (RuntimeError, ValueError, OSError):
        lines = LineReader(wire_in, max_bytes)
        return lambda: anyio.to_thread.run_sync(lines.read, abandon_on_cancel=True)
    return PipeLines(reader, max_bytes).read


class LineReader:
    """Bounded lines of the wire: `read()` is one line (without its end), or an int (its size)
    for a line over the bound, read past without keeping it; None at the end."""

    def __init__(self, stream: BinaryIO, max_bytes: int) -> None:
        self.stream, self.max_bytes = stream, max_bytes

    def read(self) -> bytes | int | None:
        line = self.stream.readline(self.max_bytes + 1)
        if not line:
            return None
        if line.endswith(b"\n"):
            return line.rstrip(b"\r\n")
        if len(line) <= self.max_bytes:  # the last line, without its end
            return line
        size = len(line)
        while line and not line.endswith(b"\n"):  # the rest of it, in bounded pieces
            line = self.stream.readline(64 * 1024)
            size += len(line)
        return size


def rejected(line: bytes | int, max_bytes: int) -> dict[str, Any]:
    """The JSON-RPC error for a line that is no JSON-RPC message (or an int: an oversized one)."""
    if isinstance(line, int):
        return _error(None, types.INVALID_REQUEST, f"a message of {line:,} bytes: at most {max_bytes:,}")
    try:
        data = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return _error(None, types.PARSE_ERROR, f"not JSON: {str(exc)[:200]}")
    rid = data.get("id") if isinstance(data, dict) else None
    rid = rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None
    return _error(rid, types.INVALID_REQUEST, "not a JSON-RPC 2.0 request, notification or response")


def _message(line: bytes) -> Any:
    """The JSON-RPC message of a line, or None. A lone surrogate's escape ("\\ud800"), which
    the SDK's parser refuses, is JSON all the same (and what a JS client sends): read by json."""
    try:
        return types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception:  # noqa: BLE001
        pass
    try:
        return types.jsonrpc_message_adapter.validate_python(json.loads(line), by_name=False)
    except Exception:  # noqa: BLE001  not JSON, too deep, not JSON-RPC: rejected() says which
        return None


def _error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


async def serve_stdio(bench_server: BenchServer, *, max_bytes: int = MAX_MESSAGE_BYTES) -> None:
    """Serve the bench over this process's stdin and stdout until the client closes stdin."""
    with claimed_stdio() as (wire_in, wire_out):
        await serve_streams(bench_server, wire_in, wire_out, max_bytes=max_bytes)


async def serve_streams(
    bench_server: BenchServer, wire_in: BinaryIO, wire_out: BinaryIO, *, max_bytes: int
) -> None:
    """Serve MCP over a pair of byte streams, one JSON-RPC message per line."""
    to_server, from_wire = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    to_wire, from_server = anyio.create_memory_object_stream[SessionMessage](16)
    lock = anyio.Lock()  # a reply and an error for a bad line never interleave on the wire

    async def write(data: bytes) -> None:
        async with lock:
            if len(data) <= INLINE_WRITE:
                wire_out.write(data)
            else:  # a client that reads slowly holds a thread, not the event loop
                await anyio.to_thread.run_sync(wire_out.write, data)

    async def reader(send: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
        read = await _lines(wire_in, max_bytes)
        async with send:
            while (line := await read()) is not None:
                if isinstance(line, bytes) and not line.strip():
                    continue
                message = _message(line) if isinstance(line, bytes) else None
                if message is None:  # any line a client can send: answered, not raised
                    await write(json.dumps(rejected(line, max_bytes)).encode() + b"\n")
                    continue
                await send.send(SessionMessage(message))

    async def writer(receive: MemoryObjectReceiveStream[SessionMessage]) -> None:
        async with receive:
            async for m in receive:
                try:
                    data = m.message.model_dump_json(by_alias=True, exclude_unset=True).encode()
                except Exception as exc:  # noqa: BLE001  an answer that cannot be written: said, not fatal
                    rid = getattr(m.message, "id", None)
                    data = json.dumps(
                        _error(
                            rid,
                            types.INTERNAL_ERROR,
                            f"E_INTERNAL: the answer cannot be written: {exc}"[:500],
                        )
                    ).encode()
                await write(data + b"\n")

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader, to_server)
            tg.start_soon(writer, from_server)
            await bench_server.server.run(from_wire, to_wire, bench_server.options())
            tg.cancel_scope.cancel()
    except* (BrokenPipeError, ConnectionResetError):
        pass  # the client closed its end: nobody left to answer, the serving ends
