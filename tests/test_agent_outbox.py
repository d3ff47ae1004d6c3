"""The send_email providers: MockOutbox and SmtpOutbox against a real aiosmtpd on 127.0.0.1
(plain, STARTTLS, implicit TLS, AUTH), header injection refused by both, sizes bounded, and
hostile servers (silent, dripping, chatty, refusing) cut and coded."""

from __future__ import annotations

import email
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from email.policy import default as default_policy
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from workbench import WorkbenchError
from workbench.providers.outbox import (
    MAX_BODY_CHARS,
    MAX_RECIPIENTS,
    MAX_SUBJECT_CHARS,
    MockOutbox,
    Outbox,
    SmtpOutbox,
)

SENDER = "agent@bench.example"
MESSAGE = {
    "to": ["ann@example.org"],
    "cc": ["bob@example.org", "cy@example.net"],
    "subject": "Grüße ✓ — the report",
    "body_text": "Hello,\n.\nA line alone with a dot, and a long one: " + "x" * 3000 + "\n",
    "body_html": "<p>Hello <b>there</b></p>",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (and localhost), made with the openssl CLI."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert),
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def server_tls(certs: tuple[Path, Path]) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(*certs)
    return ctx


@pytest.fixture
def client_tls(certs: tuple[Path, Path]) -> ssl.SSLContext:
    """Trusts only the test certificate; host names are checked as usual."""
    return ssl.create_default_context(cafile=str(certs[0]))


class Recorder:
    """An aiosmtpd handler keeping what it received; `nobody@…` is refused at RCPT."""

    def __init__(self) -> None:
        self.received: list[tuple[Any, Any]] = []

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, options: Any) -> str:
        if address.startswith("nobody@"):
            return "550 5.1.1 no such user"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.received.append((session, envelope))
        return "250 Message accepted"

    def message(self, i: int = 0) -> email.message.EmailMessage:
        return email.message_from_bytes(self.received[i][1].content, policy=default_policy)  # type: ignore[return-value]


@pytest.fixture
def smtpd() -> Iterator[Callable[..., tuple[Recorder, int]]]:
    """start(**Controller options) -> (recorder, port): an aiosmtpd on 127.0.0.1, stopped after."""
    started: list[Controller] = []

    def start(**kw: Any) -> tuple[Recorder, int]:
        recorder, port = Recorder(), free_port()
        controller = Controller(recorder, hostname="127.0.0.1", port=port, **kw)
        controller.start()
        started.append(controller)
        return recorder, port

    try:
        yield start
    finally:
        for controller in started:
            controller.stop()


def error(fn: Callable[..., Any], *args: Any) -> WorkbenchError:
    with pytest.raises(WorkbenchError) as info:
        fn(*args)
    return info.value


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n")  # the wire's line ends, as the parser keeps them


def assert_delivered(recorder: Recorder, msg_id: str, message: dict[str, Any] = MESSAGE) -> None:
    session, envelope = recorder.received[-1]
    assert envelope.mail_from == SENDER
    assert envelope.rcpt_tos == message["to"] + message.get("cc", [])
    got = recorder.message(len(recorder.received) - 1)
    assert got["Message-ID"] == msg_id and got["From"] == SENDER
    assert [a.addr_spec for a in got["To"].addresses] == message["to"]
    assert "Bcc" not in got and got["Date"]
    assert got["Subject"] == message["subject"]
    assert _lf(got.get_body(("plain",)).get_content()) == message["body_text"]
    if message.get("body_html"):
        assert got.get_body(("html",)).get_content().strip() == message["body_html"]


# == delivery ====================================================================================


def test_plain_smtp_delivers_headers_and_bodies(smtpd: Callable) -> None:
    recorder, port = smtpd()
    outbox: Outbox = SmtpOutbox("127.0.0.1", port, security="none", sender=SENDER, timeout=10)
    msg_id = outbox.send(dict(MESSAGE))
    assert msg_id.startswith("<") and msg_id.endswith("@bench.example>")
    assert_delivered(recorder, msg_id)
    assert [a.addr_spec for a in recorder.message()["Cc"].addresses] == MESSAGE["cc"]


