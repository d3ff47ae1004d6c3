"""ctx.secrets.get(name) (K6, Ekanos integrations): the account's secret, a string, or null
when it is not configured (the seed's "expected failure" path).

The values come from the bench's secret store (`providers/secrets.py`: `open(secrets=…)`, the
environment or the system keyring). They are masked wherever the workbench shows text it did
not choose to show: the trace (this method's result is never kept), the HTTP log, error
messages, logger rows and console logs; as written and encoded (base64, hex, percent-escapes:
ctx/masking.py). Every value the store can list (given ones, the environment's) is masked from
the bench's open, so a copy a tool parked in account storage stays masked in a later bench; a
keyring value, which cannot be listed, from when a tool reads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from . import state_check as check
from .parts import Refusal, StateContext, StatePart, json_changes
from .spec import CapabilitySpec, Flag, OpenContext, Option

if TYPE_CHECKING:
    from ._session import CallSession

MAX_NAME_CHARS = 200
STAND_IN = "replayed-secret-{name}"  # a secret's value wherever the bench's setup is written


class Secrets:
    """ctx.secrets for one call."""

    def __init__(self, session: CallSession) -> None:
        self.s = session

    def get(self, name: Any) -> str | None:
        if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS:
            raise WorkbenchError(
                "E_INVALID_ARGUMENT",
                f"secrets.get(name): name is a string of 1 to {MAX_NAME_CHARS} characters",
                field="name",
            )
        store = self.s.providers.backends.get("secrets")
        value = None if store is None else store.get(name)
        if value is not None and self.s.http is not None:
            self.s.http.remember_secret(value)
        return value


def _backend(opening: OpenContext) -> Any:
    """ctx.secrets' backend: the SecretStore open(secrets=) names; its known values are masked
    by the bench's HTTP state (K6: whoever reads them), made before it in registry order."""
    from ..providers.secrets import make_secrets

    store = make_secrets(opening.options.get("secrets"), opening.manifest.id)
    http = opening.backends.get("http")
    if http is not None:
        for value in getattr(store, "known", list)():
            http.remember_secret(value)
    return store


# -- its part of the bench's setup: which secrets the bench has, never their values ---------
def _names(cx: StateContext) -> list[str]:
    """The secrets the bench's store can list (a keyring cannot: none of its)."""
    values = getattr(cx.backend, "values", None)
    return sorted(n for n, v in values.items() if v is not None) if isinstance(values, dict) else []


def _dump(cx: StateContext) -> dict[str, str]:
    return {name: STAND_IN.format(name=name) for name in _names(cx)}


def _put(cx: StateContext, value: Any, bad: Refusal) -> None:
    """The secrets `value` names, each with the value it gives (a stand-in in a bench's
    setup), replacing the bench's store; every value is masked as the store's are."""
    from ..providers.secrets import MAX_SECRET_CHARS, DictSecrets

    given = check.items(value, bad, "secrets", dict, most=10_000)
    for name, v in given.items():
        check.name(name, bad, "secrets", most=MAX_NAME_CHARS)
        check.name(v, bad, f"secrets.{name}", most=MAX_SECRET_CHARS)
    store = DictSecrets(given)
    cx.providers.backends[SPEC.impl] = store
    http = cx.providers.backends.get("http")
    for v in store.known():
        if http is not None:
            http.remember_secret(v)


def _snapshot(cx: StateContext) -> Any:
    values = getattr(cx.backend, "values", None)
    return (cx.backend, dict(values) if isinstance(values, dict) else None)


def _restore(cx: StateContext, snap: Any) -> None:
    store, values = snap  # the real values: kept in memory only, never dumped
    if store is not None and values is not None:
        store.values = dict(values)
    cx.providers.backends[SPEC.impl] = store


#: which secrets the bench has (stand-ins); a snapshot keeps the store and its real values
PART = StatePart(
    "secrets",
    dump=_dump,
    put=_put,
    role="setup",
    snapshot=_snapshot,
    restore=_restore,
    diff=lambda a, b: json_changes("secret", "secrets", _shown(a), _shown(b)),
    kind="secret",
)


def _shown(snap: Any) -> dict[str, str]:
    values = snap[1] or {}
    return {n: STAND_IN.format(name=n) for n, v in values.items() if v is not None}


#: ctx.secrets as a unit (K6)
SPEC = CapabilitySpec(
    impl="secrets",
    title="ctx.secrets",
    implementation=Secrets,
    backend=_backend,
    state=(PART,),
    options=(
        Option(
            "secrets",
            "{name: value} (or createMockContext's {account: {...}}), or 'local': env "
            "GEM_WORKBENCH_SECRET_<SLUG>__<NAME>, then the keyring",
            type="Mapping[str, str] | str | None",
            default_doc="none",
            more="the user's secrets are read only for a folder they are asked for (an integration "
            "names its slug itself); every secret's value is masked wherever it is shown (K6)",
            flags=(
                Flag("--secret", how="pair", metavar="NAME=VALUE", help="a secret (repeatable)"),
                Flag("--secrets", how="json", metavar="FILE", help="a JSON file of secrets {name: value}"),
                Flag(
                    "--local-secrets",
                    how="const",
                    const="local",
                    help="the user's secrets: env, then the keyring",
                ),
            ),
        ),
    ),
)
