"""What a pin and a bundle ask of the bench's outside-facing capabilities, by narrow
functions (no feature reaches `providers.backends` by a capability's name): the one mask of
the secrets the bench has seen, where a credential may go, which secrets are set (a replay
gives stand-ins for them), HTTP served from a recording, and no recipient allowed."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..platforms import Profile
    from .stores import Providers

_HTTP = "http"  # the capability whose backend is the bench's HTTP transport (ctx/http.py)

__all__ = [
    "credential_reach",
    "http_exchange",
    "mask_of",
    "outside_of",
    "secrets_set",
    "serve_http",
]


def mask_of(providers: Providers) -> Callable[[str], str] | None:
    """The mask of every secret the bench has seen (ctx/masking.py, the HTTP state's), or
    None when it has seen none (nothing to mask)."""
    http = providers.backends.get("http")
    if http is None or not http.has_secrets:
        return None
    mask: Callable[[str], str] = http.mask
    return mask


def credential_reach(providers: Providers, connection: str) -> dict[str, Any] | None:
    """Where the user's credential of `connection` may go ({hosts, paths?}; never its value),
    or None when there is none: a replay gives a stand-in credential the same reach."""
    http = providers.backends.get("http")
    cred = http.credential(connection) if http is not None else None
    if cred is None:
        return None
    return {"hosts": [str(h) for h in cred.hosts], **({"paths": list(cred.paths)} if cred.paths else {})}


def secrets_set(providers: Providers, names: Iterable[str]) -> list[str]:
    """Which of `names` the bench's secret store has a value for, sorted (never the values)."""
    store = providers.backends.get("secrets")
    if store is None:
        return []
    return sorted(n for n in set(names) if store.get(n) is not None)


def serve_http(providers: Providers, exchanges: list[dict[str, Any]], *, where: str) -> Any:
    """Answer the bench's HTTP from `exchanges` (a case's or a bundle's call's "http" list),
    below the credential rules, which still run; the `Served` (its `unused()`), or None when
    the bench has no HTTP capability."""
    from ..providers.httpcassette import Served

    http = providers.backends.get("http")
    if http is None:
        return None
    served = Served(exchanges, where=where)
    served.mask = http.mask  # the recording holds URLs and bodies masked: matched masked
    http.transport = served
    return served


def http_exchange(profile: Profile, method: str) -> bool:
    """Whether a ctx call of `method` is an HTTP request the bench's transport answers
    (Notochord's ctx.http.fetch, Ekanos' ctx.fetch): a pin keeps its exchange, a replay
    serves it back."""
    from .before import part_of

    return part_of(profile, method) == _HTTP


def outside_of(profile: Profile) -> Callable[[str], bool]:
    """`method` -> whether a ctx call of it reaches outside the bench's state: an effect its
    capability declares (mail sent, a POST), a method whose answers a replay serves back (a
    mailbox page, a built-in), or an HTTP exchange. What a pinned call's replay compares."""
    from .served import replayed
    from .state import effects_of

    effects = set(effects_of(profile))
    return lambda method: method in effects or replayed(profile, method) or http_exchange(profile, method)
