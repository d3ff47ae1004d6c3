"""The inspector's relay (workbench/debug/proxy.py, frames.py) as hostile input meets it: its
WebSocket frames read both ways (masked, fragmented, bounded), its HTTP answers on loopback
(the listing chrome://inspect and VS Code read, 404 elsewhere, a head too long or too slow
cut off), without a sandbox behind it."""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Iterator

import pytest

from workbench.debug import frames as fr
from workbench.debug.inspector import Inspector


def test_frames_round_trip_masked_and_not() -> None:
    for text in ("", "x", "é" * 200, "y" * 70_000):
        for masked in (True, False):
            got = list(fr.Frames().feed(fr.frame(text, masked=masked)))
            assert isinstance(got[0], fr.Frame) and got[0].opcode == 1 and got[1] == text


def test_a_fragmented_message_is_joined_and_fed_byte_by_byte() -> None:
    first = bytes([0x01, 3]) + b"abc"  # text, not final
    ping = bytes([0x89, 0])  # a control frame between the fragments
    last = bytes([0x80, 2]) + b"de"  # continuation, final
    frames = fr.Frames()
    out = []
    for b in first + ping + last:
        out += list(frames.feed(bytes([b])))
    assert [o for o in out if isinstance(o, str)] == ["abcde"]
    assert [o.opcode for o in out if isinstance(o, fr.Frame)] == [1, 9, 0]


def test_hostile_frames_are_refused() -> None:
    with pytest.raises(fr.FrameError, match="reserved"):
        list(fr.Frames().feed(bytes([0xC1, 0])))
    huge = bytes([0x81, 127]) + struct.pack(">Q", fr.MAX_FRAME + 1)
    with pytest.raises(fr.FrameError, match="at most"):
        list(fr.Frames().feed(huge))


@pytest.fixture
def inspector() -> Iterator[Inspector]:
    ins = Inspector(mode=True, title="relay.test")
    yield ins
    ins.close()


def _http(port: int, request: bytes, *, wait: float = 5) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        return data


def test_the_listing_and_404s(inspector: Inspector) -> None:
    port = inspector.port
    answer = _http(port, b"GET /json/list HTTP/1.1\r\nHost: x\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    (target,) = json.loads(body)
    assert target["webSocketDebuggerUrl"] == inspector.ws_url
    assert target["devtoolsFrontendUrl"] == inspector.devtools_url
    assert target["title"] == "relay.test"
    version = _http(port, b"GET /json/version HTTP/1.1\r\n\r\n")
    assert b'"Protocol-Version": "1.3"' in version
    for path in (b"/", b"/wrongtoken", b"/json/../etc/passwd"):
        assert _http(port, b"GET " + path + b" HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 404")
    # the WebSocket's path, with no sandbox behind it: said so (after the start's wait)
    import workbench.debug.inspector as mod

    mod_start, mod.START_SECONDS = mod.START_SECONDS, 0.2
    try:
        req = f"GET /{inspector.relay.token} HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
        assert _http(port, req.encode()).startswith(b"HTTP/1.1 503")
    finally:
        mod.START_SECONDS = mod_start


def test_a_head_too_long_or_too_slow_is_cut_off(
    inspector: Inspector, monkeypatch: pytest.MonkeyPatch
) -> None:
    import workbench.debug.proxy as proxy

    long = b"GET /json HTTP/1.1\r\nX: " + b"a" * (proxy.MAX_HEAD + 10) + b"\r\n\r\n"
    assert _http(inspector.port, long) == b""
    monkeypatch.setattr(proxy, "HEAD_SECONDS", 0.3)
    started = time.monotonic()
    assert _http(inspector.port, b"GET /json HTTP/1.1\r\n") == b""  # never ends its head
    assert time.monotonic() - started < 3


def test_closing_closes_the_port(inspector: Inspector) -> None:
    port = inspector.port
    inspector.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2)
