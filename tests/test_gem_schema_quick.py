"""gem/schema_quick.py: its quick "valid" agrees with jsonschema on every input, for the
schemas it takes; it takes no schema with any other keyword."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from workbench.gem.schema import InputValidator
from workbench.gem.schema_quick import quick_check

FIELDS = {
    "a": {"type": "integer"},
    "b": {"type": ["string", "null"]},
    "c": {"type": "number", "description": "a number", "default": 1},
    "d": {},
    "e": True,
    "f": {"type": "boolean", "title": "F"},
    "g": {"type": "array"},
    "h": {"type": "object"},
}
TAKEN = [
    {"type": "object"},
    {},
    {"type": ["object", "array"]},
    {"properties": {"a": {"type": "string"}}},
    {"type": "object", "properties": FIELDS, "required": ["a", "b"], "additionalProperties": False},
    {"type": "object", "properties": FIELDS, "required": ["a"], "additionalProperties": True},
    {"type": "object", "required": ["zz"]},
    {"type": "string"},
    {"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}},
    {"properties": {"a": {"minLength": 1, "maxLength": 3, "minimum": -0.5, "maximum": 2}}},
    {"properties": {"a": {"type": ["integer", "string"], "maximum": 1, "minLength": 0}}},
    {"properties": {"a": {"type": "number", "minimum": 1.0}, "b": {"maxLength": 0}}, "required": ["b"]},
]
NOT_TAKEN = [
    {"type": "object", "properties": {"a": {"type": "string", "minLength": -1}}},
    {"type": "object", "properties": {"a": {"type": "string", "maxLength": 1.5}}},
    {"type": "object", "properties": {"a": {"type": "string", "maxLength": True}}},
    {"type": "object", "properties": {"a": {"minimum": True}}},
    {"type": "object", "properties": {"a": {"maximum": "3"}}},
    {"type": "object", "properties": {"a": {"exclusiveMinimum": 3}}},
    {"type": "object", "additionalProperties": {"type": "string"}},
    {"type": "object", "additionalProperties": 0},
    {"type": "object", "properties": {"a": False}},
    {"type": "thing"},
    {"type": []},
    {"type": None},
    {"type": "object", "required": "a"},
    {"type": "object", "$ref": "#/$defs/x", "$defs": {"x": {}}},
    {"type": "object", "properties": {"a": {"type": "object", "properties": {"x": {"type": "string"}}}}},
    {"type": "object", "properties": {"a": {"enum": [1]}}},
    {"allOf": [{"type": "object"}]},
    True,
]
VALUES = [1, 1.0, 1.5, 2, 2.5, -0.0, -1, True, False, None, "x", "", "xy", "xyz", "wxyz", "é" * 3]
VALUES += [float("nan"), float("inf"), 10**30, [], [1], {}, {"a": 1}]


def _inputs() -> list[Any]:
    out: list[Any] = [*VALUES]
    for a, b in itertools.product(VALUES, repeat=2):
        out += [{"a": a}, {"a": a, "b": b}, {"b": b, "c": a}, {"a": a, "zz": b}, {"f": a, "g": b, "h": a}]
    return out


@pytest.mark.parametrize("schema", TAKEN)
def test_the_quick_check_agrees_with_jsonschema(schema: dict) -> None:
    quick = quick_check(schema)
    assert quick is not None
    full = Draft202012Validator(schema)
    for value in _inputs():
        if _has_nan(value):  # NaN is within no bound: "not sure" is allowed, "valid" must be right
            assert not quick(value) or full.is_valid(value), value
        else:
            assert quick(value) == full.is_valid(value), value


def _has_nan(value: Any) -> bool:
    values = value.values() if isinstance(value, dict) else [value]
    return any(isinstance(v, float) and v != v for v in values)


@pytest.mark.parametrize("schema", NOT_TAKEN)
def test_any_other_keyword_goes_to_the_full_check(schema: Any) -> None:
    assert quick_check(schema) is None


def test_violations_come_from_the_full_check() -> None:
    v = InputValidator(
        {"type": "object", "properties": FIELDS, "required": ["a"], "additionalProperties": False}
    )
    assert v.violations({"a": 1, "c": 2.5}) == []
    assert v.violations({"a": 1.5, "zz": 1}) == [
        {"path": "/a", "message": "1.5 is not of type 'integer'"},
        {"path": "/zz", "message": "unexpected field 'zz' (additionalProperties is false)"},
    ]
