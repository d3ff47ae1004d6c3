"""The pins' part in a call (a standing hook of every bench opened with `pins=True`): each call
copies the state it reaches first (ctx/before.py) and records the outside answers its replay
serves back (ctx/served.py); the bench keeps its latest call's copy, which `res.pin` saves.
A bench's first call also keeps the state and setup it found: a bundle's start."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..ctx.before import Before, keep_start, part_of
from ..ctx.hooks import Answer, CallHooks
from ..ctx.served import Recording, recorded, replayed

if TYPE_CHECKING:
    from ..bench.bench import Bench
    from ..bench.result import CallResult
    from ..ctx import CallSession

__all__ = ["Pinning", "pinning_of"]


#: what a call that reached nothing outside recorded (shared: a kept recording is only read)
NOTHING = Recording(0)


class Pinning(CallHooks):
    """Copies what each call reaches, as it found it; keeps the latest call's copy."""

    keeps_draws = True  # a pinned call's replay repeats its ids and clock reads

    def __init__(self, bench: Bench) -> None:
        self.bench = bench
        # the running call's copy (shared with nested calls), made at its first ctx call: most
        # calls of a bench that pins are never pinned, and one reaching nothing copies nothing
        self.before: Before | None = None
        self.running = False
        # (call id, copy) of the latest call; its copy None when it reached nothing
        self.latest: tuple[str, Before | None] | None = None

    def on_call_start(self, *, session: CallSession, result: CallResult, **_: Any) -> None:
        self.before, self.running = None, True
        if self.bench.core.count == 1:  # a bundle's start: the state and setup the first call finds
            keep_start(self.bench, result.call_id)

    def on_ctx_call(
        self,
        *,
        session: CallSession,
        method: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        answer: Answer,
        **_: Any,
    ) -> Any:
        before = self.before
        if before is None:
            if not self.running:  # a ctx call outside a call it started (a hook given twice)
                return answer(fn)
            limits = session.limits
            before = self.before = Before(limits.pin_state_bytes, recording=Recording(limits.trace_rows))
        profile = session.profile
        # a part of the state it reaches first: copied as it finds it
        before.reach(
            part_of(profile, method),
            args,
            session.providers,
            method=method,
            profile=profile,
            limits=session.limits,
            manifest=session.manifest,
        )
        if before.recording is not None and replayed(profile, method):
            return answer(recorded(before.recording, method, fn))
        return answer(fn)

    def on_call_end(self, *, session: CallSession | None, result: CallResult, **_: Any) -> None:
        before, self.before, self.running = self.before, None, False
        if session is None:  # refused before it ran: nothing was copied
            return
        self.keep((result.call_id, before))
        # what a bundle's replay serves back: the recording outlives the state copy
        result.replay["served"] = before.recording if before is not None else NOTHING

    def keep(self, kept: tuple[str, Before | None] | None) -> None:
        """Keep `kept` as the latest call's copy, letting go of the one before."""
        if self.latest is not None and self.latest[1] is not None:
            self.latest[1].close()
        self.latest = kept

    def copy_of(self, call_id: str) -> Before | None:
        """The copy of call `call_id` when it is the latest call's (an empty one when it reached
        nothing), else None."""
        kept = self.latest
        if kept is None or kept[0] != call_id:
            return None
        if kept[1] is None:
            limits = self.bench.limits
            self.latest = (call_id, Before(limits.pin_state_bytes, recording=Recording(limits.trace_rows)))
            return self.latest[1]
        return kept[1]

    def close(self) -> None:
        self.keep(None)


def pinning_of(bench: Any) -> Pinning | None:
    """The bench's Pinning (None: opened with pins=False)."""
    for hook in bench.core.hooks:
        if isinstance(hook, Pinning):
            return hook
    return None
