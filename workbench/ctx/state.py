"""The one implementation of a bench's state over the parts its capabilities declare (issue 43).

    snap = take(bench)            # every part: state, setup and logs
    ...
    rows = diff(bench, snap)      # Change rows of the "state" and "setup" parts since then
    restore(bench, snap)          # every part put back
    data = dump(bench)            # {part: JSON} of the "state" parts (state.json, bundles)
    put(bench, data, code="E_STATE", label=...)   # the JSON back, each part checking its own

`bench` is anything with `providers`, `profile`, `limits` and `manifest` (a Bench). Which parts
there are is read from the capabilities of the bench's platform (`specs_of(profile)`), so a
plugin capability's state takes part in snapshots, diffs, state folders, pins, bundles, crash
reruns and the doctor with nothing here naming it.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .parts import Change, Effect, Refusal, StateContext, StatePart, json_changes, keyed, keyed_changes

if TYPE_CHECKING:
    from ..platforms import Profile
    from .spec import CapabilitySpec

__all__ = [
    "ALL",
    "Snapshot",
    "changes",
    "diff",
    "dump",
    "effects_of",
    "empty",
    "json_changes",
    "keyed",
    "keyed_changes",
    "parts_of",
    "put",
    "restore",
    "take",
]

ALL = ("state", "setup", "log")
SHOWN = ("state", "setup")  # what a diff shows: a log grows with every call

_PARTS: dict[int, tuple[Profile, list[tuple[StatePart, CapabilitySpec]]]] = {}


def parts_of(profile: Profile) -> list[tuple[StatePart, CapabilitySpec]]:
    """(part, its capability) for every state part a bench of `profile` has, in registry
    order, each name once (kv is the kv capability's and, for Ekanos, the account's)."""
    found = _PARTS.get(id(profile))
    if found is not None and found[0] is profile:
        return found[1]
    from .registry import specs_of

    seen: set[str] = set()
    out: list[tuple[StatePart, CapabilitySpec]] = []
    for spec in specs_of(profile):
        for part in spec.state:
            if part.name not in seen:
                seen.add(part.name)
                out.append((part, spec))
    _PARTS[id(profile)] = (profile, out)
    return out


_EFFECTS: dict[int, tuple[Profile, dict[str, Effect]]] = {}


def effects_of(profile: Profile) -> dict[str, Effect]:
    """{method: Effect} of every effect a bench of `profile`'s capabilities declare, worked
    out once per profile (the doctor asks after every call)."""
    found = _EFFECTS.get(id(profile))
    if found is not None and found[0] is profile:
        return found[1]
    from .registry import specs_of

    made = {e.method: e for s in specs_of(profile) for e in s.effects}
    _EFFECTS[id(profile)] = (profile, made)
    return made


def context(bench: Any, spec: CapabilitySpec) -> StateContext:
    p = bench.providers
    return StateContext(
        p, p.backends.get(spec.impl), bench.limits, getattr(bench, "manifest", None), bench.profile, bench
    )


#: bench -> (what its parts were bound to, [(part, its context)]): made once per bench, as a
#: doctor puts the state back before every example (a context a part each time cost more than
#: the restore of a small bench's parts)
_BOUND: weakref.WeakKeyDictionary[Any, tuple[tuple[int, ...], list[tuple[StatePart, StateContext]]]] = (
    weakref.WeakKeyDictionary()
)


def _bound(bench: Any) -> list[tuple[StatePart, StateContext]]:
    """(part, its context) for every part of the bench, made again when what a context holds
    changed (a reload's manifest, a test's swapped providers)."""
    stamp = (id(bench.profile), id(bench.providers), id(getattr(bench, "manifest", None)), id(bench.limits))
    try:
        found = _BOUND.get(bench)
    except TypeError:  # not weakly referenceable (a stand-in object): made each time
        return [(part, context(bench, spec)) for part, spec in parts_of(bench.profile)]
    if found is not None and found[0] == stamp:
        return found[1]
    made = [(part, context(bench, spec)) for part, spec in parts_of(bench.profile)]
    _BOUND[bench] = (stamp, made)
    return made


def _chosen(bench: Any, roles: Iterable[str]) -> Iterator[tuple[StatePart, StateContext]]:
    wanted = roles if isinstance(roles, (tuple, frozenset, set)) else tuple(roles)
    for part, cx in _bound(bench):
        if part.role in wanted:
            yield part, cx


# -- snapshots ----------------------------------------------------------------------------
@dataclass(eq=False)
class Snapshot:
    """A bench's state at one moment, part by part; pass it to `Bench.diff` or `Bench.restore`."""

    taken_at: float
    parts: dict[str, Any]  # part name (or its `shared` name) -> the part's snapshot

    def __repr__(self) -> str:
        files = self.parts.get("files")
        count = f": {sum(t == 'file' for t, _ in files.values())} files" if isinstance(files, dict) else ""
        return f"<Snapshot {time.strftime('%H:%M:%S', time.localtime(self.taken_at))}{count}>"


