"""The "bench" part of every bench's setup (ctx/parts.py, on `spec.BENCH`): its clock (mode and
time), its seed and the open options a replay needs (strict, reuse, timeout, pins).

A put (a bundle's setup on the replay's bench) sets the clock as it was (frozen at its time,
running from its time, or real) and strict and reuse; the seed and the timeout are fixed when
a bench opens, so a put whose seed or timeout differs from the bench's is refused naming the
field (open the bench with them). A restore (`bench.restore(snap)`) never moves the clock nor
restarts the seed's stream: a user's restore keeps their time; it puts back strict and reuse.
A diff shows a clock's time only when it was frozen in both snapshots (a running clock moves
on its own).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from . import state_check as check
from .parts import Change, Refusal, StateContext, StatePart, keyed_changes

__all__ = ["BENCH_PART"]

_KEYS = ("clock", "seed", "strict", "reuse", "timeout", "pins")
_REUSE = ("always", "never", "random")
_MODES = ("real", "running", "frozen")


def _timeout(bench: Any) -> Any:
    return getattr(bench, "timeout", None)


def _dump(cx: StateContext) -> dict[str, Any]:
    bench = cx.bench
    if bench is None or not hasattr(bench, "clock"):
        return {}
    clock = bench.clock
    return {
        "clock": {"mode": clock.mode, "at": None if clock.mode == "real" else clock.time()},
        "seed": bench.seed,
        "strict": bench.strict,
        "reuse": bench.reuse,
        "timeout": _timeout(bench),
        "pins": bench.pins,
    }


def _put(cx: StateContext, value: Any, bad: Refusal) -> None:
    check.obj(value, bad, "bench", _KEYS)
    clock = check.obj(value.get("clock", {"mode": "real", "at": None}), bad, "bench.clock", ("mode", "at"))
    mode, at = clock.get("mode", "real"), clock.get("at")
    if mode not in _MODES:
        raise bad("bench.clock.mode", f"is not one of {', '.join(_MODES)}")
    if mode != "real" and (isinstance(at, bool) or not isinstance(at, (int, float)) or not 0 <= at < 1e11):
        raise bad("bench.clock.at", "is not a time in epoch seconds")
    for key in ("strict", "pins"):
        if not isinstance(value.get(key, False), bool):
            raise bad(f"bench.{key}", "is not true or false")
    if value.get("reuse", "always") not in _REUSE:
        raise bad("bench.reuse", f"is not one of {', '.join(_REUSE)}")
    bench = cx.bench
    if bench is None or not hasattr(bench, "clock"):
        return
    for key, now in (("seed", bench.seed), ("timeout", _timeout(bench))):
        if key in value and value[key] != now:
            raise bad(
                f"bench.{key}",
                f"is {check_shown(value[key])}, this bench's is {now!r}: a bench's {key} is set "
                f"when it opens (open it with {key}={check_shown(value[key])})",
            )
    if mode == "frozen":
        bench.clock.freeze(at)
    elif mode == "running":
        bench.clock.set(at)
    else:
        bench.clock.real()
    bench.strict = value.get("strict", bench.strict)
    bench.reuse = value.get("reuse", bench.reuse)


def check_shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _restore(cx: StateContext, snap: dict[str, Any]) -> None:
    bench = cx.bench
    if bench is not None and snap:  # the clock and the seed's stream stay where they are
        bench.strict, bench.reuse = snap["strict"], snap["reuse"]


def _diff(before: Any, after: Any) -> Iterator[Change]:
    def shown(d: Any) -> dict[str, Any]:
        d = dict(d or {})
        clock = d.get("clock") or {}
        d["clock"] = clock.get("mode")
        if clock.get("mode") == "frozen":
            d["clock_at"] = clock.get("at")
        return d

    return keyed_changes("bench", "bench", shown(before), shown(after))


BENCH_PART = StatePart("bench", dump=_dump, put=_put, role="setup", restore=_restore, diff=_diff)
