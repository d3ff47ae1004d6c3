"""How the schema checks quote what they report: JSON pointers, clipped messages and short
reprs, lone surrogates escaped."""

from __future__ import annotations

import reprlib
from typing import Any

MAX_MESSAGE_CHARS = 300  # one violation's message (jsonschema's quote whole values)

short = reprlib.Repr()
short.maxstring = short.maxother = 60
short.maxlevel = 2


def raw_pointer(parts: Any) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def pointer(parts: Any) -> str:
    """JSON pointer (RFC 6901) for a sequence of keys and indexes; lone surrogates escaped."""
    text = raw_pointer(parts)
    # a lone surrogate (JSON "\ud800") cannot be printed or written as UTF-8: show it escaped
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


def linked_pointer(links: list[tuple[int, Any]], parent: int, key: Any) -> str:
    """The JSON pointer of `key` in container `parent`, where `links[i]` is container i's
    (parent container, key there): what an iterative walk of hostile data keeps instead of
    recursing."""
    parts = [] if parent < 0 else [key]
    while parent >= 0:
        parent, k = links[parent]
        if parent >= 0:
            parts.append(k)
    return pointer(reversed(parts))


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")
