"""Secrets from the user's keyring, when the optional `keyring` package is installed."""

from __future__ import annotations

KEYRING_SERVICE = "gem-workbench"


def from_keyring(username: str) -> str | None:
    """The secret stored under service 'gem-workbench' and `username`, or None."""
    try:
        import keyring  # optional: only when installed

        found = keyring.get_password(KEYRING_SERVICE, username)
    except Exception:  # not installed, or no usable keyring backend
        return None
    return str(found) if found else None
