"""Email-cursor replay, the driver: run a tool call by call and account for every message.

    df = bench.email.replay_run("digest", arrivals={2: [{"subject": "x", "date": d}] * 3})
    assert (df.status == "once").all(), df.attrs["warnings"]

A `Replayer` calls the tool again and again (as a scheduler would), lets mail arrive and the
stored cursor be rewound between calls, and notes in a `workbench.inspect.replay.Ledger` what
each call listed and read; the table, its lost/twice-processed verdicts and the warnings are
the ledger's (see that module). The widget (`bench.email.replay`) and `replay_run` are both
built on it.

What a call listed is the listSince page its trace kept. What it read: during the replay's own
calls the mailbox provider is wrapped by a recorder (ctx.email's `MailAccess.recording`) noting
every message the ctx layer fetched for getMessage (exact, whatever the tool does with its arguments afterwards); for calls of the
tool made outside the replay (an `email.onNewMessage` trigger, or by hand) the getMessage
arguments its trace kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._errors import UsageError, WorkbenchError
from ..ctx.email import access_of
from ..inspect.replay import Ledger, Step
from ..inspect.replay_cursor import Key, same_cursor, trace_listed, trace_reads

if TYPE_CHECKING:
    import pandas as pd

    from .bench import Bench
    from .result import CallResult

MAX_STEPS = 10_000  # replay_run's safety stop when the tool never settles


# -- the stored cursor: the gem's kv, read and written outside any call ----------------------
def stored_cursor(bench: Bench, key: str) -> str | None:
    """The kv entry `key` of the gem's storage (the tool's stored cursor), or None."""
    bench.check_open()
    return bench.providers.store.kv_get(key)


def set_kv(bench: Bench, key: str, value: str | None) -> None:
    """Write (None: delete) one kv entry of the gem's storage directly, outside any call."""
    if not isinstance(key, str) or (value is not None and not isinstance(value, str)):
        raise UsageError(f"kv keys and values are strings (D2), got {key!r} = {value!r}")
    if value is None:
        bench.providers.store.kv_delete(key)
    else:
        bench.providers.store.kv_set(key, value)


