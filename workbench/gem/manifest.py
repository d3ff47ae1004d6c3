"""Loading a gem folder: manifest.json parsed and checked into typed objects."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from importlib import resources as _res
from pathlib import Path
from typing import Any, Literal

from .._errors import GemLoadError
from .schema import check_input_schema, pointer

Language = Literal["python", "javascript", "typescript", "wasm"]
_LANGUAGES: dict[str, Language] = {".py": "python", ".js": "javascript", ".ts": "typescript",
                                   ".wasm": "wasm"}


@dataclass(frozen=True)
class ToolSpec:
    """One tool of a gem, as declared in the manifest."""

    name: str
    file: Path                      # absolute path of the tool's source
    rel_file: str                   # as written in the manifest
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
    platform: str
    permissions: dict[str, Any]
    collections: dict[str, CollectionSpec]
    resources: tuple[dict[str, Any], ...]
    tools: dict[str, ToolSpec]
    schema_sql: str | None
    raw: dict[str, Any] = field(repr=False)

    def email_allowed(self, tool: ToolSpec) -> bool:
        """E1: email needs read at top level (or the draft shorthand) and on the tool."""
        top = self.raw.get("email") is True or _reads_email(self.permissions)
        return top and _reads_email(tool.permissions)


def _reads_email(perms: dict[str, Any]) -> bool:
    email = perms.get("email")
    return email is True or (isinstance(email, dict) and email.get("read") is True)


def manifest_schema() -> dict[str, Any]:
    """The JSON Schema of manifest.json that ships with the package."""
    text = _res.files("workbench.gem").joinpath("manifest.schema.json").read_text("utf-8")
    return json.loads(text)


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise GemLoadError(f"{path.name} not found in {path.parent}", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise GemLoadError(f"{path.name} is not UTF-8 ({exc.reason} at byte {exc.start})",
                           file=str(path)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise GemLoadError(f"{path.name} is not valid JSON: {exc.msg} at line {exc.lineno} "
                           f"column {exc.colno}", file=str(path), line=exc.lineno,
                           column=exc.colno) from None


def _escaping_links(root: Path) -> list[Path]:
    out = []
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath) / name
            if p.is_symlink() and not p.resolve().is_relative_to(root):
                out.append(p)
    return sorted(out)


def lint(root: "str | os.PathLike[str]") -> list[dict[str, str]]:
    """Every problem of the gem at `root` as {file, pointer, message}; empty when it is fine."""
    root = Path(root).resolve()
    mpath = root / "manifest.json"
    try:
        raw = _read_json(mpath)
    except GemLoadError as exc:
        return [{"file": str(mpath), "pointer": "",
                 "message": exc.message, **{k: v for k, v in exc.details.items() if k != "file"}}]
    from jsonschema import Draft202012Validator

    problems = [{"file": str(mpath), "pointer": pointer(e.absolute_path), "message": e.message}
                for e in Draft202012Validator(manifest_schema()).iter_errors(raw)]
    if problems:
        return sorted(problems, key=lambda p: p["pointer"])

    def bad(ptr: str, msg: str) -> None:
        problems.append({"file": str(mpath), "pointer": ptr, "message": msg})

    seen: dict[str, int] = {}
    for i, tool in enumerate(raw["tools"]):
        name = tool["name"]
        if name in seen:
            bad(f"/tools/{i}/name", f"duplicate tool name '{name}' (also /tools/{seen[name]})")
        seen.setdefault(name, i)
        file = (root / tool["file"]).resolve()
        if not file.is_relative_to(root / "tools"):
            bad(f"/tools/{i}/file", f"{tool['file']} is outside the gem's tools/ folder")
        elif not file.is_file():
            bad(f"/tools/{i}/file", f"tool file {tool['file']} does not exist")
        for ptr, msg in check_input_schema(tool.get("inputSchema", {"type": "object"})):
            bad(f"/tools/{i}/inputSchema{ptr}", msg)
    for link in _escaping_links(root):  # Deno checks paths as written: a link would escape N1
        problems.append({"file": str(link), "pointer": "",
                         "message": f"symbolic link {link.relative_to(root)} leads outside the gem "
                                    "folder; the sandbox may read only the gem's own files"})
    for i, trig in enumerate(raw.get("triggers", ())):
        if trig["tool"] not in seen:
            bad(f"/triggers/{i}/tool", f"trigger names unknown tool '{trig['tool']}'")
    return problems


def load_manifest(root: "str | os.PathLike[str]") -> Manifest:
    """Load and check the gem at `root`; raise GemLoadError naming file and JSON pointer."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise GemLoadError(f"gem folder {root} does not exist", file=str(root))
    problems = lint(root)
    if problems:
        first = problems[0]
        lines = "; ".join(f"{p['pointer'] or '/'}: {p['message']}" for p in problems)
        where = {k: v for k, v in first.items() if k != "message"}  # file, pointer, line, column
        raise GemLoadError(f"{Path(first['file']).name}: {lines}", **where, problems=problems)
    raw = _read_json(root / "manifest.json")
    tools = {}
    for t in raw["tools"]:
        file = (root / t["file"]).resolve()
        tools[t["name"]] = ToolSpec(
            name=t["name"], file=file, rel_file=t["file"], description=t.get("description", ""),
            input_schema=t.get("inputSchema", {"type": "object"}),
            side_effect=t.get("sideEffect", "write"), permissions=t.get("permissions", {}),
            language=_LANGUAGES[file.suffix])
    colls = {n: CollectionSpec(n, tuple(c.get("indexes", ())))
             for n, c in raw.get("data", {}).get("collections", {}).items()}
    schema_path = root / "db" / "schema.sql"
    return Manifest(
        root=root, id=raw["id"], name=raw["name"], version=raw["version"],
        platform=raw.get("platform", "notochord"), permissions=raw.get("permissions", {}),
        collections=colls, resources=tuple(raw.get("resources", ())), tools=tools,
        schema_sql=schema_path.read_text("utf-8") if schema_path.is_file() else None, raw=raw)
