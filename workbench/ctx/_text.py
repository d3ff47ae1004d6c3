"""Strings from tools as the platform stores them: JavaScript strings may hold lone UTF-16
surrogates, which UTF-8 (files, SQLite) cannot; like `TextEncoder`, each becomes U+FFFD."""

from __future__ import annotations

from typing import Any


def well_formed(s: str) -> str:
    """`s` with surrogate pairs joined and each lone surrogate replaced by U+FFFD."""
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
