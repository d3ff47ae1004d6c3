"""Checks a state part's put runs on its JSON, which is someone else's (a state folder, a
bundle, a pinned case): its shape, its size and depth, and no control character where a name
or an address goes. Every refusal is the part's one coded error naming the field (`Refusal`),
raised before the part changes anything.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .parts import Refusal

__all__ = ["MAX_ITEMS", "MAX_NAME", "items", "name", "number", "obj", "plain", "text"]

MAX_NAME = 320  # an account id, an address, a pattern, a secret's or a built-in's name
MAX_ITEMS = 100_000  # entries of one list or object a part holds (messages, rows, faults)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # in a name: never (a header, a log line, a key)
_CONTROL_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # in a body: tabs and lines only


def plain(value: Any, bad: Refusal, field: str, *, depth: int, chars: int) -> None:
    """`value` is plain JSON (objects with text keys, lists, text, numbers, booleans, null),
    nested at most `depth` and at most `chars` characters of text in all."""
    left = [chars]

    def walk(v: Any, at: str, d: int) -> None:
        if d > depth:
            raise bad(at, f"is nested deeper than {depth}", limit=depth)
        if isinstance(v, str):
            left[0] -= len(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                if not isinstance(k, str):
                    raise bad(at, "has a key that is not text")
                left[0] -= len(k)
                walk(x, f"{at}.{k[:40]}", d + 1)
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, f"{at}[{i}]", d + 1)
        elif not (v is None or isinstance(v, (bool, int, float))):
            raise bad(at, f"is a {type(v).__name__}, not JSON")
        if left[0] < 0:
            raise bad(field, f"is over {chars:,} characters", limit=chars)

    walk(value, field, 0)


def obj(
    value: Any, bad: Refusal, field: str, keys: Iterable[str], *, required: Iterable[str] = ()
) -> dict[str, Any]:
    """`value` as an object of `keys` only, with every `required` one."""
    if not isinstance(value, dict):
        raise bad(field, f"is not an object ({', '.join(keys)})")
    known = set(keys)
    unknown = sorted(str(k) for k in value if k not in known)
    if unknown:
        raise bad(f"{field}.{unknown[0][:40]}", f"is not a field of it ({', '.join(keys)})")
    for k in required:
        if k not in value:
            raise bad(f"{field}.{k}", "is missing")
    return value


def items(value: Any, bad: Refusal, field: str, kind: type = list, *, most: int = MAX_ITEMS) -> Any:
    """`value` as a list (or an object: `kind=dict`) of at most `most` entries."""
    if not isinstance(value, kind):
        raise bad(field, f"is not a{'n object' if kind is dict else ' list'}")
    n = len(value) if isinstance(value, (list, dict)) else 0
    if n > most:
        raise bad(field, f"has {n:,} entries, over {most:,}", limit=most)
    return value


def name(value: Any, bad: Refusal, field: str, *, most: int = MAX_NAME, empty: bool = False) -> str:
    """`value` as a short text without control characters (a name, an address, a pattern)."""
    if not isinstance(value, str) or (not value and not empty):
        raise bad(field, "is not a non-empty text" if not empty else "is not text")
    if len(value) > most:
        raise bad(field, f"is over {most:,} characters", limit=most)
    if _CONTROL.search(value):
        raise bad(field, "holds a control character")
    return value


def text(value: Any, bad: Refusal, field: str, *, most: int) -> str:
    """`value` as text of at most `most` characters: line breaks and tabs, no other control."""
    if not isinstance(value, str):
        raise bad(field, "is not text")
    if len(value) > most:
        raise bad(field, f"is over {most:,} characters", limit=most)
    if _CONTROL_TEXT.search(value):
        raise bad(field, "holds a control character")
    return value


def number(value: Any, bad: Refusal, field: str, *, low: float = 0, high: float = 2**53 - 1) -> int:
    """`value` as a whole number within [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise bad(field, f"is not a whole number from {low:g} to {high:g}")
    return value
