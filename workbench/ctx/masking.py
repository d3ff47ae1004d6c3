"""Masking secrets (K6, SEC4) in the text the workbench shows: traces, the HTTP log, logs,
logger rows and errors.

A secret is masked as written and in the forms a tool carries it in: JSON-escaped, and inside
any token that DECODES to text containing it — base64 (standard or URL-safe, at any alignment,
so `"Basic " + btoa("user:" + secret)` and `btoa(secret + ":")` alike), percent-encoding (any
case, `+` for space, twice-encoded) and hex — up to two encodings deep. Such a token is masked
whole (`***`). Shorter secrets than MIN_CHARS are not masked: they would mask ordinary text.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import TYPE_CHECKING
from urllib.parse import unquote, unquote_plus

if TYPE_CHECKING:
    from .._errors import WorkbenchError
    from .http_credentials import HttpState

MASK = "***"
MIN_CHARS = 4
_ESCAPES = 3  # JSON in a JSON string in a JSON text (a kv value in a case file): escaped 3 deep
_DEPTH = 2  # base64 of JSON holding base64 of the secret: two decodings
# a token starts where no other token character (nor a backslash: JSON's \u00e9) comes before it
_B64 = re.compile(r"(?<![\\A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{6,}={0,2}")
_HEX = re.compile(r"(?<![\\0-9A-Za-z])[0-9A-Fa-f]{8,}(?![0-9A-Za-z])")
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
        forms, level = {value}, {value}
        for _ in range(_ESCAPES):  # each level of JSON escaping, \u escapes or not
            level = {json.dumps(f, ensure_ascii=a)[1:-1] for f in level for a in (False, True)}
            forms |= level
        self._forms |= forms
        self._longest_first = tuple(sorted(self._forms, key=len, reverse=True))
        # an escaped form inside decoded bytes too: base64 of a JSON text holding the secret
        self._needles |= {f.encode("utf-8", "surrogatepass") for f in forms}
        self._shortest = min(len(n) for n in self._needles)

    def mask(self, text: str) -> str:
        if not self._forms:
            return text
        for s in self._longest_first:
            text = text.replace(s, MASK)
        # a secret of n bytes is at least 4n/3 base64 characters: shorter tokens cannot hide one
        shortest = (4 * self._shortest) // 3
        text = _B64.sub(lambda m: self._masked_b64(m[0]) if len(m[0]) >= shortest else m[0], text)
        text = _HEX.sub(lambda m: MASK if self._hides_hex(m[0], 0) else m[0], text)
        return _PERCENT.sub(lambda m: MASK if self._hides_percent(m[0], 0) else m[0], text)

    def _hides(self, data: bytes, depth: int) -> bool:
        """Whether decoded bytes hold a secret, as written or encoded once more."""
        if any(n in data for n in self._needles):
            return True
        if depth >= _DEPTH or not data.isascii():
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
            or any(self._hides_percent(m[0], depth + 1) for m in _PERCENT.finditer(text))
        )

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
        return False

    def _hides_hex(self, token: str, depth: int) -> bool:
        return any(
            self._hides(bytes.fromhex(token[i : i + (len(token) - i) // 2 * 2]), depth) for i in (0, 1)
        )
