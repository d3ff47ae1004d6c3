"""N7: crash a call at a chosen ctx call, rerun it with the same idempotencyKey, compare.

"A tool called by a SOP may be rerun once after an app crash. Tools with external side effects
should use `ctx.idempotencyKey` to deduplicate." The workbench's model of the crash: every ctx
call the crashed run made up to the crash point had its effect (it is kept, the worst case), the
tool never saw the result of the last one, and the rerun starts from a fresh module (a new
sandbox process for JS/TS) with the same key.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from . import _pipeline as pipeline
from ._errors import UsageError
from ._result import CallResult, CrashReport

if TYPE_CHECKING:
    import pandas as pd

    from ._bench import Bench

MATRIX_COLUMNS = [
    "crash_after",
    "at",
    "crashed",
    "rerun_ok",
    "rerun_error",
    "same_key",
    "duplicated",
    "vs_clean",
    "clean",
]


def _crashed(res: CallResult) -> bool:
    return res.error is not None and res.error.details.get("capability") == "crash"


def _point(bench: Bench, name: str, input: Any, crash: Any) -> int:
    if crash == "random":
        previous = [r for r in reversed(bench.results) if r.tool == name and r.ok and r.crash is None]
        if previous:
            n = previous[0].ctx_calls
        else:  # no clean run to count its ctx calls: make one, then put the state back
            snap = bench.snapshot()
            try:
                n = pipeline.call(bench, name, input).ctx_calls
            finally:
                bench.restore(snap)
        return bench._rng.randint(0, n)
    if isinstance(crash, bool) or not isinstance(crash, int) or crash < 0:
        raise UsageError(f"crash={crash!r}: use a number of ctx calls (0, 1, …) or 'random'")
    return crash


def _not_run(path: Any) -> bool:
    return not str(path).startswith("run/")


_VARYING = re.compile(r"[0-9a-fA-F]{6,}|\d+")


def _shape(key: Any) -> str:
    """A key with its generated parts (ids, counters, hex) blanked: order:3f9a… -> order:#."""
    return _VARYING.sub("#", str(key))


def _signature(kind: str, key: Any, value: Any) -> str:
    """What an added entry is, apart from the identity it was given when it was added."""
    if kind == "kv":
        return f"{_shape(key)}={value!r}"
    if isinstance(value, dict):  # a document or a SQL row: its content without its id
        body = {k: v for k, v in value.items() if k.lower() not in ("id", "_id", "rowid")}
        return repr(sorted(body.items(), key=lambda kv: kv[0]))
    return f"{_shape(str(key).rsplit('/', 1)[-1])}:{value!r}"  # a file: its name's shape, size


def duplicates(first: pd.DataFrame, second: pd.DataFrame) -> list[str]:
    """What the rerun did again: entries it added that look like entries the crashed run had
    already added (same table or folder, same content apart from their generated id or key),
    and values the crashed run changed that the rerun changed once more (a counter +2)."""
    added = ("added", "inserted")
    out: list[str] = []
    f_add = Counter(
        (r.kind, r.where, _signature(r.kind, r.key, r.after))
        for r in first.itertuples()
        if r.change in added and _not_run(r.where)
    )
    s_add = Counter(
        (r.kind, r.where, _signature(r.kind, r.key, r.after))
        for r in second.itertuples()
        if r.change in added and _not_run(r.where)
    )
    for k, n in sorted(s_add.items(), key=str):
        if k in f_add:
            kind, where, sig = k
            out.append(
                f"{kind} {where}: {f_add[k]} added by the crashed run, {n} more by the rerun ({_short(sig)})"
            )
    f_chg = {
        (r.kind, r.where, str(r.key)): r.after
        for r in first.itertuples()
        if r.change in ("changed", "updated")
    }
    for r in second.itertuples():
        k = (r.kind, r.where, str(r.key))
        if r.change in ("changed", "updated") and k in f_chg and _not_run(r.where):
            out.append(
                f"{r.kind} {r.where} {r.key}: changed by the crashed run "
                f"and again by the rerun ({_short(r.before)} -> {_short(r.after)})"
            )
    return out


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:59] + "…"


def crash_call(bench: Bench, name: str, input: Any, crash: Any, *, point: int | None = None) -> CallResult:
    if name not in bench.manifest.tools:
        return pipeline.call(bench, name, input)
    point = _point(bench, name, input, crash) if point is None else point
    key = pipeline.token_hex(bench, 16)  # the bench's seed's, when it has one
    snap = bench.snapshot()
    first = pipeline.call(bench, name, input, key=key, crash_after=point)
    d1 = bench.diff(snap)
    if not _crashed(first):  # fewer ctx calls than the point (or stopped before running)
        first.crash = CrashReport(point, None, [d1], [])
        return first
    snap2 = bench.snapshot()
    second = pipeline.call(bench, name, input, key=key, fresh=True)
    d2 = bench.diff(snap2)
    second.crash = CrashReport(point, first, [d1, d2], duplicates(d1, d2))
    return second


def _counts(diff: pd.DataFrame) -> Counter:
    return Counter((r.kind, r.where, r.change) for r in diff.itertuples() if _not_run(r.where))


def crash_matrix(bench: Bench, name: str, input: Any) -> pd.DataFrame:
    """One row per crash point 0..n (n: the ctx calls of a clean run); state restored after."""
    import pandas as pd

    if name not in bench.manifest.tools:
        raise UsageError(bench.manifest.no_tool(name))
    snap0 = bench.snapshot()
    rows: list[dict[str, Any]] = []
    try:
        clean = pipeline.call(bench, name, input)
        if not clean.ok:
            raise UsageError(f"a clean run of {name!r} failed, so there is nothing to crash: {clean.error}")
        expected = _counts(bench.diff(snap0))
        methods = [row["method"] for row in clean.trace_rows]
        for point in range(len(methods) + 1):
            bench.restore(snap0)
            res = crash_call(bench, name, input, point, point=point)
            rep = res.crash
            assert rep is not None
            got = _counts(bench.diff(snap0))
            vs = [
                f"{k[0]} {k[1]} {k[2]}: {got[k]} (clean run: {expected[k]})"
                for k in sorted(expected.keys() | got.keys(), key=str)
                if got[k] != expected[k]
            ]
            crashed = rep.crashed is not None
            rows.append(
                {
                    "crash_after": point,
                    "at": "before the first ctx call" if point == 0 else f"after {methods[point - 1]}",
                    "crashed": crashed,
                    "rerun_ok": res.ok,
                    "rerun_error": res.error.code if res.error else None,
                    "same_key": (rep.crashed is None or rep.crashed.idempotency_key == res.idempotency_key),
                    "duplicated": "; ".join(rep.duplicates),
                    "vs_clean": "; ".join(vs),
                    "clean": res.ok and not rep.duplicates and not vs,
                }
            )
    finally:
        bench.restore(snap0)
    return pd.DataFrame(rows, columns=MATRIX_COLUMNS)
