"""Header fields of raw mail -> an Envelope: RFC 2047 words and charsets decoded (linear-time
codecs only), addresses, the date; fields past FIELD_PARSE_BYTES skip the slow email.policy
parser (SEC5)."""

from __future__ import annotations

import codecs
import email.header
import email.message
import email.policy
import email.utils
import io
import re
from datetime import UTC, datetime
from email.parser import BytesHeaderParser

from . import mail as _mail
from .mail import Envelope
from .maillines import HEADER_MAX_BYTES, Lines, header_block

_POLICY = email.policy.default
_COMPAT = email.policy.compat32

FIELD_PARSE_BYTES = 4096  # longer header fields skip the (slow) email.policy parser
FIELD_MAX_BYTES = 64 * 1024  # and are read only this far

_SEP = r"\s<>,;:\"'()\[\]"
# the lookbehind makes a match start only at the start of a run: linear on hostile text
_ADDR = re.compile(rf"(?<![^{_SEP}])[^{_SEP}]+@[^{_SEP}]+")
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


def date_ms(dt: datetime) -> int:
    """A datetime as ms since the epoch; a naive one is UTC."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


# -- headers --------------------------------------------------------------------------------
def _raw(msg: email.message.Message, name: str) -> str:
    for k, v in msg.raw_items():
        if k.lower() == name:
            return str(v)[:FIELD_MAX_BYTES]
    return ""


def decode_words(raw: str) -> str:
    """RFC 2047 words decoded by email.header (linear), for fields too long for the policy."""
    try:
        out = []
        for part, charset in email.header.decode_header(raw):
            if isinstance(part, str):
                out.append(part)
            else:
                out.append(decode_bytes(part, charset))
        return "".join(out)
    except Exception:
        return raw


def _text(msg: email.message.Message, name: str) -> str:
    raw = _raw(msg, name)
    if not raw:
        return ""
    if len(raw) > FIELD_PARSE_BYTES:
        text = decode_words(raw[: FIELD_PARSE_BYTES * 4])
    else:
        try:
            text = str(_POLICY.header_factory(name, raw))
        except Exception:  # a header the policy cannot parse: decode it by hand
            text = decode_words(raw)
    return _mail.cut(" ".join(clean(text).split()), _mail.SUBJECT_MAX_CHARS)


def _addresses(msg: email.message.Message, name: str) -> list[str]:
    raw = _raw(msg, name)
    if not raw:
        return []
    found: list[str] = []
    if len(raw) <= FIELD_PARSE_BYTES:
        try:
            value = _POLICY.header_factory(name, raw)
            found = [
                clean(a.addr_spec)
                for a in getattr(value, "addresses", ())
                if a.addr_spec and a.addr_spec != "<>"
            ]
        except Exception:
            found = []
    if not found:
        text = " ".join(clean(decode_words(raw) if len(raw) <= FIELD_PARSE_BYTES else raw).split())
        found = _ADDR.findall(text, 0, FIELD_MAX_BYTES) or ([text] if text else [])
    return [_mail.cut(a, _mail.ADDRESS_MAX_CHARS) for a in found[: _mail.ADDRESSES_MAX]]


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


def envelope_of(msg: email.message.Message, account: str, id: str, fallback_date: int) -> Envelope:
    from_ = _addresses(msg, "from")
    date = _date(msg)
    return Envelope(
        accountId=account,
        id=id,
        subject=_text(msg, "subject"),
        fromAddr=from_[0] if from_ else "",
        toAddrs=tuple(_addresses(msg, "to")),
        date=fallback_date if date is None else date,
    )


def headers_of(block: bytes) -> email.message.Message:
    """A header block as a Message (compat32: values are kept raw, parsed when asked)."""
    try:
        return BytesHeaderParser(policy=_COMPAT).parsebytes(block)
    except Exception:  # pragma: no cover - the feed parser accepts anything
        return email.message.Message()


def parse_envelope(raw: bytes, *, account: str, id: str, fallback_date: int = 0) -> Envelope:
    """The envelope from a message's header block (or the whole message: only headers are read)."""
    try:
        block = header_block(Lines(io.BytesIO(raw)), HEADER_MAX_BYTES)[0]
        return envelope_of(headers_of(block), account, id, fallback_date)
    except Exception:  # never for bad mail; a last guard
        return Envelope(account, id, "", "", (), fallback_date)


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


def decode_bytes(data: bytes, charset: str | None) -> str:
    try:
        return data.decode(_codec(charset), "replace")
    except Exception:  # a codec that fails in other ways than decoding errors
        return data.decode("utf-8", "replace")
