"""The IMAP provider against a real Dovecot on 127.0.0.1 (tests/_dovecot.py): TLS, paging by
(date, UID), day-granular SEARCH vs ms cursors, decoding, metadata-only attachments, read-only,
errors that never show the password, reconnects. Each test works in a folder of its own."""

from __future__ import annotations

import imaplib
import itertools
import pickle
import re
import socket
import ssl
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from _dovecot import PASSWORD, USER, Dovecot, add_messages, available, running_dovecot

from workbench import WorkbenchError
from workbench.providers.imap import ImapMailbox

pytestmark = [pytest.mark.imap, pytest.mark.skipif(available() is not None, reason=str(available()))]

T0 = 1_700_000_000  # 2023-11-14 22:13:20 UTC
_folders = itertools.count()


def mail(subject: str, body: str = "hello\n") -> bytes:
    m = EmailMessage()
    m["Subject"], m["From"], m["To"] = subject, "ann@example.com", "b@x.org"
    m.set_content(body)
    return m.as_bytes()


@pytest.fixture(scope="session")
def dovecot() -> Iterator[Dovecot]:
    """One server for the session; INBOX written as Maildir files before start."""

    def inbox(maildir: Path) -> None:
        add_messages(maildir, [(mail(f"inbox {i}"), T0 + i) for i in range(3)])

    with running_dovecot(inbox) as server:
        yield server


@pytest.fixture(scope="session")
def admin(dovecot: Dovecot) -> Iterator[imaplib.IMAP4]:
    """A plain IMAP session that sets up folders and checks flags behind the mailbox's back."""
    conn = imaplib.IMAP4("127.0.0.1", dovecot.imap_port)
    conn.login(USER, PASSWORD)
    yield conn
    conn.logout()


Folder = Callable[..., str]


@pytest.fixture
def folder(admin: imaplib.IMAP4) -> Folder:
    """folder((raw message, unix time, flags), ...) -> a new folder's name, messages APPENDed."""

    def make(*messages: tuple[bytes, int, str] | tuple[bytes, int]) -> str:
        name = f"t{next(_folders)}"
        assert admin.create(name)[0] == "OK"
        for raw, ts, *flags in messages:
            append(admin, name, raw, ts, flags[0] if flags else None)
        return name

    return make


def append(admin: imaplib.IMAP4, name: str, raw: bytes, ts: int, flags: str | None = None) -> None:
    typ, data = admin.append(name, flags, imaplib.Time2Internaldate(ts), raw)
    assert typ == "OK", data


Open = Callable[..., ImapMailbox]


@pytest.fixture
def open_box(dovecot: Dovecot) -> Iterator[Open]:
    """open_box(folder, **kw): a mailbox on the IMAPS port (self-signed: unverified context)."""
    boxes: list[ImapMailbox] = []

    def opener(folder: str = "INBOX", sort: bool = True, **kw: Any) -> ImapMailbox:
        kw.setdefault("ssl", True)
        port = dovecot.imaps_port if kw["ssl"] is True else dovecot.imap_port
        kw.setdefault("password", PASSWORD)
        kw.setdefault("ssl_context", ssl._create_unverified_context())
        box = ImapMailbox("127.0.0.1", kw.pop("port", port), user=USER, folder=folder, **kw)
        box.use_sort = sort
        boxes.append(box)
        return box

    try:
        yield opener
    finally:
        for b in boxes:
            b.close()


class Wire:
    """Counts the bytes a mailbox's connection reads and keeps the command lines it sends."""

    def __init__(self, box: ImapMailbox) -> None:
        box.envelopes_since(USER, sys.maxsize, 1)  # connected, nothing fetched
        conn = box._conn
        assert conn is not None
        self.received, self.sent = 0, list[bytes]()
        read, readline, send = conn.read, conn.readline, conn.send

        def count(data: bytes) -> bytes:
            self.received += len(data)
            return data

        def record(data: Any) -> None:
            self.sent.append(bytes(data))
            send(data)

        conn.read = lambda size: count(read(size))  # type: ignore[method-assign]
        conn.readline, conn.send = lambda: count(readline()), record  # type: ignore[method-assign]


