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
"""

from __future__ import annotations

import binascii
import calendar
import codecs
import email
import email.header
import email.message
import email.policy
import email.utils
import html
import io
import re
import time
from datetime import datetime, timezone
from email.parser import BytesHeaderParser
from typing import IO, Any, Callable, Iterator

from . import mail as _mail
from .mail import Attachment, Envelope, Message

__all__ = ["date_ms", "from_line_date", "html_to_text", "parse_envelope", "parse_message",
           "read_headers", "split_mbox"]

_POLICY = email.policy.default
_COMPAT = email.policy.compat32

HEADER_MAX_BYTES = 256 * 1024   # a message's header block; the rest of it is skipped
PART_HEADER_MAX_BYTES = 16 * 1024  # a MIME part's header block
FIELD_PARSE_BYTES = 4096        # longer header fields skip the (slow) email.policy parser
FIELD_MAX_BYTES = 64 * 1024     # and are read only this far
LINE_MAX = 64 * 1024            # lines are read in chunks of this (a 200 MB line is fine)
MIME_MAX_PARTS = 1_000          # parts whose headers are read; later ones are only counted
MIME_MAX_DEPTH = 32             # nested multiparts followed
TEXT_MAX_BYTES = 4 * 1024 * 1024 + 4096  # encoded body text kept (>= 4 × BODY_MAX_CHARS)
HTML_MAX_CHARS = 2 * 1024 * 1024  # HTML converted to text; the rest is cut
_CHECK_EVERY = 4096             # lines between two deadline checks

_SEP = r"\s<>,;:\"'()\[\]"
# the lookbehind makes a match start only at the start of a run: linear on hostile text
_ADDR = re.compile(rf"(?<![^{_SEP}])[^{_SEP}]+@[^{_SEP}]+")
_FROM_LINE = re.compile(rb"(\w{3}) +(\w{3}) +(\d{1,2}) +(\d{1,2}):(\d{2}):(\d{2}) +(\d{4})")
_SLOW_CODECS = {"punycode", "idna"}  # pure Python, super-linear on hostile input


def clean(text: str) -> str:
    """A str safe for JSON and UTF-8: raw 8-bit header bytes (surrogate-escaped) decoded as UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:
            return text.encode("utf-8", "replace").decode("utf-8")


# -- reading lines, bounded -------------------------------------------------------------------
class _Lines:
    """Lines of a binary file, each at most LINE_MAX bytes (a longer line comes in chunks:
    `start` says whether a chunk begins a line), at most `limit` bytes in all."""

    def __init__(self, fp: IO[bytes], limit: int | None = None) -> None:
        self.fp, self.left = fp, limit
        self.start = True   # the chunk last returned began a line
        self._next_start = True
        self.n = 0

    def __iter__(self) -> "_Lines":
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


def _blank(lines: _Lines, line: bytes) -> bool:
    return lines.start and line in (b"\n", b"\r\n")


def _header_block(lines: _Lines, cap: int) -> tuple[bytes, bool]:
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
    return _header_block(_Lines(fp), HEADER_MAX_BYTES)[0]