def test_starttls_is_used_and_required(
    smtpd: Callable, server_tls: ssl.SSLContext, client_tls: ssl.SSLContext
) -> None:
    recorder, port = smtpd(tls_context=server_tls, require_starttls=True)
    outbox = SmtpOutbox("127.0.0.1", port, sender=SENDER, ssl_context=client_tls, timeout=10)
    msg_id = outbox.send({"to": ["ann@example.org"], "subject": "tls", "body_text": "over TLS\n"})
    assert recorder.received[0][0].ssl is not None  # the session was encrypted
    assert recorder.message()["Message-ID"] == msg_id


def test_implicit_tls(smtpd: Callable, server_tls: ssl.SSLContext, client_tls: ssl.SSLContext) -> None:
    recorder, port = smtpd(ssl_context=server_tls)
    outbox = SmtpOutbox("127.0.0.1", port, security="ssl", sender=SENDER, ssl_context=client_tls, timeout=10)
    msg_id = outbox.send(dict(MESSAGE))
    assert_delivered(recorder, msg_id)


def test_starttls_never_falls_back_to_plaintext(smtpd: Callable, client_tls: ssl.SSLContext) -> None:
    recorder, port = smtpd()  # offers no STARTTLS
    outbox = SmtpOutbox("127.0.0.1", port, sender=SENDER, ssl_context=client_tls, timeout=10)
    e = error(outbox.send, dict(MESSAGE))
    assert e.code == "E_SMTP" and e.details["reason"] == "unsupported" and "STARTTLS" in e.message
    assert recorder.received == []


def test_an_untrusted_certificate_is_refused(smtpd: Callable, server_tls: ssl.SSLContext) -> None:
    recorder, port = smtpd(tls_context=server_tls, require_starttls=True)
    outbox = SmtpOutbox("127.0.0.1", port, sender=SENDER, timeout=10)  # the system's CAs only
    e = error(outbox.send, dict(MESSAGE))
    assert e.code == "E_SMTP" and e.details["reason"] == "tls"
    assert recorder.received == []