def ids(envelopes: list[Any]) -> list[str]:
    return [e.id for e in envelopes]


# -- TLS and login ---------------------------------------------------------------------------


def test_imaps_with_an_explicit_unverified_context(open_box: Open) -> None:
    box = open_box()
    assert box.accounts() == [USER]
    got = box.envelopes_since(USER, 0, 10)
    assert [(e.subject, e.date) for e in got] == [(f"inbox {i}", (T0 + i) * 1000) for i in range(3)]
    assert box.envelopes_since("someone-else", 0, 9) == [] and box.message("other", "1") is None
    assert box.message(USER, "999") is None and box.message(USER, "x") is None


def test_the_default_context_refuses_a_self_signed_certificate(dovecot: Dovecot) -> None:
    with (
        ImapMailbox("127.0.0.1", dovecot.imaps_port, user=USER, password=PASSWORD) as box,
        pytest.raises(WorkbenchError) as e,
    ):
        box.envelopes_since(USER, 0, 1)
    assert e.value.code == "E_MAILBOX" and "ssl_context" in e.value.message


@pytest.mark.parametrize("mode", ["starttls", False])
def test_starttls_and_plain(open_box: Open, mode: str | bool) -> None:
    box = open_box(ssl=mode)
    assert len(box.envelopes_since(USER, 0, 10)) == 3
    sock = box._conn.sock  # type: ignore[union-attr]
    assert isinstance(sock, ssl.SSLSocket) is (mode == "starttls")


def test_a_bad_password_is_e_mailbox_and_the_password_never_shows(open_box: Open, dovecot: Dovecot) -> None:
    secret = "Wrong-Secret-123"
    box = open_box(password=secret)
    with pytest.raises(WorkbenchError) as e:
        box.envelopes_since(USER, 0, 1)
    err = e.value
    assert err.code == "E_MAILBOX"
    assert all(s in err.message for s in ("127.0.0.1", str(dovecot.imaps_port), USER, "password"))
    shown = f"{err} {err!r} {err.to_dict()} {err.__cause__!r} {err.__context__!r} {box!r} {box}"
    assert secret not in f"{shown} {vars(box)}" and secret.encode() not in pickle.dumps(box)
    copy = pickle.loads(pickle.dumps(box))
    assert repr(copy) == repr(box) and copy._secret is None  # an unpickled box asks env/keyring


def test_refused_connection_and_wrong_tls_mode(open_box: Open, dovecot: Dovecot) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for kw, hint in [
        ({"port": port}, "refused"),
        ({"port": dovecot.imap_port}, "IMAPS port"),
        ({"port": dovecot.imaps_port, "ssl": False, "timeout": 0.5}, "ssl=True"),
    ]:
        with pytest.raises(WorkbenchError) as e:
            open_box(**kw).envelopes_since(USER, 0, 1)
        assert e.value.code == "E_MAILBOX" and hint in e.value.message, e.value.message


def test_password_from_environment_or_keyring(open_box: Open, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "keyring", None)  # not installed
    monkeypatch.delenv("GEM_WORKBENCH_IMAP_PASSWORD", raising=False)
    with pytest.raises(WorkbenchError, match="GEM_WORKBENCH_IMAP_PASSWORD_WORK_MAIL"):
        open_box(password=None, account_id="work-mail").envelopes_since("work-mail", 0, 1)
    monkeypatch.setenv("GEM_WORKBENCH_IMAP_PASSWORD_WORK_MAIL", PASSWORD)
    box = open_box(password=None, account_id="work-mail")
    assert len(box.envelopes_since("work-mail", 0, 9)) == 3
    monkeypatch.delenv("GEM_WORKBENCH_IMAP_PASSWORD_WORK_MAIL")

    class Keyring:
        @staticmethod
        def get_password(service: str, username: str) -> str | None:
            wanted = ("gem-workbench", f"{USER}@127.0.0.1")
            return PASSWORD if (service, username) == wanted else None

    monkeypatch.setitem(sys.modules, "keyring", Keyring)
    assert len(open_box(password=None).envelopes_since(USER, 0, 9)) == 3


