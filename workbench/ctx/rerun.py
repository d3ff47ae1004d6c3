"""N7's one definition: what a crashed run and its rerun did, against one clean call's.

A rerun after a crash is N7 when, from the same start, the crashed run and the rerun together
left the bench's state otherwise than one clean call does, or acted outside it more: a second
document, row, file or mail, a repeated POST, and also a kv counter or a balance moved twice
(a read-modify-write without the idempotency key duplicates nothing, yet is the same bug).
What the two did less than a clean call (a tool marking its key done before its effects loses
them) is said too, apart: a lost effect, not a repeated one.

State is compared as the parts' Change rows from the start (ctx/state.py `changes`), with the
ids and keys a run generates blanked; effects as the ctx calls of the methods the bench's
capabilities declare as `Effect`s (`effects_of`), a repeat that carries the run's idempotency
key counted once (its receiver drops it). `bench.call(crash=)`, `crash_matrix` and the
doctor's N7 all judge through `judge`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .state import changes, effects_of, parts_of

if TYPE_CHECKING:
    from .parts import Change, Effect
    from .state import Snapshot

__all__ = ["Outcome", "judge", "outcome", "shape", "signature"]

_VARYING = re.compile(r"[0-9a-fA-F]{6,}|\d+")
# in a value: times and generated ids (hex, uuids, long numbers), not a count or an amount
_VALUE_VARYING = re.compile(r"\d{4}-\d\d-\d\d[T ][0-9:.]+(?:Z|[+-]\d\d:?\d\d)?|[0-9a-fA-F-]{12,}|\d{9,}")
ADDED = ("added", "inserted")


def shape(key: Any) -> str:
    """A key with its generated parts (ids, counters, hex) blanked: order:3f9a… -> order:#."""
    return _VARYING.sub("#", str(key))


def _value_shape(value: Any) -> str:
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return _VALUE_VARYING.sub("#", text)


def signature(kind: str, key: Any, value: Any) -> str:
    """What an added entry is, apart from the identity it was given when it was added."""
    if kind == "kv":
        return f"{shape(key)}={_value_shape(value)}"
    if isinstance(value, dict):  # a document or a SQL row: its content without its id
        body = {k: v for k, v in value.items() if str(k).lower() not in ("id", "_id", "rowid")}
        return _value_shape(body)
    return f"{shape(str(key).rsplit('/', 1)[-1])}:{_value_shape(value)}"  # a file: its name's shape


@dataclass
class Outcome:
    """What one way of running a call did from a start: the state's change rows and the acts
    (effects) it made, each as (its Effect, its arguments)."""

    changes: list[Change]
    acts: list[tuple[Effect, list[Any]]] = field(default_factory=list)


