"""What the model is given of an agent tool's result and what only the user is shown.

The seed names a result-shape contract (`_render`, `_interactive`, `_llm`) detailed on a page we
do not have. The workbench's reading (docs/readings.md): `_llm`, when present, is what the agent
(the model) is given, else the value without these keys; `_render` and `_interactive` are what
the user is shown (a render spec, interactive elements), never sent to the model."""

from __future__ import annotations

from typing import Any

SHAPE_KEYS = ("_render", "_interactive", "_llm")
USER_KEYS = ("_render", "_interactive")


def model_view(value: Any) -> tuple[Any, dict[str, Any]]:
    """(what the model is given, what only the user is shown) of a value a tool returned."""
    if not isinstance(value, dict) or not any(k in value for k in SHAPE_KEYS):
        return value, {}
    model = value["_llm"] if "_llm" in value else {k: v for k, v in value.items() if k not in SHAPE_KEYS}
    return model, {k: value[k] for k in USER_KEYS if k in value}
