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


def declarations(platform: str) -> Path:
    """The shipped `.d.ts` of `platform`'s ctx (a built-in's; a plugin's is rendered)."""
    return HERE / f"{platform}.d.ts"


def _platform_dts(platform: str) -> str:
    shipped = declarations(platform)
    if shipped.is_file():
        return shipped.read_text(encoding="utf-8")
    from ..platforms import profile
    from ._generate import render_ts

    return render_ts(profile(platform))  # a plugin's: from its registry rows, as a built-in's


def editor_schema(platform: str) -> str | None:
    """The manifest's JSON Schema as an editor reads it (ECMAScript patterns: Python's `\\Z`
    becomes `$`, which is what `\\Z` means there), or None for a platform without manifest."""
    from ..platforms import profile

    path = profile(platform).declarations.manifest_schema
    if path is None or not path.is_file():
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
        f"workbench checks manifest.json with its own copy, {_shown(path)}."
    )
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"


def _shown(path: Path) -> str:
    """`path` as the editor copy names it: from workbench/ for the package's own files."""
    package = Path(__file__).parent.parent
    return f"workbench/{path.relative_to(package).as_posix()}" if path.is_relative_to(package) else str(path)


def _gem_dts(manifest: Manifest) -> str:
    from ..platforms import profile

    platform = manifest.platform
    hook = profile(platform).declarations.gem_ctx
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
    lines += hook(manifest) if hook is not None else ["export type Ctx = PlatformCtx;"]
    return "\n".join(lines) + "\n"


def gem_files(manifest: Manifest) -> dict[str, str]:
    """{file name: text} of the gem's `.gem-workbench/` folder for its platform."""
    from ..platforms import profile

    platform = manifest.platform
    out = {f"{platform}.d.ts": _platform_dts(platform)}
    if profile(platform).declarations.gem_types:
        out["gem.d.ts"] = _gem_dts(manifest)
    schema = editor_schema(platform)
    if schema is not None:
        out["manifest.schema.json"] = schema
    return out