def _rows(results: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """The trace rows of `results` and of the calls nested in them."""
    for res in results:
        yield from res.trace_rows
        yield from _rows(getattr(res, "children", ()) or ())


def _args(row: dict[str, Any]) -> list[Any]:
    params = row.get("params")
    if not isinstance(params, (list, tuple)) or len(params) != 2:
        return [row.get("args")]  # not kept (too large): its preview stands for it
    args, kwargs = params
    return [*args, *([kwargs] if kwargs else [])]


def acts(profile: Any, results: Iterable[Any]) -> list[tuple[Effect, list[Any]]]:
    """The effects `results` made: their ctx calls of a declared Effect's method that act."""
    effects = effects_of(profile)
    out: list[tuple[Effect, list[Any]]] = []
    if not effects:
        return out
    for row in _rows(results):
        effect = effects.get(str(row.get("method")))
        # a call that failed or was answered with an error (a refused recipient's envelope,
        # an HTTP error status) is taken as not done: a rerun repeating it repeats nothing
        if effect is not None and row.get("ok", True) and not row.get("notice"):
            args = _args(row)
            if effect.acts(args):
                out.append((effect, args))
    return out


def outcome(bench: Any, start: Snapshot, results: Iterable[Any]) -> Outcome:
    """The bench's change since `start` and the acts of `results`. Only "state" parts count
    (a fault used up is setup, not the tool's doing), without a call's scratch folder `run/`
    and without the parts of a capability that declares effects (its outbox records the
    mail its effects compare already)."""
    acted = {part.name for part, spec in parts_of(bench.profile) if spec.effects}
    rows = changes(bench, start, roles=("state",), skip=acted)
    return Outcome([c for c in rows if not str(c.where).startswith("run/")], acts(bench.profile, results))


# -- the comparison -------------------------------------------------------------------------
def _short(v: Any) -> str:
    s = v if isinstance(v, str) else repr(v)
    return s if len(s) <= 60 else s[:59] + "…"


def _sig(c: Change) -> tuple[str, str, str, str, str]:
    value = signature(c.kind, c.key, c.after) if c.change in ADDED else _value_shape(c.after)
    return (c.kind, str(c.where), shape(c.key), c.change, value)


def _number(value: Any) -> float | None:
    """A number, or the number a kv value holds as text ("300"); None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and 0 < len(value) <= 30:
        try:
            n = float(value)
        except ValueError:
            return None
        return n if n == n and abs(n) != float("inf") else None
    return None


def _moved(before: Any, clean: Any, rerun: Any) -> str:
    """ " (moved twice: +100 each)" when a number moved a whole number of times a clean run's."""
    b, c, r = (0 if before is None else _number(before)), _number(clean), _number(rerun)
    if b is None or c is None or r is None:
        return ""
    step = c - b
    if not step or (r - b) % step or (r - b) // step < 2:
        return ""
    times = int((r - b) // step)
    return f" (moved {'twice' if times == 2 else f'{times} times'}: {step:+g} each)"


def _where(c: Change) -> str:
    key = "" if c.key is None else f" {c.key}"
    return f"{c.kind} {c.where}{key}" if str(c.where) != c.kind else f"{c.kind}{key}"


def state_differences(clean: list[Change], after: list[Change]) -> tuple[list[str], list[str]]:
    """(what the crashed run and rerun left more or otherwise than a clean call, what a clean
    call left that they did not), each said."""
    c_rows = Counter(_sig(c) for c in clean)
    r_rows = Counter(_sig(c) for c in after)
    first = {_sig(c): c for c in [*after, *clean]}  # an example of each (the rerun's first)
    extra, lost = r_rows - c_rows, c_rows - r_rows
    lost_by = {s[:3]: s for s in sorted(lost, key=str)}
    more: list[str] = []
    for s in sorted(extra, key=str):
        kind, where, key, change, value = s
        other = lost_by.pop(s[:3], None)
        if other is not None and (change not in ADDED or "#" not in key):  # one entry, two values
            r, c = first[s], first[other]
            more.append(
                f"{_where(r)}: {_short(r.after)} after the crashed run and the rerun, "
                f"{_short(c.after)} after a clean run{_moved(r.before, c.after, r.after)}"
            )
            lost.pop(other, None)
        elif change in ADDED:
            thing = kind if str(where) == kind else f"{kind} {where}"
            more.append(
                f"{thing}: {r_rows[s]} added (the crashed run's and the rerun's), a clean run adds "
                f"{c_rows[s]} ({_short(value)})"
            )
        else:
            r = first[s]
            more.append(f"{_where(r)}: {r.change} by the crashed run or the rerun, not by a clean run")
    said = [
        f"{_where(first[s])}: {first[s].change} by a clean run, not by the crashed run and the rerun"
        for s in sorted(lost, key=str)
    ]
    return more, said


def _same(effect: Effect, a: list[Any], b: list[Any]) -> bool:
    if effect.same is not None:
        return effect.same(a, b)
    return _value_shape(a) == _value_shape(b)


def _told(effect: Effect, args: list[Any]) -> str:
    if effect.describe is not None:
        try:
            return effect.describe(args)
        except Exception:  # noqa: BLE001 - a tool's odd arguments: said plainly instead
            pass
    return f"{effect.method}({_short(_value_shape(args))})"


def effect_differences(
    clean: list[tuple[Effect, list[Any]]], after: list[tuple[Effect, list[Any]]], key: str
) -> tuple[list[str], list[str]]:
    """(acts the crashed run and rerun made more than a clean call, acts of a clean call they
    did not make), each said; a repeat carrying `key` its receiver drops is not counted."""
    kept: list[tuple[Effect, list[Any]]] = []
    for effect, args in after:
        dropped = effect.deduped is not None and effect.deduped(args, key)
        if dropped and any(e.method == effect.method and _same(effect, args, b) for e, b in kept):
            continue
        kept.append((effect, args))
    left = list(clean)
    extra: list[tuple[Effect, list[Any]]] = []
    for effect, args in kept:
        i = next(
            (i for i, (e, b) in enumerate(left) if e.method == effect.method and _same(effect, args, b)), None
        )
        if i is None:
            extra.append((effect, args))
        else:
            left.pop(i)
    more: list[str] = []
    seen: list[tuple[Effect, list[Any]]] = []
    for effect, args in extra:
        if any(e.method == effect.method and _same(effect, args, b) for e, b in seen):
            continue
        seen.append((effect, args))
        n = sum(e.method == effect.method and _same(effect, args, b) for e, b in kept)
        m = sum(e.method == effect.method and _same(effect, args, b) for e, b in clean)
        more.append(
            f"{_told(effect, args)}: {n} sent (the crashed run's and the rerun's), a clean run sends {m}"
        )
    lost = [f"{_told(e, a)}: sent by a clean run, not by the crashed run and the rerun" for e, a in left]
    return more, lost


def judge(clean: Outcome, after: Outcome, key: str) -> tuple[list[str], list[str]]:
    """N7: (what the crashed run and its rerun did again or otherwise than one clean call —
    effects first —, what they lost of it)."""
    e_more, e_lost = effect_differences(clean.acts, after.acts, key)
    s_more, s_lost = state_differences(clean.changes, after.changes)
    return [*e_more, *s_more], [*e_lost, *s_lost]
