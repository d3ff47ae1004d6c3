"""ctx.email's parts of the bench state (ctx/parts.py): the mailbox and how the user set it up.

"mailbox" (state): the mock mailbox's messages, dumped and put as fixtures/mailbox.json holds
them (a list of getMessage-shaped objects with their bodies whole). A real mailbox (Maildir,
mbox, IMAP) is the user's, read in place: its part dumps nothing, a snapshot of it is nothing
to put back, and putting messages on it is refused (E_STATE naming "mailbox"), so a bench on a
real mailbox exports no mail.

"email_setup" (setup): the accounts the user allowed (E2), the mail scheduled for a later
time (`bench.email.arrive(at=)`: at ms, the message, whether it fires the triggers) and the
delivered envelopes whose triggers are still due.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from . import state_check as check
from .parts import Change, Refusal, StateContext, StatePart, keyed_changes

if TYPE_CHECKING:
    from .email import MailAccess

__all__ = ["EMAIL_SETUP", "MAILBOX"]

_FIELDS = ("accountId", "id", "subject", "fromAddr", "toAddrs", "date", "body", "attachments")
_ATTACHMENT = ("filename", "mimeType", "sizeBytes")
_BODY_CHARS = 10_000_000  # a message's body: what a put takes (getMessage shows less: SEC5)


def _mock(cx: StateContext) -> Any:
    """The mock mailbox of the bench, or None (no ctx.email, or a real mailbox)."""
    from ..providers.mailmock import MockMailbox

    access: MailAccess | None = cx.backend
    box = getattr(access, "mailbox", None)
    inner = getattr(box, "inner", box)  # a replay's recorder reads the same mailbox
    return inner if isinstance(inner, MockMailbox) else None


def _mailbox_dump(cx: StateContext) -> list[dict[str, Any]]:
    box = _mock(cx)
    return box.dicts() if box is not None else []


def _check_message(m: Any, bad: Refusal, at: str) -> None:
    check.obj(m, bad, at, _FIELDS)
    for key in ("accountId", "id", "fromAddr"):
        if m.get(key) is not None:
            check.name(m[key], bad, f"{at}.{key}", empty=key == "fromAddr")
    for i, a in enumerate(check.items(m.get("toAddrs", []), bad, f"{at}.toAddrs", most=1000)):
        check.name(a, bad, f"{at}.toAddrs[{i}]")
    for key in ("subject", "body"):
        if m.get(key) is not None:
            check.text(m[key], bad, f"{at}.{key}", most=_BODY_CHARS if key == "body" else 100_000)
    for i, a in enumerate(check.items(m.get("attachments", []), bad, f"{at}.attachments", most=1000)):
        check.obj(a, bad, f"{at}.attachments[{i}]", _ATTACHMENT)


def _mailbox_put(cx: StateContext, value: Any, bad: Refusal) -> None:
    from ..providers.mailmock import MockMailbox

    box = _mock(cx)
    messages = check.items(value, bad, "mailbox")
    if box is None:
        if messages:
            held = getattr(cx.backend, "mailbox", None)
            raise bad("mailbox", f"this bench reads a real mailbox ({held!r}): no mail is put on it")
        return
    check.plain(messages, bad, "mailbox", depth=6, chars=cx.limits.pin_state_bytes)
    for i, m in enumerate(messages):
        _check_message(m, bad, f"mailbox[{i}]")
    fresh = MockMailbox()
    try:
        fresh.add_dicts(messages)
    except ValueError as exc:  # names its place: /3/date
        where, _, why = str(exc).partition(": ")
        raise bad(f"mailbox{where}", why or str(exc)) from None
    box.put_back(fresh.saved())


def _mailbox_snapshot(cx: StateContext) -> Any:
    box = _mock(cx)
    return box.saved() if box is not None else None


def _mailbox_restore(cx: StateContext, snap: Any) -> None:
    box = _mock(cx)
    if box is not None and snap is not None:
        box.put_back(snap)


def _mailbox_diff(before: Any, after: Any) -> Iterator[Change]:
    if before is None or after is None:
        return
    records_a, records_b = before[0], after[0]
    for account in sorted(records_a.keys() | records_b.keys()):
        a, b = records_a.get(account, {}), records_b.get(account, {})
        yield from keyed_changes(
            "mail",
            account,
            {i: _shown(r) for i, r in a.items()},
            {i: _shown(r) for i, r in b.items()},
        )


def _shown(rec: tuple[Any, ...]) -> dict[str, Any]:
    return {"date": rec[0], "subject": rec[1], "fromAddr": rec[2], "toAddrs": list(rec[3])}


MAILBOX = StatePart(
    "mailbox",
    dump=_mailbox_dump,
    put=_mailbox_put,
    snapshot=_mailbox_snapshot,
    restore=_mailbox_restore,
    diff=_mailbox_diff,
    blank=list,
    kind="mail",
)


# -- how the user set the mail up -------------------------------------------------------------
def _setup_dump(cx: StateContext) -> dict[str, Any]:
    access: MailAccess | None = cx.backend
    if access is None:
        return {}
    return {
        "allowed": access.grant.allowed,
        "pending": [{"at": at, "message": dict(m), "fires": fires} for at, _, m, fires in access.pending],
        "fired": [dict(e) for e in access.fired],
    }


def _setup_put(cx: StateContext, value: Any, bad: Refusal) -> None:
    access: MailAccess | None = cx.backend
    check.obj(value, bad, "email_setup", ("allowed", "pending", "fired"))
    check.plain(value, bad, "email_setup", depth=8, chars=cx.limits.pin_state_bytes)
    allowed = value.get("allowed", [])
    if allowed != "all":
        for i, a in enumerate(check.items(allowed, bad, "email_setup.allowed", most=10_000)):
            check.name(a, bad, f"email_setup.allowed[{i}]")
    pending = []
    for i, p in enumerate(check.items(value.get("pending", []), bad, "email_setup.pending")):
        at = f"email_setup.pending[{i}]"
        check.obj(p, bad, at, ("at", "message", "fires"), required=("at", "message"))
        ms = check.number(p["at"], bad, f"{at}.at")
        _check_message(p["message"], bad, f"{at}.message")
        if "date" in p["message"]:
            raise bad(f"{at}.message.date", "a scheduled message takes its date from at")
        if not isinstance(p.get("fires", False), bool):
            raise bad(f"{at}.fires", "is not true or false")
        pending.append((ms, dict(p["message"]), bool(p.get("fires", False))))
    fired = check.items(value.get("fired", []), bad, "email_setup.fired")
    for i, e in enumerate(fired):
        check.obj(e, bad, f"email_setup.fired[{i}]", _FIELDS)
    if access is None:
        return
    access.grant.set(allowed)
    access.replace_pending(pending, [dict(e) for e in fired])


def _setup_restore(cx: StateContext, snap: dict[str, Any]) -> None:
    access: MailAccess | None = cx.backend
    if access is not None and snap:  # the bench's own objects: put back as they were
        access.grant.set(snap["allowed"])
        access.replace_pending([(p["at"], p["message"], p["fires"]) for p in snap["pending"]], snap["fired"])


EMAIL_SETUP = StatePart(
    "email_setup",
    dump=_setup_dump,
    put=_setup_put,
    role="setup",
    snapshot=_setup_dump,
    restore=_setup_restore,
)
