"""What a gem's `.gem-workbench/` folder holds: the platform's declarations, this gem's tool
inputs as types (`gem.d.ts`), and the manifest's JSON Schema for editors.

The folder is the editor's copy. `gem-workbench check --typecheck` never trusts it: it maps
the folder onto a fresh one made from the installed package and the current manifest, so a
stale copy cannot hide an error (runners/deno/sandbox.py `typecheck`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._schema import to_ts

if TYPE_CHECKING:
    from ..gem import Manifest

HERE = Path(__file__).parent
FOLDER = ".gem-workbench"
_PLATFORMS = Path(__file__).parent.parent / "platforms"


def declarations(platform: str) -> Path:
    """The shipped `.d.ts` of `platform`'s ctx."""
    return HERE / f"{platform}.d.ts"


def editor_schema(platform: str) -> str | None:
    """The manifest's JSON Schema as an editor reads it (ECMAScript patterns: Python's `\\Z`
    becomes `$`, which is what `\\Z` means there), or None for a platform without manifest."""
    path = _PLATFORMS / platform / "manifest.schema.json"
    if not path.is_file():
        return None
    schema = json.loads(path.read_text(encoding="utf-8"))

    def fix(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: (re.sub(r"(?<!\\)\\Z", "$", v) if k == "pattern" and isinstance(v, str) else fix(v))
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [fix(x) for x in node]
        return node

    out = fix(schema)
    out["$comment"] = (
        "A copy for editors, written by gem-workbench (patterns in ECMAScript syntax); the "
        f"workbench checks manifest.json with its own copy, workbench/platforms/{platform}/manifest.schema.json."
    )
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"


def _gem_dts(manifest: Manifest) -> str:
    platform = manifest.platform
    lines = [
        "// This gem's ctx and tool inputs, generated from manifest.json by gem-workbench",
        "// (`gem-workbench new`; `check --typecheck` regenerates it from the current manifest).",
        f'import type {{ Ctx as PlatformCtx }} from "./{platform}.d.ts";',
        "/** Each tool's input, from its schema in manifest.json. */",
        "export interface Inputs {",
    ]
    for name, tool in sorted(manifest.tools.items()):
        lines.append(f"  {json.dumps(name)}: {to_ts(tool.input_schema)};")
    lines.append("}")
    if platform == "agent":
        from ..platforms.agent.manifest import BUILTINS

        enabled = manifest.raw.get("builtins", BUILTINS)
        names = " | ".join(json.dumps(b) for b in enabled) or "never"
        lines.append("/** ctx.tools: the enabled built-ins (`builtins`) and this gem's own tools. */")
        lines.append(f"export type Ctx = PlatformCtx<Inputs, {names}>;")
    else:
        lines.append("export type Ctx = PlatformCtx;")
    return "\n".join(lines) + "\n"


def gem_files(manifest: Manifest) -> dict[str, str]:
    """{file name: text} of the gem's `.gem-workbench/` folder for its platform."""
    platform = manifest.platform
    out = {f"{platform}.d.ts": declarations(platform).read_text(encoding="utf-8")}
    if platform != "ekanos":
        out["gem.d.ts"] = _gem_dts(manifest)
    schema = editor_schema(platform)
    if schema is not None:
        out["manifest.schema.json"] = schema
    return out
