"""How a host spelling is read by the resolvers that matter, and which addresses are private.

A host goes through two readers before a connection is made: the WHATWG URL parser (Deno's
`new URL`) and the system resolver (`getaddrinfo`, which reads IPv4 as `inet_aton` does). Both
take far more than dotted quads: `127.1`, `0x7f.1`, `0177.0.0.1`, `2130706433`, `127.0.0.0x1`
and `127.0.0.1.` are all 127.0.0.1, and IPv6 carries IPv4 inside (`::ffff:127.0.0.1`,
`::ffff:7f00:1`, `::127.0.0.1`, 6to4, NAT64, Teredo). A rule that compares the spelling instead
of the address is a rule an attacker writes around, so `ipv4_reading` gives the address both
readers see, and `address_problem` unwraps IPv6 before saying whether an address is private.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import unquote

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

#: WHATWG's "ends in a number": a last label of digits, or 0x and hex digits (`0x` alone is 0)
NUMBERISH = re.compile(r"[0-9]+|0x[0-9a-f]*", re.IGNORECASE)
_METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_SIIT = ipaddress.ip_network("::ffff:0:0:0/96")  # RFC 2765's IPv4-translated ::ffff:0:a.b.c.d
#: ranges no public host is in that this Python's `is_global` still calls global
_NOT_PUBLIC = (
    (ipaddress.ip_network("fec0::/10"), "a site-local address (a private range, RFC 3879)"),
    (ipaddress.ip_network("192.0.0.0/24"), "an IETF protocol address (RFC 6890), not public"),
    (ipaddress.ip_network("3fff::/20"), "a documentation address (RFC 9637), not public"),
    (ipaddress.ip_network("5f00::/16"), "a segment-routing address (RFC 9602), not public"),
)
#: names every resolver keeps to this machine or its network (RFC 6761, 6762, 8375; /etc/hosts)
LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")
LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".home.arpa", ".localdomain")


def _number(part: str) -> int:
    """One IPv4 part as WHATWG and inet_aton read it: 0x hex, leading-0 octal, else decimal."""
    if part[:2].lower() == "0x":
        return int(part[2:] or "0", 16)
    if len(part) > 1 and part[0] == "0":
        return int(part[1:], 8)
    return int(part, 10)


def ipv4_reading(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address `host` (ASCII, lower case) is read as, or None when it is a name.

    ValueError when it ends in a number but is no address (`1.2.3.4.5`, `08.1`, `300.1`): the
    URL parser refuses such a host, and no rule should guess what a resolver makes of it."""
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()  # one trailing dot: "127.0.0.1." is the address too
    if not NUMBERISH.fullmatch(parts[-1]):
        return None
    try:
        if len(parts) > 4 or not all(NUMBERISH.fullmatch(p) for p in parts):
            raise ValueError
        *head, tail = (_number(p) for p in parts)
        if any(n > 255 for n in head) or tail >= 256 ** (4 - len(head)):
            raise ValueError
    except ValueError:
        raise ValueError(f"{host[:100]!r} ends in a number but is not an IPv4 address") from None
    return ipaddress.IPv4Address(sum(n << 8 * (3 - i) for i, n in enumerate(head)) + tail)


def ascii_host(host: str) -> str:
    """`host` lower case and IDNA-encoded as the URL parser maps it (UTS 46: fullwidth digits
    and dots, `。` and the like become ASCII); ValueError when it is no valid international name."""
    if not host.isascii():
        try:
            import idna

            host = idna.encode(host, uts46=True).decode("ascii")
        except (ImportError, ValueError, UnicodeError):
            raise ValueError(f"{host[:100]!r} is not a valid international host name") from None
    return host.lower()


def read_address(host: str) -> Address | None:
    """The address a URL's host as written (brackets, zone id, percent-escapes, any script) is
    to the URL parser and the resolver, or None when it is a name; ValueError when neither
    reads it."""
    host = unquote(host)
    if host.startswith("[") and host.endswith("]"):
        return ipaddress.IPv6Address(host[1:-1].split("%", 1)[0])
    return ipv4_reading(ascii_host(host))


def embedded_ipv4(addr: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one reaches: mapped, translated (SIIT), compatible, 6to4, NAT64
    or Teredo."""
    if addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    if addr.sixtofour is not None:
        return addr.sixtofour
    if addr.teredo is not None:
        return addr.teredo[1]
    value = int(addr)
    if addr in _SIIT or any(addr in net for net in _NAT64):
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if value >> 32 == 0 and value > 1:  # ::a.b.c.d, "IPv4-compatible" (deprecated, still routed)
        return ipaddress.IPv4Address(value)
    return None


def address_problem(addr: str | Address) -> str | None:
    """Why an integration may not reach `addr` (loopback, link-local, the metadata address,
    private or unique-local, unspecified, multicast, any other non-public range), or None."""
    a = ipaddress.ip_address(addr.split("%", 1)[0] if isinstance(addr, str) else addr)
    if isinstance(a, ipaddress.IPv6Address) and (inner := embedded_ipv4(a)) is not None:
        why = address_problem(inner)
        return f"it carries {inner}, {why}" if why else None
    for test, why in (
        (a.is_unspecified, "the unspecified address"),
        (a.is_loopback, "a loopback address (this machine)"),
        (a in _METADATA, "the cloud metadata address"),
        (a.is_link_local, "a link-local address"),
        (a.is_multicast, "a multicast address"),
        (a.is_private, "a private address"),
        *((a in net, why) for net, why in _NOT_PUBLIC if net.version == a.version),
        (not a.is_global, "not a public address"),
    ):
        if test:
            return why
    return None


def name_problem(name: str) -> str | None:
    """Why a host name (lower case, without a trailing dot) is this machine's or the local
    network's whatever DNS says (`localhost`, `*.localhost`, `*.local`, …), or None."""
    if name in LOCAL_NAMES or name.endswith(LOCAL_SUFFIXES):
        return "a name of this machine or its local network"
    return None
