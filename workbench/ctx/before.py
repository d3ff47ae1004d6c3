"""The state a call found, copied as it first reaches each part (issue 29: pinned calls).

A pinned call keeps the state it read and changed as it was before the call (`res.pin`,
_pins.py). A call's own writes hide what was there, so the ctx layer copies each part the
first time the call reaches it, before the ctx method runs: the conversation folder at its
first ctx.files call, a collection at its first ctx.data call naming it, kv (and Ekanos'
account records, kept there) at its first kv call, the SQL tables a statement names at the
first statement naming them. The cost is proportional to what the call touches, and bounded
(Limits.pin_state_bytes in all): past it nothing more is copied and the call says, when
pinned, which limit it passed. The bench keeps its latest call's copy only; a bench opened
with `pins=False` makes none.
"""

from __future__ import annotations

import json
import re
import weakref
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .parts import StateContext, StatePart
from .paths import hidden

if TYPE_CHECKING:
    from ..gem import Manifest
    from ..platforms import Limits, Profile
    from .served import Recording
    from .stores import Providers

__all__ = ["Before", "keep_start", "part_of", "start_of"]

# the stores a call's copy holds in its own fields above (what it touched of them, bounded)
_STORES = frozenset({"files", "kv", "documents", "sql"})
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*|\"(?:[^\"]|\"\")+\"|`[^`]+`|\[[^\]]+\]")


