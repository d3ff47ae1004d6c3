"""The Bench's views of state: DataFrames of files, storage, mail, HTTP, calls and the agent's
activity, file history, snapshots and diffs (the Bench in bench/bench.py inherits them).

A view or action a capability lists in its `SPEC.views` is answered (and listed by `dir()`,
hence completed) only on a bench whose platform has that capability; on another it is an
AttributeError naming the platform that has it (`gated`, `Views.__dir__`). The generic ones
(`BENCH.views`, `call`, `form`, …) are on every bench. Only those names go through a
descriptor: every other attribute, the call path's included, is a plain lookup.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._errors import UsageError
from ..ctx import SPECS, specs, specs_of
from ..ctx import history as _history
from ..ctx.spec import BENCH, foreign_view, views_for

if TYPE_CHECKING:
    import pandas as pd

    from ..ctx.kept import Ring
    from ..ctx.stores import Providers
    from ..gem import Manifest
    from ..inspect.snapshot import Snapshot
    from ..platforms import Limits, Profile
    from .mail import BenchEmail
    from .result import CallResult


#: the views some platform lacks: a built-in capability's that the Bench implements (BENCH's
#: are every bench's); a plugin capability's views are its `View.fn`s (`Views.__getattr__`)
GATED = frozenset(v.name for s in SPECS.values() for v in s.views) - {v.name for v in BENCH.views}


def platform_views(profile: Profile) -> dict[str, Callable[..., Any] | None]:
    """{view: its `fn` (None: a method of the Bench)} of the capability views a bench of
    `profile` lists and answers."""
    return {name: v.fn for name, (v, s) in views_for(profile, specs_of(profile)).items() if s is not BENCH}


def platform_tables(profile: Profile) -> dict[str, str]:
    """{view: its doc} of the DataFrame views a bench of `profile` has, every bench's first
    (what `%state NAME` shows and completes)."""
    return {n: v.doc for n, (v, _) in views_for(profile, specs_of(profile)).items() if v.table}


def _foreign(bench: Any, name: str) -> AttributeError:
    from ..platforms import profiles

    return foreign_view(name, bench.profile, specs(), profiles())


class gated:  # noqa: N801 (used as a decorator, like property)
    """A view or action only benches of a platform that has its capability answer."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn, self.name, self.__doc__ = fn, fn.__name__, fn.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, bench: Any, owner: type | None = None) -> Any:
        if bench is None:
            return self
        if self.name in bench.view_fns:
            return self.fn.__get__(bench, owner)
        raise _foreign(bench, self.name)


class _Email:
    """`bench.email` (ctx.email's benches only): the object itself lives in `bench.email_box`."""

    def __get__(self, bench: Any, owner: type | None = None) -> Any:
        if bench is None:
            return self
        if "email" in bench.view_fns:
            return bench.email_box
        raise _foreign(bench, "email")

    def __set__(self, bench: Any, value: Any) -> None:
        raise AttributeError("bench.email is the bench's own; use its methods (allow, add, …)")


class PluginView:
    """A plugin capability's view (`View.fn(bench, ...)`), put on the class as the plugin is
    seen: answered on a bench whose platform has it, else an AttributeError naming the platform
    that has it. (A descriptor, not `__getattr__`: a class with one makes every attribute
    lookup slower, the call path's ~40 included: 3% of a Python call's instructions.)"""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, bench: Any, owner: type | None = None) -> Any:
        if bench is None:
            return self
        fn = bench.view_fns.get(self.name)
        if fn is not None:
            return functools.partial(fn, bench)
        raise _foreign(bench, self.name)


def add_plugin_views(cls: type) -> None:
    """Put each plugin capability's view the registry knows now on `cls` (once each; a name the
    class has already stays its own, as `__getattr__` left it)."""
    for spec in specs(loaded_only=True):  # (a built-in gem reads no plugins)
        for view in spec.views:
            if view.fn is not None and not view.name.startswith("_") and not hasattr(cls, view.name):
                setattr(cls, view.name, PluginView(view.name))


# what the bench's own machinery and its features use: not offered to completion
_INNER = frozenset({"core", "view_fns", "email_box", "check_open"})


