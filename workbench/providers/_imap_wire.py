"""IMAP response parsing for the IMAP provider: FETCH items, ENVELOPE, BODYSTRUCTURE, UID sets.

imaplib only splits lines and literals; the nested lists, quoted strings and literals of a FETCH
response are parsed here. Strings come back as bytes, NIL as None, lists as lists.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email.header import decode_header
from functools import lru_cache
from itertools import takewhile
from typing import Any, Union
from urllib.parse import unquote_to_bytes

Value = Union[bytes, None, list[Any]]  # noqa: UP007  list[Value]: mypy has no recursive aliases in unions
Fetched = dict[str, Any]  # "UID" -> b"12", "ENVELOPE" -> [...], "BODY[1]" -> b"..."

_LITERAL_END = re.compile(rb"\{\d+\+?\}\Z")
# Outside literals an IMAP response holds no NUL, so \x00<n>\x00 can stand for literal n.
# (the quoted-string pattern is unrolled: an alternation per character was most of the time)
_TOKEN = re.compile(rb'\s*(?:(\()|(\))|"([^"\\]*(?:\\.[^"\\]*)*)"|\x00(\d+)\x00|([^\s()"\x00]+))', re.DOTALL)
_ESCAPE = re.compile(rb"\\(.)", re.DOTALL)
_MONTH_NAMES = b"Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
_MONTHS = {m: n for n, m in enumerate(_MONTH_NAMES, 1)}
_INTERNALDATE = re.compile(rb"(\d{1,2})-([A-Za-z]{3})-(\d{4}) (\d\d):(\d\d):(\d\d) ([+-])(\d\d)(\d\d)")
_UID = re.compile(rb"\bUID (\d+)")
_SECTION_NUMBER = re.compile(r"[0-9]{1,6}")  # RFC 2231 continuation numbers (ASCII digits)
_DATE = re.compile(rb'\bINTERNALDATE "([^"]+)"')


def parse_fetch(data: list[Any]) -> list[Fetched]:
    """imaplib's FETCH data (bytes and (head, literal) tuples) -> one dict per FETCH response."""
    text: list[bytes] = []
    literals: list[bytes] = []
    for item in data:
        if isinstance(item, tuple):
            text.append(_LITERAL_END.sub(b"\x00%d\x00" % len(literals), item[0]))
            literals.append(item[1])
        elif isinstance(item, bytes):
            text.append(item)
    tokens = _tokens(b"".join(text), literals)
    out: list[Fetched] = []
    for value in tokens:  # "<seq> (<name> <value> ...)" repeated
        if isinstance(value, list):
            out.append(
                {
                    bytes(k).decode("ascii", "replace").upper(): v
                    for k, v in zip(value[::2], value[1::2])
                    if isinstance(k, bytes)
                }
            )
    return out


def _tokens(buf: bytes, literals: list[bytes]) -> list[Value]:
    top: list[Value] = []
    stack, current = [top], top
    for m in _TOKEN.finditer(buf):
        kind = m.lastindex  # the one group that matched; this loop is most of a page's parsing
        if kind == 1:
            current = []
            stack[-1].append(current)
            stack.append(current)
        elif kind == 2:
            if len(stack) > 1:
                stack.pop()
                current = stack[-1]
        elif kind == 3:
            quoted = m.group(3)
            current.append(_ESCAPE.sub(rb"\1", quoted) if b"\\" in quoted else quoted)
        elif kind == 4:
            current.append(literals[int(m.group(4))])
        elif kind == 5:
            atom = m.group(5)
            current.append(None if atom in (b"NIL", b"nil", b"Nil") else atom)
    return top  # a truncated response keeps what was parsed


def uid_sets(uids: list[int], max_chars: int = 4000) -> list[str]:
    """Sorted UIDs as compact sets ("1:200,205"), each short enough for one command line."""
    ranges: list[str] = []
    run: list[int] = []
    for u in sorted(set(uids)):
        if run and u == run[1] + 1:
            run[1] = u
            continue
        if run:
            ranges.append(f"{run[0]}:{run[1]}" if run[1] > run[0] else str(run[0]))
        run = [u, u]
    if run:
        ranges.append(f"{run[0]}:{run[1]}" if run[1] > run[0] else str(run[0]))
    sets: list[str] = []
    for r in ranges:
        if sets and len(sets[-1]) + len(r) < max_chars:
            sets[-1] += "," + r
        else:
            sets.append(r)
    return sets


