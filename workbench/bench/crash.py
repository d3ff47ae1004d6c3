"""N7: crash a call at a chosen ctx call, rerun it with the same idempotencyKey, compare with
one clean call from the same start (ctx/rerun.py: the one definition the doctor uses too).

"A tool called by a SOP may be rerun once after an app crash. Tools with external side effects
should use `ctx.idempotencyKey` to deduplicate." The workbench's model of the crash: every ctx
call the crashed run made up to the crash point had its effect (it is kept, the worst case), the
tool never saw the result of the last one, and the rerun starts from a fresh module (a new
sandbox process for JS/TS) with the same key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._errors import UsageError
from ..ctx import CtxCrash
from ..ctx.hooks import Answer, CallHooks
from ..ctx.rerun import Outcome, judge, outcome
from ..ctx.state import restore, take
from . import pipeline
from .core import CallIdentity
from .result import CallResult, CrashReport

if TYPE_CHECKING:
    import pandas as pd

    from ..ctx import CallSession
    from .bench import Bench

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


def _checked(crash: Any) -> None:
    if crash != "random" and (isinstance(crash, bool) or not isinstance(crash, int) or crash < 0):
        raise UsageError(f"crash={crash!r}: use a number of ctx calls (0, 1, …) or 'random'")


def _point(bench: Bench, crash: Any, clean: CallResult) -> int:
    """The crash point: `crash`, or for "random" one between 0 and the clean run's ctx calls."""
    return bench.core.rng.randint(0, clean.ctx_calls) if crash == "random" else int(crash)


class CrashAt(CallHooks):
    """The hook of a crashed run: it aborts after the tool's `after`-th ctx call (crash=0:
    before its first one runs), the call having had its effect and the tool never seeing its
    result. A BaseException (CtxCrash), so a tool's `except Exception` cannot swallow it."""

    __slots__ = ("after",)

    def __init__(self, after: int) -> None:
        self.after = after

    def on_ctx_call(self, *, session: CallSession, fn: Callable[..., Any], answer: Answer, **_: Any) -> Any:
        if self.after <= session.ctx_calls:
            raise CtxCrash(session.ctx_calls)
        try:
            return answer(fn)
        finally:  # the N-th call had its effect; the tool never sees its result
            if session.ctx_calls >= self.after:
                raise CtxCrash(session.ctx_calls)


def identity(bench: Bench) -> CallIdentity:
    """The idempotency key and seeds a clean run and a crashed run share: from one start, what
    differs between them is the crash's doing, not the ids or draws (the rerun has the key and
    draws its own ids: `CallIdentity.moved_on`)."""
    key = pipeline.token_hex(bench, 16)  # the bench's seed's, when it has one
    s = int(pipeline.token_hex(bench, 4), 16) >> 1
    return CallIdentity.of(key=key, seed=s, ids=s)


def clean_run(
    bench: Bench, name: str, input: Any, ident: CallIdentity, hooks: Sequence[CallHooks] = ()
) -> tuple[CallResult, Outcome]:
    """One clean call from the bench's state as it is, what it did, and the state put back (the
    call is no row of bench.results: a comparison, not the author's call)."""
    start = take(bench)
    kept = bench.results.saved()
    try:
        res = pipeline.call(bench, name, input, identity=ident, hooks=hooks)
        return res, outcome(bench, start, [res])
    finally:
        restore(bench, start)
        bench.results.put_back(kept)


def crash_call(
    bench: Bench,
    name: str,
    input: Any,
    crash: Any,
    *,
    point: int | None = None,
    clean: tuple[CallResult, Outcome] | None = None,
    ident: CallIdentity | None = None,
    hooks: Sequence[CallHooks] = (),
    again: tuple[CallIdentity, Sequence[CallHooks]] | None = None,
) -> CallResult:
    """The call crashed after ctx call `point` (or `crash`), rerun with the same key, judged
    against `clean` (a clean run from the same start, with the same `ident`; made here when
    not given). `hooks`: the runs' own; `again`: the rerun's identity and hooks (default:
    `ident` moved on, the same hooks)."""
    return _crash_call(
        bench, name, input, crash, point=point, clean=clean, ident=ident, hooks=hooks, again=again
    )[0]


def _crash_call(
    bench: Bench,
    name: str,
    input: Any,
    crash: Any,
    *,
    point: int | None,
    clean: tuple[CallResult, Outcome] | None,
    ident: CallIdentity | None,
    hooks: Sequence[CallHooks] = (),
    again: tuple[CallIdentity, Sequence[CallHooks]] | None = None,
) -> tuple[CallResult, list[str]]:
    """crash_call, and what a clean run did that the crashed run and its rerun lost."""
    if name not in bench.manifest.tools:
        return pipeline.call(bench, name, input), []
    if point is None:
        _checked(crash)
    if ident is None:
        ident = identity(bench)
    if clean is None:
        clean = clean_run(bench, name, input, ident, hooks)
    point = _point(bench, crash, clean[0]) if point is None else point
    start = take(bench)
    first = pipeline.call(bench, name, input, identity=ident, hooks=(*hooks, CrashAt(point)))
    d1 = bench.diff(start)
    if not _crashed(first):  # fewer ctx calls than the point (or stopped before running)
        first.crash = CrashReport(point, None, [d1], [])
        return first, []
    snap2 = bench.snapshot()
    rerun, rerun_hooks = again if again is not None else (ident.moved_on(), hooks)
    second = pipeline.call(bench, name, input, identity=rerun, fresh=True, hooks=rerun_hooks)
    d2 = bench.diff(snap2)
    more, lost = judge(clean[1], outcome(bench, start, [first, second]), ident.key or "")
    second.crash = CrashReport(point, first, [d1, d2], more)
    return second, lost


def crash_matrix(bench: Bench, name: str, input: Any) -> pd.DataFrame:
    """One row per crash point 0..n (n: the ctx calls of a clean run); state restored after."""
    import pandas as pd

    if name not in bench.manifest.tools:
        raise UsageError(bench.manifest.no_tool(name))
    snap0 = bench.snapshot()
    rows: list[dict[str, Any]] = []
    ident = identity(bench)
    try:
        clean, did = clean_run(bench, name, input, ident)
        if not clean.ok:
            raise UsageError(f"a clean run of {name!r} failed, so there is nothing to crash: {clean.error}")
        methods = [row["method"] for row in clean.trace_rows]
        for point in range(len(methods) + 1):
            bench.restore(snap0)
            res, lost = _crash_call(bench, name, input, point, point=point, clean=(clean, did), ident=ident)
            rep = res.crash
            assert rep is not None
            crashed = rep.crashed is not None
            vs = [*rep.duplicates, *lost]
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
                    "clean": res.ok and not vs,
                }
            )
    finally:
        bench.restore(snap0)
    return pd.DataFrame(rows, columns=MATRIX_COLUMNS)
