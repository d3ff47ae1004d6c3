"""Storage backends under the ctx layer: mock (memory) and real (folders, SQLite files)."""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import Entry, FileStore
from .datastore import DataStore, SqliteDataStore
from .folder import FolderFileStore
from .mail import Mailbox
from .memory import MemoryFileStore
from .sqlite import SqlDatabase, StateError, open_database
from .statedir import claim, make_state_dir

__all__ = [
    "DataStore",
    "Entry",
    "FileStore",
    "FolderFileStore",
    "Mailbox",
    "MemoryFileStore",
    "Providers",
    "SqlDatabase",
    "StateError",
    "default_state_dir",
    "make_mailbox",
    "make_providers",
    "open_database",
]


def default_state_dir(gem_id: str, gem_root: Path) -> Path:
    """Where real state of a gem lives unless `state_dir=` says otherwise: one folder per gem
    *folder*, `<id>-<hash of its real path>`, so another gem that copies this one's id does not
    open its private storage (D3)."""
    base = os.environ.get("GEM_WORKBENCH_HOME") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"), "gem-workbench"
    )
    tag = hashlib.sha256(os.fsencode(Path(gem_root).resolve())).hexdigest()[:12]
    return Path(base) / f"{gem_id}-{tag}"


@dataclass
class Providers:
    """The storage a bench sits on: one file store, a data store and two SQLite databases (the
    shared stores), and each capability's own backend (`backends`)."""

    kind: dict[str, str]  # capability -> "mock" | "real"
    files: FileStore
    data_db: SqlDatabase  # the data store's database (its transaction: store.transaction())
    store: DataStore  # ctx.data, ctx.storage.kv, file history: all over data_db
    sql_db: SqlDatabase  # ctx.storage.sql: the gem's private database
    state_dir: Path | None
    # {capability impl: its backend}, made at open by each CapabilitySpec.backend (ctx/spec.py)
    # for the platform's capabilities: "email" MailAccess (the mailbox, the user's grant),
    # "http" HttpState, "resources" ResourceCache (None: none declared), "tools" AgentTools
    # (web search, outbox, surface_file's folder, recipients, faults), "audit" the activity
    # log, "secrets" SecretStore
    backends: dict[str, Any] = field(default_factory=dict)
    # the time the ctx layer hands out (epoch seconds): the bench's clock, ctx/clock.py
    now: Callable[[], float] = time.time

    def use_clock(self, now: Callable[[], float]) -> None:
        """Hand out `now`'s time from here on: the ctx layer's and the file store's, and each
        backend's (or its `outbox`'s) that reads one (`now` attribute: a transport's only clock)."""
        self.now = now
        self.sql_db.use_clock(now)  # SQL's 'now' too (its date functions)
        for backend in (self.files, *self.backends.values()):
            obj: Any
            for obj in (backend, getattr(backend, "outbox", None)):
                if "now" in getattr(obj, "__dict__", ()):  # ours (MemoryFileStore, MockOutbox…)
                    obj.now = now


def make_providers(
    gem_id: str,
    spec: str | dict[str, str],
    *,
    gem_root: Path,
    workspace: Path | None,
    state_dir: Path | None,
    platform: str | None = None,
) -> Providers:
    """Build providers from "mock", "real", or a mix like {"files": "real", "storage": "mock"}.

    `platform`: the real state folder is claimed for (gem_id, platform), E_STATE when another
    gem owns it (statedir.py); None leaves it unclaimed (tests of the stores alone).
    StateError when a database in it cannot be used."""
    from .._errors import UsageError

    given = {"files": spec, "storage": spec} if isinstance(spec, str) else dict(spec)
    if set(given) - {"files", "storage"} or set(given.values()) - {"mock", "real"}:
        raise UsageError(
            f"providers={spec!r}: use 'mock', 'real', or a dict with keys 'files' "
            "and 'storage' and values 'mock' or 'real'"
        )
    kinds = {"files": "mock", "storage": "mock", **given}
    # mock providers keep nothing there, but caches (the sandbox's DENO_DIR) use it when given
    # absolute: the sandbox takes it as a file URI, and a later chdir must not move it
    state: Path | None = Path(state_dir).absolute() if state_dir else None
    if "real" in kinds.values():
        state = state or default_state_dir(gem_id, gem_root)
        make_state_dir(state)
        if platform is not None:
            claim(state, gem_id, platform)  # before anything in it is read, written or pruned
    files: FileStore = MemoryFileStore()
    if kinds["files"] == "real" and state is not None:
        ws = Path(workspace) if workspace else state / "workspace"
        ws.mkdir(parents=True, exist_ok=True)
        files = FolderFileStore(workspace=ws, runs=state / "runs")
    db_dir = state if kinds["storage"] == "real" else None
    data_db = SqlDatabase.open(db_dir / "data.sqlite" if db_dir else None)
    try:
        sql_db = SqlDatabase.open(db_dir / "sql.sqlite" if db_dir else None)
    except BaseException:
        data_db.close()
        raise
    return Providers(
        kind=kinds,
        files=files,
        data_db=data_db,
        store=SqliteDataStore(data_db),
        sql_db=sql_db,
        state_dir=state,
    )


