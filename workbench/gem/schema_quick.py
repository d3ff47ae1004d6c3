"""A quick yes for the common inputSchema: an object of typed fields, some required, perhaps
no others. It only ever answers "valid" for an input jsonschema would find valid; anything
else (an input it rejects, a schema with any other keyword) goes to the full, bounded check,
which alone writes violations. Most tools' schemas are of this shape, and checking one input
against it with jsonschema costs more than the rest of a call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# keywords that never make an input invalid
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"}
)
_ROOT = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties"}
_FIELD = _ANNOTATIONS | {"type", "minLength", "maxLength", "minimum", "maximum"}
_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})


def _is(kind: str, v: Any) -> bool:
    """jsonschema's Draft 2020-12 type test, on parsed JSON (an input's copy holds nothing else)."""
    t = type(v)
    if kind == "string":
        return t is str
    if kind == "integer":
        return t is int or (t is float and v.is_integer())
    if kind == "number":
        return t is int or t is float
    if kind == "boolean":
        return t is bool
    if kind == "object":
        return t is dict
    if kind == "array":
        return t is list
    return v is None  # "null"


def _is_any(kinds: tuple[str, ...], v: Any) -> bool:
    """Whether `v` is of one of `kinds` (a loop, not any() of a generator: it runs per call)."""
    for kind in kinds:
        if _is(kind, v):
            return True
    return False


def _types(schema: dict[str, Any]) -> tuple[str, ...] | None:
    """The types `schema["type"]` allows (() = any), or None when it is not a plain type list."""
    kind = schema.get("type")
    if kind is None:
        return () if "type" not in schema else None
    kinds = [kind] if isinstance(kind, str) else kind
    if not isinstance(kinds, list) or not kinds or not all(isinstance(k, str) and k in _TYPES for k in kinds):
        return None
    return tuple(kinds)


Bounds = tuple[Any, Any, Any, Any] | None  # minLength, maxLength, minimum, maximum (None: absent)


def _field(schema: Any) -> tuple[tuple[str, ...], Bounds] | None:
    """The types a field's subschema allows (() = any) and its bounds, or None when it says
    more than that."""
    if schema is True:
        return (), None
    if not isinstance(schema, dict) or not _FIELD.issuperset(schema):
        return None
    kinds = _types(schema)
    bounds = (schema.get("minLength"), schema.get("maxLength"), schema.get("minimum"), schema.get("maximum"))
    lengths_ok = all(b is None or (type(b) is int and b >= 0) for b in bounds[:2])
    numbers_ok = all(b is None or type(b) in (int, float) for b in bounds[2:])
    if kinds is None or not lengths_ok or not numbers_ok:
        return None
    return kinds, (bounds if any(b is not None for b in bounds) else None)


def _within(v: Any, bounds: tuple[Any, Any, Any, Any]) -> bool:
    """jsonschema's minLength/maxLength (strings, in code points) and minimum/maximum
    (numbers, not booleans); each applies to its own kind of value only."""
    low_len, high_len, low, high = bounds
    t = type(v)
    if t is str:
        n = len(v)
        return (low_len is None or n >= low_len) and (high_len is None or n <= high_len)
    if t is int or t is float:  # NaN compares False both ways: not sure, the full check says
        return (low is None or v >= low) and (high is None or v <= high)
    return True


def quick_check(schema: Any) -> Callable[[Any], bool] | None:
    """For a schema of only type, properties (each field: type, minLength, maxLength, minimum,
    maximum and annotations), required and additionalProperties (true or false): a function
    saying True for inputs that are valid for certain. None for any other schema."""
    if not isinstance(schema, dict) or not _ROOT.issuperset(schema):
        return None
    root = _types(schema)
    props = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if root is None or not isinstance(props, dict) or type(extra) is not bool:
        return None
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return None
    fields: dict[str, tuple[tuple[str, ...], Bounds]] = {}
    for name, sub in props.items():
        field = _field(sub)
        if field is None:
            return None
        fields[name] = field

    objects = root == ("object",)  # (most tools' schemas: checked without asking _is)

    def valid(instance: Any) -> bool:
        if objects:
            if type(instance) is not dict:
                return False
        elif root and not _is_any(root, instance):
            return False
        if type(instance) is not dict:
            return True  # properties, required, additionalProperties apply to objects only
        for name in required:
            if name not in instance:
                return False
        for name, v in instance.items():
            field = fields.get(name)
            if field is None:
                if not extra:
                    return False
                continue
            kinds, bounds = field
            if kinds and not _is_any(kinds, v):
                return False
            if bounds is not None and not _within(v, bounds):
                return False
        return True

    return valid
