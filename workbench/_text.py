"""Strings that UTF-8 cannot hold: JavaScript strings (and JSON's "\\ud800") may carry lone
UTF-16 surrogates, and os.fsdecode gives them for names that are not UTF-8 on disk. Neutral
ground: the ctx layer, the providers and the gem loader all ask the same two questions."""

from __future__ import annotations

from typing import Any


def is_unicode(s: str) -> bool:
    """Whether `s` holds no lone surrogate (so UTF-8 can hold it)."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def well_formed(s: str) -> str:
    """`s` as the platform stores it: like `TextEncoder`, surrogate pairs joined and each lone
    surrogate replaced by U+FFFD."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def well_formed_params(params: Any) -> Any:
    """SQL parameters (a list or a dict) with every string made well-formed."""
    if isinstance(params, dict):
        return {k: well_formed(v) if isinstance(v, str) else v for k, v in params.items()}
    return [well_formed(v) if isinstance(v, str) else v for v in params]
