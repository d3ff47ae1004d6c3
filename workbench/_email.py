"""bench.email: the user's side of ctx.email — allowed accounts, mock mail, new-mail events."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .ctx import Grant
from .ctx.email import mail_clock

if TYPE_CHECKING:
    import pandas as pd

    from ._bench import Bench
    from ._result import CallResult
    from .ctx.email import Envelope, MailAccess, Mailbox, MockClock

NEW_MESSAGE = "email.onNewMessage"


class BenchEmail:
    """`bench.email`: what the user decides and what the world does, outside any tool call.

    allow("all" | [ids]) picks the accounts the gem may read (E2; none at open);
    add(msgs) puts mail into the mock mailbox; arrive(msgs) adds it and fires the manifest's
    `email.onNewMessage` triggers (E6); clock dates mail added without a date.
    """

    def __init__(self, bench: Bench) -> None:
        self._bench = bench
        access: MailAccess | None = bench.providers.backends.get("email")  # ctx.email's benches only
        self._clock = access.clock if access is not None else mail_clock()  # (Notochord's)

    def _access(self) -> MailAccess:
        """ctx.email's backend (KeyError on a bench without ctx.email)."""
        access: MailAccess = self._bench.providers.backends["email"]
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

    def add(self, messages: dict[str, Any] | list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Put mail into the mock mailbox; returns the envelopes added.

        Each message is shaped as getMessage returns it ({accountId, id, subject, fromAddr,
        toAddrs, date, body, attachments}); missing `id` → a new one; missing `accountId` →
        the only account, if there is one; missing `date` → the clock advanced by one second
        (so it is the newest mail). Give `date` to choose it, e.g. equal dates.
        """
        return self._access().add(messages)

    def triggers(self) -> list[str]:
        """The tools the manifest runs on `email.onNewMessage`, in manifest order."""
        return [
            t["tool"] for t in self._bench.manifest.raw.get("triggers", ()) if t.get("event") == NEW_MESSAGE
        ]

    def arrive(self, messages: dict[str, Any] | list[dict[str, Any]]) -> list[CallResult]:
        """add(), then E6: each trigger tool is called with each new message's envelope only.

        Only mail of allowed accounts fires events (the gem cannot learn of other mail). Each
        event is a normal `bench.call`, so it is in `bench.calls()`; returns their results.
        """
        added = self.add(messages)
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
        (see `workbench._replay.replay_run`); warnings in `df.attrs["warnings"]`."""
        from ._replay import replay_run

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
        from ._present import presenter

        return presenter("replay")(self._bench, tool, cursor_key=cursor_key, input=input, events=events)
