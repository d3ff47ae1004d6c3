"""The input schemas of an agent's built-in tools (ctx.tools), checked as for the model's
calls. Apart from ctx/tools.py so the tools' state part (ctx/tools_state.py, which checks a
fault's built-in by name) needs not import the capability that lists it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SCHEMAS"]

_TEXT = {"type": "string", "maxLength": 100_000}
_ADDRESSES = {
    "anyOf": [
        {"type": "string", "maxLength": 320},
        {"type": "array", "items": {"type": "string", "maxLength": 320}, "maxItems": 50},
    ]
}
#: the built-ins' input schemas, checked as for the model's calls
SCHEMAS: dict[str, dict[str, Any]] = {
    "web_search": {
        "type": "object",
        "required": ["query"],
        "additionalProperties": False,
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 2000},
            "count": {"type": "integer", "minimum": 1, "maximum": 20},
        },
    },
    "send_email": {
        "type": "object",
        "required": ["to", "subject", "body_text"],
        "additionalProperties": False,
        "properties": {
            "to": _ADDRESSES,
            "cc": _ADDRESSES,
            "subject": {"type": "string", "maxLength": 998},
            "body_text": _TEXT,
            "body_html": _TEXT,
        },
    },
    "surface_file": {
        "type": "object",
        "required": ["path"],
        "properties": {  # the seed writes surface_file({path, …}): other fields are kept, unread
            "path": {"type": "string", "minLength": 1, "maxLength": 1024},
            "title": {"type": "string", "maxLength": 200},
        },
    },
    "calculate": {
        "type": "object",
        "required": ["expression"],
        "additionalProperties": False,
        "properties": {"expression": {"type": "string", "minLength": 1, "maxLength": 2000}},
    },
}
