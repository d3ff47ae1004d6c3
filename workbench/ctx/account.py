"""ctx.storage.account (K6, Ekanos integrations): the account's records, by key.

`get(key)` returns the stored record `{key, data, updatedAt}` or null: the seed's tool reads
`saved.data.latitude`, so the value is under `data` (createMockContext is given bare values and
wraps them the same way). `set(key, data)` stores any JSON value; when the integration declares
`storage.account` schemas, the key must be one of them and the value must match its schema
(E_INVALID_ARGUMENT / E_SCHEMA naming the key). Where the seed is silent, the workbench's
reading: keys are exact (no patterns), 1–200 characters (Limits.account_key_chars); `updatedAt` is ISO 8601 UTC.

Records live in the data store's kv table under `account:<key>` (in memory for mock storage,
in the state SQLite file for real), so they are committed or rolled back with the call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from .._json import to_json
from .spec import CapabilitySpec, Flag, Option, View
from .state_store import KV
from .store_pins import ACCOUNT_IMPL, ACCOUNT_PREFIX

if TYPE_CHECKING:
    from ..gem import Manifest
    from ..platforms import Limits, Profile
    from ._session import CallSession

PREFIX = ACCOUNT_PREFIX  # the kv part's pins read records under it (ctx/store_pins.py)


def _key(method: str, key: Any, most: int) -> str:
    if not isinstance(key, str) or not key or len(key) > most:
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"{method}(key): key is a string of 1 to {most} characters, got {type(key).__name__}"
            + (f" of {len(key)}" if isinstance(key, str) else ""),
            field="key",
        )
    return key


def record(key: str, text: str) -> dict[str, Any]:
    """The record a tool gets from what the store holds."""
    stored = json.loads(text)
    return {"key": key, "data": stored["data"], "updatedAt": stored["updatedAt"]}


def stored(data: Any, *, now: Callable[[], float] = time.time) -> str:
    """What the store holds for `data` (JSON), stamped `now()` (the bench's clock)."""
    now_s = now()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now_s)) + f".{int(now_s % 1 * 1000):03d}Z"
    return json.dumps({"data": data, "updatedAt": stamp}, ensure_ascii=False, separators=(",", ":"))


class Account:
    """ctx.storage.account for one call."""

    def __init__(self, session: CallSession) -> None:
        self.s = session

    def get(self, key: Any) -> dict[str, Any] | None:
        key = _key("storage.account.get", key, self.s.limits.account_key_chars)
        self.s.flush()
        text = self.s.providers.store.kv_get(PREFIX + key)
        return None if text is None else record(key, text)

    def set(self, key: Any, data: Any = None) -> None:
        self.s.attempt("storage.account.set")  # D4: the attempt, even one refused below
        key, value = checked(key, data, self.s.manifest, self.s.profile, self.s.limits)
        self.s.writing("storage.account.set")
        self.s.flush()
        self.s.providers.store.kv_set(PREFIX + key, stored(value, now=self.s.providers.now))


def checked(key: Any, data: Any, manifest: Manifest, profile: Profile, limits: Limits) -> tuple[str, Any]:
    """(key, data as JSON) as `set` stores them, or its coded error: the key's bounds, a JSON
    value within the limits, the integration's storage schema (also for open's fixtures)."""
    key = _key("storage.account.set", key, limits.account_key_chars)
    value, err = to_json(data, max_chars=limits.sql_value_bytes // 2, max_depth=limits.json_depth)
    if err is not None:
        raise WorkbenchError(
            err.code if err.code == "E_TOO_LARGE" else "E_INVALID_ARGUMENT",
            f"storage.account.set({key!r}, data): {err.message}",
            field="data",
            key=key,
        )
    if profile.check_stored is not None:
        profile.check_stored(manifest, "account", key, value, limits.json_depth)
    return key, value


#: ctx.storage.account as a unit (K7)
SPEC = CapabilitySpec(
    impl=ACCOUNT_IMPL,
    state=(KV,),  # its records live in kv
    title="ctx.storage.account",
    implementation=Account,
    provider_kinds=("storage",),  # over the data store's kv
    options=(
        Option(
            "account_storage",
            "records {key: value} stored at open, checked against the integration's storage schemas",
            type="Mapping[str, Any] | None",
            flags=(
                Flag("--account-storage", how="json", metavar="FILE", help="a JSON file of account records"),
            ),
        ),
    ),
    views=(View("account_storage", "the account's stored records"),),
)
