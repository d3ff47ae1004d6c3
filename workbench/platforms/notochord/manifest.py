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
from ...gem.folder import clip, escaping_links, read_json, realpath, schema_sql, tool_file_problem
from ...gem.model import LANGUAGES, CollectionSpec, Manifest, ToolSpec
from ...gem.rules import NOTOCHORD as SCHEMA_RULES
from ...gem.schema import check_input_schema, pointer

MAX_SCHEMA_OBJECTS = 5_000  # objects in all inputSchemas together: jsonschema's metaschema
# check costs ~1 ms each (real gems: a few hundred)
MAX_PROBLEMS = 200  # problems one lint reports


def manifest_schema() -> dict[str, Any]:
    """The JSON Schema of manifest.json that ships with the package."""
    text = _res.files(__package__).joinpath("manifest.schema.json").read_text("utf-8")
    return json.loads(text)


def _objects(value: Any) -> int:
    """How many JSON objects `value` holds (iteratively)."""
    n, stack = 0, [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            n += 1
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return n


def lint(root: str | os.PathLike[str]) -> list[dict[str, str]]:
    """Every problem of the gem at `root` as {file, pointer, message}; empty when it is fine."""
    root = realpath(Path(root)) or Path(root).absolute()
    mpath = root / "manifest.json"
    try:
        real = realpath(mpath)
        if real is not None and mpath.is_symlink() and not real.is_relative_to(root):
            raise GemLoadError("manifest.json is a link leading outside the gem folder", file=str(mpath))
        raw = read_json(mpath)
    except GemLoadError as exc:
        return [
            {
                "file": str(mpath),
                "pointer": "",
                "message": exc.message,
                **{k: v for k, v in exc.details.items() if k != "file"},
            }
        ]
    from jsonschema import Draft202012Validator
    from referencing import Registry

    # our own schema; an empty registry all the same: nothing is ever fetched
    validator = Draft202012Validator(manifest_schema(), registry=Registry())
    problems: list[dict[str, Any]] = []
    for e in validator.iter_errors(raw):
        if len(problems) >= MAX_PROBLEMS:
            break
        problems.append({"file": str(mpath), "pointer": pointer(e.absolute_path), "message": clip(e.message)})
    if problems:
        return sorted(problems, key=lambda p: p["pointer"])

    def bad(ptr: str, msg: str) -> None:
        problems.append({"file": str(mpath), "pointer": ptr, "message": msg})

    seen: dict[str, int] = {}
    objects = 0
    for i, tool in enumerate(raw["tools"]):
        name = tool["name"]
        if name in seen:
            bad(f"/tools/{i}/name", f"duplicate tool name '{name}' (also /tools/{seen[name]})")
        seen.setdefault(name, i)
        why = tool_file_problem(root, tool["file"])
        if why:
            bad(f"/tools/{i}/file", why)
        schema = tool.get("inputSchema", {"type": "object"})
        objects += _objects(schema)
        if objects > MAX_SCHEMA_OBJECTS:
            bad(
                f"/tools/{i}/inputSchema",
                f"the inputSchemas hold more than "
                f"{MAX_SCHEMA_OBJECTS:,} objects in all (up to this tool); checking them would "
                "take too long",
            )
            break
        for ptr, msg in check_input_schema(schema, SCHEMA_RULES):
            bad(f"/tools/{i}/inputSchema{ptr}", msg)
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
    for link in escaping_links(root):  # Deno checks paths as written: a link would escape N1
        problems.append(
            {
                "file": str(link),
                "pointer": "",
                "message": f"symbolic link {link.relative_to(root)} leads outside the gem "
                "folder; the sandbox may read only the gem's own files",
            }
        )
    for i, trig in enumerate(raw.get("triggers", ())):
        if trig["tool"] not in seen:
            bad(f"/triggers/{i}/tool", f"trigger names unknown tool '{trig['tool']}'")
    return problems[:MAX_PROBLEMS]


def load_manifest(root: str | os.PathLike[str]) -> Manifest:
    """Load and check the gem at `root`; raise GemLoadError naming file and JSON pointer."""
    root = realpath(Path(root)) or Path(root).absolute()
    if not root.is_dir():
        raise GemLoadError(f"gem folder {root} does not exist", file=str(root))
    problems = lint(root)
    if problems:
        first = problems[0]
        lines = "; ".join(f"{p['pointer'] or '/'}: {p['message']}" for p in problems)
        where = {k: v for k, v in first.items() if k != "message"}  # file, pointer, line, column
        raise GemLoadError(f"{Path(first['file']).name}: {lines}", **where, problems=problems)
    raw = read_json(root / "manifest.json")
    if raw.get("platform", "notochord") != "notochord":  # changed since detect() read it
        raise GemLoadError(
            f'manifest.json: "platform": {clip(repr(raw["platform"]), 80)} '
            "is not a Notochord gem; open it again",
            file=str(root / "manifest.json"),
            pointer="/platform",
        )
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
