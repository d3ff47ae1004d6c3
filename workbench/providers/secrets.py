"""Secrets: the user's keyring (connections' credentials, SEC4) and an Ekanos integration's
secrets (K6 `ctx.secrets.get`). Plain lookups, like the other providers; masking and argument
checks are the ctx layer's (ctx/secrets.py, ctx/http_credentials.py).

    open(folder, secrets={"api_key": "…"})   # DictSecrets: the mock, as createMockContext's
    open(folder, secrets="local")            # LocalSecrets: env GEM_WORKBENCH_SECRET_<SLUG>__<NAME>,
                                             # then the keyring (service gem-workbench, user <slug>:<name>)
    open(folder)                             # none: every secret is "not configured"

The user's own secrets are read only when asked for, folder by folder: an integration names its
slug itself, so any folder could claim another's and read its secrets (and send them to its own
egress hosts). A secret set nowhere is null: the platform's "not configured" (the seed's
expected failure).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, Protocol

from .._errors import UsageError

KEYRING_SERVICE = "gem-workbench"
MAX_SECRET_CHARS = 64 * 1024


def from_keyring(username: str) -> str | None:
    """The secret stored under service 'gem-workbench' and `username`, or None."""
    try:
        import keyring  # optional: only when installed

        found = keyring.get_password(KEYRING_SERVICE, username)
    except Exception:  # not installed, or no usable keyring backend
        return None
    return str(found) if found else None


class SecretStore(Protocol):
    """`get(name)`; a store may also have `known()`, the values it can list, which the bench
    masks from its open (K6: a secret a tool stored and a later bench reads back is still
    masked, though no ctx.secrets.get handed it out there)."""

    kind: str

    def get(self, name: str) -> str | None: ...


class DictSecrets:
    """Secrets given to `open(secrets={name: value})` (or createMockContext's `{account: {…}}`)."""

    kind = "mock"

    def __init__(self, values: Mapping[str, Any]) -> None:
        if set(values) == {"account"} and isinstance(values["account"], Mapping):
            values = values["account"]  # createMockContext's shape, accepted as is
        for name, value in values.items():
            if not isinstance(name, str) or not (value is None or isinstance(value, str)):
                raise UsageError(f"secrets={{{name!r}: …}}: give secret names and string values (or None)")
            if value is not None and len(value) > MAX_SECRET_CHARS:
                raise UsageError(f"secrets[{name!r}]: over {MAX_SECRET_CHARS:,} characters")
        self.values = dict(values)

    def get(self, name: str) -> str | None:
        return self.values.get(name)

    def known(self) -> list[str]:
        """Every value it holds (masked from the bench's open, whoever reads them)."""
        return [v for v in self.values.values() if v]


def env_name(slug: str, name: str) -> str:
    """GEM_WORKBENCH_SECRET_<SLUG>__<NAME>: upper case, anything not a letter or digit as `_`;
    `__` between slug and name (a slug has no `_`), so acme + payments_key and acme-payments +
    key are two variables."""

    def part(text: str) -> str:
        return re.sub(r"[^A-Z0-9]", "_", text.upper())

    return f"GEM_WORKBENCH_SECRET_{part(slug)}__{part(name)}"


class LocalSecrets:
    """The user's own: the environment, then the keyring (as connections' credentials)."""

    kind = "real"

    def __init__(self, slug: str, env: Mapping[str, str] | None = None) -> None:
        self.slug, self.env = slug, os.environ if env is None else env

    def get(self, name: str) -> str | None:
        value = self.env.get(env_name(self.slug, name)) or from_keyring(f"{self.slug}:{name}")
        return value[:MAX_SECRET_CHARS] if value else None

    def known(self) -> list[str]:
        """The values of its environment variables (a keyring cannot be listed: a keyring
        secret is masked once a tool reads it)."""
        prefix = env_name(self.slug, "")
        return [v[:MAX_SECRET_CHARS] for k, v in self.env.items() if k.startswith(prefix) and v]


def make_secrets(spec: Any, slug: str) -> SecretStore:
    """`open(secrets=spec)`: {name: value}, "local" (the environment, then the keyring), None
    (none), or a store with `get(name)`."""
    if spec is None:
        return DictSecrets({})
    if spec == "local":
        return LocalSecrets(slug)
    if isinstance(spec, Mapping):
        return DictSecrets(spec)
    if hasattr(spec, "get") and not isinstance(spec, str):
        store: SecretStore = spec
        return store
    raise UsageError(
        f"secrets={spec!r}: give {{name: value}}, 'local' (the environment, then the keyring) or None"
    )
