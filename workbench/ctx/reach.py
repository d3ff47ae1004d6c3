"""What a bench lets its tools reach outside it: the addresses send_email may mail (allowed
recipients), the hosts a request may go to (a credential's hosts, an integration's egress).
The doctor draws its inputs from these (`doctor/seeds.py`): drawn at random, an address or a
host is refused before the tool does its real work, and what it does after is never searched.
And what must not get out: whether a value holds a secret the bench knows (`holds_secret`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Reach", "holds_secret", "reach"]

MAX = 50  # of each list


@dataclass
class Reach:
    """Addresses (a pattern `*@x.example` as `team@x.example`) and host names a bench allows."""

    addresses: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)


def _address(pattern: str) -> str:
    return pattern.replace("*", "team", 1) if pattern.startswith("*") else pattern


def _host(rule: Any) -> str:
    text = str(rule)
    return "api." + text[2:] if text.startswith("*.") else text


def reach(bench: Any) -> Reach:
    """What `bench` allows now (its backends are read here, in the ctx layer)."""
    out = Reach()
    backends = bench.providers.backends
    for pattern in getattr(backends.get("tools"), "recipients", ()) or ():
        if isinstance(pattern, str) and _address(pattern) not in out.addresses:
            out.addresses.append(_address(pattern))
    hosts: list[str] = []
    http = backends.get("http")
    for credential in (getattr(http, "credentials", None) or {}).values():
        hosts += [_host(h) for h in getattr(credential, "hosts", ())]
    manifest = getattr(bench, "manifest", None)
    for tool in getattr(manifest, "tools", {}).values():
        lists = bench.profile.grants(manifest, tool).lists
        hosts += [_host(h) for h in lists.get("egress", ()) if isinstance(h, str)]
    out.hosts = list(dict.fromkeys(hosts))[:MAX]
    out.addresses = out.addresses[:MAX]
    return out


def holds_secret(providers: Any, value: Any) -> bool:
    """Whether `value` (as JSON text) holds a secret's value the bench knows (its credentials',
    ctx.secrets'), which must not leave it: what the doctor calls a leak (K6/SEC4)."""
    from .standins import mask_of

    mask = mask_of(providers)
    if mask is None:
        return False
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return False
    return mask(text) != text
