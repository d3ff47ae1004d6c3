"""Outgoing mail behind the agent platform's `send_email` built-in: one narrow interface,
`Outbox.send(message) -> message id`, a mock that keeps what was sent, and SMTP (smtplib).

`message` is `{to: [..], cc: [..], subject, body_text, body_html?}`. `check_message` is the one
rule for it: plain ASCII addresses only, no line break (CR, LF, NUL, U+2028, NEL, …) or other
control character in a header value, as given or once its RFC 2047 words are decoded
(`outheaders`) — a header injection is refused with E_INVALID_ARGUMENT naming the field, never
folded away — and every size bounded (MAX_RECIPIENTS, MAX_SUBJECT_CHARS, MAX_BODY_CHARS).
ctx.tools' send_email applies it before any outbox sees the message; both outboxes apply it
again (defence in depth) through `build_message`, which writes the message with
`outheaders.POLICY` (it refuses a generated header that would break its line) and returns the
bytes: the mock keeps, and SMTP sends, exactly what was checked.
"""

from __future__ import annotations

import re
import smtplib
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any, NamedTuple, Protocol

from .._errors import UsageError, WorkbenchError
from .._text import well_formed
from . import outheaders
from .httpreal import Watchdog

MAX_RECIPIENTS = 50  # to + cc
MAX_ADDRESS_CHARS = 254  # RFC 5321's path limit, less the angle brackets
MAX_SUBJECT_CHARS = 998  # one header line's worth (it is folded on the wire)
MAX_BODY_CHARS = 1_000_000  # each of body_text and body_html
MAX_MOCK_MESSAGES = 10_000  # the mock refuses more until cleared
MAX_REPLY_BYTES = 256 * 1024  # all an SMTP server may say during one send
FIELDS = ("to", "cc", "subject", "body_text", "body_html")  # all a message may hold

# a dot-atom local part @ a host name: no display names, quotes, comments, IP literals or commas
_ADDRESS = re.compile(
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
)
# the header each field becomes (the sender is From)
_HEADERS = {"to": "To", "cc": "Cc", "subject": "Subject", "sender": "From"}


class Outbox(Protocol):
    """Sends one message; returns its Message-ID."""

    def send(self, message: dict[str, Any]) -> str: ...


class Checked(NamedTuple):
    """A message that passed check_message: addresses as given, text made well-formed."""

    to: list[str]
    cc: list[str]
    subject: str
    body_text: str
    body_html: str | None


class Built(NamedTuple):
    """What build_message made: the message, its bytes as sent, the envelope recipients."""

    msg: EmailMessage
    data: bytes
    recipients: list[str]


def _invalid(field: str, what: str, **details: Any) -> WorkbenchError:
    return WorkbenchError("E_INVALID_ARGUMENT", f"send_email: `{field}` {what}", field=field, **details)


def _header_value(value: str, field: str) -> str:
    """`value` unchanged if it is safe as the header `field` becomes, as given and decoded."""
    name = _HEADERS[field.partition("/")[0]]
    found = outheaders.problem(name, value)
    if found is not None:
        what, reason = found
        raise _invalid(field, what, **({"reason": reason} if reason else {}))
    return value


def check_address(value: Any, field: str) -> str:
    """A plain address (`name@example.org`), or E_INVALID_ARGUMENT naming `field`."""
    if not isinstance(value, str):
        raise _invalid(field, "must be a string (an email address)")
    shown = value if len(value) <= 80 else value[:80] + "…"
    if len(value) <= MAX_ADDRESS_CHARS:  # longer ones are refused below, unparsed
        _header_value(value, field)
    if len(value) > MAX_ADDRESS_CHARS or not _ADDRESS.fullmatch(value):
        raise _invalid(
            field,
            f"is not a plain email address like name@example.org: {shown!r} (no display name, "
            "no spaces or commas; a non-ASCII domain in its xn-- form)",
        )
    name = _HEADERS[field.partition("/")[0]]
    if any(seen != value for seen in outheaders.decodings(name, value)):
        raise _invalid(
            field, f"holds an RFC 2047 encoded word, which an address may not (RFC 2047 §5): {shown!r}"
        )
    return value