class Views:
    """What a bench shows; everything here reads state and changes nothing but history."""

    manifest: Manifest
    providers: Providers
    results: Ring[CallResult]
    limits: Limits
    profile: Profile
    email_box: BenchEmail  # `bench.email`'s object (shown only on benches whose platform has it)
    view_fns: dict[str, Callable[..., Any] | None]  # its platform's capability views (platform_views)
    closed: bool

    email = _Email()

    def __dir__(self) -> list[str]:
        """Its platform's views only, so completion offers no other platform's."""
        names = {
            n
            for n in super().__dir__()
            if n not in _INNER
            and (
                n in self.view_fns
                or (n not in GATED and not isinstance(getattr(type(self), n, None), PluginView))
            )
        }
        return sorted(names | set(self.view_fns))

    def check_open(self) -> None:
        """UsageError when the bench is closed (what every view and call checks first)."""
        if self.closed:
            raise UsageError(
                f"the bench of {self.manifest.id} is closed; open it again with workbench.open(...)"
            )

    # -- file history -----------------------------------------------------------------------
    @gated
    def history(self, path: str | None = None) -> pd.DataFrame:
        """Saved versions of conversation-folder files (overwrites, deletes, restores)."""
        import pandas as pd

        self.check_open()
        df = pd.DataFrame(_history.versions(self.providers.store, path), columns=_history.COLUMNS)
        df["saved_at"] = pd.to_datetime(df["saved_at"], unit="ms")
        df["kept"] = df["kept"].astype(bool)
        return df

    @gated
    def restore_file(self, path: str, version: int | None = None) -> int:
        """Roll one conversation file back to a saved version (default: the latest)."""
        self.check_open()
        return _history.restore(
            self.providers.store, self.providers.files, path, version, limit=self.limits.history_bytes
        )

    # -- inspection -------------------------------------------------------------------------
    def tools(self) -> pd.DataFrame:
        from ..inspect import frames

        return frames.tools(self.manifest)

    @gated
    def files(self) -> pd.DataFrame:
        """Files of the conversation folder and every run folder: area, path, type, size, modified."""
        from ..inspect import frames

        return frames.files(self.providers.files)

    @gated
    def read(
        self, path: str, *, call: CallResult | str | None = None, encoding: str | None = "utf-8"
    ) -> str | bytes:
        """A file as a tool wrote it: `workspace:<path>` in the conversation folder, else a path
        of a run folder — `call`'s (a CallResult or its id), by default the latest call's that
        has it. `encoding=None`: the bytes. Links are followed inside their folder only; a
        file over Limits.file_bytes is refused, as ctx.files.read would."""
        from .._errors import WorkbenchError
        from ..ctx.paths import split

        self.check_open()
        try:
            ws, segs = split(path)
        except WorkbenchError as exc:
            raise UsageError(f"bench.read({path!r}): {exc.message}") from None
        rel, store = "/".join(segs), self.providers.files
        if ws:
            roots, where = ["workspace"], "the conversation folder"
        elif call is not None:
            cid = call if isinstance(call, str) else call.call_id
            roots, where = [f"run/{cid}"], f"the run folder of call {cid}"
        else:  # newest first: this bench's calls, then run folders of earlier benches
            mine = {f"run/{r.call_id}": None for r in reversed(self.results)}  # ordered, a set
            earlier = (r for r in store.roots() if r.startswith("run/") and r not in mine)
            roots = [*mine, *sorted(earlier, reverse=True)]
            where = "any call's run folder"
        for root in roots:
            real = store.resolve(root, rel)
            entry = store.entry(root, real) if real is not None else None
            if real is None or entry is None or entry.type != "file":
                continue
            from ..ctx.written import read_entry

            what = f"bench.read({path!r})"
            return read_entry(
                store, root, real, entry, limit=self.limits.file_bytes, encoding=encoding, what=what
            )
        hint = "" if ws else f"; a conversation-folder file is 'workspace:{rel}'"
        raise UsageError(f"bench.read({path!r}): no file {rel!r} in {where} (bench.files() lists them){hint}")

    @gated
    def data(self, collection: str) -> pd.DataFrame:
        """A collection's documents: `id` then one column per top-level field."""
        from ..inspect import frames

        if collection not in self.manifest.collections:
            raise UsageError(
                f"collection {collection!r} is not declared in manifest.json "
                f"(declared: {', '.join(self.manifest.collections) or 'none'})"
            )
        self.check_open()
        return frames.collection(self.providers.store, collection)

    @gated
    def outbox(self) -> pd.DataFrame:
        """What agent tools sent with send_email (the mock outbox): id, time, from, to, cc,
        subject, body_text, body_html."""
        import pandas as pd

        cols = ["id", "time", "from", "to", "cc", "subject", "body_text", "body_html"]
        from ..ctx.tools_state import outbox_rows
        from ..inspect.outbox import OutboxFrame  # shown with the bodies' line breaks

        rows = outbox_rows(self.providers)

        return OutboxFrame(pd.DataFrame(rows, columns=cols))

    @gated
    def audit(self) -> pd.DataFrame:
        """The activity log (agent tools): one row per ctx.audit(event, data) and per ctx.tools
        call, scoped to its call: call_id, toolCallId, seq, source, event, data, time (UTC).
        `source` is who wrote the row, which no tool can set: "tool" (its ctx.audit),
        "platform" (a ctx.tools call) or "workbench" (a note saying what was dropped: the
        first row when the bench dropped its oldest rows, Limits.audit_bench_chars); it is the
        frame's index (`by`) as well, so `audit.loc["platform"]` is the calls made."""
        import pandas as pd

        from ..ctx.audit import COLUMNS, log_of

        log = log_of(self.providers)
        assert log is not None  # (gated: a bench whose platform has ctx.audit)
        rows = list(log)
        note = log.note("row")
        if note is not None:
            first = {"source": "workbench", "event": "workbench:rows dropped", "time": rows[0]["time"]}
            data = {"rows": log.dropped, "chars": log.dropped_chars, "why": note}
            rows.insert(0, {**first, "data": data})
        df = pd.DataFrame(rows, columns=COLUMNS)
        df["time"] = pd.to_datetime(df["time"], unit="s", utc=True)
        # who wrote each row is the index too: any selection of columns, or one column as a
        # Series, still tells a tool's ctx.audit('tool:send_email') from the platform's row
        df.index = pd.Index(df["source"].tolist(), name="by")
        return df

    @gated
    def kv(self) -> pd.DataFrame:
        from ..inspect import frames

        self.check_open()
        return frames.kv(self.providers.store)

    @gated
    def account_storage(self) -> pd.DataFrame:
        """Ekanos integrations: the account's records (ctx.storage.account): key, data, updatedAt."""
        from ..inspect import frames

        self.check_open()
        return frames.account_storage(self.providers.store)

    @gated
    def sql(self, query: str, params: Any = ()) -> pd.DataFrame:
        """Run a query on the gem's private database (ctx.storage.sql)."""
        from ..inspect import frames

        return frames.query(self.providers.sql_db, query, params)

    @gated
    def mailbox(self) -> pd.DataFrame:
        """Every message's envelope, all accounts (allowed or not), ordered by (date, accountId,
        id): accountId, id, subject, fromAddr, toAddrs, date (datetime, UTC), date_ms."""
        from ..inspect import frames

        return frames.mailbox(self.email_box.envelopes())

    @gated
    def http(self) -> pd.DataFrame:
        """Every ctx.http.fetch request (N10): call_id, tool, method, url, status, duration_ms,
        connection, credential ("injected", "denied", "dropped"), reason, redirects, error.
        Credentials never appear here. The bench keeps the newest Limits.http_log_chars of rows
        (SEC5); when older ones went, the first row says how many (error "dropped", the note in
        reason)."""
        import pandas as pd

        cols = [
            "call_id",
            "tool",
            "method",
            "url",
            "status",
            "duration_ms",
            "connection",
            "credential",
            "reason",
            "redirects",
            "error",
        ]
        from ..ctx.http import state_of

        state = state_of(self.providers)
        rows = list(state.log) if state else []
        note = state.log.note("request") if state else None
        if note is not None:  # SEC5: the log keeps the newest Limits.http_log_chars
            rows.insert(0, {"error": "dropped", "reason": note})
        return pd.DataFrame(rows, columns=cols)

    def calls(self) -> pd.DataFrame:
        from ..inspect import frames

        return frames.calls(self.results, dropped=self.results.note("call"))

    def snapshot(self) -> Snapshot:
        """Capture files and storage, to diff against or restore later."""
        from ..inspect.snapshot import take

        self.check_open()
        return take(self)

    def diff(self, snap: Snapshot) -> pd.DataFrame:
        """What changed since `snap`: one row per file, document, key or SQL row."""
        from ..inspect.snapshot import diff

        self.check_open()
        return diff(self, snap)

    def restore(self, snap: Snapshot) -> None:
        """Put files and storage back exactly as they were at `snap`."""
        from ..inspect.snapshot import restore

        self.check_open()
        restore(self, snap)