def date_ms(dt: datetime) -> int:
    """A datetime as ms since the epoch; a naive one is UTC."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


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


# -- headers --------------------------------------------------------------------------------
def _raw(msg: email.message.Message, name: str) -> str:
    for k, v in msg.raw_items():
        if k.lower() == name:
            return str(v)[:FIELD_MAX_BYTES]
    return ""


def _decode_words(raw: str) -> str:
    """RFC 2047 words decoded by email.header (linear), for fields too long for the policy."""
    try:
        out = []
        for part, charset in email.header.decode_header(raw):
            if isinstance(part, str):
                out.append(part)
            else:
                out.append(_decode_bytes(part, charset))
        return "".join(out)
    except Exception:
        return raw


def _text(msg: email.message.Message, name: str) -> str:
    raw = _raw(msg, name)
    if not raw:
        return ""
    if len(raw) > FIELD_PARSE_BYTES:
        text = _decode_words(raw[:FIELD_PARSE_BYTES * 4])
    else:
        try:
            text = str(_POLICY.header_factory(name, raw))
        except Exception:  # a header the policy cannot parse: decode it by hand
            text = _decode_words(raw)
    return _mail.cut(" ".join(clean(text).split()), _mail.SUBJECT_MAX_CHARS)


def _addresses(msg: email.message.Message, name: str) -> list[str]:
    raw = _raw(msg, name)
    if not raw:
        return []
    found: list[str] = []
    if len(raw) <= FIELD_PARSE_BYTES:
        try:
            value = _POLICY.header_factory(name, raw)
            found = [clean(a.addr_spec) for a in getattr(value, "addresses", ())
                     if a.addr_spec and a.addr_spec != "<>"]
        except Exception:
            found = []
    if not found:
        text = " ".join(clean(_decode_words(raw) if len(raw) <= FIELD_PARSE_BYTES else raw).split())
        found = _ADDR.findall(text, 0, FIELD_MAX_BYTES) or ([text] if text else [])
    return [_mail.cut(a, _mail.ADDRESS_MAX_CHARS) for a in found[:_mail.ADDRESSES_MAX]]


def _date(msg: email.message.Message) -> int | None:
    raw = _raw(msg, "date")[:256]
    if not raw.strip():
        return None
    try:
        dt = getattr(_POLICY.header_factory("date", raw), "datetime", None)
    except Exception:
        dt = None
    if dt is None:
        try:
            dt = email.utils.parsedate_to_datetime(raw)
        except Exception:
            return None
    try:
        ms = date_ms(dt)
    except (OverflowError, ValueError, OSError):
        return None
    return ms if ms >= 0 else None


def _envelope(msg: email.message.Message, account: str, id: str, fallback_date: int) -> Envelope:
    from_ = _addresses(msg, "from")
    date = _date(msg)
    return Envelope(accountId=account, id=id, subject=_text(msg, "subject"),
                    fromAddr=from_[0] if from_ else "", toAddrs=tuple(_addresses(msg, "to")),
                    date=fallback_date if date is None else date)


def _headers(block: bytes) -> email.message.Message:
    """A header block as a Message (compat32: values are kept raw, parsed when asked)."""
    try:
        return BytesHeaderParser(policy=_COMPAT).parsebytes(block)
    except Exception:  # pragma: no cover - the feed parser accepts anything
        return email.message.Message()


def parse_envelope(raw: bytes, *, account: str, id: str, fallback_date: int = 0) -> Envelope:
    """The envelope from a message's header block (or the whole message: only headers are read)."""
    try:
        block = _header_block(_Lines(io.BytesIO(raw)), HEADER_MAX_BYTES)[0]
        return _envelope(_headers(block), account, id, fallback_date)
    except Exception:  # never for bad mail; a last guard
        return Envelope(account, id, "", "", (), fallback_date)


# -- HTML to text (linear) --------------------------------------------------------------------
_BLOCK = frozenset({"p", "div", "br", "li", "tr", "table", "ul", "ol", "h1", "h2", "h3", "h4",
                    "h5", "h6", "blockquote", "pre", "hr", "section", "article", "header",
                    "footer"})
_SKIP = frozenset({"script", "style", "head", "title", "template"})
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]{0,31})")
_MARKUP = re.compile(r"<[A-Za-z/!?]")  # where markup may start; a bare "<" is text
_SKIP_END = {t: re.compile(rf"</{t}\b", re.I) for t in _SKIP}
_SPACE = re.compile(r"[ \t\r\n\f]+")


