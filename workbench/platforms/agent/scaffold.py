"""What `gem-workbench new --platform agent` writes: a manifest with two built-ins enabled,
one tool that adds with `calculate`, and web_search fixtures."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..base import Scaffold, fill_template

TEMPLATES = Path(__file__).parent / "templates"


def manifest(name: str, title: str, tool: str, file: str) -> dict[str, Any]:
    """The new tool's manifest.json."""
    return {
        "$schema": "./.gem-workbench/manifest.schema.json",
        "platform": "agent",
        "id": name,
        "name": title,
        "version": "0.1.0",
        "description": f"{title}: a new agent custom tool (gem-workbench new).",
        "agent": {"id": f"agent-{name}", "name": title},
        "builtins": ["calculate", "web_search"],
        "tools": [
            {
                "name": tool,
                "file": file,
                "description": "Add two numbers with the calculate built-in.",
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                    "required": ["a", "b"],
                    "additionalProperties": False,
                },
            }
        ],
    }


def files(values: Mapping[str, str]) -> dict[str, str]:
    """{relative path: text}: manifest.json, the tool, fixtures/web_search.json."""
    file = f"tools/{values['tool']}.{values['ext']}"
    return {
        "manifest.json": json.dumps(manifest(values["name"], values["title"], values["tool"], file), indent=2)
        + "\n",
        file: fill_template(TEMPLATES / f"tool.{values['ext']}.tmpl", values),
        "fixtures/web_search.json": fill_template(TEMPLATES / "web_search.json.tmpl", values),
    }


SCAFFOLD = Scaffold(
    files=files,
    call={"a": 2, "b": 3},
    asserts=('res.value["sum"] == 5',),
    state="bench.audit()",
)
