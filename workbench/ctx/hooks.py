"""Call hooks: how a feature takes part in a call without the call knowing the feature.

A pinned call records its ctx calls, its replay answers them, a crash rerun aborts at one, the
doctor watches them, and the debugger and an MCP server will too: each is a `CallHooks` given
to the call (`bench.call(..., hooks=[...])`, or standing on the bench: `bench.hooks`). Hooks
are called with keyword arguments only, as nbclient calls its `on_cell_*` hooks, so a hook
written today keeps working when a later version passes more of them (`**_` takes the rest).

A hook that does not override a method costs nothing for it: the call asks only the hooks whose
class overrides `on_ctx_call` on each ctx call (`ctx_hooks`), and a call without hooks runs the
ctx layer's own path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._session import CallSession

__all__ = ["Answer", "CallHooks", "asked", "ctx_hooks", "overrides"]

Answer = Callable[[Callable[..., Any]], Any]
"""`answer(fn)` runs `fn(*args, **kwargs)` as the ctx call (traced, timed against the call's
deadline, its failures coded as the ctx layer codes them) and returns its result."""


class CallHooks:
    """A feature's part in a call. Override the methods you need; each takes keyword arguments
    (accept `**_` for those a later version adds)."""

    # True for a hook that keeps the call to repeat it (a pin): the call then draws its ids from
    # a seed of its own and keeps its clock reads, so that a replay can give the same
    keeps_draws: bool = False

    def on_call_start(self, *, session: CallSession, result: Any, **_: Any) -> None:
        """The call's session is made and its tool is about to run (`result` is its CallResult,
        its value not set yet)."""

    def on_ctx_call(
        self,
        *,
        session: CallSession,
        method: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        answer: Answer,
        **_: Any,
    ) -> Any:
        """One ctx call of the tool (`method` as "files.write"): observe it (`return
        answer(fn)`), answer it yourself (`return answer(lambda *a, **k: value)`: the trace
        shows your answer), or fail it (`answer` a function raising a WorkbenchError: the tool
        gets it and the trace shows it; raising here instead aborts the ctx call before it is
        traced, as a simulated crash does). Runs for nested calls too (`session.call_id` tells
        them apart)."""
        return answer(fn)

    def on_call_end(self, *, session: CallSession | None, result: Any, **_: Any) -> None:
        """The call is over: the tool returned, failed or crashed (its trace and state are
        final), or it was refused before it ran (`session` None: an unknown tool, E_SCHEMA)."""

    def close(self) -> None:
        """The bench this hook stands on is closing (standing hooks only)."""


def overrides(hook: CallHooks, name: str) -> bool:
    """Whether `hook`'s class has its own `name` (else calling it would do nothing)."""
    return getattr(type(hook), name, None) is not getattr(CallHooks, name)


def ctx_hooks(hooks: Iterable[CallHooks]) -> tuple[CallHooks, ...]:
    """The hooks that take part in ctx calls, in order (the first one sees each call first)."""
    return tuple(h for h in hooks if overrides(h, "on_ctx_call"))


def asked(hooks: Iterable[CallHooks]) -> tuple[tuple[CallHooks, ...], bool]:
    """What a call needs to know of its hooks: those asked on each ctx call, and whether one
    keeps the call's draws (`keeps_draws`)."""
    given = tuple(hooks)
    return ctx_hooks(given), any(h.keeps_draws for h in given)
