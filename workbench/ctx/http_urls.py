"""URLs for ctx.http.fetch (N10, SEC4): one normal form, checked and sent; host and path rules.

- The URL is normalised before it is checked and the normalised URL is what is sent: dot
  segments removed (`/v1/../admin` is `/admin`; `%2e%2e` counts as `..`), `\\` read as `/`
  as browsers do, fragments dropped; URLs with `user:pass@` are refused (as `fetch` does); a
  path is granted only when it matches both as sent and fully percent-decoded (`%2f` is a
  `/` for a server that decodes it).
- `..;` counts as `..` for the check: a segment whose part before `;` is `.`/`..` once
  percent-decoded (`/v1/..;/admin`, `/v1/%2e%2e;/admin`) is a dot-segment, as Tomcat, Jetty and
  Spring resolve it, so the path is checked as `/admin` (the URL is sent as given, bare). A
  path with a control character once percent-decoded (`%00`, `%0a`, …) is refused
  (E_INVALID_ARGUMENT; a redirect there is E_HTTP "bad redirect").
- A host rule is `api.example` (port 443 only), `api.example:8443`, or `*.example` (any
  subdomain, not the apex); names are compared lower-case, IDNA-encoded, without a trailing
  dot; a host a resolver reads as an IPv4 address (`127.1`, `0x7f.1`, `2130706433`) is that
  address in dotted form, checked and sent so. A path rule matches whole segments: `/v1/`
  allows `/v1/x` (not `/v1`), `/api` allows `/api` and `/api/x` but never `/api-evil`.
- A URL is at most `Limits.url_chars` characters, as given (checked before anything parses
  it: urllib's urlsplit keeps its last 128 URLs process-wide) and as sent percent-encoded.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from ..providers.hostnames import ascii_host, ipv4_reading

# -- URLs: one normal form, checked and sent ---------------------------------------------------
_DEFAULT_PORT = {"http": 80, "https": 443}
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DOT, _DOTDOT = {".", "%2e"}, {"..", ".%2e", "%2e.", "%2e%2e"}
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
_QUERY_SAFE = _PATH_SAFE + "?"


def normal_host(host: str) -> str:
    """`host` lower-case, IDNA-encoded, without a trailing dot; ValueError when not a host."""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:  # an IPv6 literal (urlsplit strips its brackets)
        return str(ipaddress.IPv6Address(host.split("%")[0]))
    host = ascii_host(host)
    if host.endswith("."):
        host = host[:-1]
    v4 = ipv4_reading(host) if host else None  # 0x7f.1 is sent as 127.0.0.1: one reading
    if v4 is not None:
        return str(v4)
    if not host or len(host) > 253 or not all(_LABEL.fullmatch(x) for x in host.split(".")):
        raise ValueError(f"{host!r} is not a host name")
    return host


def _remove_dots(path: str, matrix: bool = False) -> str:
    """RFC 3986 dot-segment removal, `%2e` read as `.` as the URL standard does; with `matrix`,
    a segment whose part before `;` is a dot-segment counts as one (`..;x` is `..`, as Java
    servers read path parameters)."""
    parts = path.split("/")[1:]
    out: list[str] = []
    for i, seg in enumerate(parts):
        low = seg.lower()
        if matrix:
            low = low.split(";", 1)[0]
        if low in _DOTDOT or low in _DOT:
            if low in _DOTDOT and out:
                out.pop()
            if i == len(parts) - 1:
                out.append("")  # "/a/b/.." is "/a/"
        else:
            out.append(seg)
    return "/" + "/".join(out)


@dataclass(frozen=True)
class Url:
    """A normalised http(s) URL: what the checks see is what goes on the wire."""

    scheme: str
    host: str
    port: int
    path: str
    query: str

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)

    @property
    def text(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if _DEFAULT_PORT[self.scheme] == self.port else f":{self.port}"
        return f"{self.scheme}://{host}{port}{self.path}" + (f"?{self.query}" if self.query else "")

    def segments(self) -> list[list[str]]:
        """The path as segments twice: as sent (each segment decoded on its own), and fully
        percent-decoded first (`\\` and a decoded `/` split too, dots resolved again), for
        servers that decode before routing."""
        decoded = self.path
        for _ in range(4):  # "%252e" is "%2e" once decoded, "." twice
            again = unquote(decoded)
            if again == decoded:
                break
            decoded = again
        decoded = _remove_dots(decoded.replace("\\", "/"), matrix=True)
        return [[unquote(s) for s in self.path.split("/")[1:]], decoded.split("/")[1:]]


class UrlTooLong(ValueError):
    """A URL over Limits.url_chars (its message names the limit)."""


def check_length(text: str, max_chars: int, sent: bool = False) -> None:
    """UrlTooLong when `text` is over `max_chars`: call it before parsing a URL."""
    if len(text) > max_chars:
        how = " percent-encoded as it would be sent" if sent else ""
        raise UrlTooLong(f"it is {len(text):,} characters{how}, over the {max_chars:,} of Limits.url_chars")


def parse_url(text: str, max_chars: int | None = None) -> Url:
    """Normalise an absolute http(s) URL; ValueError saying what is wrong (UrlTooLong when it
    is over `max_chars` as given or as sent)."""
    if max_chars is not None:
        check_length(text, max_chars)
    text = text.strip(" ")
    if _CONTROL.search(text):
        raise ValueError("it contains a control character")
    cut = min((i for i in (text.find("?"), text.find("#")) if i >= 0), default=len(text))
    text = text[:cut].replace("\\", "/") + text[cut:]  # a browser reads "\" as "/" there
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORT:
        raise ValueError("it is not an http(s) URL")
    if "@" in parts.netloc:
        raise ValueError("it has user:password@ (fetch refuses credentials in URLs)")
    if not parts.hostname or "%" in parts.netloc:
        raise ValueError("it has no valid host")
    host = normal_host(parts.hostname)
    port = parts.port or _DEFAULT_PORT[scheme]  # ValueError when not a port
    path = _remove_dots(quote(parts.path or "/", safe=_PATH_SAFE))
    decoded = path
    for _ in range(4):  # as Url.segments decodes it
        decoded = unquote(decoded)
        if _CONTROL.search(decoded):
            raise ValueError("its path contains a control character once percent-decoded (%00-%1f, %7f)")
    url = Url(scheme, host, port, path, quote(parts.query, safe=_QUERY_SAFE))
    if max_chars is not None:  # "é" is sent as 6 characters: the transport parses what is sent
        check_length(url.text, max_chars, sent=True)
    return url


# -- host and path rules (the user's credential entry and the manifest's grant) ----------------
@dataclass(frozen=True)
class HostRule:
    """`api.example` (port 443), `api.example:8443`, `*.example` (subdomains only)."""

    host: str
    port: int
    wildcard: bool = False

    @classmethod
    def parse(cls, text: Any) -> HostRule:
        if not isinstance(text, str) or not text or any(c in text for c in "/?#@\\ "):
            raise ValueError(f"{text!r} is not a host (give host or host:port)")
        parts = urlsplit("//" + text)
        wild = (parts.hostname or "").startswith("*.")
        try:
            host = normal_host((parts.hostname or "")[2:] if wild else parts.hostname or "")
            port = parts.port or 443
        except ValueError:
            raise ValueError(f"{text!r} is not a host (give host or host:port)") from None
        return cls(host, port, wild)

    def allows(self, url: Url) -> bool:
        if url.port != self.port:
            return False
        return url.host.endswith("." + self.host) if self.wildcard else url.host == self.host

    def __str__(self) -> str:
        host = ("*." if self.wildcard else "") + (f"[{self.host}]" if ":" in self.host else self.host)
        return host if self.port == 443 else f"{host}:{self.port}"


def path_rule(text: Any) -> tuple[list[str], bool]:
    if not isinstance(text, str) or not text.startswith("/"):
        raise ValueError(f"{text!r} is not a path (it starts with '/')")
    segs = Url("https", "x", 443, _remove_dots(unquote(text)), "").path.split("/")[1:]
    return (segs[:-1], True) if segs[-1] == "" else (segs, False)


def path_allowed(url: Url, rules: Iterable[str]) -> bool:
    """Whether one rule matches whole segments of the path, as sent AND decoded."""
    compiled = []
    for text in rules:
        try:
            compiled.append(path_rule(text))
        except ValueError:
            continue  # a broken rule grants nothing
    for segs in url.segments():
        if not any(
            segs[: len(prefix)] == prefix and (not folder or len(segs) > len(prefix))
            for prefix, folder in compiled
        ):
            return False
    return True


def hosts_allowed(url: Url, rules: Iterable[Any]) -> bool:
    for r in rules:
        try:
            rule = r if isinstance(r, HostRule) else HostRule.parse(r)
        except ValueError:
            continue  # a broken rule grants nothing
        if rule.allows(url):
            return True
    return False
