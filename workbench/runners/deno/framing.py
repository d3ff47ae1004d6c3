"""The sandbox channel's framing: messages over the two FIFOs to and from the Deno host.

Each message (host.ts has the list) is a JSON header line, then `n` payload bytes when the
header has `n`. Payloads are read into their own buffer and never scanned for newlines, so a
message costs time linear in its size; the caller bounds each (limits.bridge_message_bytes),
and a payload over its bound is read past, never held.
"""

from __future__ import annotations

import json
import os
import select
import time
from typing import Any

HEADER_LIMIT = 1 << 20  # a header line is small; a longer one means a broken stream
READ_CHUNK = 1 << 16
COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))  # made once, not per message


class Broken(Exception):
    """The host wrote something that is not the protocol."""


class Framed:
    """Messages on the channel's two fds: `_r` (from the host, non-blocking) and `_w` (to it),
    -1 while there is no channel. `_wait` says when `_r` is readable (lifecycle.py: it knows the
    process, and waits beside it on one CPU); this class knows only bytes and frames."""

    _r: int
    _w: int
    _rbuf: bytes  # what was read and not yet taken, from _rpos on
    _rpos: int

    def _wait(self, deadline: float) -> bool:
        """Until `_r` is readable (True) or the deadline passed or the host is gone (False)."""
        raise NotImplementedError

    def _send(self, header: dict[str, Any], payload: bytes = b"", *, deadline: float) -> None:
        head = (COMPACT.encode(header) + "\n").encode()
        if len(payload) <= 1 << 16:
            self._write(head + payload, deadline)
        else:
            self._write(head, deadline)
            self._write(payload, deadline)

    def _write(self, data: bytes, deadline: float) -> None:
        """All of `data` into the host's FIFO; OSError when the host is gone or stopped reading
        (the host reads whenever Python may write: the deadline covers one that hung)."""
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._w, view) :]
            except BlockingIOError:  # the FIFO is full: wait until the host read some
                pass
            left = deadline - time.monotonic()
            if view and (left <= 0 or not select.select([], [self._w], [], left)[1]):
                raise TimeoutError("the sandbox host stopped reading its channel")

    def _read(self, size: int = READ_CHUNK) -> bytes:
        """At most `size` bytes the host wrote (b"" when it is gone), once select said so."""
        try:
            return os.read(self._r, size)
        except BlockingIOError:  # cannot be (we are its only reader): taken as a broken channel
            return b""

    def _read_into(self, view: memoryview) -> int:
        """Like _read, straight into `view`; 0 when the host is gone."""
        try:
            return os.readv(self._r, [view])
        except BlockingIOError:
            return 0

    def _read_some(self, deadline: float) -> bool:
        """More bytes into the read buffer; False on timeout or when the process is gone."""
        if not self._wait(deadline):
            return False
        # 64 KiB, not more: CPython allocates the whole size per read, and 1 MiB comes from
        # mmap (~20 µs a call); a bigger payload is read straight into its buffer (_recv)
        chunk = self._read()
        if not chunk:
            return False
        # only the unread rest is kept, and it is a partial header (< HEADER_LIMIT)
        self._rbuf = self._rbuf[self._rpos :] + chunk if self._rpos < len(self._rbuf) else chunk
        self._rpos = 0
        return True

    def _recv(self, deadline: float, limit: int) -> tuple[dict[str, Any], bytes | None] | None:
        """The next message (header, payload); None on timeout or when the process is gone.

        Linear in the message size: a header is looked for only in what is unread, a payload
        is read straight into its buffer. A payload over `limit` is read and dropped (payload
        None), never held."""
        while (nl := self._rbuf.find(b"\n", self._rpos)) < 0:
            if len(self._rbuf) - self._rpos > HEADER_LIMIT:
                raise Broken("a header line longer than the bridge allows")
            if not self._read_some(deadline):
                return None
        try:
            header = json.loads(self._rbuf[self._rpos : nl].decode())
        except ValueError as exc:
            raise Broken(f"an unreadable header: {exc}") from None
        self._rpos = nl + 1
        n = header.get("n") if isinstance(header, dict) else None
        if not isinstance(n, int) or n <= 0:
            return (header if isinstance(header, dict) else {}), (b"" if n == 0 else None)
        if n > limit:
            return (header, None) if self._skip(n, deadline) else None
        have = len(self._rbuf) - self._rpos
        if have >= n:
            payload = self._rbuf[self._rpos : self._rpos + n]
            self._rpos += n
            return header, payload
        buf = bytearray(n)
        view = memoryview(buf)
        view[:have] = self._rbuf[self._rpos :]
        self._rbuf, self._rpos = b"", 0
        while have < n:
            if not self._wait(deadline):
                return None
            got = self._read_into(view[have:])
            if not got:
                return None
            have += got
        return header, bytes(buf)

    def _skip(self, n: int, deadline: float) -> bool:
        """Read past an oversized payload without keeping it."""
        have = min(n, len(self._rbuf) - self._rpos)
        self._rpos += have
        while have < n:
            if not self._wait(deadline):
                return False
            got = len(self._read(min(n - have, READ_CHUNK)))
            if not got:
                return False
            have += got
        return True
