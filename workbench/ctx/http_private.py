"""Which private hosts a bench's real HTTP may reach: the address rule and `private_hosts=`.

Every real request — ctx.http.fetch on every platform, each redirect hop, each real
ctx.resources download — is resolved where the connection is made and every address it
resolves to is checked by `providers.hostnames.address_problem`, the rule Ekanos egress uses:
loopback, private, link-local, the metadata address, unique-local and every other non-public
range are refused, in whatever spelling the URL gave them (`2130706433`, `0x7f.1`, `[::1]`,
`[::ffff:127.0.0.1]`, a name whose DNS or the bench's hosts table says 127.0.0.1). Only the
addresses that were checked are connected to (providers/httpreal.py).

`private_hosts=` is the one way past it, for local testing, chosen by whoever opens the bench
(no tool or manifest reaches it). An entry names a host, never a pattern:

- a name (`localhost`, `api.test`): a URL with that host, compared as URLs are sent (lower
  case, IDNA, no trailing dot), may connect to the private addresses it resolves to;
- an address in any spelling (`127.0.0.1`, `[::1]`): that address may be connected to, whatever
  name led there (an IPv6 address carrying it, `::ffff:127.0.0.1`, is the same address);
- `host:port` (`[::1]:8080`): only that port; a bare host allows every port.

A request is refused when ANY address its host resolves to is refused: `localhost` answering
`::1` and `127.0.0.1` needs both allowed (an entry `localhost` does that).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .._errors import UsageError
from ..providers.hostnames import Address, address_problem, embedded_ipv4
from .http_urls import normal_host

OPTION = "private_hosts"
FLAG = "--private-host"
MAX_ENTRIES = 1_000
MAX_ENTRY_CHARS = 300
_DEFAULT_PORT = {"http": 80, "https": 443}

Guard = Callable[[str], "str | None"]


def _reached(addr: Address) -> Address:
    """The address a connection to `addr` reaches (an IPv6 address carrying IPv4: the IPv4)."""
    if isinstance(addr, ipaddress.IPv6Address):
        inner = embedded_ipv4(addr)
        if inner is not None:
            return inner
    return addr


def shown(host: str, port: int | None) -> str:
    """`host:port` as an entry is written (an IPv6 address in brackets)."""
    text = f"[{host}]" if ":" in host else host
    return text if port is None else f"{text}:{port}"


@dataclass(frozen=True)
class PrivateHost:
    """One entry: a host (name, or address in normal form) and its port (None: any)."""

    host: str
    port: int | None
    address: Address | None  # the address an address entry names (None: a name)

    @classmethod
    def parse(cls, entry: Any) -> PrivateHost:
        """An entry of private_hosts=, or E_USAGE saying what an entry is."""
        if not isinstance(entry, str) or not entry.strip() or len(entry) > MAX_ENTRY_CHARS:
            raise UsageError(
                f"{OPTION}: each entry is a host or host:port of at most {MAX_ENTRY_CHARS} "
                f"characters (e.g. 'localhost', '127.0.0.1:8080', '[::1]:8080'), got {entry!r:.80}",
                option=OPTION,
            )
        text = entry.strip()
        try:
            host, port = _split(text)
            host = normal_host(host)
        except ValueError as exc:
            raise UsageError(
                f"{OPTION}={text[:100]!r}: {exc}; an entry names one host, as 'localhost', "
                "'127.0.0.1:8080' or '[::1]:8080' (no scheme, path or wildcard)",
                option=OPTION,
            ) from None
        try:
            addr: Address | None = ipaddress.ip_address(host)
        except ValueError:
            addr = None
        return cls(host, port, _reached(addr) if addr is not None else None)

    def allows(self, host: str, port: int, addr: Address) -> bool:
        """Whether a URL of `host` (normal form) and `port` may connect to `addr`."""
        if self.port is not None and self.port != port:
            return False
        if self.address is not None:
            return self.address == _reached(addr)
        return self.host == host

    def __str__(self) -> str:
        return shown(self.host, self.port)


def _split(text: str) -> tuple[str, int | None]:
    """(host, port) of `host`, `host:port`, `[v6]` or `[v6]:port`; ValueError otherwise."""
    if "/" in text or "@" in text or "*" in text:
        raise ValueError("not a host")
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError("not a bracketed IPv6 address")
        return f"[{host}]", _port(rest[1:]) if rest else None
    if text.count(":") > 1:  # a bare IPv6 address: no port
        return text, None
    host, colon, port = text.partition(":")
    return host, _port(port) if colon else None


def _port(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"port {text[:10]!r} is not a port (1-65535)")
    return int(text)


class PrivateHosts:
    """A bench's private_hosts=: the entries, and the guard of each request."""

    def __init__(self, entries: Iterable[Any] | None = None) -> None:
        self.entries = tuple(PrivateHost.parse(e) for e in check(entries))

    def __repr__(self) -> str:
        return f"PrivateHosts({[str(e) for e in self.entries]})"

    def guard(self, host: str, port: int) -> Guard:
        """Why a request to `host` (normal form) on `port` may not connect to an address, or
        None when it may: public, or allowed by an entry. The reason names the option."""

        def why(addr: str) -> str | None:
            a = ipaddress.ip_address(addr.split("%", 1)[0])
            problem = address_problem(a)
            if problem is None or any(e.allows(host, port, a) for e in self.entries):
                return None
            return (
                f"{problem}; real HTTP reaches public addresses only: to reach it while testing, "
                f"open the bench with {OPTION}=[{shown(host, port)!r}] ({FLAG} {shown(host, port)})"
            )

        return why

    def guard_url(self, url: str) -> Guard:
        """The guard of a request to `url` as a transport sends it (a redirect's Location)."""
        parts = urlsplit(url)
        raw = parts.hostname or ""
        try:
            host = normal_host(raw)
        except ValueError:
            host = raw.lower()  # no entry can name it: every private address is refused
        try:
            port = parts.port or _DEFAULT_PORT.get(parts.scheme.lower(), 0)
        except ValueError:
            port = 0
        return self.guard(host, port)


def check(entries: Any) -> tuple[Any, ...]:
    """The option's value as a tuple of entries (each checked by PrivateHost.parse), or E_USAGE."""
    if entries is None:
        return ()
    if isinstance(entries, (str, bytes)) or not isinstance(entries, Iterable):
        raise UsageError(
            f"{OPTION}={entries!r:.80}: give a list of hosts, e.g. {OPTION}=['127.0.0.1:8080']",
            option=OPTION,
        )
    out = tuple(entries)
    if len(out) > MAX_ENTRIES:
        raise UsageError(f"{OPTION}: at most {MAX_ENTRIES:,} entries", option=OPTION)
    return out


def check_option(value: Any) -> None:
    """Option.check of private_hosts=: every entry parses (E_USAGE naming the bad one)."""
    PrivateHosts(value)
