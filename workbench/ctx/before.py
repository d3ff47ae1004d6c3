"""The state a call found, copied as it first reaches each part (issue 29: pinned calls).

A pinned call keeps the state it read and changed as it was before the call (`res.pin`,
pins/case.py). A call's own writes hide what was there, so the ctx layer copies what each ctx call
reaches before the method runs, as the part declares it (`StatePart.reached`): the files part
copies the conversation folder at the first ctx.files call, the documents part a collection at
the first ctx.data call naming it, the kv part all kv (Ekanos' account records are kept there)
at the first kv or account call, the sql part the tables a statement names at the first
statement naming them; a part declaring nothing is copied whole at the first call of a
capability holding it. The cost is proportional to what the call touches, and bounded
(Limits.pin_state_bytes in all): past it nothing more is copied and the call says, when pinned,
which limit it passed. The bench keeps its latest call's copy only; a bench opened with
`pins=False` makes none.
"""

from __future__ import annotations

import json
import weakref
from typing import TYPE_CHECKING, Any

from . import state as _state
from .parts import StateContext, StatePart

if TYPE_CHECKING:
    from ..gem import Manifest
    from ..platforms import Limits, Profile
    from .served import Recording
    from .stores import Providers

__all__ = ["Before", "held_by", "keep_start", "part_of", "start_of"]


class Before:
    """A call's state before it touched it, part by part (a part it never reached: absent)."""

    # a plain class: one is made for every call of a bench that pins, most of which reach
    # nothing (a dataclass's default factories cost a pinned no-op call a fifth of its extra)
    __slots__ = ("limit", "done", "over", "size", "recording", "parts", "seen", "_cx", "_reach")

    def __init__(self, limit: int, *, recording: Recording | None = None) -> None:
        self.limit = limit
        self.done: set[tuple[str, str]] = set()  # (part, token) a part copied
        self.over: dict[str, str] = {}  # part -> why it was not copied
        self.size = 0  # bytes copied, about
        # what it read from or sent outside the state, in order (ctx/served.py): its replay's answers
        self.recording = recording
        # part name -> its copy ({sub-key: value} as its `reached` added them, or its whole dump),
        # and the part with its context, to compare with after the call
        self.parts: dict[str, Any] = {}
        self.seen: dict[str, tuple[StatePart, StateContext]] = {}
        self._cx: dict[str, StateContext] = {}  # impl -> the parts' context
        self._reach: dict[str, _Reach] = {}

    def reach(
        self,
        impl: str,
        args: tuple[Any, ...],
        p: Providers,
        *,
        method: str = "",
        profile: Profile | None = None,
        limits: Limits | None = None,
        manifest: Manifest | None = None,
    ) -> None:
        """The call is about to run `method` of capability `impl` with `args`: copy what it
        reaches of the parts that capability holds that was not copied yet."""
        if self.over or profile is None or limits is None:
            return
        parts = held_by(profile).get(impl)
        if not parts:
            return
        cx = self._cx.get(impl)
        if cx is None:
            cx = self._cx[impl] = StateContext(p, p.backends.get(impl), limits, manifest, profile)
        for part in parts:
            if self.over:
                return
            found = self._reach.get(part.name)
            if found is None:  # its first reach: the part's copy is the case's, empty or not
                found = self._reach[part.name] = _Reach(self, part.name)
                self.seen[part.name] = (part, cx)
                if part.reached is None:  # a part that declares nothing: copied whole, once
                    copy = part.dump(cx)
                    if self.charge(len(json.dumps(copy, default=repr)), f"part {part.name!r}"):
                        self.parts[part.name] = copy
                    continue
                self.parts[part.name] = found.copy
            if part.reached is not None:
                part.reached(cx, method, args, found)

    def charge(self, size: int, what: str) -> bool:
        """Count `size` bytes of the copy against pin_state_bytes; False (and `what` noted as
        where the copy stopped) once past it."""
        self.size += size
        if self.size > self.limit:
            self.over[what] = f"the state it reached passes pin_state_bytes ({self.limit:,} bytes) at {what}"
            return False
        return True

    def ordered(self) -> list[tuple[StatePart, StateContext, Any]]:
        """(part, its context, its copy) of each part copied, in the order a case lists them
        (`StatePart.pin_order`, then as reached)."""
        rows = [(*self.seen[name], copy) for name, copy in self.parts.items()]
        return sorted(rows, key=lambda row: row[0].pin_order)

    def close(self) -> None:
        """Let go of the copy (the bench keeps its latest call's only)."""
        self.recording = None
        self.parts, self.seen, self._cx, self._reach = {}, {}, {}, {}


