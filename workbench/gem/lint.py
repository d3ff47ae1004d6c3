"""The checks every platform's loader runs on a gem folder: manifest.json against the
platform's JSON Schema, tool files, tool input schemas within a budget, links out of the
folder. Problems are {file, pointer, message}; `raise_problems` makes them one GemLoadError."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._errors import GemLoadError
from .folder import clip, escaping_links, read_json, realpath, tool_file_problem
from .model import LANGUAGES, ToolSpec
from .names import reserved
from .near import close_key
from .rules import SchemaRules
from .schema import check_input_schema, pointer
from .schema_text import json_message

MAX_SCHEMA_OBJECTS = 5_000  # objects in all input schemas together: jsonschema's metaschema
# check costs ~1 ms each (real gems: a few hundred)
MAX_PROBLEMS = 200  # problems one lint reports

Problem = dict[str, Any]


def objects(value: Any) -> int:
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


def read_manifest(root: Path, schema: dict[str, Any]) -> tuple[Any, list[Problem]]:
    """manifest.json read within bounds and checked against the platform's `schema`:
    (the parsed value, []) or (None, its problems, sorted by pointer)."""
    mpath = root / "manifest.json"
    try:
        real = realpath(mpath)
        if real is not None and mpath.is_symlink() and not real.is_relative_to(root):
            raise GemLoadError("manifest.json is a link leading outside the gem folder", file=str(mpath))
        raw = read_json(mpath)
    except GemLoadError as exc:
        extra = {k: v for k, v in exc.details.items() if k != "file"}
        return None, [{"file": str(mpath), "pointer": "", "message": exc.message, **extra}]
    from jsonschema import Draft202012Validator
    from referencing import Registry

    # our own schema; an empty registry all the same: nothing is ever fetched
    validator = Draft202012Validator(schema, registry=Registry())
    problems: list[Problem] = []
    for e in validator.iter_errors(raw):
        if len(problems) >= MAX_PROBLEMS:
            break
        if e.validator == "additionalProperties" and (named := unknown_keys(e)):
            problems += [{"file": str(mpath), "pointer": ptr, "message": msg} for ptr, msg in named]
            continue
        problems.append({"file": str(mpath), "pointer": pointer(e.absolute_path), "message": json_message(e)})
    if not problems:  # the shape is the schema's: ids match SAFE_NAME; now what Windows reserves
        problems = reserved_names(mpath, raw)
    if problems:
        return None, sorted(problems, key=lambda p: p["pointer"])
    return raw, []


def unknown_keys(e: Any) -> list[tuple[str, str]]:
    """An additionalProperties error as one (pointer, message) per unknown key, naming the
    field path and, for a likely misspelling of a key the object lacks, the key meant."""
    if not isinstance(e.instance, dict) or not isinstance(e.schema, dict):
        return []
    known = [k for k in e.schema.get("properties") or {} if isinstance(k, str)]
    patterns = e.schema.get("patternProperties") or {}
    extra = [k for k in e.instance if k not in known and not any(re.search(p, k) for p in patterns)]
    out = []
    for key in extra[:20]:
        meant = close_key(key, [k for k in known if k not in e.instance])
        hint = f": did you mean {meant!r}?" if meant else f" (the keys here: {', '.join(known)})"
        out.append((pointer([*e.absolute_path, key]), f"unknown key {key!r}{hint}"[:500]))
    return out


def reserved_names(mpath: Path, raw: dict[str, Any]) -> list[Problem]:
    """The gem id and resource ids that Windows cannot have as file names (gem.names)."""
    names = [("/id", raw["id"])] + [
        (f"/resources/{i}/id", r["id"]) for i, r in enumerate(raw.get("resources", ()))
    ]
    return [
        {"file": str(mpath), "pointer": ptr, "message": f"{why} (SEC2)"}
        for ptr, value in names
        if (why := reserved(value))
    ]


def check_tools(
    root: Path,
    tools: list[dict[str, Any]],
    *,
    schema_key: str,
    rules: SchemaRules,
    bad: Callable[[str, str], None],
) -> dict[str, int]:
    """Tool names unique, files runnable, input schemas (under `schema_key`) usable within
    MAX_SCHEMA_OBJECTS in all; returns {tool name: index}."""
    seen: dict[str, int] = {}
    total = 0
    for i, tool in enumerate(tools):
        name = tool["name"]
        if name in seen:
            bad(f"/tools/{i}/name", f"duplicate tool name '{name}' (also /tools/{seen[name]})")
        seen.setdefault(name, i)
        why = tool_file_problem(root, tool["file"])
        if why:
            bad(f"/tools/{i}/file", why)
        schema = tool.get(schema_key, {"type": "object"})
        total += objects(schema)
        if total > MAX_SCHEMA_OBJECTS:
            bad(
                f"/tools/{i}/{schema_key}",
                f"the {schema_key}s hold more than {MAX_SCHEMA_OBJECTS:,} objects in all (up to this "
                "tool); checking them would take too long",
            )
            break
        for ptr, msg in check_input_schema(schema, rules):
            bad(f"/tools/{i}/{schema_key}{ptr}", msg)
    return seen


def link_problems(root: Path) -> list[Problem]:
    """Links leading out of the gem (the sandbox checks paths as written, N1) or nowhere ever
    (a loop: a gem that opened without a word, and failed when a tool met it)."""
    why = {
        "outside": "leads outside the gem folder; the sandbox may read only the gem's own files",
        "loop": "is a symbolic link loop (or a chain of over 40 links): nothing can open it; "
        "remove it or point it at a file",
    }
    return [
        {"file": str(link), "pointer": "", "message": f"symbolic link {link.relative_to(root)} {why[kind]}"}
        for link, kind in escaping_links(root)
    ]


def shipped_schema(package: str) -> dict[str, Any]:
    """The manifest.schema.json a platform's package ships."""
    import json
    from importlib import resources

    return json.loads(resources.files(package).joinpath("manifest.schema.json").read_text("utf-8"))


