"""Fourth tools: a minimal platform registered through the `gem_workbench.platforms` entry
point (docs/platforms.md). A tool folder holds `fourth.json` (no manifest.json) listing tools
`{name, file, description?, input?}`; a tool's ctx is `files` and `storage.kv`, the same rows
and implementations as Notochord's, within smaller bounds.

Everything here comes from the plugin API, workbench.plugin: Capability rows naming existing
ctx implementations, the manifest lint every loader starts with (lint_manifest), Limits and
SchemaRules, the shared type shapes and fill_template.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.plugin import (
    FILES_PY,
    FILES_TS,
    Capability,
    Declarations,
    EntryPoint,
    Grants,
    Limits,
    Manifest,
    Method,
    Profile,
    Scaffold,
    SchemaRules,
    ToolSpec,
    fill_template,
    gem_root,
    lint_manifest,
    raise_problems,
    read_json,
    tool_specs,
)

HERE = Path(__file__).parent
MANIFEST = "fourth.json"
SCHEMA = HERE / "fourth.schema.json"
RULES = SchemaRules(unsupported_keywords=("pattern", "patternProperties"), boolean_root=False)

CAPABILITIES = (
    Capability(
        "files",
        "namespace",
        "files",
        tuple(
            Method(n, p)
            for n, p in (
                ("list", ("path",)),
                ("stat", ("path",)),
                ("read", ("path", "options")),
                ("write", ("path", "content", "options")),
                ("mkdir", ("path",)),
                ("move", ("from", "to")),
                ("delete", ("path",)),
            )
        ),
        doc="the tool's run folder",
    ),
    Capability(
        "storage.kv",
        "namespace",
        "kv",
        (
            Method("get", ("key",)),
            Method("set", ("key", "value")),
            Method("delete", ("key",)),
            Method("list", ("prefix",)),
        ),
        doc="string keys and values",
    ),
)


def lint(folder: str | os.PathLike[str]) -> list[dict[str, str]]:
    """Every problem of the Fourth tool folder at `folder`; [] when it loads."""
    found = lint_manifest(folder, schema=json.loads(SCHEMA.read_text(encoding="utf-8")), file=MANIFEST)
    if found.raw is None:
        return found.problems
    found.tools(schema_key="input", rules=RULES)
    return found.done()


def load(folder: Path) -> Manifest:
    """The Fourth tool folder as the gem model; GemLoadError naming file and pointer."""
    root = gem_root(folder)
    raise_problems(lint(root))
    raw = read_json(root / MANIFEST)
    return Manifest(
        root=root,
        id=raw["id"],
        name=raw["name"],
        version=raw["version"],
        platform="fourth",
        permissions={},
        collections={},
        resources=(),
        tools=tool_specs(root, raw["tools"], schema_key="input"),
        schema_sql=None,
        raw=raw,
    )


def grants_for(manifest: Manifest, tool: ToolSpec) -> Grants:
    return Grants()  # files and kv need no grant


def scaffold_files(values: Mapping[str, str]) -> dict[str, str]:
    """`gem-workbench new --platform fourth`: fourth.json and the tool."""
    file = f"tools/{values['tool']}.{values['ext']}"
    manifest: dict[str, Any] = {
        "$schema": "./.gem-workbench/manifest.schema.json",
        "id": values["name"],
        "name": values["title"],
        "version": "0.1.0",
        "tools": [
            {
                "name": values["tool"],
                "file": file,
                "description": "Greet someone; count the greetings in kv; keep the last one in a file.",
                "input": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "minLength": 1}},
                    "required": ["name"],
                },
            }
        ],
    }
    return {
        MANIFEST: json.dumps(manifest, indent=2) + "\n",
        file: fill_template(HERE / "templates" / f"tool.{values['ext']}.tmpl", values),
    }


PROFILE = Profile(
    name="fourth",
    title="Fourth tools",
    limits=Limits(file_bytes=1024 * 1024, result_chars=64 * 1024),
    schema_rules=RULES,
    entry=EntryPoint(),
    capabilities=CAPABILITIES,
    load=load,
    lint=lint,
    grants_for=grants_for,
    foreign={"email": "Fourth tools have no ctx.email: their ctx is files and storage.kv"},
    detects=lambda root: os.path.lexists(root / MANIFEST),
    declarations=Declarations(
        ts_shapes=FILES_TS,
        py_shapes=FILES_PY,
        manifest_schema=SCHEMA,
        source="gw_fourth/__init__.py",
        py_module="gw_fourth.types",
    ),
    scaffold=Scaffold(
        files=scaffold_files,
        call={"name": "Ada"},
        asserts=('res.value == {"greeting": "Hello, Ada!", "count": 1}',),
        state="bench.kv()",
        langs=("py", "js"),
        langs_note="Fourth tools are Python or JavaScript",
    ),
)
