"""RFC 822 bytes -> Envelope / Message, for every provider that holds raw mail.

Never raises on bad mail: a malformed message still gives an envelope, broken or unknown
charsets decode with U+FFFD, and attachments are measured without keeping their content.

Readings (the seed is silent):
- `fromAddr` is the sender's address (`ana@example.com`, no display name); `toAddrs` the
  addresses of `To:` (groups expanded). A header with no parsable address gives its text.
- `date` is the `Date:` header in ms since the epoch (no zone = UTC). When it is missing,
  unparsable or before 1970, the provider's `fallback_date` is used: a Maildir file's mtime, an
  mbox message's `From ` line date, an `.eml` file's mtime; else 0 — and a message dated 0 is
  never returned by `listSince` with the default `since=0`, as on the platform's reading of E4.
- `body`: the `text/plain` parts (in `multipart/alternative`, plain is preferred); HTML-only
  mail is converted to text. Line ends are `\\n`.
- Attachments: every leaf part that is not body text (`Content-Disposition: attachment`, a
  file name, or a non-text type), and attached messages. `sizeBytes` is the decoded size; for
  base64 it is computed from the encoded length, so the content is never decoded.

Hostile mail (SEC5): a message is read once, line by line, from its file (never whole into
memory) by a streaming MIME scanner with fixed bounds — header blocks of HEADER_MAX_BYTES,
MIME_MAX_PARTS parts read (more are counted), MIME_MAX_DEPTH nested multiparts followed (deeper
ones are one opaque attachment), TEXT_MAX_BYTES of body text kept (the rest only measured, and
the message marked `cut`), header fields of FIELD_PARSE_BYTES through the email package's parser
(longer ones by a linear fallback). Charsets that are not text encodings or decode in more than
linear time (punycode, idna) are read as UTF-8. The HTML to text converter is linear (no
html.parser, whose recovery from unclosed constructs is quadratic). Time is bounded by the
sizes and, during a ctx call, by the call's deadline (`mail.check_deadline`).

Here: the MIME scan and parse_message. Reading within bounds and mbox splitting are in
maillines.py, header fields and charsets in mailheaders.py, the HTML converter in mailhtml.py.
"""

from __future__ import annotations

import binascii
import email.message
import email.utils
import io
from typing import IO

from . import mail as _mail
from .mail import Attachment, Envelope, Message
from .mailheaders import clean, date_ms, decode_bytes, decode_words, envelope_of, headers_of, parse_envelope
from .mailhtml import html_to_text
from .maillines import HEADER_MAX_BYTES, Lines, from_line_date, header_block, read_headers, split_mbox

__all__ = [
    "date_ms",
    "from_line_date",
    "html_to_text",
    "parse_envelope",
    "parse_message",
    "read_headers",
    "split_mbox",
]

PART_HEADER_MAX_BYTES = 16 * 1024  # a MIME part's header block
MIME_MAX_PARTS = 1_000  # parts whose headers are read; later ones are only counted
MIME_MAX_DEPTH = 32  # nested multiparts followed
TEXT_MAX_BYTES = 4 * 1024 * 1024 + 4096  # encoded body text kept (>= 4 × BODY_MAX_CHARS)
HTML_MAX_CHARS = 2 * 1024 * 1024  # HTML converted to text; the rest is cut


