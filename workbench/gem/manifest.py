"""Loading a gem folder: manifest.json parsed and checked into typed objects.

Everything in the folder is hostile data (SEC7): `load_manifest` and `lint` never raise
anything but GemLoadError (E_MANIFEST, naming the file and JSON pointer) for it. manifest.json
is read only if it is a regular file of at most MAX_MANIFEST_BYTES, nested at most
MAX_MANIFEST_DEPTH levels, without lone surrogates; values that become paths (gem id, resource
ids, tool files) must be safe names or stay inside the gem folder (SEC2).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass, field
from importlib import resources as _res
from pathlib import Path
from typing import Any, Literal

from .._errors import GemLoadError
from .._text import is_unicode
from .schema import check_input_schema, pointer

MiB = 1024 * 1024
MAX_MANIFEST_BYTES = 4 * MiB     # manifest.json: far above any real one (tens of KB)
MAX_MANIFEST_DEPTH = 64          # nesting of manifest.json, inputSchemas included
MAX_SCHEMA_SQL_BYTES = 4 * MiB   # db/schema.sql
MAX_SCHEMA_OBJECTS = 5_000       # objects in all inputSchemas together: jsonschema's metaschema
                                 # check costs ~1 ms each (real gems: a few hundred)
MAX_PROBLEMS = 200               # problems one lint reports

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


def _read_file(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes, or GemLoadError saying why not.

    Opened non-blocking and checked after opening: a FIFO must not hang the load, and a
    directory, device, symlink loop or huge file is an error, not a traceback."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise GemLoadError(f"{path.name} not found in {path.parent}", file=str(path)) from None
    except OSError as exc:
        why = "a symbolic link loop" if exc.errno == errno.ELOOP else exc.strerror
        raise GemLoadError(f"{path.name} cannot be read: {why}", file=str(path)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise GemLoadError(f"{path.name} is {kind}", file=str(path))
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 * MiB, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise GemLoadError(f"{path.name} is larger than {limit:,} bytes", file=str(path),
                               limit=limit)
        return b"".join(chunks)
    except OSError as exc:
        raise GemLoadError(f"{path.name} cannot be read: {exc.strerror}", file=str(path)) from None
    finally:
        os.close(fd)


def _read_text(path: Path, limit: int) -> str:
    data = _read_file(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GemLoadError(f"{path.name} is not UTF-8 ({exc.reason} at byte {exc.start})",
                           file=str(path)) from None


def _read_json(path: Path) -> Any:
    text = _read_text(path, MAX_MANIFEST_BYTES)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GemLoadError(f"{path.name} is not valid JSON: {exc.msg} at line {exc.lineno} "
                           f"column {exc.colno}", file=str(path), line=exc.lineno,
                           column=exc.colno) from None
    except RecursionError:  # the C parser's own guard, around 1,000 levels
        raise GemLoadError(f"{path.name} is nested deeper than {MAX_MANIFEST_DEPTH} levels",
                           file=str(path), limit=MAX_MANIFEST_DEPTH) from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise GemLoadError(f"{path.name} is not usable JSON: {exc}", file=str(path)) from None
    where, why = _hostile_value(value)
    if why:
        raise GemLoadError(f"{path.name}: {where or '/'}: {why}", file=str(path), pointer=where,
                           **({"limit": MAX_MANIFEST_DEPTH} if "deeper" in why else {}))
    return value


def _hostile_value(value: Any) -> tuple[str, str]:
    """(pointer, why) of the first place nested deeper than MAX_MANIFEST_DEPTH or holding a
    lone surrogate ("\\ud800": not Unicode text, cannot be printed, stored or sent as UTF-8);
    ("", "") when there is none. Iterative, with parent links: the data is hostile."""
    up: list[tuple[int, Any]] = []  # container -> (its parent container, its key there)
    stack: list[tuple[Any, int, int, Any]] = [(value, 0, -1, None)]  # value, depth, parent, key

    def at(parent: int, key: Any) -> str:
        parts = [] if parent < 0 else [key]
        while parent >= 0:
            parent, k = up[parent]
            if parent >= 0:
                parts.append(k)
        return pointer(reversed(parts))

    while stack:
        v, depth, parent, key = stack.pop()
        if isinstance(v, str):
            if not v.isascii() and not is_unicode(v):
                return at(parent, key), "a string holds a lone surrogate, which is not Unicode text"
        elif isinstance(v, (dict, list)):
            if depth >= MAX_MANIFEST_DEPTH:
                return at(parent, key), f"nested deeper than {MAX_MANIFEST_DEPTH} levels"
            up.append((parent, key))
            me = len(up) - 1
            if isinstance(v, dict):
                for k, item in v.items():
                    if not k.isascii() and not is_unicode(k):
                        return at(me, k), "a key holds a lone surrogate, which is not Unicode text"
                    stack.append((item, depth + 1, me, k))
            else:
                stack.extend((item, depth + 1, me, i) for i, item in enumerate(v))
    return "", ""


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


def _realpath(path: Path) -> Path | None:
    """The path with links resolved, or None when it cannot be (a NUL byte, a loop that
    os.path.realpath reports): Path.resolve raises RuntimeError on loops before 3.13."""
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return None


def _tool_file_problem(root: Path, rel: str) -> str | None:
    """Why the tool file `rel` cannot be run, if it cannot: it must be a regular file inside
    tools/ (links only within it) with the extension the manifest declares."""
    file = _realpath(root / rel)
    if file is None:
        return f"tool file {rel} cannot be resolved"
    if not file.is_relative_to(root / "tools"):
        return f"{rel} is outside the gem's tools/ folder"
    try:
        info = os.stat(file)
    except FileNotFoundError:
        return f"tool file {rel} does not exist"
    except OSError as exc:
        why = "a symbolic link loop" if exc.errno == errno.ELOOP else exc.strerror
        return f"tool file {rel} cannot be read: {why}"
    if not stat.S_ISREG(info.st_mode):
        return f"tool file {rel} is not a regular file (a folder, FIFO or device)"
    if file.suffix != Path(rel).suffix:
        return f"tool file {rel} is a link to {file.name}, whose extension differs"
    return None


def _escaping_links(root: Path) -> list[Path]:
    out = []
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath) / name
            if p.is_symlink():
                target = _realpath(p)
                if target is None or not target.is_relative_to(root):
                    out.append(p)
    return sorted(out)


def lint(root: "str | os.PathLike[str]") -> list[dict[str, str]]:
    """Every problem of the gem at `root` as {file, pointer, message}; empty when it is fine."""
    root = _realpath(Path(root)) or Path(root).absolute()
    mpath = root / "manifest.json"
    try:
        real = _realpath(mpath)
        if real is not None and mpath.is_symlink() and not real.is_relative_to(root):
            raise GemLoadError("manifest.json is a link leading outside the gem folder",
                               file=str(mpath))
        raw = _read_json(mpath)
    except GemLoadError as exc:
        return [{"file": str(mpath), "pointer": "", "message": exc.message,
                 **{k: v for k, v in exc.details.items() if k != "file"}}]
    from jsonschema import Draft202012Validator
    from referencing import Registry

    # our own schema; an empty registry all the same: nothing is ever fetched
    validator = Draft202012Validator(manifest_schema(), registry=Registry())
    problems: list[dict[str, Any]] = []
    for e in validator.iter_errors(raw):
        if len(problems) >= MAX_PROBLEMS:
            break
        problems.append({"file": str(mpath), "pointer": pointer(e.absolute_path),
                         "message": _clip(e.message)})
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
        why = _tool_file_problem(root, tool["file"])
        if why:
            bad(f"/tools/{i}/file", why)
        schema = tool.get("inputSchema", {"type": "object"})
        objects += _objects(schema)
        if objects > MAX_SCHEMA_OBJECTS:
            bad(f"/tools/{i}/inputSchema", f"the inputSchemas hold more than "
                f"{MAX_SCHEMA_OBJECTS:,} objects in all (up to this tool); checking them would "
                "take too long")
            break
        for ptr, msg in check_input_schema(schema):
            bad(f"/tools/{i}/inputSchema{ptr}", msg)
    ids: dict[str, int] = {}
    for i, res in enumerate(raw.get("resources", ())):
        if res["id"] in ids:  # one cache file per id: a second would shadow the first
            bad(f"/resources/{i}/id", f"duplicate resource id '{res['id']}' "
                                      f"(also /resources/{ids[res['id']]})")
        ids.setdefault(res["id"], i)
    sql = root / "db" / "schema.sql"
    if os.path.lexists(sql):
        try:
            _schema_sql(root)
        except GemLoadError as exc:
            problems.append({"file": str(sql), "pointer": "", "message": exc.message})
    for link in _escaping_links(root):  # Deno checks paths as written: a link would escape N1
        problems.append({"file": str(link), "pointer": "",
                         "message": f"symbolic link {link.relative_to(root)} leads outside the gem "
                                    "folder; the sandbox may read only the gem's own files"})
    for i, trig in enumerate(raw.get("triggers", ())):
        if trig["tool"] not in seen:
            bad(f"/triggers/{i}/tool", f"trigger names unknown tool '{trig['tool']}'")
    return problems[:MAX_PROBLEMS]


def _clip(text: str, limit: int = 300) -> str:
    """A message of bounded size (jsonschema's quote whole values), printable as UTF-8."""
    text = text if len(text) <= limit else text[:limit - 1] + "…"
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


def _schema_sql(root: Path) -> str | None:
    """db/schema.sql (a fixed name): a regular UTF-8 file inside the gem, or None."""
    path = root / "db" / "schema.sql"
    if not os.path.lexists(path):
        return None
    real = _realpath(path)
    if real is None or not real.is_relative_to(root):
        raise GemLoadError("db/schema.sql is a link leading outside the gem folder",
                           file=str(path))
    return _read_text(path, MAX_SCHEMA_SQL_BYTES)


def load_manifest(root: "str | os.PathLike[str]") -> Manifest:
    """Load and check the gem at `root`; raise GemLoadError naming file and JSON pointer."""
    root = _realpath(Path(root)) or Path(root).absolute()
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
        file = _realpath(root / t["file"]) or root / t["file"]  # checked by lint just now
        tools[t["name"]] = ToolSpec(
            name=t["name"], file=file, rel_file=t["file"], description=t.get("description", ""),
            input_schema=t.get("inputSchema", {"type": "object"}),
            side_effect=t.get("sideEffect", "write"), permissions=t.get("permissions", {}),
            language=_LANGUAGES[Path(t["file"]).suffix])
    colls = {n: CollectionSpec(n, tuple(c.get("indexes", ())))
             for n, c in raw.get("data", {}).get("collections", {}).items()}
    return Manifest(
        root=root, id=raw["id"], name=raw["name"], version=raw["version"],
        platform=raw.get("platform", "notochord"), permissions=raw.get("permissions", {}),
        collections=colls, resources=tuple(raw.get("resources", ())), tools=tools,
        schema_sql=_schema_sql(root), raw=raw)
