"""Helpers of the generated Python declarations. The value shapes each platform's ctx names
are its profile's `Declarations` (workbench/platforms/<name>/declarations.py, shared ones in
platforms/shapes.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def builtin_input_name(name: str) -> str:
    """The TypedDict name of a built-in's input: web_search -> WebSearchInput."""
    return "".join(p.capitalize() for p in name.split("_")) + "Input"


def typed_dict(cls: str, schema: dict[str, Any], to_py: Callable[[Any], str]) -> list[str]:
    """A TypedDict of an object schema's properties (`required` ones required)."""
    required = set(schema.get("required", ()))
    lines = [f"class {cls}(TypedDict):"]
    for key, sub in schema.get("properties", {}).items():
        t = to_py(sub)
        lines.append(f"    {key}: {t if key in required else f'NotRequired[{t}]'}")
    return [*lines, "", ""]