@lru_cache(maxsize=4096)  # many messages share a second; strptime was 20 µs a date
def internaldate_ms(value: bytes) -> int:
    """'14-Nov-2023 22:13:20 +0000' -> ms since the epoch (INTERNALDATE has whole seconds)."""
    m = _INTERNALDATE.fullmatch(value.strip())
    if not m:
        raise ValueError(f"not an INTERNALDATE: {value!r}")
    day, month, year, hh, mm, ss, sign, zh, zm = m.groups()
    utc = calendar.timegm((int(year), _MONTHS[month.title()], int(day), int(hh), int(mm), int(ss)))
    offset = (int(zh) * 3600 + int(zm) * 60) * (-1 if sign == b"-" else 1)
    return (utc - offset) * 1000


def fetch_dates(data: list[Any]) -> dict[int, int]:
    """`UID FETCH (UID INTERNALDATE)` data -> {uid: ms}; a fast path (no literals can occur)."""
    out: dict[int, int] = {}
    for line in data:
        if isinstance(line, bytes):
            uid, date = _UID.search(line), _DATE.search(line)
            if uid and date:
                out[int(uid.group(1))] = internaldate_ms(date.group(1))
    return out


def imap_day(ms: int) -> str:
    """The SEARCH SINCE date (UTC day) of a ms timestamp, in English whatever the locale."""
    d = datetime.fromtimestamp(min(max(ms, 0), 253_402_214_400_000) / 1000, UTC)
    return f"{d.day:02d}-{_MONTH_NAMES[d.month - 1].decode()}-{d.year}"


def text(value: Value) -> str:
    """An ENVELOPE string, RFC 2047 encoded-words decoded; raw 8-bit read as UTF-8."""
    if not isinstance(value, bytes):
        return ""
    s = value.decode("utf-8", "replace").replace("\r", "").replace("\n", "")
    if "=?" not in s:
        return s
    from .mailheaders import decode_bytes as _decode_bytes  # linear-time charsets only (SEC5)

    out: list[str] = []
    # 4× faster than policy.default's header parsing, same text on the cases tested
    try:
        decoded = decode_header(s)
    except Exception:  # a broken encoded word (bad base64): the text as it came (SEC7)
        return s
    for part, charset in decoded:
        if isinstance(part, str):
            out.append(part)
        elif charset is None:  # the text between encoded words, as decode_header encodes it
            out.append(part.decode("raw-unicode-escape", "replace"))
        else:
            out.append(_decode_bytes(part, charset))
    return "".join(out)


def addresses(value: Value) -> tuple[str, ...]:
    """An ENVELOPE address list -> ('user@host', ...), as mailparse gives them: no display
    names, group markers skipped."""
    out: list[str] = []
    for a in value if isinstance(value, list) else []:
        if isinstance(a, list) and len(a) >= 4 and a[3] is not None:
            out.append(f"{_str(a[2])}@{_str(a[3])}")
    return tuple(out)


