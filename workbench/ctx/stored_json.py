"""The JSON of stored things, one shape everywhere (ctx/statejson.py puts a bench's whole
state in it): files as `{root, path, type, text | base64}`, SQL as `{table: {create, rows:
[{column: value}]}}`, and the checks that put them back onto a bench. The store parts
(ctx/state_store.py) and their pins use these; the whole state's functions over every part
stay in ctx/statejson.py, above the registry of parts.
"""

from __future__ import annotations

import base64
import json
import re
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from .parts import Refusal
from .paths import PREFIX, hidden, split

if TYPE_CHECKING:
    from ..platforms import Limits
    from .stores import Providers

__all__ = ["content_json", "put_files", "put_sql", "sql_json", "table_json"]

MAX_PATH_CHARS = 4096
WORKSPACE = "workspace"  # the conversation folder's root: the files state a call can find
_SEGMENT_BAD = re.compile(r"[\x00-\x1f\\]")


def content_json(data: bytes | None) -> dict[str, Any]:
    """A file's bytes as JSON: {"text"} when they are UTF-8, else {"base64"}; {} for a folder."""
    if data is None:
        return {}
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def sql_json(row: dict[str, Any]) -> dict[str, Any]:
    """A SQL row with its blobs as {"base64"} (JSON has no bytes)."""
    return {
        k: {"base64": base64.b64encode(v).decode("ascii")} if isinstance(v, bytes) else v
        for k, v in row.items()
    }


def table_json(create: str, rows: dict[Any, dict[str, Any]]) -> dict[str, Any]:
    """A table as JSON: its CREATE, its rows in rowid order and their rowids (none for a table
    WITHOUT ROWID, whose rows are their own keys), so a replay's rows keep their ids."""
    keys = sorted(rows, key=lambda k: (not isinstance(k, int), k if isinstance(k, int) else 0, str(k)))
    out: dict[str, Any] = {"create": create, "rows": [sql_json(rows[k]) for k in keys]}
    if keys and all(isinstance(k, int) for k in keys):
        out["rowids"] = keys
    return out


# -- back onto a bench ----------------------------------------------------------------------
def _entry_path(bad: Refusal, where: str, entry: Any, roots: list[str]) -> tuple[str, str]:
    if (
        not isinstance(entry, dict)
        or not isinstance(entry.get("path"), str)
        or not isinstance(entry.get("root"), str)
    ):
        raise bad(where, "is not {root, path, type, text | base64}")
    root, rel = entry["root"], entry["path"]
    if root not in roots:
        raise bad(
            where,
            f"root {root[:40]!r} is not {', '.join(map(repr, roots))} (a call's run folder starts empty: F2)",
        )
    parts = rel.split("/")
    if (
        not rel
        or len(rel) > MAX_PATH_CHARS
        or any(p in ("", ".", "..") for p in parts)
        or _SEGMENT_BAD.search(rel)
        or rel.startswith(PREFIX)  # the root is `root`'s: a prefixed path mixes up the two
    ):
        raise bad(
            where,
            f"path {rel[:80]!r} is not a relative path inside the conversation folder (no '..', no absolute path)",
        )
    try:  # the rules of a gem path (F9): name and path bytes, lone surrogates
        split(PREFIX + rel)
    except WorkbenchError as exc:
        raise bad(where, exc.message, **{k: v for k, v in exc.details.items() if k == "limit"}) from None
    if hidden(root, rel):
        raise bad(where, f"path {rel[:80]!r} is a dot-entry, which a gem cannot see (SEC3)")
    if entry.get("type") not in ("file", "folder"):
        raise bad(
            where, f"type {str(entry.get('type'))[:40]!r} is not 'file' or 'folder' (a case holds no links)"
        )
    return root, rel


def _free(bad: Refusal, where: str, p: Providers, root: str, rel: str, kind: str, listed: set[str]) -> None:
    """Refuse an entry that repeats one before it or goes through a file (a file then a folder
    of its name, or a file inside a file): the case then says two things of one path."""
    here = p.files.entry(root, rel)
    if rel in listed or (here is not None and (kind == "file" or here.type != "folder")):
        raise bad(where, f"path {rel[:80]!r} is already an entry of the case")
    parts = rel.split("/")
    for i in range(1, len(parts)):
        above = p.files.entry(root, "/".join(parts[:i]))
        if above is not None and above.type != "folder":
            raise bad(
                where, f"path {rel[:80]!r} goes through {'/'.join(parts[:i])[:80]!r}, a file of the case"
            )
    listed.add(rel)