def _key(part: StatePart) -> str:
    return part.shared or part.name


def _snap(part: StatePart, cx: StateContext) -> Any:
    return part.snapshot(cx) if part.snapshot is not None else part.dump(cx)


def take(bench: Any, *, roles: Iterable[str] = ALL) -> Snapshot:
    """Every part of `roles` as it is now (parts sharing a store: one snapshot of it)."""
    out: dict[str, Any] = {}
    for part, cx in _chosen(bench, roles):
        key = _key(part)
        if key not in out:
            out[key] = _snap(part, cx)
    return Snapshot(bench.providers.now(), out)


_INTERNAL = Refusal("E_INTERNAL", "a snapshot")


def restore(bench: Any, snap: Snapshot) -> None:
    """Put back every part `snap` holds (each restored once; E_PATH and such from a part are
    raised after the others were put back)."""
    done: set[str] = set()
    failed: BaseException | None = None
    for part, cx in _chosen(bench, ALL):
        key = _key(part)
        if key in done or key not in snap.parts:
            continue
        done.add(key)
        try:
            if part.restore is not None:
                part.restore(cx, snap.parts[key])
            else:
                part.put(cx, snap.parts[key], _INTERNAL)
        except Exception as exc:  # the rest is still put back; the first failure said after
            failed = failed or exc
    if failed is not None:
        raise failed


def changes(
    bench: Any,
    before: Snapshot,
    after: Snapshot | None = None,
    *,
    roles: Iterable[str] = SHOWN,
    skip: Iterable[str] = (),
) -> list[Change]:
    """What changed from `before` to `after` (None: now) in the parts a diff shows (`roles`),
    but those named in `skip`."""
    rows: list[Change] = []
    left_out = set(skip)
    for part, cx in _chosen(bench, roles):
        key = _key(part)
        if key not in before.parts or part.name in left_out:
            continue
        a = before.parts[key]
        if after is not None:
            if key not in after.parts:
                continue
            b = after.parts[key]
        else:
            b = part.current(cx) if part.current is not None else _snap(part, cx)
        if part.diff is not None:
            rows.extend(part.diff(a, b))
        else:
            rows.extend(json_changes(part.kind or part.name, part.name, a, b))
    return rows


def diff(bench: Any, snap: Snapshot) -> list[Change]:
    """What changed since `snap`, part by part."""
    return changes(bench, snap)


# -- JSON ---------------------------------------------------------------------------------
def dump(bench: Any, *, roles: Iterable[str] = ("state",)) -> dict[str, Any]:
    """{part name: its JSON} of the parts of `roles`."""
    return {part.name: part.dump(cx) for part, cx in _chosen(bench, roles)}


def put(
    bench: Any,
    state: Any,
    *,
    code: str,
    label: str,
    roles: Iterable[str] = ("state",),
    empty: bool = True,
) -> None:
    """Put `state` ({part name: JSON}, someone else's) on the bench: each part of `roles` it
    names is replaced by its JSON, checked by the part (WorkbenchError(`code`) naming `label`
    and the field); with `empty`, the parts it does not name are emptied. A name no part of
    the bench has is refused."""
    bad = Refusal(code, label)
    if not isinstance(state, dict):
        raise bad("state", "is not an object of the bench's state parts")
    chosen = list(_chosen(bench, roles))
    known = {part.name for part, _ in chosen}
    for name, value in state.items():
        if name not in known and value not in ({}, [], None):  # (an empty one: an older file's)
            have = ", ".join(sorted(known)) or "none"
            raise bad(str(name)[:40], f"is not a part of this bench's state ({have})")
    for part, cx in chosen:
        if state.get(part.name) is not None:
            part.put(cx, state[part.name], bad)
        elif empty:
            part.put(cx, part.blank(), bad)


def empty(bench: Any) -> None:
    """Empty every "state" part (the doctor's empty start, a replay's bench)."""
    put(bench, {}, code="E_INTERNAL", label="(empty)")