def load_checked(
    folder: Any, lint: Callable[[Path], list[Problem]], name: str, title: str
) -> tuple[Path, Any]:
    """(the gem folder, its parsed manifest.json) once `lint` finds no problem and the manifest
    still names platform `name`; else one GemLoadError naming file and JSON pointer."""
    root = gem_root(folder)
    raise_problems(lint(root))
    raw = read_json(root / "manifest.json")
    check_platform(root, raw, name, title)
    return root, raw


def tool_specs(root: Path, tools: list[dict[str, Any]], *, schema_key: str) -> dict[str, ToolSpec]:
    """The checked manifest's tools ({name: ToolSpec}); its input schema under `schema_key`,
    `sideEffect` and `permissions` where the platform's format has them."""
    out = {}
    for t in tools:
        out[t["name"]] = ToolSpec(
            name=t["name"],
            file=realpath(root / t["file"]) or root / t["file"],  # checked by lint just now
            rel_file=t["file"],
            description=t.get("description", ""),
            input_schema=root_schema(t.get(schema_key, {"type": "object"})),
            side_effect=t.get("sideEffect", "write"),
            permissions=t.get("permissions", {}),
            language=LANGUAGES[Path(t["file"]).suffix],
        )
    return out


def root_schema(schema: Any) -> dict[str, Any]:
    """A boolean root schema as the object schema meaning the same (`true`: any input, `false`:
    none), so every reader of ToolSpec.input_schema sees an object."""
    if isinstance(schema, bool):
        return {} if schema else {"not": {}}
    return schema


def gem_root(folder: Any) -> Path:
    """The gem folder with links resolved, or GemLoadError when there is none."""
    root = realpath(Path(folder)) or Path(folder).absolute()
    if not root.is_dir():
        raise GemLoadError(f"gem folder {root} does not exist", file=str(root))
    return root


def raise_problems(problems: list[Problem]) -> None:
    """One GemLoadError for all `problems` (first: file, pointer, line, column), if any."""
    if problems:
        first = problems[0]
        lines = "; ".join(f"{p['pointer'] or '/'}: {p['message']}" for p in problems)
        where = {k: v for k, v in first.items() if k != "message"}
        raise GemLoadError(f"{Path(first['file']).name}: {lines}", **where, problems=problems)


def check_platform(root: Path, raw: dict[str, Any], name: str, title: str) -> None:
    """The manifest still names platform `name` (it may have changed since detect() read it)."""
    if raw.get("platform", "notochord") != name:
        raise GemLoadError(
            f'manifest.json: "platform": {clip(repr(raw.get("platform", "notochord")), 80)} '
            f"is not {title}; open it again",
            file=str(root / "manifest.json"),
            pointer="/platform",
        )