@dataclass(eq=False)
class Before:
    """A call's state before it touched it, part by part (None: a part it never reached)."""

    limit: int
    files: dict[tuple[str, str], tuple[str, bytes | None]] | None = None
    kv: dict[str, str] | None = None
    documents: dict[str, dict[str, str]] | None = None  # collection -> {id: the document's JSON}
    sql: dict[str, tuple[str, dict[Any, dict[str, Any]]]] | None = None  # table -> (CREATE, rows)
    done: set[str] = field(default_factory=set)  # "files", "kv", "data:<name>", "sql:<table>"
    over: dict[str, str] = field(default_factory=dict)  # part -> why it was not copied
    size: int = 0  # bytes copied, about
    # what it read from or sent outside the state, in order (ctx/served.py): its replay's answers
    recording: Recording | None = None
    # the other "state" parts its capabilities declare (a plugin's): part name -> its copy
    # (StatePart.reached), and the part with its context, to compare with after the call
    parts: dict[str, Any] = field(default_factory=dict)
    seen: dict[str, tuple[StatePart, StateContext]] = field(default_factory=dict)

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
        """The call is about to run `method` of capability `impl` with `args`: copy the parts it
        may read or change that were not copied yet."""
        if self.over:
            return
        declared = _declared_of(profile).get(impl) if profile is not None and limits is not None else None
        if declared:
            assert limits is not None
            self._declared(declared, method, args, StateContext(p, None, limits, manifest, profile))
        if impl == "files":
            if "files" not in self.done:
                self.done.add("files")
                self._files(p)
        elif impl in ("kv", "account"):
            if "kv" not in self.done:
                self.done.add("kv")
                items = p.store.kv_items()
                if self._add("kv", sum(len(k) + len(v) for k, v in items)):
                    self.kv = dict(items)
        elif impl == "data":
            name = args[0] if args and isinstance(args[0], str) else None
            if name is not None and f"data:{name}" not in self.done:
                self.done.add(f"data:{name}")
                docs = p.store.docs(name) if name in p.store.collections() else []
                if self._add(f"collection {name!r}", sum(len(i) + len(d) for i, d in docs)):
                    (self.documents if self.documents is not None else self._docs())[name] = dict(docs)
        elif impl == "sql":
            statement = args[0] if args and isinstance(args[0], str) else ""
            for table in _tables_named(statement, p.sql_db.tables()):
                if f"sql:{table}" not in self.done:
                    self.done.add(f"sql:{table}")
                    self._table(p, table)

    def _declared(
        self, parts: list[tuple[StatePart, str]], method: str, args: tuple[Any, ...], cx: StateContext
    ) -> None:
        """Copy what the call reaches of `parts` ((part, its capability's impl): the "state"
        parts of the capability it calls that are not the stores copied above, a plugin
        capability's): its `reached`, or the whole part."""
        for part, impl in parts:
            here = replace(cx, backend=cx.providers.backends.get(impl))
            if part.reached is None:
                if part.name in self.seen:
                    continue
                self.seen[part.name] = (part, here)
                copy = part.dump(here)
                if self._add(f"part {part.name!r}", len(json.dumps(copy, default=repr))):
                    self.parts[part.name] = copy
                continue
            self.seen.setdefault(part.name, (part, here))
            found = part.reached(here, method, args) or {}
            mine = self.parts.setdefault(part.name, {})
            for key, value in found.items():
                if key not in mine and self._add(
                    f"part {part.name!r}", len(str(key)) + len(json.dumps(value, default=repr))
                ):
                    mine[key] = value

    def _docs(self) -> dict[str, dict[str, str]]:
        self.documents = {}
        return self.documents

    def _add(self, what: str, size: int) -> bool:
        self.size += size
        if self.size > self.limit:
            self.over[what] = f"the state it reached passes pin_state_bytes ({self.limit:,} bytes) at {what}"
            return False
        return True

    def _files(self, p: Providers) -> None:
        out: dict[tuple[str, str], tuple[str, bytes | None]] = {}
        if "workspace" in p.files.roots():  # earlier calls' run folders: no call finds them (F1)
            for path, e in p.files.walk("workspace"):
                if hidden("workspace", path):  # SEC3: a dot-entry is never copied into a case
                    continue
                data = p.files.read("workspace", path) if e.type == "file" else None
                if not self._add(
                    "the conversation folder", len(path) + (len(data) if data is not None else 0)
                ):
                    return
                out[("workspace", path)] = (e.type, data)
        self.files = out

    def _table(self, p: Providers, table: str) -> None:
        db = p.sql_db
        # through the provider's own connection: the call's storage transaction may be open on
        # it, and a backup cannot copy a database its connection is writing
        _, made = db.query("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
        rows = db.rows(table)
        if self._add(f"table {table!r}", len(json.dumps(list(rows.values()), default=repr))):
            if self.sql is None:
                self.sql = {}
            self.sql[table] = (made[0][0] if made else "", rows)

    def close(self) -> None:
        """Let go of the copy (the bench keeps its latest call's only)."""
        self.files = self.kv = self.documents = self.sql = None
        self.recording = None
        self.parts, self.seen = {}, {}


_DECLARED: dict[int, tuple[Any, dict[str, list[tuple[StatePart, str]]]]] = {}


def _declared_of(profile: Profile) -> dict[str, list[tuple[StatePart, str]]]:
    """{impl: [(part, impl)]} of the "state" parts beyond the stores, per capability: worked
    out once per list of parts (`parts_of` keeps one per profile), so a ctx call of a
    capability with none looks up one key."""
    from .state import parts_of

    parts = parts_of(profile)
    found = _DECLARED.get(id(parts))
    if found is not None and found[0] is parts:
        return found[1]
    out: dict[str, list[tuple[StatePart, str]]] = {}
    for part, spec in parts:
        # a capability whose answers a replay serves back (a mailbox, the built-ins): those
        # answers stand for its state (a copy of a mailbox would cost its size per call)
        if part.role == "state" and part.name not in _STORES and spec.replayed is None:
            out.setdefault(spec.impl, []).append((part, spec.impl))
    if len(_DECLARED) >= 64:  # a profile per platform: more is lists made anew (a test's)
        _DECLARED.clear()
    _DECLARED[id(parts)] = (parts, out)
    return out


def _tables_named(statement: str, tables: list[str]) -> list[str]:
    """The gem's tables a statement names (by word, quoted or not; case-insensitive as SQLite)."""
    if not tables:
        return []
    words = {w.strip('"`[]').replace('""', '"').lower() for w in _WORD.findall(statement[:1_000_000])}
    return [t for t in tables if t.lower() in words]


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