def _str(value: Value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else ""


@dataclass(frozen=True)
class Part:
    """One leaf of a BODYSTRUCTURE: its section number ("1", "2.1") and what it says of itself."""

    section: str
    mime: str  # "text/plain"
    params: dict[str, str]
    encoding: str  # "base64", "quoted-printable", "7bit", ...
    size: int  # octets as transferred (encoded)
    filename: str
    disposition: str  # "attachment", "inline" or ""

    @property
    def attachment(self) -> bool:
        """Not body text: the same test as mailparse's."""
        return (
            self.disposition == "attachment"
            or bool(self.filename)
            or self.mime not in ("text/plain", "text/html")
        )


def _pairs(value: Value) -> dict[str, str]:
    if not isinstance(value, list):
        return {}
    raw = {text(k).lower(): text(v) for k, v in zip(value[::2], value[1::2])}
    out = {k: v for k, v in raw.items() if "*" not in k}
    pieces: dict[str, list[tuple[int, str]]] = {}
    for k, v in raw.items():  # RFC 2231 name*=utf-8''... and name*0*=, name*1*= continuations
        if "*" in k:
            base, _, rest = k.partition("*")
            n = rest.strip("*")
            pieces.setdefault(base, []).append((int(n) if _SECTION_NUMBER.fullmatch(n) else 0, v))
    for base, vs in pieces.items():
        joined = "".join(v for _, v in sorted(vs))
        charset, _, encoded = joined.split("'", 2) if joined.count("'") >= 2 else ("", "", joined)
        from .mailheaders import decode_bytes as _decode_bytes

        out.setdefault(base, _decode_bytes(unquote_to_bytes(encoded), charset or "utf-8"))
    return out


def _leaf(bs: list[Any], section: str) -> Part:
    mime = f"{text(bs[0]).lower()}/{text(bs[1]).lower()}"
    params = _pairs(bs[2] if len(bs) > 2 else None)
    # extension data follows the type-specific fields: lines (text), envelope+body+lines
    at = 11 if mime == "message/rfc822" else 9 if mime.startswith("text/") else 8
    disp = bs[at] if len(bs) > at and isinstance(bs[at], list) else [None, None]
    dparams = _pairs(disp[1] if len(disp) > 1 else None)
    size = bs[6] if len(bs) > 6 and isinstance(bs[6], bytes) and bs[6].isdigit() else b"0"
    return Part(
        section or "1",
        mime,
        params,
        text(bs[5] if len(bs) > 5 else None).lower(),
        int(size),
        (dparams.get("filename") or params.get("name") or "").strip(),
        text(disp[0]).lower() if disp else "",
    )


def leaves(
    bs: Value, section: str = "", *, count: list[int] | None = None, depth: int = 0
) -> tuple[list[Part], list[Part]]:
    """BODYSTRUCTURE -> (text parts that make the body, attachment parts), as mailparse walks
    a message: in multipart/alternative one branch (plain, else html, else a multipart) plus
    its siblings marked as attachments; a message/rfc822 part is one attachment.

    Bounded as mailparse is (SEC5): MIME_MAX_DEPTH nested multiparts (a deeper one is one
    attachment), MIME_MAX_PARTS leaves (`count[0]` counts them all)."""
    from .mailparse import MIME_MAX_DEPTH, MIME_MAX_PARTS

    count = [0] if count is None else count
    if not isinstance(bs, list) or not bs:
        return [], []
    if not isinstance(bs[0], list) or depth >= MIME_MAX_DEPTH:
        count[0] += 1
        if count[0] > MIME_MAX_PARTS:
            return [], []
        if isinstance(bs[0], list):  # nested too deep: one opaque part
            return [], [Part(section or "1", "multipart/mixed", {}, "", 0, "", "")]
        part = _leaf(bs, section)
        return ([], [part]) if part.attachment else ([part], [])
    kids = list(takewhile(lambda k: isinstance(k, list), bs))  # then subtype, extensions
    subtype = text(bs[len(kids)]).lower() if len(bs) > len(kids) else "mixed"
    numbered = [(f"{section}.{n}" if section else str(n), k) for n, k in enumerate(kids, 1)]
    if subtype != "alternative":
        done = [leaves(k, sec, count=count, depth=depth + 1) for sec, k in numbered]
        return [t for ts, _ in done for t in ts], [a for _, atts in done for a in atts]
    single = {sec: _leaf(k, sec) for sec, k in numbered if k and not isinstance(k[0], list)}
    best = next(
        (
            sec
            for wanted in ("text/plain", "text/html")
            for sec, p in single.items()
            if p.mime == wanted and not p.attachment
        ),
        None,
    )
    best = best or next(
        (sec for sec, _ in numbered if sec not in single), numbered[-1][0] if numbered else None
    )
    texts, atts = leaves(dict(numbered)[best], best, count=count, depth=depth + 1) if best else ([], [])
    return texts, atts + [p for sec, p in single.items() if sec != best and p.disposition == "attachment"]


def part_text(part: Part, raw: bytes, *, cut: bool = False) -> Any:
    """A text part's bytes as fetched -> its text, decoded by mailparse like any other mail
    (with `cut=True`: (text, whether mailparse cut it))."""
    from .mailparse import parse_message

    params = "".join(
        f'; {k}="{v}"'
        for k, v in part.params.items()
        if k == "charset" and '"' not in v and "\n" not in v and "\r" not in v
    )
    head = (
        f"Content-Type: {part.mime}{params}\r\nContent-Transfer-Encoding: {part.encoding or '7bit'}\r\n\r\n"
    ).encode("ascii", "replace")
    msg = parse_message(head + raw, account="", id="")
    return (msg.body, msg.cut) if cut else msg.body


def quote(folder: str) -> str:
    """A folder name as an IMAP string (imaplib sends arguments as they are)."""
    return '"' + folder.replace("\\", "\\\\").replace('"', '\\"') + '"'


def numbers(data: list[Any]) -> list[int]:
    """The UIDs of a SEARCH or SORT reply."""
    return [int(u) for u in b" ".join(x for x in data if isinstance(x, bytes)).split()]


def said(data: list[Any]) -> str:
    """What the server said, for an error message."""
    return " ".join(d.decode("utf-8", "replace") if isinstance(d, bytes) else str(d) for d in data if d)


def as_bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else b""


def decoded_size(part: Part, got: Fetched) -> int:
    """Decoded size: BINARY.SIZE from the server, else estimated from the encoded size."""
    exact = got.get(f"BINARY.SIZE[{part.section}]")
    if isinstance(exact, bytes) and exact.isdigit():
        return int(exact)
    if part.encoding == "base64":  # 76-character lines + CRLF carry 57 bytes
        return part.size * 57 // 78
    return part.size
