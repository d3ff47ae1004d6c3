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
"""

from __future__ import annotations

import calendar
import codecs
import email
import email.header
import email.message
import email.policy
import email.utils
import re
import time
from datetime import datetime, timezone
from email.parser import BytesHeaderParser, BytesParser
from html.parser import HTMLParser
from typing import IO, Any, Iterator

from .mail import Attachment, Envelope, Message

__all__ = ["date_ms", "from_line_date", "html_to_text", "parse_envelope", "parse_message",
           "read_headers", "split_mbox"]

_POLICY = email.policy.default
_ADDR = re.compile(r"[^\s<>,;:\"'()\[\]]+@[^\s<>,;:\"'()\[\]]+")
_FROM_LINE = re.compile(rb"(\w{3}) +(\w{3}) +(\d{1,2}) +(\d{1,2}):(\d{2}):(\d{2}) +(\d{4})")


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


def read_headers(fp: IO[bytes]) -> bytes:
    """The header block of a message from a binary file, reading no further than needed."""
    out = bytearray()
    for line in fp:
        if line in (b"\n", b"\r\n"):
            break
        out += line
    return bytes(out)


def date_ms(dt: datetime) -> int:
    """A datetime as ms since the epoch; a naive one is UTC."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def from_line_date(line: bytes) -> int | None:
    """The date of an mbox `From sender Sat Jan  3 01:05:34 1996` line (UTC), or None."""
    m = _FROM_LINE.search(line)
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
            return str(v)
    return ""


def _text(msg: email.message.Message, name: str) -> str:
    try:
        value = msg[name]
        text = "" if value is None else str(value)
    except Exception:  # a header the policy cannot parse: decode it by hand
        raw = _raw(msg, name)
        try:
            text = str(email.header.make_header(email.header.decode_header(raw)))
        except Exception:
            text = raw
    return " ".join(clean(text).split())


def _addresses(msg: email.message.Message, name: str) -> list[str]:
    try:
        value = msg[name]
        if value is None:
            return []
        found = [clean(a.addr_spec) for a in getattr(value, "addresses", ())
                 if a.addr_spec and a.addr_spec != "<>"]
    except Exception:
        found = []
    if found:
        return found
    text = _text(msg, name)
    return _ADDR.findall(text) or ([text] if text else [])


def _date(msg: email.message.Message) -> int | None:
    try:
        value = msg["date"]
        dt = getattr(value, "datetime", None)
    except Exception:
        dt = None
    if dt is None:
        try:
            dt = email.utils.parsedate_to_datetime(_raw(msg, "date"))
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


def parse_envelope(raw: bytes, *, account: str, id: str, fallback_date: int = 0) -> Envelope:
    """The envelope from a message's header block (or the whole message: only headers are read)."""
    msg = BytesHeaderParser(policy=_POLICY).parsebytes(raw)
    return _envelope(msg, account, id, fallback_date)


