"""Beyond the platform: a successful result whose shape differs from the tool's
`outputExample` gets a warning — the model was told another shape (seed 003: "Used by the
model as a shape hint"). Shape, not values: the same keys (missing ones are reported; extra
ones are fine, an example is "small"), the same JSON types, arrays compared element by element
against the example's first element. Bounded: at most MAX_WARNINGS, MAX_DEPTH levels."""

from __future__ import annotations

from typing import Any

from ...gem.model import Manifest, ToolSpec

MAX_WARNINGS = 10
MAX_DEPTH = 32
MAX_ITEMS = 100  # of a result's array checked against the example's first element


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def shape_warnings(manifest: Manifest, tool: ToolSpec, value: Any) -> list[str]:
    """How `value` differs in shape from the tool's outputExample ([] when it does not, or
    when the result is an expected failure `{error}`)."""
    example = output_example(manifest, tool)
    if example is None or (isinstance(value, dict) and "error" in value):
        return []
    out: list[str] = []
    _compare(example, value, "", out, 0)
    if len(out) > MAX_WARNINGS:
        out[MAX_WARNINGS:] = [f"… and {len(out) - MAX_WARNINGS} more differences"]
    return [f"the result's shape differs from outputExample: {w}" for w in out]


def output_example(manifest: Manifest, tool: ToolSpec) -> Any:
    """The tool's `outputExample` (None: it has none)."""
    return next(
        (t.get("outputExample") for t in manifest.raw.get("tools", ()) if t.get("name") == tool.name), None
    )


def _compare(example: Any, value: Any, at: str, out: list[str], depth: int) -> None:
    if len(out) > MAX_WARNINGS or depth > MAX_DEPTH:
        return
    want, got = _kind(example), _kind(value)
    if want != got:
        out.append(f"{at or 'the result'} is {got}, the example has {want}")
        return
    if want == "object":
        for key, sub in example.items():
            where = f"{at}.{key}" if at else key
            if key not in value:
                out.append(f"{where} is missing")
            else:
                _compare(sub, value[key], where, out, depth + 1)
    elif want == "array" and example:
        for i, item in enumerate(value[:MAX_ITEMS]):
            _compare(example[0], item, f"{at}[{i}]", out, depth + 1)
