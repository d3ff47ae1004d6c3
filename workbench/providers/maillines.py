"""Raw mail read within bounds (SEC5): lines of at most LINE_MAX bytes (a longer line comes
in chunks), header blocks, and mbox files split into messages, never whole in memory."""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Iterator
from typing import IO

from . import mail as _mail

HEADER_MAX_BYTES = 256 * 1024  # a message's header block; the rest of it is skipped
LINE_MAX = 64 * 1024  # lines are read in chunks of this (a 200 MB line is fine)
_CHECK_EVERY = 4096  # lines between two deadline checks
_FROM_LINE = re.compile(rb"(\w{3}) +(\w{3}) +(\d{1,2}) +(\d{1,2}):(\d{2}):(\d{2}) +(\d{4})")


class Lines:
    """Lines of a binary file, each at most LINE_MAX bytes (a longer line comes in chunks:
    `start` says whether a chunk begins a line), at most `limit` bytes in all."""

    def __init__(self, fp: IO[bytes], limit: int | None = None) -> None:
        self.fp, self.left = fp, limit
        self.start = True  # the chunk last returned began a line
        self._next_start = True
        self.n = 0

    def __iter__(self) -> Lines:
        return self

    def __next__(self) -> bytes:
        size = LINE_MAX if self.left is None else min(LINE_MAX, self.left)
        if size <= 0:
            raise StopIteration
        line = self.fp.readline(size)
        if not line:
            raise StopIteration
        if self.left is not None:
            self.left -= len(line)
        self.start, self._next_start = self._next_start, line.endswith(b"\n")
        self.n += 1
        if self.n % _CHECK_EVERY == 0:
            _mail.check_deadline("email.getMessage")
        return line


def _blank(lines: Lines, line: bytes) -> bool:
    return lines.start and line in (b"\n", b"\r\n")


def header_block(lines: Lines, cap: int) -> tuple[bytes, bool]:
    """The header block (up to `cap` bytes; the rest is skipped) and whether it ended with a
    blank line (False: the input ended inside the headers)."""
    out = bytearray()
    for line in lines:
        if _blank(lines, line):
            return bytes(out), True
        if len(out) + len(line) <= cap:
            out += line
        elif lines.start and len(out) < cap:  # keep whole lines only
            cap = len(out)
    return bytes(out), False


def read_headers(fp: IO[bytes]) -> bytes:
    """The header block of a message from a binary file, reading no further than needed
    (at most HEADER_MAX_BYTES kept)."""
    return header_block(Lines(fp), HEADER_MAX_BYTES)[0]


def from_line_date(line: bytes) -> int | None:
    """The date of an mbox `From sender Sat Jan  3 01:05:34 1996` line (UTC), or None."""
    m = _FROM_LINE.search(line[:1024])
    if not m:
        return None
    try:
        t = time.strptime(b" ".join(m.groups()).decode("ascii"), "%a %b %d %H %M %S %Y")
    except ValueError:
        return None
    return calendar.timegm(t) * 1000


def split_mbox(fp: IO[bytes]) -> Iterator[tuple[bytes, bytes, int, int]]:
    """(from_line, headers, start, stop) per message of an mbox file, split as `mailbox.mbox`
    splits it: a message begins at each line starting with `From `; start..stop are the byte
    offsets of the message after its `From ` line, without the blank line that ends it.
    Lines are read in chunks of LINE_MAX and headers kept up to HEADER_MAX_BYTES."""
    pos = 0
    blank = 0  # length of the previous line if it was blank, else 0
    current: tuple[bytes, bytearray, int] | None = None
    in_headers = False
    lines = Lines(fp)
    for line in lines:
        if lines.start and line.startswith(b"From "):
            if current is not None:
                yield current[0], bytes(current[1]), current[2], pos - blank
            from_line = line[:1024]
            while not line.endswith(b"\n"):  # a From line longer than LINE_MAX: skip the rest
                pos += len(line)
                line = next(lines, b"\n")
            current, in_headers = (from_line, bytearray(), pos + len(line)), True
            blank = 0
        else:
            is_blank = lines.start and line in (b"\n", b"\r\n")
            if current is not None and in_headers:
                if is_blank:
                    in_headers = False
                elif len(current[1]) + len(line) <= HEADER_MAX_BYTES:
                    current[1].extend(line)
            blank = len(line) if is_blank else 0
        pos += len(line)
    if current is not None:
        yield current[0], bytes(current[1]), current[2], pos - blank
