""" "Did you mean …?": the known name a misspelt one most likely meant, one rule for a manifest
key, a tool's name, an input field and a gem folder."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["SCHEMA_WORDS", "close_key", "meant"]

# what the platforms call a tool's input schema (Notochord `inputSchema`, agent tools' and
# Ekanos' `parameters`), folded: one of them where the platform has the other is that one
SCHEMA_WORDS = frozenset({"inputschema", "parameters", "params", "schema", "argsschema", "parameterschema"})

MAX_CHARS = 200  # a longer name is no typo: not compared (difflib's work grows with the length)
MAX_KNOWN = 2_000  # names compared with, at most


def _folded(key: str) -> str:
    return key.replace("_", "").replace("-", "").lower()


def close_key(key: str, known: Iterable[str]) -> str | None:
    """The known key `key` most likely misspells (`input_schema` → `inputSchema`; another
    platform's word for the input schema → this one's), or None."""
    if len(key) > MAX_CHARS:
        return None
    by_fold: dict[str, str] = {}
    for k in known:
        if len(by_fold) >= MAX_KNOWN:
            break
        by_fold.setdefault(_folded(k), k)
    if _folded(key) in by_fold:
        return by_fold[_folded(key)]
    if _folded(key) in SCHEMA_WORDS:
        words = [k for f, k in by_fold.items() if f in SCHEMA_WORDS]
        if len(words) == 1:
            return words[0]
    match = difflib.get_close_matches(_folded(key), list(by_fold), n=1, cutoff=0.75)
    return by_fold[match[0]] if match else None


def meant(name: str, known: Iterable[str], *, lead: str = "; ") -> str:
    """`lead` + "did you mean 'x'?" for the known name `name` likely misspells, else ""."""
    near = close_key(name, (k for k in known if k != name))
    return f"{lead}did you mean {near!r}?" if near else ""
