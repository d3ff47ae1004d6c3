"""Masking secrets (K6, SEC4) in the text the workbench shows: traces, the HTTP log, logs,
logger rows, errors, pinned cases and bundles.

A secret is masked as written and in the forms a tool carries it in: JSON-escaped; as a string
of its UTF-16 code units (each byte a character, little- or big-endian: `s\x00e\x00…`, also as
Python writes such bytes, and `\u0073\u0065…`); and inside any token that DECODES to bytes
holding it as UTF-8 or UTF-16 (LE or BE, a BOM or not) — base64 (standard or URL-safe, at any
alignment, so `"Basic " + btoa("user:" + secret)` and `btoa(secret + ":")` alike, and MIME's
line-wrapped base64, CRLF or LF, escaped in JSON or not), base32, percent-encoding (any case,
`+` for space, twice-encoded), hex (also spaced, `73 65` or `73:65`), HTML character references
(`&#115;`, `&#x73;`, `&sol;`) and a gzip or zlib stream inside any of them — up to two encodings
deep. Such a token is masked whole (`***`). Shorter secrets than MIN_CHARS are not masked: they
would mask ordinary text. Every pattern starts only where a run of its characters starts and
every decoding is bounded, so masking stays linear in the text.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import re
import zlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING
from urllib.parse import unquote, unquote_plus

if TYPE_CHECKING:
    from .._errors import WorkbenchError
    from .http_credentials import HttpState

MASK = "***"
MIN_CHARS = 4
_ESCAPES = 3  # JSON in a JSON string in a JSON text (a kv value in a case file): escaped 3 deep
_DEPTH = 2  # base64 of JSON holding base64 of the secret: two decodings


class _Tokens:
    """A token pattern, twice: starting where none of `before` comes before it (a run's start,
    so a long run is scanned once), and right after JSON's escape of a line break, tab or quote
    (`\\nQUJD…` in a JSON text), looked for only in text holding a backslash."""

    def __init__(self, before: str, body: str) -> None:
        self.plain = re.compile(f"(?<!{before}){body}")
        self.escaped = re.compile(f'(?<=\\\\[nrtbf"/]){body}')

    def sub(self, fn: Callable[[re.Match[str]], str], text: str) -> str:
        text = self.plain.sub(fn, text)
        return self.escaped.sub(fn, text) if "\\" in text else text

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        yield from self.plain.finditer(text)
        if "\\" in text:
            yield from self.escaped.finditer(text)


# a token starts where no other token character (nor a backslash: JSON's \u00e9) comes before it
_B64 = _Tokens(r"[\\A-Za-z0-9+/_-]", r"[A-Za-z0-9+/_-]{6,}={0,6}")
_HEX = _Tokens(r"[\\0-9A-Za-z]", r"[0-9A-Fa-f]{8,}(?![0-9A-Za-z])")
# MIME's base64: lines joined by a line break, as written or JSON-escaped (once or deeper);
# every line but the last at least 16 characters (MIME's are 76, PEM's 64), so prose is no block
_BREAK = r"(?:\r?\n|(?:\\{1,7}r)?\\{1,7}n)"
_MIME = _Tokens(
    r"[\\A-Za-z0-9+/_-]",
    rf"[A-Za-z0-9+/]{{16,}}(?:{_BREAK}[A-Za-z0-9+/]{{16,}})*{_BREAK}[A-Za-z0-9+/]{{2,}}={{0,2}}",
)
_BREAKS = re.compile(_BREAK)
# hex bytes one by one, apart: `73 65 63`, `73:65:63`, `73-65-63`, `73,65`
_SPACED_HEX = _Tokens(r"[0-9A-Za-z]", r"[0-9A-Fa-f]{2}(?:[ :,-][0-9A-Fa-f]{2}){3,}(?![0-9A-Za-z])")
_HEX_SEPARATORS = re.compile(r"[ :,-]")
_BASE32 = re.compile(r"[A-Za-z2-7]+")
# a run of text holding HTML character references; it also starts after a bare '&' (a query's)
_ENTITY = re.compile(
    r"(?<![^\s&<>\"'])(?:&(?:#[0-9]{1,7};?|#[xX][0-9A-Fa-f]{1,6};?|[A-Za-z][A-Za-z0-9]{1,31};)"
    r"|[^\s&<>\"'])+"
)
_GZIP, _ZLIB = b"\x1f\x8b\x08", (b"\x78\x01", b"\x78\x5e", b"\x78\x9c", b"\x78\xda")
_INFLATE_MIN = 1 << 16  # bytes a compressed stream may inflate to: this, or 8 times its size
# a percent-encoded token ends at a URL's delimiters (/ ? & = : @ ; ,): one query value, not the
# URL. It starts only where a run of its characters starts: without the lookbehind every position
# of a long run was a new start scanning to the run's end, quadratic (40,000 letters took 1.3 s)
_PCHAR = "A-Za-z0-9._~!*'()+%-"
_PERCENT = re.compile(f"(?<![{_PCHAR}])[{_PCHAR}]*%[0-9A-Fa-f]{{2}}[{_PCHAR}]*")


def mask_shown(http: HttpState | None, logs: str, error: WorkbenchError | None) -> str:
    """At a call's end: its console logs, returned masked, and its error, masked in place
    (message and string details: a stack repeats the message), with every secret `http` (the
    bench's HTTP state: credentials, ctx.secrets' values) has seen — one the tool printed or threw."""
    if http is None or not http.has_secrets:
        return logs
    if error is not None:
        mask_error(http, error)
    return http.mask(logs)


def mask_error(http: HttpState, error: WorkbenchError) -> None:
    """Mask `error` in place with every secret `http` has seen: its message (and args, which
    str() and a traceback show) and its string details (a stack repeats the message)."""
    error.message = http.mask(error.message)
    error.args = (error.message,)
    for k, v in error.details.items():
        if isinstance(v, str):
            error.details[k] = http.mask(v)


class SecretMask:
    """The secrets one bench has seen, and `mask(text)` with each of them, in every form."""

    def __init__(self) -> None:
        self._forms: set[str] = set()  # replaced as written
        self._longest_first: tuple[str, ...] = ()  # _forms as mask() replaces them
        self._needles: set[bytes] = set()  # looked for inside decoded tokens
        self._shortest = 0

    def __bool__(self) -> bool:
        return bool(self._forms)

    def add(self, value: str) -> None:
        """Mask `value` from now on (ignored when shorter than MIN_CHARS)."""
        if len(value) < MIN_CHARS or value in self._forms:
            return
        escaped = _escaped({value})
        self._forms |= escaped | _escaped(_code_unit_forms(value))
        self._longest_first = tuple(sorted(self._forms, key=len, reverse=True))
        # an escaped form inside decoded bytes too: base64 of a JSON text holding the secret;
        # and the secret as UTF-16 (a BOM before it or not: it is found inside the bytes)
        self._needles |= {f.encode("utf-8", "surrogatepass") for f in escaped}
        self._needles |= {value.encode(c, "surrogatepass") for c in ("utf-16-le", "utf-16-be")}
        self._shortest = min(len(n) for n in self._needles)

    def mask(self, text: str) -> str:
        """`text` with every form of every secret masked (`***`), each token that hides one whole."""
        if not self._forms:
            return text
        for s in self._longest_first:
            text = text.replace(s, MASK)
        # a secret of n bytes is at least 4n/3 base64 characters: shorter tokens cannot hide one
        shortest = (4 * self._shortest) // 3
        if "\n" in text or "\\n" in text:  # a line break, or JSON's escape of one
            text = _MIME.sub(lambda m: self._masked_mime(m[0], shortest), text)
        text = _B64.sub(lambda m: self._masked_b64(m[0]) if len(m[0]) >= shortest else m[0], text)
        text = _HEX.sub(lambda m: MASK if self._hides_hex(m[0], 0) else m[0], text)
        text = _SPACED_HEX.sub(lambda m: MASK if self._hides_spaced_hex(m[0], 0) else m[0], text)
        text = _PERCENT.sub(lambda m: MASK if self._hides_percent(m[0], 0) else m[0], text)
        if "&" in text:
            text = _ENTITY.sub(lambda m: MASK if self._hides_entities(m[0], 0) else m[0], text)
        return text

    def _hides(self, data: bytes, depth: int) -> bool:
        """Whether decoded bytes hold a secret, as written, encoded once more, or compressed."""
        if any(n in data for n in self._needles):
            return True
        if depth >= _DEPTH:
            return False
        if depth == 0 and (data[:3] == _GZIP or data[:2] in _ZLIB):  # once: a bomb inflates once
            inflated = _inflate(data)
            if inflated is not None and self._hides(inflated, depth + 1):
                return True
        if not data.isascii():
            return False
        return self._hides_text(data.decode("ascii"), depth)

    def _hides_text(self, text: str, depth: int) -> bool:
        data = text.encode("utf-8", "surrogatepass")
        if any(n in data for n in self._needles):
            return True
        if depth >= _DEPTH:
            return False
        return (
            any(self._hides_b64(m[0], depth + 1) for m in _B64.finditer(text))
            or any(self._hides_hex(m[0], depth + 1) for m in _HEX.finditer(text))
            or any(self._hides_spaced_hex(m[0], depth + 1) for m in _SPACED_HEX.finditer(text))
            or any(self._hides_percent(m[0], depth + 1) for m in _PERCENT.finditer(text))
            or ("&" in text and any(self._hides_entities(m[0], depth + 1) for m in _ENTITY.finditer(text)))
        )

    def _hides_entities(self, token: str, depth: int) -> bool:
        """Whether `token` with its HTML character references read holds a secret."""
        if "&" not in token:
            return False
        text = html.unescape(token)
        return text != token and self._hides_text(text, depth + 1)

    def _masked_mime(self, block: str, shortest: int) -> str:
        """`block` (base64 lines) masked whole when its lines joined hide a secret."""
        joined = _BREAKS.sub("", block)
        return MASK if len(joined) >= shortest and self._hides_b64(joined, 0) else block

    def _hides_spaced_hex(self, token: str, depth: int) -> bool:
        return self._hides(bytes.fromhex(_HEX_SEPARATORS.sub("", token)), depth)

    def _hides_percent(self, token: str, depth: int) -> bool:
        """Whether `token` percent-decoded (`+` as a space or as itself) holds a secret."""
        return any(self._hides_text(decode(token), depth + 1) for decode in (unquote, unquote_plus))

    def _masked_b64(self, token: str) -> str:
        """`token` with the pieces (between slashes: a path's segments) that hide a secret
        masked; the whole token when only it does."""
        if "/" in token:
            pieces = token.split("/")
            masked = [MASK if self._hides_b64(p, 0) else p for p in pieces]
            if masked != pieces:
                return "/".join(masked)
        return MASK if self._hides_b64(token, 0) else token

    def _hides_b64(self, token: str, depth: int) -> bool:
        """Whether `token` decodes (from any of the four alignments, standard or URL-safe
        alphabet) to bytes holding a secret; a piece between slashes counts too."""
        if "/" in token and depth > 0 and any(self._hides_b64(p, depth) for p in token.split("/")):
            return True
        raw = token.rstrip("=").replace("-", "+").replace("_", "/")
        for start in range(4):
            part = raw[start:]
            if len(part) % 4 == 1:
                part = part[:-1]  # a lone last character carries no whole byte
            try:
                data = base64.b64decode(part + "=" * (-len(part) % 4), validate=True)
            except (binascii.Error, ValueError):
                continue
            if self._hides(data, depth):
                return True
        return self._hides_b32(raw, depth)

    def _hides_b32(self, token: str, depth: int) -> bool:
        """Whether `token` (all base32 characters, any case) decodes to bytes holding a secret."""
        if not _BASE32.fullmatch(token):
            return False
        part = token[: len(token) - 1] if len(token) % 8 in (1, 3, 6) else token  # whole bytes only
        try:
            data = base64.b32decode(part + "=" * (-len(part) % 8), casefold=True)
        except (binascii.Error, ValueError):
            return False
        return self._hides(data, depth)

    def _hides_hex(self, token: str, depth: int) -> bool:
        return any(
            self._hides(bytes.fromhex(token[i : i + (len(token) - i) // 2 * 2]), depth) for i in (0, 1)
        )


def _escaped(forms: set[str]) -> set[str]:
    """`forms` and each level of JSON escaping of them, \\u escapes or not."""
    out, level = set(forms), set(forms)
    for _ in range(_ESCAPES):
        level = {json.dumps(f, ensure_ascii=a)[1:-1] for f in level for a in (False, True)}
        out |= level
    return out


def _code_unit_forms(value: str) -> set[str]:
    """`value` as a string of its UTF-16 code units: each byte a character (as a JS string
    from the bytes, or Latin-1), as Python writes the bytes (`s\\x00e…`), and every unit as
    a `\\uXXXX` escape; without the NUL at either end (it tells LE from BE)."""
    out = set()
    for codec in ("utf-16-le", "utf-16-be"):
        raw = value.encode(codec, "surrogatepass")
        out.add(raw.decode("latin-1").strip("\x00"))
        out.add(repr(raw)[2:-1].removeprefix("\\x00").removesuffix("\\x00"))
    units = value.encode("utf-16-be", "surrogatepass")
    codes = [int.from_bytes(units[i : i + 2], "big") for i in range(0, len(units), 2)]
    out |= {"".join(f"\\u{c:04x}" for c in codes), "".join(f"\\u{c:04X}" for c in codes)}
    return out


def _inflate(data: bytes) -> bytes | None:
    """A gzip or zlib stream's content, at most _INFLATE_MIN or 8 times its size (a bomb is cut
    there); None when it is no stream."""
    limit = max(_INFLATE_MIN, 8 * len(data))
    try:
        return zlib.decompressobj(wbits=47).decompress(data, limit)  # 47: gzip or zlib header
    except zlib.error:
        return None
