"""Agent custom tools (seed 002): manifest.json with "platform": "agent", loaded into the
gem model. The checks every platform shares are gem.lint's; here: the agent's own format
(`agent {id, name}`, `builtins`, tools with `parameters`) and no tool named like a built-in."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from ...gem.lint import lint_manifest, load_checked, shipped_schema, tool_specs
from ...gem.model import Manifest
from ...gem.rules import NOTOCHORD

#: Notochord's keyword rules (the workbench cannot check `pattern` safely), under agent tools'
#: name for the schema
SCHEMA_RULES = dataclasses.replace(NOTOCHORD, schema_key="parameters")

BUILTINS = ("web_search", "send_email", "calculate", "surface_file")


def manifest_schema() -> dict[str, Any]:
    """The JSON Schema of an agent gem's manifest.json (shipped with the package)."""
    return shipped_schema(__package__)


def lint(root: str | os.PathLike[str]) -> list[dict[str, str]]:
    """Every problem of the agent gem at `root` as {file, pointer, message}; [] when fine."""
    found = lint_manifest(root, schema=manifest_schema())
    if found.raw is None:
        return found.problems
    found.tools(schema_key=SCHEMA_RULES.schema_key, rules=SCHEMA_RULES)
    for i, tool in enumerate(found.raw["tools"]):
        if tool["name"] in BUILTINS:  # ctx.tools.<name> would be ambiguous
            found.bad(
                f"/tools/{i}/name", f"'{tool['name']}' is a built-in tool's name; name the tool otherwise"
            )
    return found.done()


def load_manifest(root: str | os.PathLike[str]) -> Manifest:
    """Load and check the agent gem at `root`; GemLoadError naming file and JSON pointer."""
    root, raw = load_checked(root, lint, "agent", "an agent gem")
    tools = tool_specs(root, raw["tools"], schema_key=SCHEMA_RULES.schema_key)
    return Manifest(
        root=root,
        id=raw["id"],
        name=raw["name"],
        version=raw["version"],
        platform="agent",
        permissions={},
        collections={},
        resources=(),
        tools=tools,
        schema_sql=None,
        raw=raw,
    )
