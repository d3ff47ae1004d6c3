"""The mailbox provider interface: plain storage of messages, no platform rules.

Every rule of ctx.email (E1–E6: permissions, allowed accounts, `listSince` paging and cursor,
limits, read-only) lives above this, in `workbench.ctx.email`. A provider only answers three
questions about the messages it holds. Dates are milliseconds since the epoch (UTC).
"""

from __future__ import annotations

import contextvars
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from .._errors import WorkbenchError

# -- SEC5: bounds on what hostile mail can make ctx.email return or the workbench read ----------
# Read when used (not copied at import), so a test may shrink one with monkeypatch.
BODY_MAX_CHARS = 1_048_576  # getMessage `body`: longer text is cut and ends with BODY_CUT
ATTACHMENTS_MAX = 1_000  # getMessage `attachments`: more are counted in a note in `body`
SUBJECT_MAX_CHARS = 1_000  # an envelope's subject (cut with "…")
ADDRESS_MAX_CHARS = 320  # one address of fromAddr / toAddrs (cut with "…")
ADDRESSES_MAX = 500  # toAddrs entries kept
BODY_CUT = "\n[… gem-workbench: body truncated (SEC5: at most {limit:,} characters are read)]"
MORE_ATTACHMENTS = "\n[… gem-workbench: {more:,} more attachments or MIME parts not listed (SEC5)]"

#: the current ctx call's deadline (time.monotonic()), set by ctx.email around provider calls,
#: so that a provider reading a huge or hostile message stops when the call's time is up.
DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "workbench_mail_deadline", default=None
)


def check_deadline(what: str = "email") -> None:
    """E_TIMEOUT when the current ctx call's time is up (cheap: call it every few thousand lines)."""
    deadline = DEADLINE.get()
    if deadline is not None and time.monotonic() >= deadline:
        raise WorkbenchError(
            "E_TIMEOUT",
            f"{what}: the call ran out of time while reading mail "
            "(its timeout covers the ctx calls it makes)",
            method=what,
        )


def cut(text: str, limit: int) -> str:
    """`text` of at most `limit` characters, ending with "…" when it was cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


class Envelope(NamedTuple):
    """What `listSince` returns for one message (no body). Immutable; a tuple, because a
    page of listSince makes hundreds of them (a frozen dataclass costs 3x as much to make)."""

    accountId: str
    id: str
    subject: str
    fromAddr: str
    toAddrs: tuple[str, ...]
    date: int  # ms since the epoch

    def to_json(self) -> dict[str, Any]:
        account, id_, subject, from_, to, date = self
        # SEC5: hostile or huge headers are cut (each toAddrs entry is cut where mail is read:
        # mailparse, IMAP, the mock's fixtures; this stays off listSince's fast path)
        if len(subject) > SUBJECT_MAX_CHARS or len(from_) > ADDRESS_MAX_CHARS or len(to) > ADDRESSES_MAX:
            return self.bounded().to_json()
        return {
            "accountId": account,
            "id": id_,
            "subject": subject,
            "fromAddr": from_,
            "toAddrs": list(to),
            "date": date,
        }

    def bounded(self) -> Envelope:
        """The envelope with subject and addresses within the SEC5 bounds."""
        return Envelope(
            self.accountId,
            self.id,
            cut(self.subject, SUBJECT_MAX_CHARS),
            cut(self.fromAddr, ADDRESS_MAX_CHARS),
            tuple(cut(a, ADDRESS_MAX_CHARS) for a in self.toAddrs[:ADDRESSES_MAX]),
            self.date,
        )


@dataclass(frozen=True)
class Attachment:
    filename: str
    mimeType: str
    sizeBytes: int


@dataclass(frozen=True)
class Message:
    """What `getMessage` returns: the envelope, the body as plain text, attachment metadata.

    A provider that stopped reading a huge message sets `cut` (the body goes on past what it
    read) and `more_attachments` (parts it counted but did not list); `to_json` applies the
    SEC5 bounds and says in `body` what was left out.
    """

    envelope: Envelope
    body: str
    attachments: tuple[Attachment, ...] = field(default_factory=tuple)
    cut: bool = False
    more_attachments: int = 0

    def to_json(self) -> dict[str, Any]:
        body, atts = self.body, self.attachments
        more = self.more_attachments + max(0, len(atts) - ATTACHMENTS_MAX)
        if self.cut or len(body) > BODY_MAX_CHARS:
            mark = BODY_CUT.format(limit=BODY_MAX_CHARS)
            body = body[: max(0, BODY_MAX_CHARS - len(mark))] + mark
        if more:
            body += MORE_ATTACHMENTS.format(more=more)
        return {
            **self.envelope.to_json(),
            "body": body,
            "attachments": [
                {
                    "filename": cut(a.filename, 1000),
                    "mimeType": cut(a.mimeType, 255),
                    "sizeBytes": a.sizeBytes,
                }
                for a in atts[:ATTACHMENTS_MAX]
            ],
        }


class Mailbox(Protocol):
    """One source of mail: a mock list, a Maildir, an mbox file, an IMAP server."""

    def accounts(self) -> list[str]:
        """The account ids this mailbox holds (all of them, allowed or not)."""

    def envelopes_since(self, account: str, since: int, limit: int) -> list[Envelope]:
        """Envelopes of `account` with date > since, ordered by (date, id), at most `limit`."""

    def message(self, account: str, id: str) -> Message | None:
        """The full message, or None if the account has no message with that id."""