# -- body and attachments ---------------------------------------------------------------------
class _HTMLText(HTMLParser):
    BLOCK = {"p", "div", "br", "li", "tr", "table", "ul", "ol", "h1", "h2", "h3", "h4", "h5",
             "h6", "blockquote", "pre", "hr", "section", "article", "header", "footer"}
    SKIP = {"script", "style", "head", "title", "template"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skipping = 0
        self.pre = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in self.SKIP:
            self.skipping += 1
        elif tag in self.BLOCK:
            self.out.append("\n")
            if tag == "li":
                self.out.append("- ")
            self.pre += tag == "pre"

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif tag in self.BLOCK and tag != "li":  # list items: one per line, no blank between
            self.out.append("\n")
            self.pre = max(0, self.pre - (tag == "pre"))

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        if not self.pre:
            data = re.sub(r"[ \t\r\n\f]+", " ", data)
            if not self.out or self.out[-1].endswith("\n") or self.out[-1] == "- ":
                data = data.lstrip(" ")
        self.out.append(data)


def html_to_text(html: str) -> str:
    """Readable plain text from HTML (stdlib html.parser): blocks on their own lines, no tags."""
    parser = _HTMLText()
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # html.parser is lenient; this is only a last guard
        return re.sub(r"<[^>]*>", " ", html)
    lines = [line.rstrip() for line in "".join(parser.out).split("\n")]
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _decoded_text(part: email.message.Message) -> str:
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        payload = str(part.get_payload()).encode("utf-8", "surrogateescape")
    charset = part.get_content_charset() or "utf-8"
    try:
        codecs.lookup(charset)
    except (LookupError, ValueError):
        charset = "utf-8"
    try:
        text = payload.decode(charset, "replace")
    except Exception:  # a codec that fails in other ways than decoding errors
        text = payload.decode("utf-8", "replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _base64_size(encoded: str) -> int:
    n = len(encoded) - sum(encoded.count(c) for c in "\r\n \t")
    stripped = encoded.rstrip()
    pad = 2 if stripped.endswith("==") else 1 if stripped.endswith("=") else 0
    return max(0, n * 3 // 4 - pad)


def _size(part: email.message.Message) -> int:
    try:
        if part.get_content_type() == "message/rfc822" or part.is_multipart():
            return len(part.as_bytes(policy=_POLICY.clone(max_line_length=0)))
        payload = part.get_payload()
        if not isinstance(payload, str):
            return 0
        if str(part.get("content-transfer-encoding", "")).strip().lower() == "base64":
            return _base64_size(payload)
        decoded = part.get_payload(decode=True)
        return len(decoded) if isinstance(decoded, bytes) else len(payload)
    except Exception:
        return 0


def _attachment(part: email.message.Message) -> Attachment:
    try:
        filename = clean(part.get_filename() or "")
    except Exception:
        filename = ""
    return Attachment(filename=filename, mimeType=part.get_content_type(), sizeBytes=_size(part))


def _is_attachment(part: email.message.Message) -> bool:
    try:
        disposition = part.get_content_disposition()
        named = part.get_filename() is not None
    except Exception:
        disposition, named = None, False
    return disposition == "attachment" or named or part.get_content_type() not in (
        "text/plain", "text/html")


def _alternative(parts: list[email.message.Message]) -> email.message.Message | None:
    for wanted in ("text/plain", "text/html"):
        for p in parts:
            if p.get_content_type() == wanted and not _is_attachment(p):
                return p
    for p in parts:  # e.g. multipart/related holding the HTML
        if p.get_content_maintype() == "multipart":
            return p
    return parts[-1] if parts else None


def _walk(part: email.message.Message, body: list[str], atts: list[Attachment], root: bool) -> None:
    ctype = part.get_content_type()
    payload = part.get_payload()
    if ctype == "message/rfc822" and not root:
        atts.append(_attachment(part))
    elif part.get_content_maintype() == "multipart" and isinstance(payload, list):
        subs = [p for p in payload if isinstance(p, email.message.Message)]
        if ctype == "multipart/alternative":
            best = _alternative(subs)
            if best is not None:
                _walk(best, body, atts, False)
            for p in subs:  # attachments hung inside the alternative still count
                if p is not best and p.get_content_disposition() == "attachment":
                    atts.append(_attachment(p))
        else:
            for p in subs:
                _walk(p, body, atts, False)
    elif part.get_content_maintype() == "multipart":  # no boundary found: treat it as text
        body.append(_decoded_text(part))
    elif _is_attachment(part):
        atts.append(_attachment(part))
    elif ctype == "text/html":
        body.append(html_to_text(_decoded_text(part)))
    else:
        body.append(_decoded_text(part))


def parse_message(raw: bytes, *, account: str, id: str, fallback_date: int = 0) -> Message:
    """The full message: envelope, plain-text body, attachment metadata (never the content)."""
    try:
        msg = BytesParser(policy=_POLICY).parsebytes(raw)
    except Exception:
        return Message(parse_envelope(raw, account=account, id=id, fallback_date=fallback_date),
                       body=raw.decode("utf-8", "replace"))
    envelope = _envelope(msg, account, id, fallback_date)
    body: list[str] = []
    atts: list[Attachment] = []
    try:
        _walk(msg, body, atts, True)
    except Exception:  # a structure we do not understand: keep what was found
        pass
    text = "\n".join(b.strip("\n") for b in body if b.strip())
    return Message(envelope, body=clean(text), attachments=tuple(atts))


def split_mbox(fp: IO[bytes]) -> Iterator[tuple[bytes, bytes, int, int]]:
    """(from_line, headers, start, stop) per message of an mbox file, split as `mailbox.mbox`
    splits it: a message begins at each line starting with `From `; start..stop are the byte
    offsets of the message after its `From ` line, without the blank line that ends it."""
    pos = 0
    blank = 0  # length of the previous line if it was blank, else 0
    current: tuple[bytes, bytearray, int] | None = None
    in_headers = False
    for line in fp:
        if line.startswith(b"From "):
            if current is not None:
                yield current[0], bytes(current[1]), current[2], pos - blank
            current, in_headers = (line, bytearray(), pos + len(line)), True
            blank = 0
        else:
            is_blank = line in (b"\n", b"\r\n")
            if current is not None and in_headers:
                if is_blank:
                    in_headers = False
                else:
                    current[1].extend(line)
            blank = len(line) if is_blank else 0
        pos += len(line)
    if current is not None:
        yield current[0], bytes(current[1]), current[2], pos - blank
