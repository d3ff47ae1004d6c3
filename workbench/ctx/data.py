"""ctx.data (D1): the manifest's collections as JSON documents in the data store.

Each manifest index is an index of the store (providers/datastore.py), and `find` gives the
store its filter as field conditions (`Cond`), which the store compiles so its indexes apply.
Inserts are buffered and written at once before any other storage access and at the end of
the call: same results, a fraction of the cost.
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from .._json import dump_flat, flat, why_not_json
from .._text import well_formed
from ..providers.datastore import Cond
from .spec import CapabilitySpec, View
from .state_store import DOCUMENTS
from .storage import bounded_rows

if TYPE_CHECKING:
    from ..providers.datastore import DataStore, Filter
    from ._session import CallSession

DEFAULT_LIMIT, MAX_LIMIT = 50, 1000
_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_OPS = ("eq", "ne", "gt", "gte", "lt", "lte")


_IDS: list[str] = []  # drawn, not yet given
_ID_BLOCK = 512


def new_id(rng: Any = None) -> str:
    """A document id: 64 bits from the system's CSPRNG as 16 hex digits, drawn 512 at a time
    (one system call, not one per insert). A forked child draws its own. With `rng` (the call's
    seeded stream, CallSession.rng: a bench opened with seed=), from it: replays repeat ids."""
    if rng is not None:
        return f"{rng.getrandbits(64):016x}"
    try:
        return _IDS.pop()
    except IndexError:  # (another thread may refill too: both lists are fresh randomness)
        block = os.urandom(8 * _ID_BLOCK).hex()
        _IDS.extend([block[i : i + 16] for i in range(16, len(block), 16)])
        return block[:16]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_IDS.clear)


def dumps_doc(doc: Any, what: str, limit: int) -> str:
    """The document as stored: JSON text, well-formed UTF-8, at most `limit` characters."""
    if not isinstance(doc, dict):
        raise WorkbenchError(
            "E_INVALID_ARGUMENT", f"{what} must be an object, got {type(doc).__name__}", field=what
        )
    if "id" in doc:
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"{what} has a field 'id': ids are given by insert and cannot be set or changed",
            field=f"{what}.id",
        )
    if flat(doc):  # the usual document: scalars only, checked in one pass
        text = dump_flat(doc)
    else:
        why = why_not_json(doc, what)  # also what json.dumps would quietly convert ({1: …})
        if why:
            raise WorkbenchError("E_INVALID_ARGUMENT", why, field=why.split(" ", 1)[0])
        try:
            text = json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError, RecursionError) as exc:
            raise WorkbenchError("E_INVALID_ARGUMENT", f"{what} is not JSON: {exc}", field=what) from None
    if len(text) > limit:
        raise WorkbenchError(
            "E_TOO_LARGE",
            f"{what} is {len(text):,} JSON characters; at most {limit:,} per document",
            field=what,
            limit=limit,
        )
    return well_formed(text)


def _field(field: Any) -> str:
    if not isinstance(field, str) or not _FIELD.fullmatch(field):
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"{field!r} is not a field name (letters, digits, '_', dotted for nested fields)",
            field=str(field),
        )
    return field


def _scalar(v: Any, field: str) -> Any:
    if isinstance(v, str):
        return well_formed(v)
    if v is None or isinstance(v, (int, float)):
        return v
    raise WorkbenchError(
        "E_INVALID_ARGUMENT",
        f"filter on '{field}' compares with {type(v).__name__}; use a string, number, boolean or null",
        field=field,
    )


def where_filter(where: Any) -> Filter:
    """{field: value | {eq, ne, gt, gte, lt, lte, in}} -> the store's neutral filter.

    null matches a null or missing field (eq, in); ne is the exact complement of eq.
    """
    if where is None:
        return ()
    if not isinstance(where, dict):
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            "where must be an object of field -> value or {gt, gte, lt, lte, ne, in}",
            field="where",
        )
    conds: list[Cond] = []
    for field, cond in where.items():
        name = _field(field)
        ops = cond if isinstance(cond, dict) else {"eq": cond}
        for op, v in ops.items():
            if op == "in":
                if not isinstance(v, list):
                    raise WorkbenchError("E_INVALID_ARGUMENT", f"'in' on '{field}' needs a list", field=field)
                conds.append(Cond(name, "in", tuple(_scalar(x, field) for x in v)))
            elif op in _OPS:
                conds.append(Cond(name, op, _scalar(v, field)))
            else:
                raise WorkbenchError(
                    "E_INVALID_ARGUMENT",
                    f"unknown operator {op!r} on '{field}': use one of {', '.join([*_OPS, 'in'])}",
                    field=field,
                )
    return tuple(conds)


def _id(id_: Any) -> str:
    if not isinstance(id_, str):
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"document id must be a string as insert returned it, got {type(id_).__name__}",
            field="id",
        )
    return well_formed(id_)


def _row(id_: str, doc: str) -> dict[str, Any]:
    return {"id": id_, **json.loads(doc)}


class Data:
    """ctx.data for one call: collections declared in the manifest, nothing else (D1)."""

    def __init__(self, session: CallSession) -> None:
        self.s = session
        self.store: DataStore = session.providers.store
        self._pending: dict[str, list[tuple[str, str]]] = {}

    def check(self, name: Any) -> str:
        if not isinstance(name, str):
            raise WorkbenchError(
                "E_INVALID_ARGUMENT",
                f"a collection name is a string, got {type(name).__name__}",
                field="name",
            )
        if name not in self.s.manifest.collections:
            declared = ", ".join(self.s.manifest.collections) or "none"
            raise WorkbenchError(
                "E_UNKNOWN_COLLECTION",
                f"collection {name!r} is not declared in "
                f"manifest.json data.collections (declared: {declared})",
                field="data.collections",
                collection=name,
            )
        return name

    def _flush(self) -> None:
        for name, docs in self._pending.items():
            if docs:
                self.store.insert_docs(name, docs)
                docs.clear()

    def insert(self, name: str, doc: Any) -> dict[str, str]:
        self.s.attempt(f"data.{name}.insert")  # D4: the attempt, even one refused below
        self.check(name)
        text = dumps_doc(doc, "document", self.s.limits.sql_value_bytes)
        self.s.writing(f"data.{name}.insert")
        if name not in self._pending:
            self._pending[name] = []
            self.s.on_flush(self._flush)
        id_ = new_id(self.s.rng())
        self._pending[name].append((id_, text))
        return {"id": id_}

    def get(self, name: str, id: str) -> dict[str, Any] | None:
        self.s.flush()
        self.check(name)
        id = _id(id)
        doc = self.store.get_doc(name, id)
        return None if doc is None else _row(id, doc)

    def update(self, name: str, id: str, patch: Any) -> dict[str, str]:
        self.s.attempt(f"data.{name}.update")
        self.check(name)
        id = _id(id)
        text = dumps_doc(patch, "patch", self.s.limits.sql_value_bytes)
        self.s.writing(f"data.{name}.update")
        self.s.flush()
        if not self.store.update_doc(name, id, text):  # RFC 7396: given fields replace, null removes
            raise WorkbenchError(
                "E_NOT_FOUND", f"no document {id!r} in collection {name!r}", collection=name, id=id
            )
        return {"id": id}

    def delete(self, name: str, id: str) -> dict[str, bool]:
        self.s.attempt(f"data.{name}.delete")
        self.check(name)
        id = _id(id)
        self.s.writing(f"data.{name}.delete")
        self.s.flush()
        return {"deleted": self.store.delete_doc(name, id)}

    def count(self, name: str, where: Any = None) -> int:
        self.check(name)
        self.s.flush()
        return self.store.count_docs(name, where_filter(where))

    def find(self, name: str, query: Any = None) -> dict[str, Any]:
        """{where?, orderBy?, order?: 'asc'|'desc', limit?, cursor?} -> {items, cursor}."""
        self.check(name)
        self.s.flush()
        q = query or {}
        if not isinstance(q, dict):
            raise WorkbenchError(
                "E_INVALID_ARGUMENT",
                "find takes an object like { where, orderBy, order, limit, cursor }",
                field="query",
            )
        unknown = set(q) - {"where", "orderBy", "order", "limit", "cursor"}
        if unknown:
            raise WorkbenchError(
                "E_INVALID_ARGUMENT", f"find: unknown option(s) {sorted(unknown)}", field=sorted(unknown)[0]
            )
        where = where_filter(q.get("where"))
        limit = q.get("limit", DEFAULT_LIMIT)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise WorkbenchError(
                "E_INVALID_ARGUMENT",
                f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}",
                field="limit",
                limit=MAX_LIMIT,
            )
        order = q.get("order", "asc")
        if order not in ("asc", "desc"):
            raise WorkbenchError(
                "E_INVALID_ARGUMENT", f"order must be 'asc' or 'desc', got {order!r}", field="order"
            )
        order_by = _field(q["orderBy"]) if "orderBy" in q else None
        cursor = q.get("cursor")
        try:
            offset = int(cursor.removeprefix("o:")) if cursor else 0
            if not 0 <= offset < 2**63 - limit:
                raise ValueError(cursor)
        except (AttributeError, ValueError):
            raise WorkbenchError(
                "E_INVALID_ARGUMENT", f"cursor {cursor!r} was not returned by find", field="cursor"
            ) from None
        # one row past the page says whether there is a next one
        found = self.store.find_docs(
            name, where, order_by=order_by, descending=order == "desc", limit=limit + 1, offset=offset
        )
        rows = bounded_rows(
            found, self.s.limits.sql_result_bytes, "find; use a smaller limit:", field="limit"
        )
        more = len(rows) > limit
        return {"items": [_row(*r) for r in rows[:limit]], "cursor": f"o:{offset + limit}" if more else None}


#: ctx.data as a unit
SPEC = CapabilitySpec(
    impl="data",
    state=(DOCUMENTS,),
    title="ctx.data",
    implementation=Data,
    provider_kinds=("storage",),
    views=(View("data", "a collection's documents"),),
)