def _addresses(value: Any, field: str) -> list[str]:
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list):
        raise _invalid(field, "must be a list of email addresses")
    if len(values) > MAX_RECIPIENTS:
        raise _invalid(field, f"has {len(values):,} addresses, over the limit of {MAX_RECIPIENTS}")
    return [check_address(v, f"{field}/{i}") for i, v in enumerate(values)]


def _text(message: Mapping[str, Any], field: str, limit: int, *, header: bool = False) -> str:
    value = message.get(field)
    if not isinstance(value, str):
        raise _invalid(field, "must be a string")
    if len(value) > limit:
        raise _invalid(field, f"is {len(value):,} characters, over the limit of {limit:,}", limit=limit)
    value = well_formed(value)
    return _header_value(value, field) if header else value


def check_message(message: Any) -> Checked:
    """Every field of a send_email message checked; E_INVALID_ARGUMENT names the first thing
    wrong (`reason: "header_injection"` for a line break in a header, decoded or not)."""
    if not isinstance(message, Mapping):
        raise _invalid("message", "must be an object")
    unknown = set(message) - set(FIELDS) - {"message_id"}  # (message_id: the ctx layer's own)
    if unknown:
        raise _invalid(sorted(map(str, unknown))[0], "is not a field of send_email")
    to = _addresses(message.get("to"), "to")
    cc = _addresses(message.get("cc") or [], "cc")
    if not to:
        raise _invalid("to", "must name at least one recipient")
    if len(to) + len(cc) > MAX_RECIPIENTS:
        raise _invalid("cc", f"to and cc name over {MAX_RECIPIENTS} recipients together")
    subject = _text(message, "subject", MAX_SUBJECT_CHARS, header=True)
    body_text = _text(message, "body_text", MAX_BODY_CHARS)
    html = _text(message, "body_html", MAX_BODY_CHARS) if message.get("body_html") is not None else None
    return Checked(to, cc, subject, body_text, html)


_MSGID = re.compile(r"<[0-9a-f]{16}\.[0-9]{1,12}@workbench\.invalid>")


def build_message(
    message: Mapping[str, Any], sender: str, *, now: Callable[[], float] | None = None
) -> Built:
    """The MIME message from `sender`, written, after check_message; its `Date:` is `now()`
    (the mock outbox's: the bench's clock) or the wall clock."""
    m = check_message(message)
    msg = EmailMessage(policy=outheaders.POLICY)
    try:  # the policy refuses line breaks itself too: a second net under the checks above
        msg["From"] = sender
        msg["To"] = ", ".join(m.to)
        if m.cc:
            msg["Cc"] = ", ".join(m.cc)
        msg["Subject"] = m.subject
        msg["Date"] = formatdate(None if now is None else now(), usegmt=True)
        given = message.get("message_id")  # the ctx layer's, from the call's seeded draws
        if not (isinstance(given, str) and _MSGID.fullmatch(given)):
            given = make_msgid(domain=sender.rpartition("@")[2])  # no DNS lookup
        msg["Message-ID"] = given
        msg.set_content(m.body_text)
        if m.body_html is not None:
            msg.add_alternative(m.body_html, subtype="html")
        data = msg.as_bytes()
    except outheaders.HeaderInjection as exc:
        field = next((f for f, h in _HEADERS.items() if h.lower() == exc.name.lower()), exc.name)
        raise _invalid(field, str(exc), reason="header_injection") from None
    except Exception as exc:  # the library's own refusals (ValueError, MessageError, ...)
        raise _invalid("message", f"cannot be encoded: {exc}") from None
    return Built(msg, data, m.to + m.cc)


