"""bench.email: the user's side of ctx.email — allowed accounts, mock mail, new-mail events."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .._errors import UsageError
from ..ctx import Grant
from ..ctx.email import access_of, mail_clock

if TYPE_CHECKING:
    import pandas as pd

    from ..ctx.email import Envelope, MailAccess, Mailbox, MockClock
    from .bench import Bench
    from .result import CallResult

NEW_MESSAGE = "email.onNewMessage"


class BenchEmail:
    """`bench.email`: what the user decides and what the world does, outside any tool call.

    allow("all" | [ids]) picks the accounts the gem may read (E2; none at open);
    add(msgs) puts mail into the mock mailbox; arrive(msgs) adds it and fires the manifest's
    `email.onNewMessage` triggers (E6); clock dates mail added without a date. With `at=`,
    add and arrive schedule the mail for that time of the bench clock (`scheduled()` lists it).
    """

    def __init__(self, bench: Bench) -> None:
        self._bench = bench
        access = access_of(bench.providers)  # ctx.email's benches only
        self._clock = access.clock if access is not None else mail_clock()  # (Notochord's)
        self._firing = False
        if access is not None:  # scheduled mail is delivered as soon as the bench clock moves
            bench.clock.listeners.append(self.deliver)

    def _access(self) -> MailAccess:
        """ctx.email's backend (KeyError on a bench without ctx.email)."""
        access = access_of(self._bench.providers)
        if access is None:
            raise KeyError("ctx.email")
        return access

    @property
    def grant(self) -> Grant:
        """The accounts the user allowed (ctx.email's backend keeps it, for every call)."""
        return self._access().grant

    def __repr__(self) -> str:
        return f"<bench.email {self.mailbox!r}, allowed={self.allowed!r}>"

    @property
    def mailbox(self) -> Mailbox:
        """The provider ctx.email reads (mock, Maildir, mbox, IMAP, …)."""
        mailbox: Any = self._access().mailbox
        return mailbox  # (a replayed call's recorder while one runs)

    @property
    def accounts(self) -> list[str]:
        """Every account of the mailbox, allowed or not."""
        return list(self.mailbox.accounts())

    def allow(self, accounts: str | Iterable[str]) -> None:
        """Choose the accounts the gem may read, as the user does on the gem's page (E2).

        "all": every account, including ones added later; a list of ids: exactly those (it
        replaces the previous choice; `allow([])` allows none). A single id may be given as a
        string (an account named "all" must then be given in a list).
        """
        self.grant.set(accounts)

    @property
    def allowed(self) -> str | list[str]:
        """ "all" or the list of allowed account ids (empty at open)."""
        return self.grant.allowed

    @property
    def clock(self) -> MockClock:
        """The mock clock: `now()`, `advance(ms=1000)`, `set(ms)` (ms since the epoch)."""
        return self._clock

    def add(self, messages: dict[str, Any] | list[dict[str, Any]], *, at: Any = None) -> list[dict[str, Any]]:
        """Put mail into the mock mailbox; returns the envelopes added.

        Each message is shaped as getMessage returns it ({accountId, id, subject, fromAddr,
        toAddrs, date, body, attachments}); missing `id` → a new one; missing `accountId` →
        the only account, if there is one; missing `date` → the bench clock's now when it is
        virtual (frozen, set or advanced), else the mail clock advanced by one second (so it
        is the newest mail). Give `date` to choose it, e.g. equal dates.

        at: a datetime, ISO 8601 text, epoch seconds or a duration from now ("2d"): the mail
        stays out of the mailbox until the bench clock reaches it, then comes dated `at`
        (returns [] now; see `scheduled()`). E_USAGE naming a bad `at`.
        """
        if at is not None:
            self._schedule(messages, at, fires=False)
            return []
        return self._access().add(self._dated(messages))

    def _dated(self, messages: Any) -> Any:
        """Undated mail dated by the bench clock's now, when that clock is virtual."""
        clock = self._bench.clock
        if not clock.virtual:
            return messages  # the mail clock, as before the virtual clock
        now_ms = int(clock.time() * 1000)
        items = [messages] if isinstance(messages, dict) else messages
        if not isinstance(items, list):
            return messages  # the mailbox names what is wrong
        return [{**m, "date": now_ms} if isinstance(m, dict) and m.get("date") is None else m for m in items]

    def _schedule(self, messages: Any, at: Any, *, fires: bool) -> None:
        from ..ctx.clock import parse_duration, parse_instant

        clock = self._bench.clock
        try:
            when = parse_instant(at)
        except UsageError:
            try:  # a duration from now: "2d", "-1h", or seconds given as a str/number below 1e9
                when = clock.time() + parse_duration(at)
            except UsageError:
                raise UsageError(
                    f"bench.email at={at!r}: give a datetime, an ISO 8601 text, epoch seconds or a "
                    "duration from now such as '2d'",
                    value=repr(at),
                ) from None
        self._access().schedule(messages, int(round(when * 1000)), fires=fires)
        self.deliver()

    def scheduled(self) -> pd.DataFrame:
        """Mail waiting for its time: one row per message (at, accountId, subject, fires)."""
        import pandas as pd

        rows = [
            {
                "at": datetime.fromtimestamp(at_ms / 1000, UTC),
                "accountId": m.get("accountId"),
                "subject": m.get("subject"),
                "fires": fires,
            }
            for at_ms, _seq, m, fires in self._access().pending
        ]
        return pd.DataFrame(rows, columns=["at", "accountId", "subject", "fires"])

    def deliver(self) -> list[CallResult]:
        """Add the scheduled mail whose time the bench clock reached and fire the triggers of
        what came by `arrive(at=)` (done on every clock move and before every call)."""
        access = access_of(self._bench.providers)
        if access is None or self._firing or not (access.pending or access.fired):
            return []  # (before every call: most benches have no mail scheduled)
        access.deliver()
        if not access.fired:
            return []
        fired, access.fired = access.fired, []
        self._firing = True  # a trigger's own call does not fire again
        try:
            return self._fire(fired)
        finally:
            self._firing = False

    def triggers(self) -> list[str]:
        """The tools the manifest runs on `email.onNewMessage`, in manifest order."""
        return [
            t["tool"] for t in self._bench.manifest.raw.get("triggers", ()) if t.get("event") == NEW_MESSAGE
        ]

    def arrive(self, messages: dict[str, Any] | list[dict[str, Any]], *, at: Any = None) -> list[CallResult]:
        """add(), then E6: each trigger tool is called with each new message's envelope only.

        Only mail of allowed accounts fires events (the gem cannot learn of other mail). Each
        event is a normal `bench.call`, so it is in `bench.calls()`; returns their results.
        at (see `add`): the mail comes, and its triggers fire once, when the bench clock
        reaches `at` (on `bench.clock.advance/set/freeze` or before the next call); [] now.
        """
        if at is not None:
            self._schedule(messages, at, fires=True)
            return []
        return self._fire(self.add(messages))

    def _fire(self, added: list[dict[str, Any]]) -> list[CallResult]:
        tools = self.triggers()
        return [
            self._bench.call(tool, envelope)
            for envelope in added
            if self.grant.allows(envelope["accountId"])
            for tool in tools
        ]

    def envelopes(self) -> list[Envelope]:
        """Every envelope of every account, ordered by (date, accountId, id)."""
        return self._access().envelopes()

    def replay_run(
        self,
        tool: str,
        *,
        steps: int | None = None,
        arrivals: dict[int, Any] | None = None,
        rewinds: dict[int, Any] | None = None,
        cursor_key: str = "cursor",
        events: bool = False,
        input: Any = None,
    ) -> pd.DataFrame:
        """Call `tool` repeatedly; one row per message: processed once / twice+ / never, lost
        (see `workbench.bench.email_replay.replay_run`); warnings in `df.attrs["warnings"]`."""
        from .email_replay import replay_run

        return replay_run(
            self._bench,
            tool,
            steps=steps,
            arrivals=arrivals,
            rewinds=rewinds,
            cursor_key=cursor_key,
            events=events,
            input=input,
        )

    def replay(
        self, tool: str, *, cursor_key: str = "cursor", input: Any = None, events: bool = False
    ) -> Any:
        """The replay widget: the mailbox as a timeline with the stored cursor; Step, Run to
        end, Rewind, Arrive (see `workbench.jupyter.replay`)."""
        # Any, not ReplayView: even a type-only import would point the Face at workbench.jupyter
        from .._present import presenter

        return presenter("replay")(self._bench, tool, cursor_key=cursor_key, input=input, events=events)
