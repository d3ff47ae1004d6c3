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

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from .._errors import WorkbenchError
    from ..gem import Manifest
    from ..platforms import Limits, Profile
    from .stores import Providers

__all__ = [
    "Change",
    "Effect",
    "Reach",
    "Refusal",
    "StateContext",
    "StatePart",
    "json_changes",
    "keyed",
    "keyed_changes",
]

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
    # what a pinned call copies of the part as its ctx calls reach it, before each method runs:
    # (cx, method, args, reach) adds sub-keys to the call's copy through `reach` (`Reach`),
    # bounded by Limits.pin_state_bytes (the copy, empty or not, is the case's from the first
    # call that reaches the part); default (None): the whole part, its dump, at the first
    # ctx call of a capability holding it. A pinned case's `before` holds the copy (as
    # `before_json` writes it); its replay puts it back.
    reached: Callable[[StateContext, str, tuple[Any, ...], Reach], None] | None = None
    # the copy as a case's `before` holds it: (copy, named, changed) -> JSON, None to leave the
    # part out; `named`: {capability impl: the strings that capability's calls in the trace
    # named (arguments, results)}, `changed`: the part's `changed` entries; default: the copy
    before_json: Callable[[Any, Mapping[str, set[str]], list[dict[str, Any]]], Json] | None = None
    # what the call changed since the copy, as a case's `changes` entries ({kind, where, key,
    # change, after}): (copy, cx) -> entries; default: the copy against the dump now (only the
    # sub-keys copied, for a part with `reached`), key by key
    changed: Callable[[Any, StateContext], list[dict[str, Any]]] | None = None
    pin_order: int = 100  # where a case lists the part in `before` and `changes`: lower first


class Reach(Protocol):
    """What a part's `reached` adds to a pinned call's copy through (ctx/before.py `Before`)."""

    #: the part's copy so far, {sub-key: value}: a walk that charged what it adds may put it
    #: here directly (a store's many entries at once)
    copy: dict[Any, Any]

    def first(self, token: str) -> bool:
        """True the first time the call's copy of this part asks for `token` (a collection, a
        table, "folder"): what was copied once is not copied again."""
        ...

    def charge(self, size: int, what: str) -> bool:
        """Count `size` bytes against pin_state_bytes; False once past it (`what`, e.g.
        "collection 'notes'", is named in the pin's E_TOO_LARGE): copy nothing more."""
        ...

    def add(self, key: Any, value: Any, size: int | None = None, what: str = "") -> bool:
        """Keep `value` under `key` (a key already kept stays as it was), charged `size` bytes
        (default: its JSON's); False once past the bound."""
        ...


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


# -- comparing dumps: the parts' diffs use these (kept below ctx/state.py, which reads the
# registry, so a part's module never imports the module that collects the parts)
WORDS = {"added": "added", "changed": "changed", "deleted": "deleted"}


def keyed(before: dict[Any, Any], after: dict[Any, Any]) -> Iterator[tuple[Any, str, Any, Any]]:
    """(key, "added" | "deleted" | "changed", value before, value after) of each key whose
    value differs between two {key: value} maps, in the order of the keys' text: the one
    comparison every part's diff and a pin's changes are made of."""
    for k in sorted(before.keys() | after.keys(), key=str):
        a, b = before.get(k), after.get(k)
        if a != b:
            yield k, "added" if a is None else "deleted" if b is None else "changed", a, b


def keyed_changes(
    kind: str, where: str, before: dict[Any, Any], after: dict[Any, Any], words: dict[str, str] = WORDS
) -> Iterator[Change]:
    """A Change per key whose value differs between two {key: value} maps."""
    for k, how, a, b in keyed(before, after):
        yield Change(kind, where, k, words[how], a, b)


def json_changes(kind: str, where: str, before: Any, after: Any) -> Iterator[Change]:
    """The default diff of two dumps: by key of an object, by position of a list (what was
    appended is "added"), else one change of the whole."""
    if isinstance(before, dict) and isinstance(after, dict):
        yield from keyed_changes(kind, where, before, after)
    elif isinstance(before, list) and isinstance(after, list):
        yield from keyed_changes(kind, where, dict(enumerate(before)), dict(enumerate(after)))
    elif before != after:
        yield Change(kind, where, None, "changed", before, after)
