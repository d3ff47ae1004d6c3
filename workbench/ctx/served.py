"""Effects a pinned call's replay serves back (issue 29): what a tool reads from or sends
outside the bench's state — a mailbox page, a built-in's answer (web_search, send_email).

A capability says which of its methods these are (`CapabilitySpec.replayed`). While a call
that can be pinned runs, each such ctx call's full result (or error) is recorded in order
(`Recording`, shared with its nested calls); its replay answers the same methods from that
recording in order (`Playback`), so a case pinned on a real mailbox or SMTP server replays on
mocks, and one the recording lacks fails naming it. HTTP is served by its own transport
(providers' `Served`), below the credential rules, which still run.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from .hooks import Answer, CallHooks

if TYPE_CHECKING:
    from ..platforms import Profile
    from ._session import CallSession

__all__ = ["Playback", "Recording", "Replaying", "recorded", "replayed"]

_REPLAYED: dict[tuple[str, str], bool] = {}


def replayed(profile: Profile, method: str) -> bool:
    """Whether a replay serves `method`'s recorded result (its capability's `replayed`)."""
    key = (profile.name, method)
    found = _REPLAYED.get(key)
    if found is None:
        from .before import part_of
        from .registry import capability

        impl = part_of(profile, method)
        unit = capability(impl) if impl else None
        test = unit.replayed if unit is not None else None
        found = _REPLAYED[key] = bool(test is not None and test(method))
    return found


class Recording:
    """The replayed ctx calls of one invocation, in order: {method, ok, result | error}."""

    def __init__(self, limit: int) -> None:
        self.entries: list[dict[str, Any]] = []
        self.limit, self.over = limit, False  # at most `limit` entries (Limits.trace_rows)
        self.chars = 0  # about the characters the entries hold: what keeping them costs

    def add(self, method: str, result: Any = None, error: WorkbenchError | None = None) -> None:
        if len(self.entries) >= self.limit:
            self.over = True
            return
        entry: dict[str, Any] = {"method": method, "ok": error is None}
        if error is None:
            text = json.dumps(result, default=str)
            entry["result"] = json.loads(text)
            self.chars += len(text) + len(method)
        else:
            entry["error"] = {"code": error.code, "message": error.message}
            self.chars += len(error.message) + len(method)
        self.entries.append(entry)


class Playback:
    """A case's recorded calls, each answered once, in order per method."""

    def __init__(
        self, entries: list[dict[str, Any]], *, where: str, live: frozenset[str] = frozenset()
    ) -> None:
        self.entries, self.where = entries, where
        self.used: set[int] = set()
        self.live = live  # methods that run for real (a doctor's recheck sends its mail again)

    def take(self, method: str) -> Any:
        """The next recorded answer to `method`: its result, or its error raised."""
        for i, entry in enumerate(self.entries):
            if i in self.used or entry.get("method") != method:
                continue
            self.used.add(i)
            if entry.get("ok", True):
                return copy.deepcopy(entry.get("result"))
            err: dict[str, Any] = entry["error"] if isinstance(entry.get("error"), dict) else {}
            raise WorkbenchError(
                str(err.get("code") or "E_REPLAY"), str(err.get("message") or "recorded failure")
            )
        raise WorkbenchError(
            "E_REPLAY",
            f"ctx.{method} is not in {self.where} ({sum(e.get('method') == method for e in self.entries)} "
            f"recorded, all used): the replay made a call the pinned call did not",
            method=method,
        )

    def unused(self) -> list[str]:
        """The recorded calls no replayed call took (the tool made fewer than when pinned)."""
        return [str(e.get("method")) for i, e in enumerate(self.entries) if i not in self.used]


def recorded(recording: Recording, method: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, its result or error added to `recording` as it runs (a call that can be pinned)."""

    def recording_fn(*args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(*args, **kwargs)
        except WorkbenchError as exc:
            recording.add(method, error=exc)
            raise
        recording.add(method, result)
        return result

    return functools.wraps(fn)(recording_fn)  # the ctx layer reads fn's signature through it


class Replaying(CallHooks):
    """The hook of a replay: each replayed ctx call (`replayed`) answered from `playback`, in
    order, but for its `live` methods; the arguments are still checked as the live call would."""

    __slots__ = ("playback",)

    def __init__(self, playback: Playback) -> None:
        self.playback = playback

    def on_ctx_call(
        self,
        *,
        session: CallSession,
        method: str,
        fn: Callable[..., Any],
        answer: Answer,
        **_: Any,
    ) -> Any:
        playback = self.playback
        if method in playback.live or not replayed(session.profile, method):
            return answer(fn)

        def served(*args: Any, **kwargs: Any) -> Any:
            inspect.signature(fn).bind(*args, **kwargs)  # a TypeError: E_INVALID_ARGUMENT, as live
            return playback.take(method)

        return answer(functools.wraps(fn)(served))