# -- paging ----------------------------------------------------------------------------------


@pytest.fixture(params=[True, False], ids=["sort", "search"])
def sort(request: pytest.FixtureRequest) -> bool:
    """Pages come from UID SORT (ARRIVAL) when the server has it, else from SEARCH + dates."""
    return bool(request.param)


def test_pages_are_ordered_by_date_then_uid_with_equal_dates(
    folder: Folder, open_box: Open, sort: bool
) -> None:
    # appended out of date order: UIDs 1..6 carry dates T0+5, T0, T0+5, T0, T0+5, T0+9
    name = folder(*((mail(f"m{i}"), T0 + d) for i, d in enumerate([5, 0, 5, 0, 5, 9])))
    box = open_box(name, sort=sort)
    everything = box.envelopes_since(USER, 0, 200)
    assert ids(everything) == ["2", "4", "1", "3", "5", "6"]
    assert [(e.date, int(e.id)) for e in everything] == sorted((e.date, int(e.id)) for e in everything)
    assert ids(box.envelopes_since(USER, 0, 3)) == ["2", "4", "1"]
    # the documented cursor (latest date seen) skips 3 and 5, which share the date of 1
    cursor = everything[2].date
    assert ids(box.envelopes_since(USER, cursor, 3)) == ["6"]
    assert ids(box.envelopes_since(USER, cursor - 1, 3)) == ["1", "3", "5"]


def test_since_is_exact_to_the_ms_across_a_day_boundary(folder: Folder, open_box: Open, sort: bool) -> None:
    midnight = int(datetime(2024, 3, 1, tzinfo=UTC).timestamp())
    name = folder(
        (mail("before"), midnight - 1),
        (mail("at"), midnight),
        (mail("after"), midnight + 1),
        (mail("old"), midnight - 3 * 86400),
    )
    box = open_box(name, sort=sort)
    ms = midnight * 1000

    def subjects(since: int) -> list[str]:
        return [e.subject for e in box.envelopes_since(USER, since, 10)]

    assert subjects(ms - 1001) == ["before", "at", "after"]
    assert subjects(ms - 1000) == ["at", "after"]  # 23:59:59.000 is not > itself
    assert subjects(ms - 1) == ["at", "after"]
    assert subjects(ms) == ["after"]
    assert subjects(ms + 999) == ["after"]
    assert subjects(ms + 1000) == []
    assert subjects(0) == ["old", "before", "at", "after"]


def test_a_message_arriving_between_pages_is_on_the_next_page(
    folder: Folder, open_box: Open, sort: bool, admin: imaplib.IMAP4
) -> None:
    name = folder(*((mail(f"m{i}"), T0 + i) for i in range(4)))
    box = open_box(name, sort=sort)
    page = box.envelopes_since(USER, 0, 2)
    assert [e.subject for e in page] == ["m0", "m1"]
    append(admin, name, mail("late"), T0 + 100)
    page = box.envelopes_since(USER, page[-1].date, 2)
    assert [e.subject for e in page] == ["m2", "m3"]
    assert [e.subject for e in box.envelopes_since(USER, page[-1].date, 2)] == ["late"]


def test_envelopes_are_fetched_once(folder: Folder, open_box: Open, sort: bool) -> None:
    box = open_box(folder(*((mail(f"m{i}"), T0 + i) for i in range(30))), sort=sort)
    wire = Wire(box)
    first = box.envelopes_since(USER, 0, 10)
    assert sum(b"ENVELOPE" in line for line in wire.sent) == 1
    assert box.envelopes_since(USER, 0, 10) == first
    assert sum(b"ENVELOPE" in line for line in wire.sent) == 1
    assert sum(b"INTERNALDATE" in line for line in wire.sent) == 2  # dates once, envelopes once
    assert any(b"UID SORT (ARRIVAL)" in line for line in wire.sent) is sort