def make_mailbox(spec: Any, *, gem_root: Path) -> Mailbox:
    """The mailbox ctx.email reads, from `workbench.open(..., mailbox=spec)`.

    None: the mock, from the gem's fixtures/mailbox.json if present, else empty.
    A path: a `.json` file or a folder of `.eml` files -> mock (in memory; `bench.email.add`
    works); a Maildir folder (or a folder of Maildirs) or an mbox file -> read in place.
    {account id: Maildir folder or mbox file}: several real accounts. Any other object with
    the Mailbox methods (an IMAP mailbox, …) is used as given.
    """
    from .._errors import GemLoadError, UsageError
    from .maillocal import MaildirMailbox, MboxMailbox, is_maildir, local_mailbox
    from .mailmock import MockMailbox

    if spec is None:
        fixture = gem_root / "fixtures" / "mailbox.json"
        if not fixture.is_file():
            return MockMailbox()
        try:
            return MockMailbox.from_json(fixture)
        except ValueError as exc:  # also json.JSONDecodeError
            at = re.match(r"(/\S*): ", str(exc))  # from_json's "/2/date: …": the field, for check
            raise GemLoadError(
                f"fixtures/mailbox.json: {exc}", file=str(fixture), **({"pointer": at.group(1)} if at else {})
            ) from None
    if all(callable(getattr(spec, m, None)) for m in ("accounts", "envelopes_since", "message")):
        return spec
    if isinstance(spec, Mapping):
        missing = [str(p) for p in spec.values() if not Path(p).exists()]
        if missing:
            raise UsageError(f"mailbox: {missing[0]} does not exist")
        return local_mailbox(spec)
    if not isinstance(spec, (str, os.PathLike)):
        raise UsageError(
            f"mailbox={spec!r}: give a path (mailbox.json, a folder of .eml files, a "
            "Maildir, an mbox file), {account: path}, or a Mailbox object"
        )
    path = Path(spec)
    try:
        if path.is_file() and path.suffix.lower() == ".json":
            return MockMailbox.from_json(path)
        if path.is_file():
            with path.open("rb") as fp:
                head = fp.read(5)
            if head and head != b"From ":
                raise UsageError(
                    f"mailbox: {path} is not an mbox file (it does not start with a 'From ' line)"
                )
            return MboxMailbox(path)
        if path.is_dir():
            subs = [p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")]
            if is_maildir(path) or (subs and all(is_maildir(p) for p in subs)):
                return MaildirMailbox(path)
            return MockMailbox.from_eml(path)
    except ValueError as exc:
        raise UsageError(f"mailbox: {path}: {exc}", file=str(path)) from None
    raise UsageError(f"mailbox: {path} does not exist")


def make_websearch(spec: Any, *, gem_root: Path) -> Any:
    """The web_search built-in's provider: "mock" (the gem's fixtures/web_search.json, or none:
    every query is E_NOT_FOUND), an http(s) URL of a SearXNG-compatible endpoint, or an object
    with `search(query, count, *, timeout)`."""
    from .._errors import UsageError
    from .websearch import MockWebSearch, SearxWebSearch

    if spec == "mock":
        fixtures = gem_root / "fixtures" / "web_search.json"
        return MockWebSearch.from_file(fixtures) if fixtures.exists() else MockWebSearch()
    if isinstance(spec, str) and spec.startswith(("http://", "https://")):
        return SearxWebSearch(spec)
    if callable(getattr(spec, "search", None)):
        return spec
    raise UsageError(
        f"web_search={spec!r}: use 'mock', the URL of a SearXNG-compatible endpoint, or a WebSearch"
    )


def make_outbox(spec: Any) -> Any:
    """The send_email built-in's provider: "mock" (a MockOutbox) or an object with `send`."""
    from .._errors import UsageError
    from .outbox import MockOutbox

    if spec == "mock":
        return MockOutbox()
    if callable(getattr(spec, "send", None)):
        return spec
    raise UsageError(f"outbox={spec!r}: use 'mock' or an Outbox (e.g. providers.outbox.SmtpOutbox)")