def html_to_text(source: str, check: Callable[[], Any] | None = None) -> str:
    """Readable plain text from HTML: blocks on their own lines, no tags, entities decoded.

    A linear scanner (str.find and anchored matches only): hostile nesting or unclosed
    comments and tags cost no more than the length of the text (Python's html.parser is
    quadratic on some of them). `check()` runs every 65,536 steps and raises to stop: the
    default checks a mail read's deadline. Used for mail bodies and by ctx.extract."""
    check = check or (lambda: _mail.check_deadline("email.getMessage"))
    out: list[str] = []
    pre = 0
    pos, n = 0, len(source)

    def data(text: str) -> None:
        if not text:
            return
        text = html.unescape(text)
        if not pre:
            text = _SPACE.sub(" ", text)
            if not out or out[-1].endswith("\n") or out[-1] == "- ":
                text = text.lstrip(" ")
        if text:
            out.append(text)

    steps = 0
    while pos < n:
        steps += 1
        if steps % 65536 == 0:
            check()
        start = _MARKUP.search(source, pos)
        if start is None:
            data(source[pos:])
            break
        lt = start.start()
        data(source[pos:lt])
        if source.startswith("<!--", lt):
            end = source.find("-->", lt + 4)
            pos = n if end < 0 else end + 3
            continue
        m = _TAG.match(source, lt)
        if m is None:
            if source.startswith(("<!", "<?"), lt):  # doctype, CDATA, processing instruction
                end = source.find(">", lt)
                pos = n if end < 0 else end + 1
            else:
                data("<")
                pos = lt + 1
            continue
        end = source.find(">", m.end())
        if end < 0:  # an unclosed tag: the rest is not text
            break
        pos = end + 1
        closing, tag = m.group(1), m.group(2).lower()
        if tag in _SKIP:
            if not closing and not source.startswith("/", end - 1):
                skip = _SKIP_END[tag].search(source, pos)
                if skip is None:
                    break
                close = source.find(">", skip.end())
                pos = n if close < 0 else close + 1
        elif tag in _BLOCK:
            if closing:
                if tag != "li":  # list items: one per line, no blank between
                    out.append("\n")
                    pre = max(0, pre - (tag == "pre"))
            else:
                out.append("\n")
                if tag == "li":
                    out.append("- ")
                pre += tag == "pre"
    lines = [line.rstrip() for line in "".join(out).split("\n")]
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


# -- decoding ---------------------------------------------------------------------------------
def _codec(charset: str | None) -> str:
    """A charset the text can be decoded with in linear time; else utf-8."""
    if not charset:
        return "utf-8"
    try:
        info = codecs.lookup(charset[:64])
    except (LookupError, ValueError, TypeError):
        return "utf-8"
    if info.name in _SLOW_CODECS or not getattr(info, "_is_text_encoding", True):
        return "utf-8"
    return info.name


def _decode_bytes(data: bytes, charset: str | None) -> str:
    try:
        return data.decode(_codec(charset), "replace")
    except Exception:  # a codec that fails in other ways than decoding errors
        return data.decode("utf-8", "replace")