def test_reconnects_and_a_recreated_folder_drops_the_cache(
    folder: Folder, open_box: Open, admin: imaplib.IMAP4
) -> None:
    """A dropped connection is reopened once, transparently; a new UIDVALIDITY empties the cache.

    While a session has the folder selected, Dovecot keeps serving the deleted one (with an
    untagged "NO Internal error"): the change shows at the next connection, closed or dropped.
    """
    name = folder((mail("first life"), T0))
    box = open_box(name)

    def drop() -> None:
        box._conn.sock.shutdown(socket.SHUT_RDWR)  # type: ignore[union-attr]

    for life, reconnect in [("second", box.close), ("third", drop)]:
        assert len(box.envelopes_since(USER, 0, 9)) == 1
        before, conn = box._uidvalidity, box._conn
        assert admin.delete(name)[0] == "OK" and admin.create(name)[0] == "OK"
        append(admin, name, mail(f"{life} life"), T0 + 1)
        reconnect()
        assert [e.subject for e in box.envelopes_since(USER, 0, 9)] == [f"{life} life"]
        assert box._uidvalidity != before and box._conn is not conn


# -- messages --------------------------------------------------------------------------------


def test_rfc2047_headers_are_decoded(folder: Folder, open_box: Open) -> None:
    raw = (
        b"Subject: =?utf-8?q?Gr=C3=BC=C3=9Fe?= =?iso-8859-1?b?5g==?= und mehr\r\n"
        b"From: =?utf-8?b?SsO2cmc=?= <j@x.org>\r\n"
        b'To: =?iso-8859-1?q?Ren=E9?= <r@x.org>, plain@x.org, "Doe, Jane" <jd@x.org>\r\n'
        b"Content-Type: text/plain; charset=utf-8\r\n\r\nhi\r\n"
    )
    box = open_box(folder((raw, T0)))
    (env,) = box.envelopes_since(USER, 0, 9)
    assert env.subject == "Grüßeæ und mehr"
    # addresses without display names, as mailparse (Maildir, mbox, mock) gives them
    assert env.fromAddr == "j@x.org"
    assert env.toAddrs == ("r@x.org", "plain@x.org", "jd@x.org")
    msg = box.message(USER, env.id)
    assert msg is not None and msg.envelope == env


@pytest.mark.parametrize(
    "content_type,encoding,payload,expected",
    [
        ("text/plain; charset=iso-8859-1", "8bit", "Grüße, Zoë".encode("latin-1"), "Grüße, Zoë"),
        ("text/plain; charset=windows-1252", "quoted-printable", b"caf=E9 =80 5", "café € 5"),
        ("text/plain; charset=koi8-r", "base64", b"0NLJ18XU", "привет"),
        ("text/plain; charset=x-unknown", "8bit", "ok ✓".encode(), "ok ✓"),
        ("text/plain", "8bit", b"no charset \xff", "no charset \ufffd"),
    ],
)
def test_bodies_in_other_charsets(
    folder: Folder, open_box: Open, content_type: str, encoding: str, payload: bytes, expected: str
) -> None:
    raw = (
        b"Subject: cs\r\nFrom: a@x.org\r\nMIME-Version: 1.0\r\nContent-Type: "
        + content_type.encode()
        + b"\r\nContent-Transfer-Encoding: "
        + encoding.encode()
        + b"\r\n\r\n"
        + payload
        + b"\r\n"
    )
    msg = open_box(folder((raw, T0))).message(USER, "1")
    assert msg is not None and msg.body.strip() == expected and msg.attachments == ()