class MockOutbox:
    """Keeps sent messages in `sent` (id, time, from, to, cc, subject, bodies), in order."""

    kind = "mock"

    def __init__(self, *, sender: str = "agent@workbench.invalid", max_messages: int = MAX_MOCK_MESSAGES):
        self.sender = check_address(sender, "sender")
        self.max_messages = max_messages
        self.sent: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.now: Callable[[], float] = time.time  # the bench's clock (ctx/clock.py): `time`

    def send(self, message: dict[str, Any]) -> str:
        msg = build_message(message, self.sender, now=self.now).msg  # the same checks as the real one
        row = {
            "id": str(msg["Message-ID"]),
            "time": datetime.fromtimestamp(self.now(), UTC),
            "from": self.sender,
            "to": [a.addr_spec for a in msg["To"].addresses],
            "cc": [a.addr_spec for a in msg["Cc"].addresses] if msg["Cc"] else [],
            "subject": str(msg["Subject"]),
            "body_text": well_formed(message["body_text"]),
            "body_html": well_formed(message["body_html"]) if message.get("body_html") is not None else None,
        }
        with self._lock:
            if len(self.sent) >= self.max_messages:
                raise WorkbenchError(
                    "E_TOO_LARGE",
                    f"send_email: the mock outbox holds {self.max_messages:,} messages, its limit: clear it",
                    limit=self.max_messages,
                )
            self.sent.append(row)
        return str(row["id"])

    def rows(self, since: int = 0) -> list[dict[str, Any]]:
        """Copies of the sent messages, oldest first (for a DataFrame); `since`: from the
        message of that number on (what a call sent: the count before it, `len(outbox)`)."""
        with self._lock:
            return [{**r, "to": list(r["to"]), "cc": list(r["cc"])} for r in self.sent[since:]]

    def __len__(self) -> int:
        return len(self.sent)

    def clear(self) -> None:
        with self._lock:
            self.sent.clear()


class SmtpOutbox:
    """SMTP through smtplib, one connection per message (nothing outlives a send):
    `security` "starttls" (required, never a plaintext fallback), "ssl" (implicit TLS) or
    "none"; a total deadline of `timeout` seconds per send; server replies bounded."""

    kind = "real"

    def __init__(
        self,
        host: str,
        port: int,
        *,
        sender: str,
        security: str = "starttls",
        username: str | None = None,
        password: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
        timeout: float = 30.0,
        local_hostname: str = "localhost",
    ) -> None:
        if security not in ("starttls", "ssl", "none"):
            raise UsageError(f"SmtpOutbox security={security!r}: use 'starttls', 'ssl' or 'none'")
        if security == "none" and username is not None and host not in ("127.0.0.1", "localhost", "::1"):
            raise UsageError(
                "SmtpOutbox: a login needs security='starttls' or 'ssl' (the password would go in clear)"
            )
        if (username is None) != (password is None):
            raise UsageError("SmtpOutbox: give both username and password, or neither")
        self.host, self.port, self.security, self.timeout = host, port, security, timeout
        self.sender = check_address(sender, "sender")
        self.local_hostname = local_hostname
        self._login = (username, password) if username is not None and password is not None else None
        self._context = ssl_context

    def __repr__(self) -> str:
        return f"SmtpOutbox({self.host!r}, {self.port}, security={self.security!r}, sender={self.sender!r})"

    def send(self, message: dict[str, Any]) -> str:
        built = build_message(message, self.sender)
        context = self._context or ssl.create_default_context()
        msg_id = str(built.msg["Message-ID"])
        with Watchdog(self.timeout) as deadline:
            try:
                refused = self._deliver(built, context, deadline)
            except WorkbenchError:
                raise
            except (OSError, smtplib.SMTPException, ValueError) as exc:  # ValueError: ssl, encoding
                late = isinstance(exc, TimeoutError) or isinstance(exc.__context__, TimeoutError)
                if deadline.fired or late:
                    what = f"did not finish within {self.timeout:g} s"
                    raise _smtp_failed(self, "timeout", what, "E_TIMEOUT", timeout=self.timeout) from None
                raise _smtp_error(self, exc) from None
        if refused:
            raise _smtp_failed(
                self,
                "recipients",
                f"sent, but refused for {', '.join(sorted(refused))}",
                message_id=msg_id,
                refused={a: _reply(r) for a, r in refused.items()},
            )
        return msg_id

    def _deliver(self, built: Built, context: ssl.SSLContext, deadline: Watchdog) -> Any:
        implicit = context if self.security == "ssl" else None
        session = _Session(
            deadline, implicit, server=self.host, timeout=self.timeout, local_hostname=self.local_hostname
        )
        try:
            session.connect(self.host, self.port)
            if self.security == "starttls":
                session.starttls(context=context)  # SMTPNotSupportedError if not offered: no fallback
            if self._login is not None:
                session.login(*self._login)
            # the bytes build_message checked and wrote, not a second rendering of the message
            return session.sendmail(self.sender, built.recipients, built.data)
        finally:
            try:
                session.quit()
            except (OSError, smtplib.SMTPException, WorkbenchError):
                session.close()


