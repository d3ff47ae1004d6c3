"""State as pandas DataFrames. Read-only views; nothing here changes state."""

from __future__ import annotations

import gc
import itertools
import json
from typing import TYPE_CHECKING, Any

import pandas as pd

from .._text import well_formed

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..bench.result import CallResult
    from ..ctx.stores import DataStore, Envelope, FileStore, SqlDatabase
    from ..gem import Manifest

FILE_COLUMNS = ["area", "path", "type", "size", "modified", "call_id", "hidden"]


def tools(manifest: Manifest) -> pd.DataFrame:
    from ..platforms import profile

    rows = []
    effective = {v: k for k, v in manifest.aliases.items()}  # K4: the name the assistant sees
    prof = profile(manifest.platform)
    aliased, side_effects = prof.effective_names, prof.side_effects
    for t in manifest.tools.values():
        props, req = t.input_schema.get("properties", {}), set(t.input_schema.get("required", ()))
        rows.append(
            {
                "name": t.name,
                **({"effective_name": effective.get(t.name, t.name)} if aliased else {}),
                "language": t.language,
                "file": t.rel_file,
                **({"sideEffect": t.side_effect} if side_effects else {}),
                "inputs": ", ".join(p + ("*" if p in req else "") for p in props),
                "description": t.description,
            }
        )
    columns = ["name", "language", "file", *(["sideEffect"] if side_effects else []), "inputs", "description"]
    if aliased:
        columns.insert(1, "effective_name")
    return pd.DataFrame(rows, columns=columns)


def files(store: FileStore) -> pd.DataFrame:
    """Every file and folder; `path` as a gem writes it (`workspace:` prefix for the conversation
    folder); `hidden` marks dot-entries that gems cannot see (F10)."""
    rows = []
    for root in store.roots():
        ws = root == "workspace"
        for path, e in store.walk(root):
            rows.append(
                {
                    "area": "workspace" if ws else "run",
                    "path": f"workspace:{path}" if ws else path,
                    "type": e.type,
                    "size": e.size,
                    "modified": e.modified,
                    "call_id": None if ws else root.removeprefix("run/"),
                    "hidden": ws and any(s.startswith(".") for s in path.split("/")),
                }
            )
    df = pd.DataFrame(rows, columns=FILE_COLUMNS)
    df["modified"] = pd.to_datetime(df["modified"], unit="ms")
    return df


def collection(store: DataStore, name: str) -> pd.DataFrame:
    """A collection's documents in insertion order: `id`, then one column per top-level field."""
    ids, text = store.docs_joined(name)
    if not ids:
        return pd.DataFrame(columns=["id"])
    # one decode of the whole column (per-row decoding dominated the cost), with the cyclic GC
    # paused: building 100k acyclic dicts otherwise triggers full collections for nothing
    paused = gc.isenabled()
    gc.disable()
    try:
        docs = _decode(text)
        df = pd.DataFrame.from_records(docs, columns=_fields(docs))
        del docs  # now, not with the GC back on: it would walk each dict once more
    finally:
        if paused:
            gc.enable()
    df.insert(0, "id", ids)
    return df


_DIGITS = bytes.maketrans(b"0123456789", b"0" * 10)


def _decode(text: bytes) -> Any:
    """JSON text as json.loads reads it, read by orjson (faster) where that reads the same."""
    try:
        import orjson
    except ImportError:  # a dependency; json reads the same, slower
        return json.loads(text.decode("utf-8"))
    # orjson reads an integer beyond 64 bits as a float (json: an int); 19 digits can be one
    if b"0" * 19 not in text.translate(_DIGITS):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:  # also what json reads: 1e400, a lone "\ud800"
            pass
    return json.loads(text.decode("utf-8"))


def _fields(docs: list[Any]) -> list[str] | None:
    """The columns pandas finds in these records, in its order (first seen first), found faster;
    None (pandas looks) unless every record is an object."""
    if set(map(type, docs)) != {dict}:
        return None
    if len(set().union(*docs)) == len(docs[0]):  # no document has a field the first lacks
        return list(docs[0])
    return list(dict.fromkeys(itertools.chain.from_iterable(docs)))


def kv(store: DataStore) -> pd.DataFrame:
    return pd.DataFrame(store.kv_items(), columns=["key", "value"])


def account_storage(store: DataStore) -> pd.DataFrame:
    """Ekanos' account records (ctx.storage.account, K6) as a tool's get() sees them."""
    from ..ctx.account import PREFIX, record

    rows = [record(k[len(PREFIX) :], v) for k, v in store.kv_items() if k.startswith(PREFIX)]
    return pd.DataFrame(rows, columns=["key", "data", "updatedAt"])


def query(db: SqlDatabase, sql: str, params: Any = ()) -> pd.DataFrame:
    """A query on the gem's database as a DataFrame (E_SQL when SQLite refuses it)."""
    cols, rows = db.query(sql, params)
    return pd.DataFrame(rows, columns=cols)


def _expected(r: CallResult) -> str | None:
    """The message of an expected failure (K2: the `error` the model explains)."""
    if not r.expected_failure:
        return None
    err = r.value.get("error")
    return well_formed(err if isinstance(err, str) else str(err)[:500])  # shown: no lone surrogate


def calls(results: Iterable[CallResult], *, dropped: str | None = None) -> pd.DataFrame:
    """One row per call; first, when the bench dropped its oldest calls, a row saying so
    (outcome "dropped", the note in `message`)."""
    rows = [
        {
            "call_id": r.call_id,
            "tool": r.tool,
            "ok": r.ok,
            "outcome": r.outcome,
            "error": r.error.code if r.error else None,
            "message": r.error.message if r.error else _expected(r),
            "warnings": len(r.warnings),
            "duration_ms": round(r.duration_ms, 3),
            "ctx_calls": r.ctx_calls,
            "violations": len(r.violations),
            "started": r.started,
            "idempotency_key": r.idempotency_key,
            "crashed": r.crash is not None,
            "parent": r.parent,
        }
        for r in results
    ]
    if dropped is not None:
        rows.insert(0, {"outcome": "dropped", "message": dropped})
    df = pd.DataFrame(
        rows,
        columns=[
            "call_id",
            "tool",
            "ok",
            "outcome",
            "error",
            "message",
            "warnings",
            "duration_ms",
            "ctx_calls",
            "violations",
            "started",
            "idempotency_key",
            "crashed",
            "parent",
        ],
    )
    df["started"] = pd.to_datetime(df["started"], unit="s")
    return df


MAILBOX_COLUMNS = ["accountId", "id", "subject", "fromAddr", "toAddrs", "date", "date_ms"]


def mailbox(envelopes: list[Envelope]) -> pd.DataFrame:
    """One row per message envelope; `date` as a UTC datetime, `date_ms` as ctx.email gives it."""
    rows = [
        {
            "accountId": e.accountId,
            "id": e.id,
            "subject": e.subject,
            "fromAddr": e.fromAddr,
            "toAddrs": list(e.toAddrs),
            "date": e.date,
            "date_ms": e.date,
        }
        for e in envelopes
    ]
    df = pd.DataFrame(rows, columns=MAILBOX_COLUMNS)
    df["date_ms"] = df["date_ms"].astype("int64")
    df["date"] = pd.to_datetime(df["date_ms"], unit="ms").astype("datetime64[ns]")
    return df
