"""The gem model every platform loads into: a gem's folder, fields and tools."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Language = Literal["python", "javascript", "typescript", "wasm"]
LANGUAGES: dict[str, Language] = {".py": "python", ".js": "javascript", ".ts": "typescript", ".wasm": "wasm"}


@dataclass(frozen=True)
class ToolSpec:
    """One tool of a gem, as declared in the manifest."""

    name: str
    file: Path  # absolute path of the tool's source
    rel_file: str  # as written in the manifest
    description: str
    input_schema: dict[str, Any]
    side_effect: Literal["read", "write"]
    permissions: dict[str, Any]
    language: Language


@dataclass(frozen=True)
class CollectionSpec:
    name: str
    indexes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Manifest:
    """A loaded gem: its folder, manifest fields and tools."""

    root: Path
    id: str
    name: str
    version: str
    platform: str  # the profile that loaded it (workbench.platforms)
    permissions: dict[str, Any]
    collections: dict[str, CollectionSpec]
    resources: tuple[dict[str, Any], ...]
    tools: dict[str, ToolSpec]
    schema_sql: str | None
    raw: dict[str, Any] = field(repr=False)
    # other names a tool is called by: {name: the tool's key} (Ekanos' effective names, K4)
    aliases: dict[str, str] = field(default_factory=dict, repr=False)

    def tool(self, name: str) -> ToolSpec | None:
        """The tool called `name`, by its own name or another (an Ekanos effective name)."""
        return self.tools.get(name) or self.tools.get(self.aliases.get(name, ""))

    def no_tool(self, name: str) -> str:
        """What to say of a tool name the gem lacks: its tools, and the one meant by a typo."""
        from .near import meant

        return f"no tool {name!r} in gem {self.id} (tools: {', '.join(self.tools) or 'none'}){meant(name, self.tools)}"