class _Reach:
    """A part's way into a call's copy (`parts.Reach`): its sub-keys, bounded by the call's."""

    __slots__ = ("before", "copy", "name")

    def __init__(self, before: Before, name: str) -> None:
        self.before, self.name = before, name
        self.copy: dict[Any, Any] = {}

    def first(self, token: str) -> bool:
        key = (self.name, token)
        if key in self.before.done or self.before.over:
            return False
        self.before.done.add(key)
        return True

    def charge(self, size: int, what: str) -> bool:
        return not self.before.over and self.before.charge(size, what or f"part {self.name!r}")

    def add(self, key: Any, value: Any, size: int | None = None, what: str = "") -> bool:
        if key in self.copy:
            return True
        if size is None:
            size = len(str(key)) + len(json.dumps(value, default=repr))
        if not self.charge(size, what):
            return False
        self.copy[key] = value
        return True


_HELD: dict[int, tuple[Any, dict[str, list[StatePart]]]] = {}


def held_by(profile: Profile) -> dict[str, list[StatePart]]:
    """{impl: its "state" parts a pinned call copies}, per capability of `profile` (kv is the
    kv capability's and the account's): worked out once per list of parts (`parts_of` keeps
    one per profile), so a ctx call looks up one key."""
    parts = _state.parts_of(profile)
    found = _HELD.get(id(parts))
    if found is not None and found[0] is parts:
        return found[1]
    from .registry import specs_of

    holders: dict[str, list[Any]] = {}
    for spec in specs_of(profile):
        for part in spec.state:
            holders.setdefault(part.name, []).append(spec)
    out: dict[str, list[StatePart]] = {}
    for part, owner in parts:
        if part.role != "state":
            continue
        for spec in (owner, *(s for s in holders.get(part.name, ()) if s is not owner)):
            # a capability whose answers a replay serves back (a mailbox, the built-ins): those
            # answers stand for its state (a copy of a mailbox would cost its size per call)
            if spec.replayed is None:
                out.setdefault(spec.impl, []).append(part)
    if len(_HELD) >= 64:  # a profile per platform: more is lists made anew (a test's)
        _HELD.clear()
    _HELD[id(parts)] = (parts, out)
    return out


_IMPLS: dict[tuple[str, str], str] = {}


def part_of(profile: Profile, method: str) -> str:
    """The capability (impl) serving `method`, or "" when none."""
    key = (profile.name, method)
    found = _IMPLS.get(key)
    if found is None:
        route = profile.routes.get(method)
        found = _IMPLS[key] = (route[0] if route else profile.dispatch.get(method.rpartition(".")[0])) or ""
    return found


# -- a bundle's start ----------------------------------------------------------------------
# bench -> (the call id of its first call, {"state": …, "setup": …} as that call found them, or
# None with why not): what a bundle of a fresh bench starts its replay from. Taken once, by the
# first call of a bench that pins (a bench opened with pins=False pays nothing).
_STARTS: weakref.WeakKeyDictionary[Any, tuple[str, dict[str, Any] | None, str]] = weakref.WeakKeyDictionary()


def keep_start(bench: Any, call_id: str) -> None:
    """Keep the bench's state and setup as its first call `call_id` finds them (once)."""
    if bench in _STARTS:
        return
    from .._errors import WorkbenchError
    from .state import dump

    real = sorted(k for k, v in bench.provider_kinds.items() if v != "mock")
    if real:  # a real folder or database is the user's, not the bench's to copy whole
        _STARTS[bench] = (
            call_id,
            None,
            f"the bench's {', '.join(real)} are real: a replay starts from mocks",
        )
        return

    try:
        found = {"state": _unserved(bench), "setup": dump(bench, roles=("setup",))}
    except WorkbenchError as exc:  # a part that cannot be dumped (a real mailbox): said on export
        _STARTS[bench] = (call_id, None, exc.message)
        return
    except Exception as exc:  # a part's bug: the call runs anyway; its bundle says why no start
        _STARTS[bench] = (call_id, None, f"a state part could not be dumped ({type(exc).__name__}: {exc})")
        return
    size = len(json.dumps(found, default=repr))
    if size > bench.limits.bundle_bytes:
        why = f"its state at call {call_id} was {size:,} bytes, over Limits.bundle_bytes"
        _STARTS[bench] = (call_id, None, why)
    else:
        _STARTS[bench] = (call_id, found, "")


def _unserved(bench: Any) -> dict[str, Any]:
    """The "state" parts' JSON but those of capabilities whose answers a replay serves back
    (a mailbox, an outbox): a sequence's replay serves them, so their state is not needed,
    and a mailbox of a million messages is not copied at a first call."""
    from .state import context, parts_of

    return {
        part.name: part.dump(context(bench, spec))
        for part, spec in parts_of(bench.profile)
        if part.role == "state" and spec.replayed is None
    }


def start_of(bench: Any) -> tuple[str, dict[str, Any] | None, str] | None:
    """(first call id, its state and setup or None, why not) kept by `keep_start`, or None."""
    return _STARTS.get(bench)
