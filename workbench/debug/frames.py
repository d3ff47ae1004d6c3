"""WebSocket frames (RFC 6455) read from a byte stream, for the inspector's relay (proxy.py),
which forwards a debugger's frames and reads the protocol messages in them: what a client
sends (masked) and what Deno answers (not masked), fragmented messages joined, every size
bounded."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

__all__ = ["MAX_FRAME", "Frame", "FrameError", "Frames", "frame"]

MAX_FRAME = 64 << 20  # one frame's payload; a longer one ends the connection
MAX_MESSAGE = 64 << 20  # a fragmented message joined


class FrameError(Exception):
    """The stream holds no valid WebSocket frame (too large, or a reserved bit set)."""


class Frame:
    """One frame: its bytes as they came, its opcode, fin bit and (unmasked) payload."""

    __slots__ = ("fin", "opcode", "payload", "raw")

    def __init__(self, raw: bytes, opcode: int, fin: bool, payload: bytes) -> None:
        self.raw, self.opcode, self.fin, self.payload = raw, opcode, fin, payload


class Frames:
    """Frames out of the bytes fed in, and the text messages they make (`feed` yields both:
    each Frame, and a joined text message as str when its last frame arrives)."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._parts: list[bytes] = []
        self._size = 0
        self._text = False

    def feed(self, data: bytes) -> Iterator[Frame | str]:
        self._buf += data
        while (got := self._one()) is not None:
            yield got
            text = self._join(got)
            if text is not None:
                yield text

    def _one(self) -> Frame | None:
        buf = self._buf
        if len(buf) < 2:
            return None
        b0, b1 = buf[0], buf[1]
        if b0 & 0x70:
            raise FrameError("a reserved bit is set (no extension was agreed)")
        n, at = b1 & 0x7F, 2
        if n == 126:
            if len(buf) < 4:
                return None
            n, at = struct.unpack_from(">H", buf, 2)[0], 4
        elif n == 127:
            if len(buf) < 10:
                return None
            n, at = struct.unpack_from(">Q", buf, 2)[0], 10
        if n > MAX_FRAME:
            raise FrameError(f"a frame of {n:,} bytes (at most {MAX_FRAME:,})")
        masked = bool(b1 & 0x80)
        end = at + (4 if masked else 0) + n
        if len(buf) < end:
            return None
        payload = bytes(buf[end - n : end])
        if masked:
            payload = _unmask(payload, bytes(buf[at : at + 4]))
        raw = bytes(buf[:end])
        del buf[:end]
        return Frame(raw, b0 & 0x0F, bool(b0 & 0x80), payload)

    def _join(self, f: Frame) -> str | None:
        """The text message `f` ends, if it does; binary and control frames make none."""
        if f.opcode >= 8:
            return None
        if f.opcode != 0:  # a new message
            self._parts, self._size, self._text = [], 0, f.opcode == 1
        self._size += len(f.payload)
        if self._size > MAX_MESSAGE:
            raise FrameError(f"a message over {MAX_MESSAGE:,} bytes")
        self._parts.append(f.payload)
        if not f.fin:
            return None
        data, self._parts, self._size = b"".join(self._parts), [], 0
        return data.decode("utf-8", "replace") if self._text else None


def _unmask(data: bytes, key: bytes) -> bytes:
    """`data` XOR the 4-byte `key` repeated (masking and unmasking are the same)."""
    n = len(data)
    if not n:
        return data
    mask = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "big") ^ int.from_bytes(mask, "big")).to_bytes(n, "big")


def frame(text: str, *, masked: bool) -> bytes:
    """One final text frame holding `text` (masked as a client's must be)."""
    data = text.encode()
    n = len(data)
    head = bytearray([0x81])
    bit = 0x80 if masked else 0
    if n < 126:
        head.append(bit | n)
    elif n < 1 << 16:
        head += bytes([bit | 126]) + struct.pack(">H", n)
    else:
        head += bytes([bit | 127]) + struct.pack(">Q", n)
    if not masked:
        return bytes(head) + data
    key = os.urandom(4)
    return bytes(head) + key + _unmask(data, key)
