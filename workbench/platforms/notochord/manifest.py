"""Notochord gems (seed 000): manifest.json parsed and checked into the gem model.

Everything in the folder is hostile data (SEC7): `load_manifest` and `lint` never raise
anything but GemLoadError (E_MANIFEST, naming the file and JSON pointer) for it; the bounded
reading is `gem.folder`'s. Values that become paths (gem id, resource ids, tool files) must be
safe names or stay inside the gem folder (SEC2).
"""

from __future__ import annotations

import os
from typing import Any

from ..._errors import GemLoadError
from ...gem.folder import schema_sql
from ...gem.lint import lint_manifest, load_checked, shipped_schema, tool_specs
from ...gem.model import CollectionSpec, Manifest
from ...gem.rules import NOTOCHORD as SCHEMA_RULES


def manifest_schema() -> dict[str, Any]:
    """The JSON Schema of manifest.json that ships with the package."""
    return shipped_schema(__package__)


def lint(root: str | os.PathLike[str]) -> list[dict[str, str]]:
    """Every problem of the gem at `root` as {file, pointer, message}; empty when it is fine."""
    found = lint_manifest(root, schema=manifest_schema())
    if found.raw is None:
        return found.problems
    raw, bad = found.raw, found.bad
    seen = found.tools(schema_key="inputSchema", rules=SCHEMA_RULES)
    ids: dict[str, int] = {}
    for i, res in enumerate(raw.get("resources", ())):
        if res["id"] in ids:  # one cache file per id: a second would shadow the first
            bad(
                f"/resources/{i}/id",
                f"duplicate resource id '{res['id']}' (also /resources/{ids[res['id']]})",
            )
        ids.setdefault(res["id"], i)
    sql = found.root / "db" / "schema.sql"
    if os.path.lexists(sql):
        try:
            schema_sql(found.root)
        except GemLoadError as exc:
            found.problems.append({"file": str(sql), "pointer": "", "message": exc.message})
    for i, trig in enumerate(raw.get("triggers", ())):
        if trig["tool"] not in seen:
            bad(f"/triggers/{i}/tool", f"trigger names unknown tool '{trig['tool']}'")
    return found.done()


def load_manifest(root: str | os.PathLike[str]) -> Manifest:
    """Load and check the gem at `root`; raise GemLoadError naming file and JSON pointer."""
    root, raw = load_checked(root, lint, "notochord", "a Notochord gem")
    tools = tool_specs(root, raw["tools"], schema_key="inputSchema")
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
