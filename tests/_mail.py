"""Shared by tests/test_email*.py: the same messages as a mock JSON list, a Maildir and an mbox."""

from __future__ import annotations

import functools
import json
import mailbox
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime
from pathlib import Path
from typing import Any

MAIL_GEM = Path(__file__).resolve().parent.parent / "notebooks" / "gems" / "mail-digest"
FIXTURE = MAIL_GEM / "fixtures" / "mailbox.json"
KINDS = ("mock", "maildir", "mbox")


def fixture_messages() -> list[dict[str, Any]]:
    return json.loads(FIXTURE.read_text("utf-8"))


def rfc822(d: dict[str, Any]) -> EmailMessage:
    """A getMessage-shaped dict as real mail (attachments of the stated size)."""
    m = EmailMessage()
    m["Subject"] = d.get("subject", "")
    m["From"] = d.get("fromAddr", "")
    m["To"] = ", ".join(d.get("toAddrs", []))
    if d.get("date") is not None:
        m["Date"] = format_datetime(datetime.fromtimestamp(d["date"] / 1000, UTC))
    m["Message-ID"] = f"<{d.get('id', 'x')}@test.example>"
    m.set_content(d.get("body", ""))
    for a in d.get("attachments", []):
        main, sub = a["mimeType"].split("/", 1)
        m.add_attachment(b"\x00" * a["sizeBytes"], maintype=main, subtype=sub, filename=a["filename"])
    return m


@functools.cache
def _encoded(key: str) -> bytes:
    return rfc822(json.loads(key)).as_bytes()


def encoded(d: dict[str, Any]) -> bytes:
    """rfc822(d) as bytes, built once per session (the fixtures carry megabytes of attachments)."""
    return _encoded(json.dumps(d, sort_keys=True))


def by_account(messages: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for d in messages:
        out.setdefault(d["accountId"], []).append(d)
    return out


def write_maildir(root: Path, messages: list[dict[str, Any]]) -> Path:
    """A folder of Maildirs, one per account (the account id is the subfolder's name)."""
    root.mkdir(parents=True, exist_ok=True)
    for account, items in by_account(messages).items():
        mailbox.Maildir(root / account, create=True)  # tmp/, new/, cur/
        # named in order, not by Maildir.add: its names hold a process-wide counter, so two
        # messages of one date would list in another order once it passes 9, 99, ...
        for n, d in enumerate(items):
            (root / account / "new" / f"{n:06d}.M0P0.test").write_bytes(encoded(d))
    return root


def write_mbox(root: Path, messages: list[dict[str, Any]]) -> dict[str, Path]:
    """One mbox file per account: {account id: path}."""
    root.mkdir(parents=True, exist_ok=True)
    out = {}
    for account, items in by_account(messages).items():
        path = root / f"{account}.mbox"
        box = mailbox.mbox(path, create=True)
        try:
            for d in items:
                box.add(encoded(d))
            box.flush()
        finally:
            box.close()
        out[account] = path
    return out


def mailbox_spec(kind: str, tmp_path: Path, messages: list[dict[str, Any]]) -> Any:
    """What to pass as workbench.open(..., mailbox=...) for `kind`, holding `messages`."""
    if kind == "mock":
        tmp_path.mkdir(parents=True, exist_ok=True)
        path = tmp_path / "mailbox.json"
        path.write_text(json.dumps(messages))
        return path
    if kind == "maildir":
        return write_maildir(tmp_path / "Maildir", messages)
    return write_mbox(tmp_path / "mbox", messages)
