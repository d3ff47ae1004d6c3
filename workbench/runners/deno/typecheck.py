"""`deno check` on a gem's TypeScript tools, against freshly made ctx types (`check --typecheck`)."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..._deno import DENO_FLAGS, minimal_env

if TYPE_CHECKING:
    from ...gem import Manifest


def typecheck(
    files: list[Path], *, deno_dir: Path, manifest: Manifest | None = None, import_map: Path | None = None
) -> str | None:
    """Run `deno check` on TypeScript tools; the compiler's report, or None when they pass.

    With the gem's `manifest`, the tools' ctx types are the installed ones: the gem's
    `.gem-workbench/` folder (where a tool imports `Ctx` from) is mapped onto a fresh copy made
    from workbench/types and the current manifest, so a stale, edited or missing copy can
    neither hide an error nor invent one; the platform's `import_map` (its profile's: the caller
    hands it over, runners never import a platform) applies (Ekanos: `@ekanos/sdk`); and JS
    tools that opt in with `// @ts-check` are checked too.
    """
    from deno import find_deno_bin

    deno_dir.mkdir(parents=True, exist_ok=True)
    flags = [f for f in DENO_FLAGS if f != "--no-prompt"]  # `deno check` has no --no-prompt
    files = list(dict.fromkeys(files))  # an Ekanos integration is the file of every tool
    with tempfile.TemporaryDirectory(prefix="wb-types-") as tmp:
        if manifest is not None:
            files += [f for f in _ts_checked(manifest) if f not in files]
            flags.append(f"--import-map={_types_map(manifest, Path(tmp), import_map)}")
        if not files:
            return None
        out = subprocess.run(
            [find_deno_bin(), "check", *flags, "--quiet", *map(str, files)],
            capture_output=True,
            text=True,
            env=minimal_env(deno_dir),
            timeout=300,
        )
    if out.returncode == 0:
        return None
    return (out.stdout + out.stderr).split("\nStack backtrace:")[0].strip()


def _ts_checked(manifest: Manifest) -> list[Path]:
    """The JS tools whose source starts with `// @ts-check` (in its first KiB)."""
    out = []
    for tool in manifest.tools.values():
        if tool.language == "javascript":
            try:
                with open(tool.file, "rb") as f:
                    head = f.read(1024)
            except OSError:
                continue
            if b"// @ts-check" in head:
                out.append(tool.file)
    return out


def _types_map(manifest: Manifest, tmp: Path, platform_map: Path | None) -> Path:
    """An import map for `deno check`: the gem's `.gem-workbench/` onto fresh declarations in
    `tmp`, plus the platform's own map (its relative targets made absolute)."""
    from ...types import FOLDER, gem_files

    types = tmp / "types"
    types.mkdir()
    for name, text in gem_files(manifest).items():
        (types / name).write_text(text, encoding="utf-8")
    imports: dict[str, str] = {}
    if platform_map is not None:
        raw = json.loads(platform_map.read_text(encoding="utf-8"))
        base = platform_map.parent
        imports.update({k: (base / v).resolve().as_uri() for k, v in raw.get("imports", {}).items()})
    for root in {Path(manifest.root).absolute(), Path(manifest.root).resolve()}:
        imports[(root / FOLDER).as_uri() + "/"] = types.as_uri() + "/"
    path = tmp / "import_map.json"
    path.write_text(json.dumps({"imports": imports}), encoding="utf-8")
    return path