def _content(bad: Refusal, where: str, entry: dict[str, Any], limit: int) -> bytes:
    if "text" in entry:
        if not isinstance(entry["text"], str):
            raise bad(where, "text is not a string")
        data = entry["text"].encode("utf-8", "surrogatepass")
    else:
        try:
            data = base64.b64decode(str(entry.get("base64", "")), validate=True)
        except ValueError:
            raise bad(where, "base64 is not base64") from None
    if len(data) > limit:
        raise bad(where, f"is {len(data):,} bytes, over the platform's file_bytes ({limit:,})", limit=limit)
    return data


def _sql_value(v: Any) -> Any:
    if isinstance(v, dict) and set(v) == {"base64"}:
        return base64.b64decode(str(v["base64"]), validate=True)
    if isinstance(v, (dict, list)):
        return json.dumps(v)
    return v


def put_files(bad: Refusal, p: Providers, limits: Limits, files: Any) -> None:
    roots = [WORKSPACE]
    if not isinstance(files, list):
        raise bad("files", "is not a list")
    listed: set[str] = set()
    for n, entry in enumerate(files):
        where = f"files.{n}"
        root, rel = _entry_path(bad, where, entry, roots)
        _free(bad, where, p, root, rel, entry["type"], listed)
        parent = rel.rpartition("/")[0]
        if parent:
            p.files.mkdir(root, parent)
        if entry.get("type") == "folder":
            p.files.mkdir(root, rel)
        else:
            p.files.write(root, rel, _content(bad, where, entry, limits.file_bytes))


def put_sql(bad: Refusal, p: Providers, tables: Any) -> None:
    if not isinstance(tables, dict):
        raise bad("sql", "is not {table: {rows}}")
    db = p.sql_db
    known = set(db.tables())
    for t, spec in tables.items():
        if t not in known:
            raise bad(f"sql.{t[:40]}", "is not a table the gem's db/schema.sql makes")
        cols = {r[1] for r in db.query("SELECT * FROM pragma_table_info(?)", (t,))[1]}
        rows = spec.get("rows") if isinstance(spec, dict) else None
        if not isinstance(rows, list):
            raise bad(f"sql.{t}.rows", "is not a list")
        ids = spec.get("rowids")
        if ids is not None and (
            not isinstance(ids, list)
            or len(ids) != len(rows)
            or not all(type(i) is int and -(2**63) <= i < 2**63 for i in ids)
        ):
            raise bad(f"sql.{t}.rowids", "is not a list of whole numbers, one per row")
        alias = next((a for a in ("rowid", "_rowid_", "oid") if a not in {c.lower() for c in cols}), None)
        if alias is None:
            ids = None
        db.execute(f'DELETE FROM "{t.replace(chr(34), chr(34) * 2)}"', ())
        quoted = '"' + t.replace('"', '""') + '"'
        for j, row in enumerate(rows):
            if not isinstance(row, dict) or not row or not set(row) <= cols:
                got = sorted(row)[:8] if isinstance(row, dict) else type(row).__name__
                raise bad(
                    f"sql.{t}.rows.{j}", f"columns {got!r} are not the table's ({', '.join(sorted(cols))})"
                )
            names = ", ".join(
                [str(alias)] * (ids is not None) + ['"' + c.replace('"', '""') + '"' for c in row]
            )
            marks = ", ".join("?" for _ in range(len(row) + (ids is not None)))
            try:
                values = ([ids[j]] if ids is not None else []) + [_sql_value(v) for v in row.values()]
            except ValueError:
                raise bad(f"sql.{t}.rows.{j}", "a {base64} value is not base64") from None
            try:
                db.execute(f"INSERT INTO {quoted} ({names}) VALUES ({marks})", values)
            except Exception as exc:  # a constraint, a type SQLite refuses: the row named
                raise bad(f"sql.{t}.rows.{j}", f"SQLite refused it: {exc}") from None
    if db.in_transaction:
        db.commit()