_B64_JUNK = bytes(sorted(set(range(256)) - set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")))


def _b64decode(data: bytes) -> bytes:
    data = data.split(b"=", 1)[0].translate(None, _B64_JUNK)
    data = data[:len(data) - len(data) % 4] if len(data) % 4 == 1 else data
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

    __slots__ = ("ctype", "charset", "cte", "disposition", "filename", "boundary", "children",
                 "text", "keep", "size", "b64", "b64pad", "last_nl", "cut", "named")

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
                self.filename = _mail.cut(" ".join(clean(_decode_words(str(name))).split()), 1000)
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
        self.keep = False     # a body-text candidate: its content is kept (within the budget)
        self.size = 0         # content bytes as transferred
        self.b64 = 0          # base64 characters
        self.b64pad = 0
        self.last_nl = 0      # the newline before a boundary belongs to the boundary
        self.cut = False

    @property
    def attachment(self) -> bool:
        return self.disposition == "attachment" or self.named or self.ctype not in (
            "text/plain", "text/html")

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
        text = _decode_bytes(_transfer_decode(data, self.cte or ""), self.charset)
        return text.replace("\r\n", "\n").replace("\r", "\n")


class _Scan:
    """Reads one message's MIME structure from its lines, within the bounds above."""

    def __init__(self) -> None:
        self.parts = 0
        self.skipped = 0      # parts past MIME_MAX_PARTS: counted, not read
        self.budget = [TEXT_MAX_BYTES]

    def part(self, block: bytes, default: str, depth: int) -> _Part:
        self.parts += 1
        p = _Part(_headers(block), default)
        if p.ctype.startswith("multipart/"):
            if not p.boundary:
                p.keep = True  # no boundary: read as text
            elif depth < MIME_MAX_DEPTH:
                p.children = []
            # else nested too deep: one opaque attachment, measured
        elif not p.attachment:
            p.keep = True  # body text
        return p

    def run(self, lines: _Lines, root_block: bytes) -> _Part:
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
                hit = next((i for i in range(len(stack) - 1, -1, -1)
                            if mark.startswith(stack[i][1])
                            and mark[len(stack[i][1]):] in (b"", b"--")), None)
                if hit is not None:
                    parent, delim = stack[hit]
                    del stack[hit + 1:]
                    if mark.endswith(b"--") and len(mark) == len(delim) + 2:
                        stack.pop()
                        current = None  # epilogue: up to the next outer boundary
                        continue
                    current = None
                    block, complete = _header_block(lines, PART_HEADER_MAX_BYTES)
                    if self.parts >= MIME_MAX_PARTS:
                        self.skipped += 1
                        continue
                    digest = parent.ctype == "multipart/digest"
                    child = self.part(block, "message/rfc822" if digest else "text/plain",
                                      len(stack))
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
                extra = [(p, False) for p in part.children if p is not best
                         and p.disposition == "attachment"]
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


def parse_message(raw: "bytes | IO[bytes]", *, account: str, id: str, fallback_date: int = 0,
                  limit: int | None = None) -> Message:
    """The full message: envelope, plain-text body, attachment metadata (never the content).

    `raw` is the message's bytes or a binary file positioned at its start (read at most
    `limit` bytes, line by line: a huge message is never all in memory)."""
    fp = io.BytesIO(raw) if isinstance(raw, (bytes, bytearray)) else raw
    lines = _Lines(fp, limit)
    try:
        block, complete = _header_block(lines, HEADER_MAX_BYTES)
        headers = _headers(block)
        envelope = _envelope(headers, account, id, fallback_date)
    except _mail.WorkbenchError:
        raise
    except Exception:  # never for bad mail; a last guard
        return Message(Envelope(account, id, "", "", (), fallback_date), body="")
    scan = _Scan()
    try:
        root = scan.run(lines if complete else _Lines(io.BytesIO(b"")), block)
        body, atts, cut = _collect(root)
    except _mail.WorkbenchError:
        raise
    except Exception:  # a structure we do not understand: best effort, no traceback
        body, atts, cut = [], [], False
    text = "\n".join(b.strip("\n") for b in body if b.strip())
    return Message(envelope, body=clean(text), attachments=tuple(atts), cut=cut,
                   more_attachments=scan.skipped)


def split_mbox(fp: IO[bytes]) -> Iterator[tuple[bytes, bytes, int, int]]:
    """(from_line, headers, start, stop) per message of an mbox file, split as `mailbox.mbox`
    splits it: a message begins at each line starting with `From `; start..stop are the byte
    offsets of the message after its `From ` line, without the blank line that ends it.
    Lines are read in chunks of LINE_MAX and headers kept up to HEADER_MAX_BYTES."""
    pos = 0
    blank = 0  # length of the previous line if it was blank, else 0
    current: tuple[bytes, bytearray, int] | None = None
    in_headers = False
    lines = _Lines(fp)
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