def _authenticator(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
    ok = isinstance(data, LoginPassword) and (data.login, data.password) == (b"agent", b"s3cret")
    return AuthResult(success=ok, handled=False)


def test_login_after_starttls(
    smtpd: Callable, server_tls: ssl.SSLContext, client_tls: ssl.SSLContext
) -> None:
    recorder, port = smtpd(
        tls_context=server_tls, require_starttls=True, authenticator=_authenticator, auth_required=True
    )

    def outbox(password: str) -> SmtpOutbox:
        return SmtpOutbox(
            "127.0.0.1",
            port,
            sender=SENDER,
            username="agent",
            password=password,
            ssl_context=client_tls,
            timeout=10,
        )

    msg_id = outbox("s3cret").send(dict(MESSAGE))
    assert_delivered(recorder, msg_id)
    assert recorder.received[0][0].authenticated
    e = error(outbox("wrong-horse").send, dict(MESSAGE))
    assert e.code == "E_SMTP" and e.details["reason"] == "auth"
    assert "wrong-horse" not in str(e.to_dict()) and "wrong-horse" not in repr(outbox("wrong-horse"))
    assert len(recorder.received) == 1


def test_login_is_never_sent_in_clear_to_a_remote_host() -> None:
    with pytest.raises(WorkbenchError) as info:
        SmtpOutbox("mail.example.org", 25, security="none", sender=SENDER, username="u", password="p")
    assert info.value.code == "E_USAGE"


def test_refused_recipients(smtpd: Callable) -> None:
    recorder, port = smtpd()
    outbox = SmtpOutbox("127.0.0.1", port, security="none", sender=SENDER, timeout=10)
    e = error(outbox.send, {"to": ["nobody@example.org"], "subject": "s", "body_text": "b"})
    assert e.code == "E_SMTP" and e.details["reason"] == "recipients"
    assert e.details["refused"]["nobody@example.org"].startswith("550")
    assert recorder.received == []
    e = error(
        outbox.send, {"to": ["ann@example.org", "nobody@example.org"], "subject": "s", "body_text": "b"}
    )
    assert e.details["reason"] == "recipients" and e.details["message_id"]  # sent to ann: said so
    assert recorder.received[0][1].rcpt_tos == ["ann@example.org"]


def test_unicode_and_lone_surrogates_arrive_well_formed(smtpd: Callable) -> None:
    recorder, port = smtpd()
    outbox = SmtpOutbox("127.0.0.1", port, security="none", sender=SENDER, timeout=10)
    outbox.send({"to": ["ann@example.org"], "subject": "日本 \ud800", "body_text": "a\udfffb\n"})
    got = recorder.message()
    assert got["Subject"] == "日本 \ufffd" and _lf(got.get_content()) == "a\ufffdb\n"


# == refused before anything is sent (both outboxes) ============================================

BAD = [
    ({"subject": "Hi\r\nBcc: eve@evil.example"}, "subject", "header_injection"),
    ({"subject": "Hi\nX-Injected: 1"}, "subject", "header_injection"),
    ({"subject": "Hi\rthere"}, "subject", "header_injection"),
    ({"subject": "nul\x00"}, "subject", "header_injection"),  # NUL ends a line for some readers
    ({"subject": "bell\x07"}, "subject", None),
    ({"to": ["ann@example.org\r\nBcc: eve@evil.example"]}, "to/0", "header_injection"),
    ({"cc": ["bob@example.org\n"]}, "cc/0", "header_injection"),
    ({"to": ["ann@example.org, eve@evil.example"]}, "to/0", None),
    ({"to": ["Ann <ann@example.org>"]}, "to/0", None),
    ({"to": ["ann@[127.0.0.1]"]}, "to/0", None),
    ({"to": ['"a b"@example.org']}, "to/0", None),
    ({"to": ["ann@exämple.org"]}, "to/0", None),
    ({"to": ["ann"]}, "to/0", None),
    ({"to": ["a" * 250 + "@example.org"]}, "to/0", None),
    ({"to": [3]}, "to/0", None),
    ({"to": []}, "to", None),
    ({"to": {"ann": 1}}, "to", None),
    ({"to": ["a@example.org"] * (MAX_RECIPIENTS + 1)}, "to", None),
    ({"to": ["a@example.org"] * 30, "cc": ["b@example.org"] * 30}, "cc", None),
    ({"subject": "s" * (MAX_SUBJECT_CHARS + 1)}, "subject", None),
    ({"subject": None}, "subject", None),
    ({"body_text": "b" * (MAX_BODY_CHARS + 1)}, "body_text", None),
    ({"body_html": "b" * (MAX_BODY_CHARS + 1)}, "body_html", None),
    ({"body_html": 5}, "body_html", None),
    ({"bcc": ["eve@evil.example"]}, "bcc", None),
]


@pytest.mark.parametrize("change, field, reason", BAD)
@pytest.mark.parametrize("which", ["mock", "smtp"])
def test_bad_messages_are_refused_by_both(
    smtpd: Callable, which: str, change: dict[str, Any], field: str, reason: str | None
) -> None:
    recorder, port = smtpd()
    outbox: Outbox = (
        MockOutbox(sender=SENDER)
        if which == "mock"
        else SmtpOutbox("127.0.0.1", port, security="none", sender=SENDER, timeout=10)
    )
    e = error(outbox.send, {**MESSAGE, **change})
    assert e.code == "E_INVALID_ARGUMENT" and e.details["field"] == field, e
    assert e.details.get("reason") == reason
    assert recorder.received == [] and getattr(outbox, "sent", []) == []


@pytest.mark.parametrize("sender", ["a@b.example\r\nBcc: x@y.example", "Agent <a@b.example>", ""])
def test_a_bad_sender_is_refused_at_construction(sender: str) -> None:
    with pytest.raises(WorkbenchError):
        MockOutbox(sender=sender)
    with pytest.raises(WorkbenchError):
        SmtpOutbox("127.0.0.1", 25, sender=sender)


# == the mock ====================================================================================


def test_mock_keeps_what_was_sent_in_order() -> None:
    outbox = MockOutbox(sender=SENDER, max_messages=2)
    first = outbox.send(dict(MESSAGE))
    second = outbox.send({"to": "cy@example.net", "subject": "two", "body_text": "2"})
    assert first != second and first.endswith("@bench.example>")
    rows = outbox.rows()
    assert [r["id"] for r in rows] == [first, second]
    assert rows[0]["to"] == MESSAGE["to"] and rows[0]["cc"] == MESSAGE["cc"]
    assert rows[0]["subject"] == MESSAGE["subject"] and rows[0]["body_html"] == MESSAGE["body_html"]
    assert rows[1]["to"] == ["cy@example.net"] and rows[1]["cc"] == [] and rows[1]["body_html"] is None
    assert rows[0]["time"].tzinfo is not None and rows[0]["time"] <= rows[1]["time"]
    rows[0]["to"].append("mallory@example.org")
    assert outbox.rows()[0]["to"] == MESSAGE["to"]  # copies
    e = error(outbox.send, dict(MESSAGE))
    assert e.code == "E_TOO_LARGE" and e.details["limit"] == 2
    outbox.clear()
    assert outbox.rows() == [] and outbox.send(dict(MESSAGE))


# == hostile servers =============================================================================


class RawServer:
    """One connection on 127.0.0.1 served by `script(conn, stop)` in a thread."""

    def __init__(self, script: Callable[[socket.socket, threading.Event], None]) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(script,), daemon=True)
        self.thread.start()

    def _serve(self, script: Callable[[socket.socket, threading.Event], None]) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            try:
                script(conn, self.stop)
            except OSError:
                pass

    def close(self) -> None:
        self.stop.set()
        self.sock.close()
        self.thread.join(10)


