"""What a capability declares of the bench state it owns and the effects it has outside it
(issue 43; Miniflare's plugins own their persistence the same way).

A `StatePart` is one part of a bench's state: the conversation folder, kv, a collection's
documents, the SQL rows, the mailbox, the outbox, an allow-list, a plugin's ticker. Its
capability lists it on its `CapabilitySpec.state`; ctx/state.py is the one implementation of
snapshot, restore, diff, dump and put over every part a bench's capabilities declare, which
`bench.snapshot/diff/restore`, `export_state`, pins, bundles, crash reruns and the doctor use
without naming any capability.

An `Effect` is a method that acts outside the bench (mail sent, a POST): a crash rerun that
makes it again where a clean call makes it once is N7 (ctx/state.py `effects_of`).

Only dump and put are required: a snapshot defaults to the dump, a restore to the put, a diff
to comparing two dumps key by key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .._errors import WorkbenchError
    from ..gem import Manifest
    from ..platforms import Limits, Profile
    from .stores import Providers

__all__ = ["Change", "Effect", "Refusal", "StateContext", "StatePart"]

Json = Any


@dataclass(frozen=True, slots=True)
class Change:
    """One row of a diff, whatever part it is of: what kind of thing (file, kv, document, sql,
    mail, …), where (a root, a collection, a table, an account), its key, how it changed
    (added/inserted, changed/updated, deleted) and its value before and after."""

    kind: str
    where: str
    key: Any
    change: str
    before: Any
    after: Any


class Refusal:
    """Makes the coded error of one piece of input a part is put from (`code`: E_CASE,
    E_BUNDLE, E_STATE): `bad(field, why, **details)` names the input and the field."""

    def __init__(self, code: str, label: str) -> None:
        self.code, self.label = code, label

    def __call__(self, field: str, why: str, **details: Any) -> WorkbenchError:
        from .._errors import WorkbenchError

        return WorkbenchError(
            self.code, f"{self.label}: {field}: {why}", file=self.label, field=field, **details
        )


@dataclass(frozen=True)
class StateContext:
    """What a part's functions see: the bench's stores, its capability's backend (None: it
    sits on the shared stores), the bounds and the gem."""

    providers: Providers
    backend: Any
    limits: Limits
    manifest: Manifest | None = None
    profile: Profile | None = None
    bench: Any = None  # the bench itself: the "bench" part's clock, seed and open options


@dataclass(frozen=True)
class StatePart:
    """One part of a bench's state, owned by one capability.

    role: "state" (what tools find and change: in diffs, state folders, a pin's `before`, the
    doctor's empty start), "setup" (how the bench was set up: allow-lists, secrets as
    stand-ins, faults, served answers; a bundle's setup, compared on its replay; never emptied)
    or "log" (what the bench noted: put back by restore, never dumped or diffed).
    """

    name: str
    dump: Callable[[StateContext], Json]
    # JSON -> the part, replacing what it holds; hostile input: `bad(field, why)` for a refusal
    put: Callable[[StateContext, Json, Refusal], None]
    role: Literal["state", "setup", "log"] = "state"
    snapshot: Callable[[StateContext], Any] | None = None  # default: the dump
    restore: Callable[[StateContext, Any], None] | None = None  # default: the put of a dump
    # (snapshot before, snapshot after) -> Change rows; default: the two dumps compared by key
    diff: Callable[[Any, Any], Iterable[Change]] | None = None
    # the part now, as `diff` reads it, without a copy (a live store); default: a snapshot
    current: Callable[[StateContext], Any] | None = None
    blank: Callable[[], Json] = dict  # what the part holds when empty (put by `empty`)
    # parts with one `shared` name are snapshot and restored once, by the first of them (kv and
    # documents live in one data store)
    shared: str = ""
    kind: str = ""  # the diff rows' kind by default (the name)
    # what a pinned call copies of the part the first time one of its ctx calls reaches it,
    # before the method runs: (cx, method, args) -> {sub-key: JSON} added to the call's copy
    # (None: nothing new); default (None): the whole part, its dump, at the first ctx call of
    # its capability. A pinned case's `before` holds the copy; its replay puts it back.
    reached: Callable[[StateContext, str, tuple[Any, ...]], dict[str, Any] | None] | None = None


@dataclass(frozen=True)
class Effect:
    """A method of a capability that acts outside the bench (mail sent, an HTTP request that
    changes something): `acts(args)` whether this call of it does (a GET does not), and
    `same(a, b)` whether two calls are the same act (a rerun's duplicate): default, the same
    arguments. `deduped(args, key)`: whether the call carries the run's idempotency key, so
    the receiver can drop a second one (not a duplicate then)."""

    method: str
    acts: Callable[[list[Any]], bool] = field(default=lambda args: True)
    same: Callable[[list[Any], list[Any]], bool] | None = None
    deduped: Callable[[list[Any], str], bool] | None = None
    # the act said for a person ("mail to a@x.example 'Report'", "POST https://…"); default:
    # the method and its arguments
    describe: Callable[[list[Any]], str] | None = None
