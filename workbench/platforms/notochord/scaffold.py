"""What `gem-workbench new --platform notochord` writes: a manifest, one tool that greets,
counts in kv and reads workspace:welcome.txt, and that file as a fixture."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..base import Scaffold, fill_template

TEMPLATES = Path(__file__).parent / "templates"


def manifest(name: str, title: str, tool: str, file: str) -> dict[str, Any]:
    """The new gem's manifest.json."""
    return {
        "$schema": "./.gem-workbench/manifest.schema.json",
        "id": name,
        "name": title,
        "version": "0.1.0",
        "platform": "notochord",
        "description": f"{title}: a new gem (gem-workbench new).",
        "tools": [
            {
                "name": tool,
                "file": file,
                "description": "Greet someone; count the greetings in kv; read workspace:welcome.txt if present.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "minLength": 1}},
                    "required": ["name"],
                    "additionalProperties": False,
                },
                "sideEffect": "write",
            }
        ],
    }


def files(values: Mapping[str, str]) -> dict[str, str]:
    """{relative path: text}: manifest.json, the tool, fixtures/workspace/welcome.txt."""
    file = f"tools/{values['tool']}.{values['ext']}"
    return {
        "manifest.json": json.dumps(manifest(values["name"], values["title"], values["tool"], file), indent=2)
        + "\n",
        file: fill_template(TEMPLATES / f"tool.{values['ext']}.tmpl", values),
        "fixtures/workspace/welcome.txt": fill_template(TEMPLATES / "welcome.txt.tmpl", values),
    }


SCAFFOLD = Scaffold(
    files=files,
    call={"name": "Ada"},
    asserts=(
        'res.value["greeting"] == "Hello, Ada!"',
        'res.value["count"] == 1',
        'res.value["note"].startswith("Welcome")',
    ),
    state="bench.kv()",
)