def _drip(conn: socket.socket, stop: threading.Event) -> None:
    for _ in range(400):  # a greeting that never ends, one line per 50 ms
        if stop.is_set():
            return
        conn.sendall(b"220-still here\r\n")
        time.sleep(0.05)


def _chatty(conn: socket.socket, stop: threading.Event) -> None:
    for _ in range(2000):  # a greeting of up to ~2 MB, as fast as the client reads
        if stop.is_set():
            return
        conn.sendall(b"220-" + b"x" * 1000 + b"\r\n")


def _silent(conn: socket.socket, stop: threading.Event) -> None:
    stop.wait(20)


@pytest.mark.parametrize(
    "script, code, reason",
    [
        (_drip, "E_TIMEOUT", "timeout"),
        (_silent, "E_TIMEOUT", "timeout"),
        (_chatty, "E_SMTP", "reply_too_large"),
    ],
)
def test_hostile_servers_are_cut(script: Callable, code: str, reason: str | None) -> None:
    server = RawServer(script)
    try:
        outbox = SmtpOutbox("127.0.0.1", server.port, security="none", sender=SENDER, timeout=1)
        e = error(outbox.send, dict(MESSAGE))
    finally:
        server.close()
    assert e.code == code and e.details.get("reason") == reason, e


def test_connection_refused_is_e_smtp() -> None:
    e = error(
        SmtpOutbox("127.0.0.1", free_port(), security="none", sender=SENDER, timeout=5).send, dict(MESSAGE)
    )
    assert e.code == "E_SMTP" and e.details["reason"] == "connection"


def test_options_are_checked() -> None:
    for kw in ({"security": "tls"}, {"username": "u"}, {"password": "p"}):
        with pytest.raises(WorkbenchError) as info:
            SmtpOutbox("127.0.0.1", 25, sender=SENDER, **kw)
        assert info.value.code == "E_USAGE"
