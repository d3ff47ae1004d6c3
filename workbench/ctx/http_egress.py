"""K6: which URLs an Ekanos integration's `ctx.fetch` may reach — https to a host of its
`egress` (`api.acme.example`, or `*.acme.example` for subdomains), port 443 only.

The SDK's createMockContext applies the same rule (sdk/egress.ts), and both are checked against
one table (sdk/egress_cases.json): a URL that two parsers could read differently (backslashes,
whitespace, `https:host` without slashes, userinfo, percent-escapes in the host) is denied
before it is parsed; the host is compared as the WHATWG URL parser gives it (lower case,
punycode, a trailing dot kept: `api.acme.example.` is another name); IP literals never match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_START = re.compile(r"https://[^/\\]", re.IGNORECASE)
_BAD = re.compile(r"[\\\s\x00-\x1f\x7f]")
_IP = re.compile(r"[0-9.]+|0x[0-9a-f.x]*", re.IGNORECASE)


def egress_host(url: str) -> tuple[str | None, str]:
    """(the host a fetch to `url` would reach, "") or (None, why the URL is not allowed)."""
    if not _START.match(url):
        return None, "only https:// URLs may be fetched"
    if _BAD.search(url):
        return None, "the URL has a backslash, whitespace or a control character"
    authority = re.split(r"[/?#]", url[8:], maxsplit=1)[0]
    if "@" in authority:
        return None, "URLs with credentials (user@host) are not allowed"
    if "%" in authority:
        return None, "the host has percent-escapes"
    if "[" in authority or "]" in authority:  # an IP literal, or a bracket a parser reads as one
        return None, "IP literals are not host names"
    host, colon, port = authority.partition(":")
    if colon and port not in ("", "443"):
        return None, f"port {port[:10]} is not allowed (egress is https on port 443)"
    host = host.lower()
    if not host.isascii():
        try:
            import idna

            host = idna.encode(host, uts46=True).decode("ascii")
        except (ImportError, ValueError, UnicodeError):
            return None, "the host is not a valid international name"
    if not host:
        return None, "the URL has no host"
    return host, ""


def host_allowed(egress: Iterable[str], host: str) -> bool:
    """Whether `host` (as egress_host gives it) is one of `egress` or under a `*.` entry."""
    if _IP.fullmatch(host):
        return False  # IP literals (a URL parser reads 2130706433 and 0x7f.1 as addresses)
    for entry in egress:
        e = entry.lower()
        if e.startswith("*.") and host.endswith(e[1:]) and len(host) > len(e) - 1:
            return True
        if host == e:
            return True
    return False


def egress_problem(egress: Iterable[str], url: str) -> str | None:
    """Why `url` may not be fetched under `egress`, or None when it may."""
    host, why = egress_host(url)
    if host is None:
        return why
    egress = tuple(egress)
    if not host_allowed(egress, host):
        return f"{host} is not in its egress ({', '.join(egress) or 'none'})"
    return None
