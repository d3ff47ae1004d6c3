"""K6: what `ctx.storage.account.set(key, data)` may store when the integration declares
`storage: {account: {<key>: <JSON Schema>}}` — a declared key, and a value its schema accepts.
With no `storage.account`, any key and JSON value (the seed shows storage declared, and
createMockContext's `storageSchemas`, but not what an undeclared integration may do)."""

from __future__ import annotations

from typing import Any

from ..._errors import WorkbenchError
from ...gem.folder import clip
from ...gem.model import Manifest
from ...gem.rules import SchemaRules
from ..base import Limits

STORAGE_RULES = SchemaRules(null_is_absent=False, schema_key="declared schema")
MAX_KEY_CHARS = Limits().account_key_chars  # of a declared key (a profile's limits may differ)


def _validators(manifest: Manifest) -> dict[str, Any]:
    cache: dict[str, Any] = manifest.__dict__.setdefault("_storage_validators", {})
    return cache


def check_stored(manifest: Manifest, scope: str, key: str, value: Any, max_depth: int) -> None:
    """Raise E_INVALID_ARGUMENT (undeclared key) or E_SCHEMA (value) naming the key."""
    from ...gem.schema import InputValidator, check_input

    declared = (manifest.raw.get("storage") or {}).get(scope)
    if not isinstance(declared, dict):
        return
    schema = declared.get(key)
    if not isinstance(schema, dict):
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"storage.{scope}.set({clip(repr(key), 80)}): the integration's storage declares no such "
            f"key (declared: {', '.join(map(repr, declared)) or 'none'})",
            field="key",
            key=key,
        )
    validators = _validators(manifest)
    if key not in validators:
        validators[key] = InputValidator(schema, STORAGE_RULES)
    _, err = check_input(validators[key], value, tool=f"storage.{scope} {key!r}", max_depth=max_depth)
    if err is not None:
        raise WorkbenchError(
            "E_SCHEMA",
            f"storage.{scope}.set({clip(repr(key), 80)}): {err.message}",
            key=key,
            **{k: v for k, v in err.details.items() if k != "tool"},
        )
