"""The checks every platform's loader runs on a gem folder: manifest.json against the
platform's JSON Schema, tool files, tool input schemas within a budget, links out of the
folder. Problems are {file, pointer, message}; `raise_problems` makes them one GemLoadError."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
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


def read_manifest(
    root: Path, schema: dict[str, Any] | None, name: str = "manifest.json"
) -> tuple[Any, list[Problem]]:
    """The manifest file `name` read within bounds (never through a link out of the gem) and
    checked against the platform's `schema` (None: only read): (the parsed value, []) or
    (None, its problems, sorted by pointer)."""
    mpath = root / name
    try:
        real = realpath(mpath)
        if real is not None and mpath.is_symlink() and not real.is_relative_to(root):
            raise GemLoadError(f"{name} is a link leading outside the gem folder", file=str(mpath))
        raw = read_json(mpath)
    except GemLoadError as exc:
        extra = {k: v for k, v in exc.details.items() if k != "file"}
        return None, [{"file": str(mpath), "pointer": "", "message": exc.message, **extra}]
    if schema is None:  # a platform that checks the shape itself: it reads an object
        if isinstance(raw, dict):
            return raw, []
        return None, [{"file": str(mpath), "pointer": "", "message": f"{name} holds no JSON object"}]
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
    if not problems and isinstance(raw, dict) and isinstance(raw.get("id"), str):
        problems = reserved_names(mpath, raw)  # the shape is the schema's; now what Windows reserves
    if problems:
        return None, sorted(problems, key=lambda p: p["pointer"])
    return raw, []


@dataclass
class ManifestLint:
    """One lint of a gem folder's manifest, as every platform's `lint` starts it
    (`lint_manifest`): the folder, the manifest file, its parsed value (None when it could not
    be read or fails the schema: `problems` says why) and the problems found so far."""

    root: Path
    file: Path
    raw: Any
    problems: list[Problem] = field(default_factory=list)

    def bad(self, pointer: str, message: str) -> None:
        """One problem of the manifest at JSON `pointer`."""
        self.problems.append({"file": str(self.file), "pointer": pointer, "message": message})

    def tools(self, *, schema_key: str, rules: SchemaRules, key: str = "tools") -> dict[str, int]:
        """The manifest's tool list (under `key`: objects with `name` and `file`) checked as
        `check_tools` does; {tool name: index}."""
        return check_tools(self.root, self.raw[key], schema_key=schema_key, rules=rules, bad=self.bad)

    def done(self) -> list[Problem]:
        """The problems, with the links leading out of the gem, at most MAX_PROBLEMS."""
        return [*self.problems, *link_problems(self.root)][:MAX_PROBLEMS]


def lint_manifest(
    folder: str | os.PathLike[str], *, schema: dict[str, Any] | None = None, file: str = "manifest.json"
) -> ManifestLint:
    """Start the lint of the gem at `folder`: its manifest `file` read within bounds and checked
    against `schema` (a JSON Schema; None: only read). When `.raw` is None, `.problems` is the
    whole answer; else check the rest with `.bad`/`.tools` and return `.done()`."""
    root = realpath(Path(folder)) or Path(folder).absolute()
    raw, problems = read_manifest(root, schema, file)
    return ManifestLint(root, root / file, raw, problems)


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
    # a plugin's schema may give `resources` another shape: only ids that are strings
    names = [("/id", raw["id"])] + [
        (f"/resources/{i}/id", r["id"])
        for i, r in enumerate(raw.get("resources") or ())
        if isinstance(r, dict) and isinstance(r.get("id"), str)
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
