"""Notochord gems (seed 000): manifest.json parsed and checked into the gem model.

Everything in the folder is hostile data (SEC7): `load_manifest` and `lint` never raise
anything but GemLoadError (E_MANIFEST, naming the file and JSON pointer) for it; the bounded
reading is `gem.folder`'s. Values that become paths (gem id, resource ids, tool files) must be
safe names or stay inside the gem folder (SEC2).
"""

from __future__ import annotations

import json
import os
from importlib import resources as _res
from pathlib import Path
from typing import Any

from ..._errors import GemLoadError
from ...gem.folder import read_json, realpath, schema_sql
from ...gem.lint import (
    MAX_PROBLEMS,
    check_platform,
    check_tools,
    gem_root,
    link_problems,
    raise_problems,
    read_manifest,
)
from ...gem.model import LANGUAGES, CollectionSpec, Manifest, ToolSpec
from ...gem.rules import NOTOCHORD as SCHEMA_RULES


def manifest_schema() -> dict[str, Any]:
    """The JSON Schema of manifest.json that ships with the package."""
    text = _res.files(__package__).joinpath("manifest.schema.json").read_text("utf-8")
    return json.loads(text)


def lint(root: str | os.PathLike[str]) -> list[dict[str, str]]:
    """Every problem of the gem at `root` as {file, pointer, message}; empty when it is fine."""
    root = realpath(Path(root)) or Path(root).absolute()
    raw, problems = read_manifest(root, manifest_schema())
    if raw is None:
        return problems
    mpath = root / "manifest.json"

    def bad(ptr: str, msg: str) -> None:
        problems.append({"file": str(mpath), "pointer": ptr, "message": msg})

    seen = check_tools(root, raw["tools"], schema_key="inputSchema", rules=SCHEMA_RULES, bad=bad)
    ids: dict[str, int] = {}
    for i, res in enumerate(raw.get("resources", ())):
        if res["id"] in ids:  # one cache file per id: a second would shadow the first
            bad(
                f"/resources/{i}/id",
                f"duplicate resource id '{res['id']}' (also /resources/{ids[res['id']]})",
            )
        ids.setdefault(res["id"], i)
    sql = root / "db" / "schema.sql"
    if os.path.lexists(sql):
        try:
            schema_sql(root)
        except GemLoadError as exc:
            problems.append({"file": str(sql), "pointer": "", "message": exc.message})
    problems.extend(link_problems(root))
    for i, trig in enumerate(raw.get("triggers", ())):
        if trig["tool"] not in seen:
            bad(f"/triggers/{i}/tool", f"trigger names unknown tool '{trig['tool']}'")
    return problems[:MAX_PROBLEMS]


def load_manifest(root: str | os.PathLike[str]) -> Manifest:
    """Load and check the gem at `root`; raise GemLoadError naming file and JSON pointer."""
    root = gem_root(root)
    raise_problems(lint(root))
    raw = read_json(root / "manifest.json")
    check_platform(root, raw, "notochord", "a Notochord gem")
    tools = {}
    for t in raw["tools"]:
        file = realpath(root / t["file"]) or root / t["file"]  # checked by lint just now
        tools[t["name"]] = ToolSpec(
            name=t["name"],
            file=file,
            rel_file=t["file"],
            description=t.get("description", ""),
            input_schema=t.get("inputSchema", {"type": "object"}),
            side_effect=t.get("sideEffect", "write"),
            permissions=t.get("permissions", {}),
            language=LANGUAGES[Path(t["file"]).suffix],
        )
    colls = {
        n: CollectionSpec(n, tuple(c.get("indexes", ())))
        for n, c in raw.get("data", {}).get("collections", {}).items()
    }
    return Manifest(
        root=root,
        id=raw["id"],
        name=raw["name"],
        version=raw["version"],
        platform=raw.get("platform", "notochord"),
        permissions=raw.get("permissions", {}),
        collections=colls,
        resources=tuple(raw.get("resources", ())),
        tools=tools,
        schema_sql=schema_sql(root),
        raw=raw,
    )
