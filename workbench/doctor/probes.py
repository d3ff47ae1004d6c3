"""The doctor's probes of the examples that ran (issue 30 point 2): N5 (the module kept or not),
determinism (the same seed and clock twice) and N7 (a rerun after a crash).

N7 crashes a run after each of its ctx calls when it makes up to CRASH_POINTS of them; past
that, after the first, the last and a sample between them drawn from the seed, so a tool making
hundreds of ctx calls costs a dozen crashed runs, not hundreds (a pinned N7 case tries the point
it was found at first).
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING, Any

from .run import ToolStats, _key

if TYPE_CHECKING:
    from ..bench.result import CallResult
    from ..ctx.rerun import Outcome
    from ..gem import ToolSpec
    from .run import Search

CRASH_POINTS = 12  # N7: crash points tried per example, sampled past this many ctx calls


def crash_points(points: int, seed: int, tool: str, first: int | None = None) -> list[int]:
    """The ctx calls after which N7 crashes a run: every one of a short run; of a long one the
    first, the last and a sample between them drawn from the seed (`first`: tried first)."""
    if points <= CRASH_POINTS:
        out = list(range(1, points + 1))
    else:
        rng = random.Random(f"{seed}:{tool}:crash")
        # the last early: a write at a run's end (the commonest N7) is found in the second rerun
        out = [1, points, *sorted(rng.sample(range(2, points), CRASH_POINTS - 2))]
    if first is not None and 1 <= first <= points:
        out = [first, *(p for p in out if p != first)]
    return out


def probes(search: Search, tool: ToolSpec) -> None:
    """N5 and determinism on the smallest examples that ran; N7 for tools that write, on the
    smallest and on the one that made the most ctx calls (a tool's real work, say an insert
    done only for a file that exists, is seldom in its smallest input); their time is the
    tool's `probe_seconds`."""
    t0 = time.monotonic()
    stats = search.stats[tool.name]
    try:
        ran = sorted(
            {_key(i): (s, i) for s, i in stats.ran}.values(), key=lambda si: (len(_key(si[1])), _key(si[1]))
        )
        for start, input in ran[:3]:
            if (tool.name, "N5") in search.found_kinds and (
                tool.name,
                "nondeterministic",
            ) in search.found_kinds:
                break
            memory(search, tool, start, input)
        # (where tools declare a sideEffect, a "read" one is D4's: it must not write at all)
        if tool.side_effect == "write" or not search.bench.profile.side_effects:
            tries = ran[:2]
            if stats.busiest is not None and stats.busiest[:2] not in tries:
                tries.append(stats.busiest[:2])
            if stats.acted is not None and stats.acted not in tries:
                tries.append(stats.acted)
            for start, input in tries:
                if (tool.name, "N7") in search.found_kinds:
                    break
                crash(search, tool, start, input)
    finally:
        stats.probe_seconds += time.monotonic() - t0


def _outcome(search: Search, tool: ToolSpec, input: Any, start: int, *, fresh: bool) -> tuple[str, str]:
    """The result and the state change of one run of an example, as comparable texts."""
    res = search.call(tool, input, start, fresh=fresh, n=7)
    changes = search.bench.diff(search.starts[start].snapshot)
    rows = changes[["kind", "where", "key", "change", "after"]].to_dict("records")
    value = res.value if res.error is None else {"error": res.error.code}
    return _key(value), _key(rows)


def memory(search: Search, tool: ToolSpec, start: int, input: Any) -> None:
    a = _outcome(search, tool, input, start, fresh=True)
    b = _outcome(search, tool, input, start, fresh=True)
    if a != b:
        search.add_finding(
            tool, "nondeterministic", start, input, _differs("result" if a[0] != b[0] else "state", a, b)
        )
        return
    c = _outcome(search, tool, input, start, fresh=False)  # the module kept from the call before
    if a != c:
        what = "result" if a[0] != c[0] else "state it left"
        search.add_finding(
            tool,
            "N5",
            start,
            input,
            f"called again with its module kept (reuse='always'), its {what} differs from a fresh "
            f"module's (reuse='never'): {_differs(what, a, c)}",
        )


def crash(search: Search, tool: ToolSpec, start: int, input: Any, first: int | None = None) -> None:
    """N7: crash runs of the example after sampled ctx calls (`first`: tried first), each with
    its rerun judged against this clean run from the same start (ctx/rerun.py)."""
    from ..ctx.rerun import outcome

    clean = search.call(tool, input, start)
    if clean.error is not None:
        return
    did = outcome(search.bench, search.starts[start].snapshot, [clean])
    points = len(clean.trace_rows)
    tried = crash_points(points, search.seed, tool.name, first)
    stats = search.stats.setdefault(tool.name, ToolStats())
    n = 0
    try:
        for point in tried:
            n += 1
            if _crash_at(search, tool, start, input, point, (clean, did)):
                return
    finally:  # what the report says of it: the run with the most ctx calls
        if stats.crash is None or points > stats.crash[1]:
            stats.crash = (n, points)


def _crash_at(
    search: Search, tool: ToolSpec, start: int, input: Any, point: int, clean: tuple[CallResult, Outcome]
) -> bool:
    """Crash one run after ctx call `point` and rerun it; whether that was an N7 finding."""
    from ..bench.crash import crash_call

    search.tick()
    bench = search.bench
    bench.restore(search.starts[start].snapshot)
    # the clean run's key and seeds: what differs is the crash's doing; each run its own served
    # answers (a recheck's: each answered once per run)
    ident, hooks = search.identity(tool, 0)
    again = (ident.moved_on(), search.served_hooks())
    res = crash_call(
        bench, tool.name, input, point, point=point, clean=clean, ident=ident, hooks=hooks, again=again
    )
    search.cut_off()
    rep = res.crash
    if rep is None or rep.crashed is None or not rep.duplicates:
        return False
    at = clean[0].trace_rows[point - 1].get("method")
    search.add_finding(
        tool,
        "N7",
        start,
        input,
        f"crashed after ctx call {point} ({at}) and rerun with the same idempotencyKey: {rep.duplicates[0]}",
        crash_after=point,
    )
    return True


def _differs(what: str, a: tuple[str, str], b: tuple[str, str]) -> str:
    i = 0 if what == "result" else 1
    first, second = a[i], b[i]
    return f"{_clip(first)} vs {_clip(second)}"


def _clip(text: str) -> str:
    return text if len(text) <= 120 else text[:119] + "…"