class _Budget:
    """The server's side of the connection, as smtplib reads it, stopped past MAX_REPLY_BYTES."""

    def __init__(self, inner: Any, session: _Session) -> None:
        self.inner, self.session = inner, session

    def readline(self, limit: int = -1) -> bytes:
        line: bytes = self.inner.readline(limit)
        self.session.heard += len(line)
        if self.session.heard > MAX_REPLY_BYTES:
            raise WorkbenchError(
                "E_SMTP",
                f"send_email: the SMTP server said over {MAX_REPLY_BYTES:,} bytes in one send",
                reason="reply_too_large",
            )
        return line

    def close(self) -> None:
        self.inner.close()


class _Session(smtplib.SMTP):
    """smtplib.SMTP whose sockets the deadline can cut, implicit TLS included, and whose
    replies are read through a budget."""

    _host: str  # smtplib's: the name STARTTLS checks the certificate against

    def __init__(
        self, deadline: Watchdog, implicit_tls: ssl.SSLContext | None, *, server: str, **kw: Any
    ) -> None:
        self.deadline, self.implicit_tls, self.heard = deadline, implicit_tls, 0
        super().__init__(**kw)
        self._host = server  # set by SMTP(host) only, which connects at once; we connect later

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        sock = socket.create_connection((host, port), timeout, self.source_address)
        sock.settimeout(timeout + 1)  # past the deadline: the deadline, not a read, ends a send
        self.deadline.watch(sock)
        if self.implicit_tls is not None:
            return self.implicit_tls.wrap_socket(sock, server_hostname=host)
        return sock

    def getreply(self) -> tuple[int, bytes]:
        if self.file is None and self.sock is not None:
            self.file = _Budget(self.sock.makefile("rb"), self)
        return super().getreply()


def _reply(reply: Any) -> str:
    """An SMTP (code, text) reply as one short line."""
    code, text = reply if isinstance(reply, tuple) and len(reply) == 2 else ("", reply)
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    text = " ".join(text.split())
    return f"{code} {text[:200]}".strip()


def _smtp_failed(
    outbox: SmtpOutbox, reason: str, what: str, code: str = "E_SMTP", **details: Any
) -> WorkbenchError:
    where = f"{outbox.host}:{outbox.port}"
    return WorkbenchError(code, f"send_email: {where}: {what}", server=where, reason=reason, **details)


def _smtp_error(outbox: SmtpOutbox, exc: BaseException) -> WorkbenchError:
    """One coded error for what smtplib, ssl or the socket raised (never the password)."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        refused = {a: _reply(r) for a, r in exc.recipients.items()}
        return _smtp_failed(outbox, "recipients", f"every recipient was refused: {refused}", refused=refused)
    if isinstance(exc, smtplib.SMTPNotSupportedError):
        return _smtp_failed(outbox, "unsupported", f"the server does not offer it: {exc}")
    if isinstance(exc, smtplib.SMTPResponseException):
        said = _reply((exc.smtp_code, exc.smtp_error))
        if isinstance(exc, smtplib.SMTPAuthenticationError):
            return _smtp_failed(outbox, "auth", f"the login was refused ({said})")
        if isinstance(exc, smtplib.SMTPSenderRefused):
            return _smtp_failed(outbox, "sender", f"the sender was refused ({said})")
        return _smtp_failed(outbox, "response", f"the server answered {said}", smtp_code=exc.smtp_code)
    if isinstance(exc, ssl.SSLError | ssl.CertificateError):
        return _smtp_failed(outbox, "tls", f"TLS failed: {exc}")
    return _smtp_failed(outbox, "connection", f"{type(exc).__name__}: {str(exc)[:200]}")
