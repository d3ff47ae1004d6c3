"""How the schema checks quote what they report: JSON pointers, clipped messages and short
reprs, lone surrogates escaped."""

from __future__ import annotations

import json
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


def json_value(value: Any, limit: int = 60) -> str:
    """`value` spelled as JSON (`true`, `null`, `"x"`), clipped: what a manifest author wrote."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        text = short.repr(value)
    return clip(text, limit)


def json_message(e: Any) -> str:
    """A jsonschema error's message in JSON terms: jsonschema quotes values as Python does
    ("True is not of type 'object'", "False schema does not allow 1")."""
    if e.validator == "type":
        kinds = e.validator_value if isinstance(e.validator_value, list) else [e.validator_value]
        return clip(f"{json_value(e.instance)} is not of type {' or '.join(map(json_value, kinds))}")
    if e.validator is None or (e.validator == "not" and e.validator_value in ({}, True)):
        return clip(f"{json_value(e.instance)} is not allowed here (the schema is false)")
    return clip(e.message)


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")