def test_html_only_becomes_text_and_plain_wins_in_alternative(folder: Folder, open_box: Open) -> None:
    html = EmailMessage()
    html["Subject"] = "html"
    html.set_content(
        "<html><head><style>p{}</style></head><body><p>Hello &amp; <b>welcome</b>"
        "</p><ul><li>one</li><li>two</li></ul><script>x()</script></body></html>",
        subtype="html",
    )
    alt = EmailMessage()
    alt["Subject"] = "alt"
    alt.set_content("the plain one\n")
    alt.add_alternative("<p>the html one</p>", subtype="html")
    box = open_box(folder((html.as_bytes(), T0), (alt.as_bytes(), T0 + 1)))
    first, second = box.message(USER, "1"), box.message(USER, "2")
    assert first is not None and second is not None
    assert [line for line in first.body.splitlines() if line] == ["Hello & welcome", "- one", "- two"]
    assert second.body == "the plain one" and second.attachments == ()


def test_attachment_metadata(folder: Folder, open_box: Open) -> None:
    m = EmailMessage()
    m["Subject"] = "files"
    m.set_content("see attached\n")
    m.add_attachment(b"%PDF" * 1000, maintype="application", subtype="pdf", filename="r.pdf")
    m.add_attachment("ünïcode name\n", filename="Grüße.txt")
    m.add_attachment(b"\x89PNG" * 10, maintype="image", subtype="png", filename="p.png", disposition="inline")
    inner = EmailMessage()
    inner["Subject"] = "forwarded"
    inner.set_content("inner body")
    m.add_attachment(inner)
    msg = open_box(folder((m.as_bytes(), T0))).message(USER, "1")
    assert msg is not None and msg.body == "see attached"
    got = [(a.filename, a.mimeType, a.sizeBytes) for a in msg.attachments]
    assert got[:3] == [
        ("r.pdf", "application/pdf", 4000),
        ("Grüße.txt", "text/plain", len("ünïcode name\r\n".encode())),  # CRLF
        ("p.png", "image/png", 40),
    ]
    assert got[3][:2] == ("", "message/rfc822") and got[3][2] > 0


def test_a_20_mb_attachment_is_never_fetched(folder: Folder, open_box: Open) -> None:
    m = EmailMessage()
    m["Subject"] = "big"
    m.set_content("the text\n")
    big = bytes(range(256)) * (20 * 2**20 // 256)
    m.add_attachment(big, maintype="application", subtype="octet-stream", filename="big.bin")
    box = open_box(folder((m.as_bytes(), T0)))
    wire = Wire(box)
    assert [e.subject for e in box.envelopes_since(USER, 0, 9)] == ["big"]
    msg = box.message(USER, "1")
    assert msg is not None and msg.body == "the text"
    assert [(a.filename, a.sizeBytes) for a in msg.attachments] == [("big.bin", len(big))]
    assert wire.received < 20_000, wire.received
    sent = b"".join(wire.sent)
    assert re.findall(rb"(?:BODY|BINARY)(?:\.PEEK)?\[[^\]]*\]", sent) == [b"BODY.PEEK[1]"]
    assert not re.search(rb"RFC822(?:\.TEXT)?[ )]", sent)  # RFC822.SIZE only


def test_reading_never_sets_seen(folder: Folder, open_box: Open, admin: imaplib.IMAP4) -> None:
    name = folder(
        (mail("unread"), T0), (mail("read"), T0 + 1, "(\\Seen)"), (mail("flagged"), T0 + 2, "(\\Flagged)")
    )

    def flags() -> list[bytes]:
        admin.select(name, readonly=True)
        typ, data = admin.uid("FETCH", "1:*", "(FLAGS)")
        return sorted(d for d in data if isinstance(d, bytes))

    before = flags()
    box = open_box(name)
    box.envelopes_since(USER, 0, 9)
    for uid in "123":
        assert box.message(USER, uid) is not None
    assert flags() == before and b"\\Seen" not in before[0]
