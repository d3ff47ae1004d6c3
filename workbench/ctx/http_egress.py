"""K6: which URLs an Ekanos integration's `ctx.fetch` may reach — https to a host of its
`egress` (`api.acme.example`, or `*.acme.example` for subdomains), port 443 only.

The SDK's createMockContext applies the same rule (sdk/egress.ts), and both are checked against
one table (sdk/egress_cases.json): a URL that two parsers could read differently (backslashes,
whitespace, `https:host` without slashes, userinfo, percent-escapes in the host) is denied
before it is parsed; the host is compared as the WHATWG URL parser gives it (lower case,
punycode, fullwidth digits and dots mapped, a trailing dot kept: `api.acme.example.` is another
name). An address never matches, however it is spelled: `127.0.0.0x1`, `0x7f.1`, `2130706433`,
`127.0.0.1.` and 127.0.0.1 in fullwidth digits are read as the resolver reads them (providers/hostnames.py) and
refused as addresses, and so is a name of this machine (`localhost`, `*.localhost`, …) should a
description carry one. What a name RESOLVES to is checked where the connection is made: the
request carries `address_problem` as its guard (providers/httpreal.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..providers.hostnames import address_problem, ascii_host, ipv4_reading, name_problem

_START = re.compile(r"https://[^/\\]", re.IGNORECASE)
_BAD = re.compile(r"[\\\s\x00-\x1f\x7f]")


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
    try:
        host = ascii_host(host)
    except ValueError:
        return None, "the host is not a valid international name"
    if not host:
        return None, "the URL has no host"
    try:
        addr = ipv4_reading(host)
    except ValueError as exc:
        return None, str(exc)
    if addr is not None:  # 127.0.0.0x1, 0x7f.1, 2130706433: what a resolver would connect to
        why = address_problem(addr)
        return None, f"{host} is the IPv4 address {addr}{f', {why}' if why else ''}; egress lists host names"
    return host, ""


def host_allowed(egress: Iterable[str], host: str) -> bool:
    """Whether `host` (as egress_host gives it) is one of `egress` or under a `*.` entry."""
    if ":" in host or host.startswith("[") or name_problem(host.rstrip(".")):
        return False  # an address, or this machine's name: never, whatever a description says
    try:
        if ipv4_reading(host) is not None:
            return False
    except ValueError:
        return False
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