# -- transfer decoding --------------------------------------------------------------------------
_B64_JUNK = bytes(
    sorted(set(range(256)) - set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"))
)


def _b64decode(data: bytes) -> bytes:
    data = data.split(b"=", 1)[0].translate(None, _B64_JUNK)
    data = data[: len(data) - len(data) % 4] if len(data) % 4 == 1 else data
    try:
        return binascii.a2b_base64(data + b"=" * (-len(data) % 4))
    except binascii.Error:
        return b""


def _transfer_decode(data: bytes, cte: str) -> bytes:
    try:
        if cte == "base64":
            return _b64decode(data)
        if cte == "quoted-printable":
            return binascii.a2b_qp(data)
    except Exception:
        pass
    return data


# -- the streaming MIME scanner ---------------------------------------------------------------
class _Part:
    """One MIME part as the scanner saw it: its headers, kept text and measured size."""

    __slots__ = (
        "ctype",
        "charset",
        "cte",
        "disposition",
        "filename",
        "boundary",
        "children",
        "text",
        "keep",
        "size",
        "b64",
        "b64pad",
        "last_nl",
        "cut",
        "named",
    )

    def __init__(self, headers: email.message.Message, default: str = "text/plain") -> None:
        try:
            ctype = headers.get_content_type() if headers.get("content-type") else default
        except Exception:
            ctype = default
        self.ctype = _mail.cut(ctype.lower(), 255)
        self.charset = self.cte = self.disposition = self.filename = self.boundary = None
        try:
            self.charset = headers.get_content_charset()
        except Exception:
            pass
        try:
            self.cte = str(headers.get("content-transfer-encoding", "")).strip().lower()[:64]
        except Exception:
            pass
        try:
            self.disposition = headers.get_content_disposition()
        except Exception:
            pass
        try:
            name = headers.get_filename()
            self.named = name is not None
            if name is not None:
                self.filename = _mail.cut(" ".join(clean(decode_words(str(name))).split()), 1000)
        except Exception:
            self.named = False
        if self.ctype.startswith("multipart/"):
            try:
                b = headers.get_param("boundary")
                b = email.utils.collapse_rfc2231_value(b) if b else None
                self.boundary = b.encode("utf-8", "surrogateescape")[:200] if b else None
            except Exception:
                self.boundary = None
        self.children: list[_Part] | None = None
        self.text = bytearray()
        self.keep = False  # a body-text candidate: its content is kept (within the budget)
        self.size = 0  # content bytes as transferred
        self.b64 = 0  # base64 characters
        self.b64pad = 0
        self.last_nl = 0  # the newline before a boundary belongs to the boundary
        self.cut = False

    @property
    def attachment(self) -> bool:
        return self.disposition == "attachment" or self.named or self.ctype not in ("text/plain", "text/html")

    def add(self, line: bytes, budget: list[int]) -> None:
        self.size += len(line)
        self.last_nl = 2 if line.endswith(b"\r\n") else 1 if line.endswith(b"\n") else 0
        if self.keep:
            if budget[0] >= len(line):
                self.text += line
                budget[0] -= len(line)
            elif line.strip():
                self.cut = True
                budget[0] = 0
        elif self.cte == "base64":
            chars = len(line.translate(None, b" \t\r\n"))
            if chars:
                self.b64 += chars
                stripped = line.rstrip()
                self.b64pad = 2 if stripped.endswith(b"==") else 1 if stripped.endswith(b"=") else 0
        elif self.cte == "quoted-printable":
            try:
                self.b64 += len(binascii.a2b_qp(line))
            except Exception:
                self.b64 += len(line)

    def sizeBytes(self) -> int:
        if self.cte == "base64" and not self.keep:
            return max(0, self.b64 * 3 // 4 - self.b64pad)
        if self.cte == "quoted-printable" and not self.keep:
            return max(0, self.b64 - self.last_nl)
        if self.keep and self.cte in ("base64", "quoted-printable"):
            return len(_transfer_decode(bytes(self.text), self.cte))
        return max(0, self.size - self.last_nl)

    def decoded(self) -> str:
        data = bytes(self.text)
        if data.endswith(b"\n"):
            data = data[:-2] if data.endswith(b"\r\n") else data[:-1]
        text = decode_bytes(_transfer_decode(data, self.cte or ""), self.charset)
        return text.replace("\r\n", "\n").replace("\r", "\n")


class _Scan:
    """Reads one message's MIME structure from its lines, within the bounds above."""

    def __init__(self) -> None:
        self.parts = 0
        self.skipped = 0  # parts past MIME_MAX_PARTS: counted, not read
        self.budget = [TEXT_MAX_BYTES]

    def part(self, block: bytes, default: str, depth: int) -> _Part:
        self.parts += 1
        p = _Part(headers_of(block), default)
        if p.ctype.startswith("multipart/"):
            if not p.boundary:
                p.keep = True  # no boundary: read as text
            elif depth < MIME_MAX_DEPTH:
                p.children = []
            # else nested too deep: one opaque attachment, measured
        elif not p.attachment:
            p.keep = True  # body text
        return p

    def run(self, lines: Lines, root_block: bytes) -> _Part:
        root = self.part(root_block, "text/plain", 0)
        # open multiparts, innermost last: (part, "--boundary")
        stack: list[tuple[_Part, bytes]] = []
        current: _Part | None = root  # where content lines go (None: preamble or epilogue)
        if root.children is not None:
            stack.append((root, b"--" + root.boundary))  # type: ignore[operator]
            current = None
        for line in lines:
            if stack and lines.start and line.startswith(b"--"):
                mark = line.rstrip(b" \t\r\n")
                hit = next(
                    (
                        i
                        for i in range(len(stack) - 1, -1, -1)
                        if mark.startswith(stack[i][1]) and mark[len(stack[i][1]) :] in (b"", b"--")
                    ),
                    None,
                )
                if hit is not None:
                    parent, delim = stack[hit]
                    del stack[hit + 1 :]
                    if mark.endswith(b"--") and len(mark) == len(delim) + 2:
                        stack.pop()
                        current = None  # epilogue: up to the next outer boundary
                        continue
                    current = None
                    block, complete = header_block(lines, PART_HEADER_MAX_BYTES)
                    if self.parts >= MIME_MAX_PARTS:
                        self.skipped += 1
                        continue
                    digest = parent.ctype == "multipart/digest"
                    child = self.part(block, "message/rfc822" if digest else "text/plain", len(stack))
                    parent.children.append(child)  # type: ignore[union-attr]
                    if child.children is not None:
                        stack.append((child, b"--" + child.boundary))  # type: ignore[operator]
                    else:
                        current = child
                    if not complete:
                        break
                    continue
            if current is not None:
                current.add(line, self.budget)
        return root


def _alternative(parts: list[_Part]) -> _Part | None:
    for wanted in ("text/plain", "text/html"):
        for p in parts:
            if p.ctype == wanted and not p.attachment:
                return p
    for p in parts:  # e.g. multipart/related holding the HTML
        if p.children is not None:
            return p
    return parts[-1] if parts else None


def _attachment(p: _Part) -> Attachment:
    return Attachment(filename=p.filename or "", mimeType=p.ctype, sizeBytes=p.sizeBytes())


def _collect(root: _Part) -> tuple[list[str], list[Attachment], bool]:
    """Body texts and attachments in document order (iterative: depth is bounded anyway)."""
    body: list[str] = []
    atts: list[Attachment] = []
    cut = False
    todo: list[tuple[_Part, bool]] = [(root, True)]
    while todo:
        part, is_root = todo.pop()
        if part.children is not None:
            if part.ctype == "multipart/alternative":
                best = _alternative(part.children)
                extra = [(p, False) for p in part.children if p is not best and p.disposition == "attachment"]
                # attachments hung inside the alternative still count, after the chosen branch
                todo.extend(reversed(([(best, False)] if best is not None else []) + extra))
                for p in part.children:
                    if p is not best and p.disposition != "attachment" and p.text:
                        p.text = bytearray()
            else:
                todo.extend((p, False) for p in reversed(part.children))
        elif part.keep:
            text = part.decoded()
            if part.ctype == "text/html":
                cut = cut or len(text) > HTML_MAX_CHARS
                text = html_to_text(text[:HTML_MAX_CHARS])
            body.append(text)
            cut = cut or part.cut
        else:
            atts.append(_attachment(part))
    return body, atts, cut


def parse_message(
    raw: bytes | IO[bytes], *, account: str, id: str, fallback_date: int = 0, limit: int | None = None
) -> Message:
    """The full message: envelope, plain-text body, attachment metadata (never the content).

    `raw` is the message's bytes or a binary file positioned at its start (read at most
    `limit` bytes, line by line: a huge message is never all in memory)."""
    fp = io.BytesIO(raw) if isinstance(raw, (bytes, bytearray)) else raw
    lines = Lines(fp, limit)
    try:
        block, complete = header_block(lines, HEADER_MAX_BYTES)
        headers = headers_of(block)
        envelope = envelope_of(headers, account, id, fallback_date)
    except _mail.WorkbenchError:
        raise
    except Exception:  # never for bad mail; a last guard
        return Message(Envelope(account, id, "", "", (), fallback_date), body="")
    scan = _Scan()
    try:
        root = scan.run(lines if complete else Lines(io.BytesIO(b"")), block)
        body, atts, cut = _collect(root)
    except _mail.WorkbenchError:
        raise
    except Exception:  # a structure we do not understand: best effort, no traceback
        body, atts, cut = [], [], False
    text = "\n".join(b.strip("\n") for b in body if b.strip())
    return Message(
        envelope, body=clean(text), attachments=tuple(atts), cut=cut, more_attachments=scan.skipped
    )
