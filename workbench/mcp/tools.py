"""A bench's tools as MCP `tools/list` gives them: the name the assistant sees on the gem's
platform (Ekanos' effective names, K4), the description, the input schema the platform checks,
an output schema where the platform declares a shape (Ekanos' `outputExample`) and annotations
from its declarations (`sideEffect: "read"` → read-only). Everything comes from the bench's
manifest and its profile's fields, so a platform plugin is listed the same way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError

if TYPE_CHECKING:
    from ..gem import Manifest
    from ..platforms import Profile

MAX_SHAPE_DEPTH = 32  # levels of an output example turned into a schema; deeper: any value


@dataclass(frozen=True)
class Listed:
    """One tool as a client sees it: `name` (what it calls) and the gem's own `key`."""

    name: str
    key: str
    entry: dict[str, Any]  # the tools/list entry, JSON


def listing(manifest: Manifest, profile: Profile) -> dict[str, Listed]:
    """The tools by the name a client calls them, in the manifest's order. E_MANIFEST when two
    tools would be offered under one name (the platform refuses such a gem, K4)."""
    shown = {key: name for name, key in manifest.aliases.items()}  # K4: the name the model sees
    out: dict[str, Listed] = {}
    for key, tool in manifest.tools.items():
        name = shown.get(key, key)
        if name in out:
            raise WorkbenchError(
                "E_MANIFEST",
                f"tools {out[name].key!r} and {key!r} are both offered as {name!r}; the platform "
                "rejects the collision: rename one",
                names=[out[name].key, key],
            )
        schema = dict(tool.input_schema)
        schema.setdefault("type", "object")  # MCP's root; the platform's own checks are unchanged
        entry: dict[str, Any] = {"name": name, "description": tool.description, "inputSchema": schema}
        if profile.output_example is not None:
            example = profile.output_example(manifest, tool)
            if isinstance(example, dict):  # K5: an object; MCP's outputSchema is one too
                entry["outputSchema"] = shape_schema(example)
        if profile.side_effects:  # only where tools declare it (Notochord's sideEffect, D4)
            entry["annotations"] = {"readOnlyHint": tool.side_effect == "read"}
        out[name] = Listed(name, key, entry)
    return out


def shape_schema(example: Any, depth: int = 0) -> dict[str, Any]:
    """A JSON Schema of the example's shape, as the platform reads an example (shapes.py):
    the same JSON types and keys, arrays like their first element; no key is required and
    others may be added (an example is small), values are not fixed."""
    if depth > MAX_SHAPE_DEPTH:
        return {}
    if isinstance(example, dict):
        props = {str(k): shape_schema(v, depth + 1) for k, v in example.items()}
        return {"type": "object", "properties": props}
    if isinstance(example, list):
        return {"type": "array", **({"items": shape_schema(example[0], depth + 1)} if example else {})}
    if isinstance(example, bool):
        return {"type": "boolean"}
    if isinstance(example, (int, float)):
        return {"type": "number"}
    if isinstance(example, str):
        return {"type": "string"}
    return {"type": "null"} if example is None else {}
