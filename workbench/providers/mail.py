"""The mailbox provider interface: plain storage of messages, no platform rules.

Every rule of ctx.email (E1–E6: permissions, allowed accounts, `listSince` paging and cursor,
limits, read-only) lives above this, in `workbench.ctx.email`. A provider only answers three
questions about the messages it holds. Dates are milliseconds since the epoch (UTC).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Envelope:
    """What `listSince` returns for one message (no body)."""

    accountId: str
    id: str
    subject: str
    fromAddr: str
    toAddrs: tuple[str, ...]
    date: int  # ms since the epoch

    def to_json(self) -> dict[str, Any]:
        return {"accountId": self.accountId, "id": self.id, "subject": self.subject,
                "fromAddr": self.fromAddr, "toAddrs": list(self.toAddrs), "date": self.date}


@dataclass(frozen=True)
class Attachment:
    filename: str
    mimeType: str
    sizeBytes: int


@dataclass(frozen=True)
class Message:
    """What `getMessage` returns: the envelope, the body as plain text, attachment metadata."""

    envelope: Envelope
    body: str
    attachments: tuple[Attachment, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {**self.envelope.to_json(), "body": self.body,
                "attachments": [{"filename": a.filename, "mimeType": a.mimeType,
                                 "sizeBytes": a.sizeBytes} for a in self.attachments]}


class Mailbox(Protocol):
    """One source of mail: a mock list, a Maildir, an mbox file, an IMAP server."""

    def accounts(self) -> list[str]:
        """The account ids this mailbox holds (all of them, allowed or not)."""

    def envelopes_since(self, account: str, since: int, limit: int) -> list[Envelope]:
        """Envelopes of `account` with date > since, ordered by (date, id), at most `limit`."""

    def message(self, account: str, id: str) -> Message | None:
        """The full message, or None if the account has no message with that id."""
