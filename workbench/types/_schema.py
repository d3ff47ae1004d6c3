"""A tool's JSON Schema as a TypeScript type or a Python annotation, for declarations.

Only what a declaration can say precisely (type, properties, required, items, enum, const,
anyOf/oneOf); anything else becomes `unknown` / `Any`. Bounded: a deep or huge schema (the
manifest is the author's, but still data) is cut to `unknown` past `MAX_DEPTH`.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 12
_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*\Z")
_TS = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean", "null": "null"}


def _key(name: str) -> str:
    return name if _IDENT.match(name) else json.dumps(name)


def _group(t: str) -> str:
    return f"({t})" if " | " in t else t


def to_ts(schema: Any, depth: int = 0) -> str:
    """The TypeScript type of values `schema` accepts (a superset where it cannot say more)."""
    if depth > MAX_DEPTH or not isinstance(schema, dict):
        return "never" if schema is False else "unknown"
    if "const" in schema:
        return json.dumps(schema["const"])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return " | ".join(json.dumps(v) for v in schema["enum"][:100])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return " | ".join(_group(to_ts(s, depth + 1)) for s in schema[key][:50])
    types = schema.get("type")
    if isinstance(types, list):
        return " | ".join(to_ts({**schema, "type": t}, depth + 1) for t in types[:8]) or "unknown"
    if types in _TS:
        return _TS[types]
    if types == "array":
        return f"{_group(to_ts(schema.get('items', True), depth + 1))}[]"
    if types == "object" or "properties" in schema:
        props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
        required = set(schema.get("required") or ()) if isinstance(schema.get("required"), list) else set()
        fields = [
            f"{_key(k)}{'' if k in required else '?'}: {to_ts(v, depth + 1)}"
            for k, v in list(props.items())[:500]
        ]
        if schema.get("additionalProperties", True) is not False:
            fields.append("[key: string]: unknown")
        return "{ " + "; ".join(fields) + " }" if fields else "Record<string, never>"
    return "unknown"


def to_py(schema: Any, depth: int = 0) -> str:
    """The Python annotation of values `schema` accepts (objects are dicts: TypedDicts are
    declared by name where the generator needs them)."""
    if depth > MAX_DEPTH or not isinstance(schema, dict):
        return "Any"
    if "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else schema["enum"]
        if isinstance(values, list) and values and all(isinstance(v, str | int | bool) for v in values):
            return f"Literal[{', '.join(repr(v) for v in values[:100])}]"
        return "Any"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return " | ".join(to_py(s, depth + 1) for s in schema[key][:50])
    t = schema.get("type")
    simple = {"string": "str", "number": "float", "integer": "int", "boolean": "bool", "null": "None"}
    if t in simple:
        return simple[t]
    if t == "array":
        return f"list[{to_py(schema.get('items', True), depth + 1)}]"
    if t == "object":
        return "dict[str, Any]"
    return "Any"