class Replayer:
    """Calls `tool` step by step on `bench` and accounts for every message of the allowed
    accounts: processed once, more than once, never, lost (see `workbench.inspect.replay`)."""

    def __init__(self, bench: Bench, tool: str, *, cursor_key: str = "cursor", input: Any = None) -> None:
        if tool not in bench.manifest.tools:
            raise WorkbenchError(
                "E_UNKNOWN_TOOL",
                bench.manifest.no_tool(tool),
                tool=tool,
            )
        if not isinstance(cursor_key, str):
            raise UsageError(f"cursor_key={cursor_key!r}: give the kv key the tool keeps its cursor in")
        self.bench, self.tool, self.cursor_key = bench, tool, cursor_key
        self.input = {} if input is None else input
        self.ledger = Ledger(start_cursor=self.cursor())
        self._seen = bench.results.appended
        self._mail_count: int | None = None
        self._sync_mail()

    # -- state -------------------------------------------------------------------------
    def cursor(self) -> str | None:
        """The cursor the tool stored (kv `cursor_key`), or None."""
        return stored_cursor(self.bench, self.cursor_key)

    def _sync_mail(self) -> None:
        """Note mail that appeared since the last look (added outside the replay, too)."""
        mailbox = self.bench.email.mailbox
        size = getattr(mailbox, "__len__", None)  # the mock knows its size: skip a full scan
        count = size() if callable(size) else None
        if count is not None and count == self._mail_count:
            return
        self.ledger.note_mail(self.bench.email.envelopes())
        self._mail_count = count

    def _record(
        self,
        res: CallResult,
        kind: str,
        reads: list[Key] | None,
        *,
        before: str | None = None,
        after: str | None = None,
        note: str = "",
    ) -> None:
        """Account for one call of the tool: `reads` as recorded (None: from its trace)."""
        ledger = self.ledger
        if reads is None:
            reads, unknown = trace_reads(res)
            ledger.unread += unknown
        listed, unknown = trace_listed(res)
        ledger.unlisted += unknown
        ledger.calls += 1
        ledger.record(
            Step(
                ledger.calls,
                kind,
                res.call_id,
                res.ok,
                res.error.code if res.error else None,
                before,
                after,
                note=note,
            ),
            reads,
            listed,
        )

    def _absorb_outside(self) -> None:
        """Calls of the tool made since the last look but not by the replay (a trigger, by hand)."""
        self.bench.check_open()
        for res in self.bench.results.since(self._seen):
            if res.tool == self.tool:
                self._record(
                    res,
                    "outside",
                    None,
                    note="called outside the replay (a trigger or by hand); its cursor is not known",
                )
        self._seen = self.bench.results.appended

    # -- actions -----------------------------------------------------------------------
    def step(self) -> CallResult:
        """One call of the tool, as the platform's scheduler would make it."""
        self._absorb_outside()
        self._sync_mail()
        before = self.cursor()
        access = access_of(self.bench.providers)
        assert access is not None  # (an email replay is made for ctx.email's benches only)
        with access.recording() as reads:
            res = self.bench.call(self.tool, self.input)
        self._seen = self.bench.results.appended
        self._record(res, "call", reads, before=before, after=self.cursor())
        return res

    def arrive(
        self, messages: dict[str, Any] | list[dict[str, Any]], *, events: bool = False
    ) -> list[dict[str, Any]]:
        """New mail before the next call: `bench.email.add` (events=True: `arrive`, which also
        runs the manifest's email.onNewMessage triggers). Returns the envelopes added."""
        self._absorb_outside()
        self._sync_mail()
        if events:
            before = self.bench.email.envelopes()
            self.bench.email.arrive(messages)
            known = {(e.accountId, e.id) for e in before}
            added = [e.to_json() for e in self.bench.email.envelopes() if (e.accountId, e.id) not in known]
        else:
            added = self.bench.email.add(messages)
        keys = [(m["accountId"], m["id"]) for m in added]
        self._sync_mail()
        n = len(keys)
        self.ledger.events.append(
            Step(
                None,
                "arrive",
                arrived=keys,
                cursor_before=self.cursor(),
                cursor_after=self.cursor(),
                note=f"{n} message{'s' if n != 1 else ''} arrived before call {self.ledger.calls + 1}",
            )
        )
        self._absorb_outside()  # the triggers' calls, when the tool is one of them
        return added

    def rewind(self, value: str | int | float | None) -> None:
        """Set the stored cursor (kv `cursor_key`) as if the tool had stored `value`; None
        deletes it (start over). Not a tool call: the bench writes its storage directly."""
        self._absorb_outside()
        before = self.cursor()
        if isinstance(value, bool) or not isinstance(value, (str, int, float, type(None))):
            raise UsageError(
                f"rewind({value!r}): give a cursor (a string or a date in ms) or None to start over"
            )
        if value is not None and not isinstance(value, str):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            value = str(value)
        set_kv(self.bench, self.cursor_key, value)
        shown = value if value is not None else "none"
        self.ledger.events.append(
            Step(
                None,
                "rewind",
                cursor_before=before,
                cursor_after=value,
                note=f"cursor set to {shown} before call {self.ledger.calls + 1}",
            )
        )

    def run(
        self,
        steps: int | None = None,
        *,
        arrivals: dict[int, Any] | None = None,
        rewinds: dict[int, Any] | None = None,
        events: bool = False,
    ) -> pd.DataFrame:
        """`steps` calls (default: until a call processes nothing new, once no arrival or
        rewind is scheduled any more); `arrivals` {n: messages} and `rewinds` {n: cursor} are
        applied before the n-th call of this run. Returns `frame()`."""
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 0):
            raise UsageError(f"steps={steps!r}: give a number of calls (>= 0) or None")
        arrivals, rewinds = dict(arrivals or {}), dict(rewinds or {})
        for name, plan in (("arrivals", arrivals), ("rewinds", rewinds)):
            bad = [k for k in plan if isinstance(k, bool) or not isinstance(k, int) or k < 1]
            if bad:
                raise UsageError(f"{name}: keys are call numbers from 1, got {bad[0]!r}")
        n = 0
        while steps is None or n < steps:
            n += 1
            if n in rewinds:
                self.rewind(rewinds[n])
            if n in arrivals:
                self.arrive(arrivals[n], events=events)
            res = self.step()
            if steps is not None:
                continue
            last = self.ledger.events[-1]
            if n >= MAX_STEPS:
                last.note = f"stopped after {MAX_STEPS:,} calls: the tool never settled"
                break
            settled = not last.new and (
                same_cursor(last.cursor_before, last.cursor_after) or not (last.processed or last.listed)
            )
            pending = any(k > n for k in (*arrivals, *rewinds))
            if (settled or not res.ok) and not pending:
                break
        return self.frame()

    # -- results -----------------------------------------------------------------------
    def frame(self) -> pd.DataFrame:
        """One row per message of the allowed accounts (see `Ledger.frame`), as of now."""
        self._absorb_outside()
        self._sync_mail()
        return self.ledger.frame(self.cursor(), self.bench.email.grant)

    def steps_frame(self) -> pd.DataFrame:
        """One row per event: calls (made by the replay, or outside it), rewinds, arrivals."""
        self._absorb_outside()
        return self.ledger.steps_frame()


def replay_run(
    bench: Bench,
    tool: str,
    *,
    steps: int | None = None,
    arrivals: dict[int, Any] | None = None,
    rewinds: dict[int, Any] | None = None,
    cursor_key: str = "cursor",
    events: bool = False,
    input: Any = None,
) -> pd.DataFrame:
    """Call `tool` repeatedly and account for every message of the allowed accounts.

    steps: how many calls (default: until a call processes nothing new and no arrival or
        rewind is still scheduled).
    arrivals: {n: message or [messages]} added with `bench.email.add` before the n-th call
        (events=True: with `bench.email.arrive`, which also fires email.onNewMessage triggers).
        Give several the same `date` to test equal timestamps.
    rewinds: {n: cursor value or None} stored in kv `cursor_key` before the n-th call.
    input: the tool's input on every call (default {}).

    Returns one row per message, ordered by (date, accountId, id): accountId, id, subject,
    date (datetime), date_ms, arrived (calls made before it arrived), listed (times listSince
    returned it), processed (times the tool read it), status ("once" / "twice+" / "never"),
    lost, reason ("boundary" / "late" / "skipped"), steps (the calls that processed it),
    first_step. `df.attrs["warnings"]`: sentences naming lost and twice-processed messages;
    `df.attrs["steps"]`: one record per call, rewind and arrival; `df.attrs["cursor"]`: the
    stored cursor at the end.
    """
    return Replayer(bench, tool, cursor_key=cursor_key, input=input).run(
        steps, arrivals=arrivals, rewinds=rewinds, events=events
    )
