"""Agent custom tools (seed 002): manifest.json with "platform": "agent", loaded into the
gem model. The checks every platform shares are gem.lint's; here: the agent's own format
(`agent {id, name}`, `builtins`, tools with `parameters`) and no tool named like a built-in."""

from __future__ import annotations

import json
import os
from importlib import resources as _res
from pathlib import Path
from typing import Any

from ...gem.folder import read_json, realpath
from ...gem.lint import (
    MAX_PROBLEMS,
    check_platform,
    check_tools,
    gem_root,
    link_problems,
    raise_problems,
    read_manifest,
)
from ...gem.model import LANGUAGES, Manifest, ToolSpec
from ...gem.rules import NOTOCHORD as SCHEMA_RULES

BUILTINS = ("web_search", "send_email", "calculate", "surface_file")


def manifest_schema() -> dict[str, Any]:
    """The JSON Schema of an agent gem's manifest.json (shipped with the package)."""
    text = _res.files(__package__).joinpath("manifest.schema.json").read_text("utf-8")
    return json.loads(text)


def lint(root: str | os.PathLike[str]) -> list[dict[str, str]]:
    """Every problem of the agent gem at `root` as {file, pointer, message}; [] when fine."""
    root = realpath(Path(root)) or Path(root).absolute()
    raw, problems = read_manifest(root, manifest_schema())
    if raw is None:
        return problems
    mpath = root / "manifest.json"

    def bad(ptr: str, msg: str) -> None:
        problems.append({"file": str(mpath), "pointer": ptr, "message": msg})

    check_tools(root, raw["tools"], schema_key="parameters", rules=SCHEMA_RULES, bad=bad)
    for i, tool in enumerate(raw["tools"]):
        if tool["name"] in BUILTINS:  # ctx.tools.<name> would be ambiguous
            bad(f"/tools/{i}/name", f"'{tool['name']}' is a built-in tool's name; name the tool otherwise")
    problems.extend(link_problems(root))
    return problems[:MAX_PROBLEMS]


def load_manifest(root: str | os.PathLike[str]) -> Manifest:
    """Load and check the agent gem at `root`; GemLoadError naming file and JSON pointer."""
    root = gem_root(root)
    raise_problems(lint(root))
    raw = read_json(root / "manifest.json")
    check_platform(root, raw, "agent", "an agent gem")
    tools = {}
    for t in raw["tools"]:
        file = realpath(root / t["file"]) or root / t["file"]  # checked by lint just now
        tools[t["name"]] = ToolSpec(
            name=t["name"],
            file=file,
            rel_file=t["file"],
            description=t.get("description", ""),
            input_schema=t.get("parameters", {"type": "object"}),
            side_effect="write",
            permissions={},
            language=LANGUAGES[Path(t["file"]).suffix],
        )
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
