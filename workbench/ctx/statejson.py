"""A bench's state as JSON and back: what a pinned call found and changed (issue 29), an exported
state folder and a repro bundle's state.

One shape everywhere: files as `{root, path, type, text | base64}`, kv as `{key: text}`,
documents as `{collection: {id: document}}`, SQL as `{table: {create, rows: [{column: value}]}}`
and changes as `{kind, where, key, change, after}`. The JSON is input written by someone else
when it comes back (a case file, a bundle): `put_state` confines every path to the bench's own
roots, every collection to the gem's declared ones and every table to those its db/schema.sql
made, bounds each file by the platform's file_bytes, and names the entry it refuses. The
shapes of stored things and their checks are ctx/stored_json.py's (the store parts use them
without this module, which reaches every part through ctx/state.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .parts import json_changes
from .stored_json import content_json, put_files, put_sql, sql_json, table_json

if TYPE_CHECKING:
    from .before import Before

__all__ = [
    "changes",
    "part_changes",
    "content_json",
    "dump_state",
    "put_files",
    "put_sql",
    "put_state",
    "sql_json",
    "table_json",
]


def dump_state(bench: Any) -> dict[str, Any]:
    """The whole state of `bench` as JSON: each "state" part's (ctx/state.py), e.g. files
    outside run folders, kv, documents, SQL rows."""
    from .state import dump

    return dump(bench)


def changes(before: Before) -> list[dict[str, Any]]:
    """What changed since `before` in the parts it copied (on the bench it copied them from):
    one entry (kind, where, key, change, after) per file, kv key, document, SQL row, … as each
    part says (`StatePart.changed`; default: its copy against its dump now, key by key)."""
    return [entry for rows in part_changes(before).values() for entry in rows]


def part_changes(before: Before) -> dict[str, list[dict[str, Any]]]:
    """`changes`, part by part: {part name: its entries}, in the order a case lists them."""
    out: dict[str, list[dict[str, Any]]] = {}
    for part, cx, copy in before.ordered():
        if part.changed is not None:
            out[part.name] = part.changed(copy, cx)
            continue
        now = part.dump(cx)
        if part.reached is not None and isinstance(now, dict):  # only the sub-keys it reached
            now = {k: now[k] for k in copy if k in now}
        out[part.name] = [
            {"kind": row.kind, "where": row.where, "key": row.key, "change": row.change, "after": row.after}
            for row in json_changes(part.kind or part.name, part.name, copy, now)
        ]
    return out


def put_state(bench: Any, state: dict[str, Any], *, code: str, label: str, empty: bool = True) -> None:
    """Put `state` ({part: JSON}) on `bench`, each part emptied first (unless `empty` is
    False: the parts it does not name stay as they are), each entry checked; a bad one is
    WorkbenchError(`code`) naming `label` and the entry. The bench is fresh (a replay's, a
    bundle's): an error leaves it to be closed, nothing else touched."""
    from .state import put

    put(bench, state, code=code, label=label, empty=empty)
