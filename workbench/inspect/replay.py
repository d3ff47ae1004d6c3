"""Email-cursor replay, the analysis: which messages a tool processed, and which it lost.

`workbench.bench.email_replay.Replayer` calls a tool again and again (as a scheduler would) and fills a
`Ledger`: the events (calls, rewinds, arrivals), the mail, and per message the calls that listed
and read it. This module turns a ledger into the table `bench.email.replay_run` returns, with
warnings in plain sentences; it calls nothing and changes nothing.

How a message counts as processed: the tool read it with `ctx.email.getMessage`. A tool that
never calls getMessage (it works on envelopes only) processes what `listSince` returned to it.
Both are in the call's trace, which keeps each ctx call's arguments and result
(`replay_cursor.trace_reads`, `trace_listed`).

A message is *lost* when it was never processed and the cursor stored now is past its date:
`listSince` returns only mail strictly newer than `since`, so no later call can return it. (A
plain number cursor is past mail of exactly its date; a JSON cursor `{date, ids: [...]}`, which
re-reads its date, only past older mail. After a rewind to before its date a message is not
lost: the next calls can still read it.) `reason` says why: "boundary" — the page ended inside
a group of messages sharing one date and the cursor (the latest date seen) jumped past the rest
of the group; "late" — it arrived dated at or before the cursor already stored; "skipped" —
otherwise (e.g. the tool stored a cursor beyond what it read).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..ctx.email import ALLOW
from ..ctx.email import SPEC as EMAIL
from ..ctx.surface import spell_action
from .replay_cursor import Key, behind, cursor_date, when

if TYPE_CHECKING:
    from ..ctx.email import Grant
    from ..ctx.stores import Envelope

MESSAGE_COLUMNS = [
    "accountId",
    "id",
    "subject",
    "date",
    "date_ms",
    "arrived",
    "listed",
    "processed",
    "status",
    "lost",
    "reason",
    "steps",
    "first_step",
]
STEP_COLUMNS = [
    "step",
    "kind",
    "call_id",
    "ok",
    "error",
    "cursor_before",
    "cursor_after",
    "listed",
    "processed",
    "new",
    "arrived",
    "note",
]
MAX_NAMED = 10  # messages named in one warning sentence


# -- the ledger ----------------------------------------------------------------------------
def _ids(keys: list[Key]) -> list[str]:
    return [f"{a}/{i}" for a, i in keys]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


@dataclass
class Step:
    """One event of a replay: a call of the tool, a rewind, or mail arriving."""

    step: int | None
    kind: str  # "call" (made by the replay), "outside" (a trigger or by hand), "rewind", "arrive"
    call_id: str | None = None
    ok: bool | None = None
    error: str | None = None
    cursor_before: str | None = None
    cursor_after: str | None = None
    listed: list[Key] = field(default_factory=list)
    processed: list[Key] = field(default_factory=list)
    new: list[Key] = field(default_factory=list)
    arrived: list[Key] = field(default_factory=list)
    note: str = ""

    def row(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "kind": self.kind,
            "call_id": self.call_id,
            "ok": self.ok,
            "error": self.error,
            "cursor_before": self.cursor_before,
            "cursor_after": self.cursor_after,
            "listed": _ids(self.listed),
            "processed": _ids(self.processed),
            "new": _ids(self.new),
            "arrived": _ids(self.arrived),
            "note": self.note,
        }


@dataclass
class Ledger:
    """What a replay saw: its events, the mail with the call it arrived before, and per
    message the calls that listed it and that read it."""

    start_cursor: str | None = None
    calls: int = 0  # calls of the tool seen (replay + outside)
    events: list[Step] = field(default_factory=list)
    arrival: dict[Key, int] = field(default_factory=dict)  # -> the call it came before (1 = start)
    envelopes: dict[Key, Envelope] = field(default_factory=dict)
    reads: dict[Key, list[int]] = field(default_factory=dict)
    listings: dict[Key, list[int]] = field(default_factory=dict)
    unread: int = 0  # getMessage calls whose message the trace could not tell
    unlisted: int = 0  # listSince calls whose page the trace did not keep

    def note_mail(self, envelopes: Iterable[Envelope]) -> None:
        """The mailbox now: messages not seen before arrived before the next call."""
        for e in envelopes:
            key = (e.accountId, e.id)
            if key not in self.envelopes:
                self.envelopes[key] = e
                self.arrival[key] = self.calls + 1

    def record(self, ev: Step, reads: list[Key], listed: list[Key]) -> None:
        """Add an event with what it read and listed; `ev.new` is what no event had before."""
        seen = set(self.reads) | set(self.listings)
        ev.processed, ev.listed = reads, listed
        ev.new = [k for k in dict.fromkeys([*reads, *listed]) if k not in seen]
        for k in reads:
            self.reads.setdefault(k, []).append(ev.step or 0)
        for k in listed:
            self.listings.setdefault(k, []).append(ev.step or 0)
        self.events.append(ev)

    def cursors(self) -> list[tuple[int, str | None]]:
        """(step, cursor stored after it) for every call so far, plus (0, cursor at start)."""
        out: list[tuple[int, str | None]] = [(0, self.start_cursor)]
        out += [(e.step or 0, e.cursor_after) for e in self.events if e.kind in ("call", "outside")]
        return out

    def counts(self) -> dict[Key, list[int]]:
        """Per message, the calls that processed it: reads when the tool reads mail at all,
        else what listSince returned to it."""
        return self.reads if self.reads or self.unread else self.listings

    def lost(self, key: Key, env: Envelope, counts: dict[Key, list[int]], cursor: str | None) -> str | None:
        """Why a message is lost (never processed, and the stored cursor is past its date), or
        None. After a rewind before its date it is not lost: the next calls can still read it."""
        if counts.get(key) or not behind(cursor, env.date):
            return None
        arrived = self.arrival.get(key, 1)
        calls = [e for e in self.events if e.kind == "call" and (e.step or 0) >= arrived]
        at_arrival = calls[0].cursor_before if calls else cursor
        if behind(at_arrival, env.date):
            return "late"
        passed = next(
            (
                e
                for e in reversed(calls)
                if behind(e.cursor_after, env.date) and not behind(e.cursor_before, env.date)
            ),
            None,
        )
        if passed is None:
            return "skipped"
        siblings = [
            k
            for k, e in self.envelopes.items()
            if e.date == env.date and k != key and passed.step in counts.get(k, ())
        ]
        if cursor_date(passed.cursor_after) == env.date and siblings:
            return "boundary"
        return "skipped"

    def frame(self, cursor: str | None, grant: Grant) -> pd.DataFrame:
        """One row per message of the accounts `grant` allows, by (date, accountId, id), given
        the cursor stored now; warnings in `df.attrs["warnings"]`, the events in
        `df.attrs["steps"]` (records of `steps_frame()`), the cursor in `df.attrs["cursor"]`."""
        counts = self.counts()
        rows = []
        keys = sorted(
            (k for k in self.envelopes if grant.allows(k[0])), key=lambda k: (self.envelopes[k].date, k)
        )
        for k in keys:
            e = self.envelopes[k]
            done = counts.get(k, [])
            reason = self.lost(k, e, counts, cursor)
            rows.append(
                {
                    "accountId": k[0],
                    "id": k[1],
                    "subject": e.subject,
                    "date": e.date,
                    "date_ms": e.date,
                    "arrived": self.arrival.get(k, 1) - 1,
                    "listed": len(self.listings.get(k, ())),
                    "processed": len(done),
                    "status": "never" if not done else "once" if len(done) == 1 else "twice+",
                    "lost": reason is not None,
                    "reason": reason,
                    "steps": list(done),
                    "first_step": done[0] if done else None,
                }
            )
        df = pd.DataFrame(rows, columns=MESSAGE_COLUMNS)
        df["date_ms"] = df["date_ms"].astype("int64")
        df["date"] = pd.to_datetime(df["date_ms"], unit="ms").astype("datetime64[ns]")
        df["first_step"] = df["first_step"].astype("Int64")
        df["lost"] = df["lost"].astype(bool)
        df.attrs["warnings"] = self.warnings(df, grant)
        df.attrs["steps"] = [e.row() for e in self.events]
        df.attrs["cursor"] = cursor
        return df

    def steps_frame(self) -> pd.DataFrame:
        """One row per event: calls (made by the replay, or outside it), rewinds, arrivals."""
        df = pd.DataFrame([e.row() for e in self.events], columns=STEP_COLUMNS)
        df["step"] = df["step"].astype("Int64")
        return df

    def warnings(self, df: pd.DataFrame, grant: Grant) -> list[str]:
        """Plain sentences naming the lost and twice-processed messages of `frame()`, and why."""
        out: list[str] = []
        if not grant.all and not grant.ids:
            out.append(
                "No account is allowed, so the tool can read no mail: allow some with "
                f"{spell_action(ALLOW, 'all', among=(EMAIL,))} or {spell_action(ALLOW, among=(EMAIL,))} (E2)."
            )
        if self.unread:
            out.append(
                f"{_plural(self.unread, 'getMessage call')} made outside the replay could "
                "not be matched to a message (the trace did not keep the arguments: not "
                "JSON, or too big); counts may be low."
            )
        if self.unlisted:
            out.append(
                f"{_plural(self.unlisted, 'listSince call')} returned a page too big for "
                "the trace to keep; what it listed is not counted."
            )

        def names(sub: pd.DataFrame) -> str:
            shown = [
                f"“{r.subject}” ({r.accountId}/{r.id}, {when(r.date_ms)})"
                for r in sub.head(MAX_NAMED).itertuples()
            ]
            more = len(sub) - MAX_NAMED
            return ", ".join(shown) + (f" and {more:,} more" if more > 0 else "")

        def were(n: int) -> str:
            return f"{n} message{'s were' if n != 1 else ' was'}"

        lost = df[df["lost"]]
        boundary = lost[lost["reason"] == "boundary"]
        if len(boundary):
            out.append(
                f"{were(len(boundary))} never processed: {names(boundary)} — listSince returns "
                "messages strictly newer than `since`, and the cursor (latest date seen) "
                "skipped messages sharing that date across a page boundary. Fix: keep "
                "(date, ids already processed at that date) in the cursor and ask for "
                "since = date − 1, skipping those ids; or re-read the boundary date the same "
                "way and dedupe by (accountId, id)."
            )
        late = lost[lost["reason"] == "late"]
        if len(late):
            out.append(
                f"{were(len(late))} never processed: {names(late)} — they arrived dated at or "
                "before the cursor already stored, so no listSince(since = cursor) can return "
                "them. A date cursor cannot see late-dated mail; handle email.onNewMessage "
                "events for it, or re-read a window before the cursor and dedupe by id."
            )
        other = lost[lost["reason"] == "skipped"]
        if len(other):
            out.append(
                f"{were(len(other))} never processed although a stored cursor passed their "
                f"date: {names(other)} — the tool stored a cursor beyond messages it did not "
                "read (store listSince's `cursor`, or the date of the last message processed)."
            )
        twice = df[df["processed"] > 1]
        if len(twice):
            rewound = [e for e in self.events if e.kind == "rewind"]
            why = (
                "the cursor was rewound (" + ", ".join(e.note for e in rewound) + ")"
                if rewound
                else "later pages returned them again (since at or before their date)"
            )
            listed = ", ".join(
                f"“{r.subject}” ({r.accountId}/{r.id}) at calls {', '.join(map(str, r.steps))}"
                for r in twice.head(MAX_NAMED).itertuples()
            )
            if len(twice) > MAX_NAMED:
                listed += f" and {len(twice) - MAX_NAMED:,} more"
            out.append(
                f"{were(len(twice))} processed more than once: {listed} — {why}. A "
                "tool that must not repeat work keeps the ids it processed, or makes "
                "processing idempotent."
            )
        return out
