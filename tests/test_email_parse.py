"""RFC 822 bytes -> Envelope / Message: bad mail never crashes, bodies are plain text, attachments
are metadata only. Plus the date fallbacks of the Maildir, mbox and .eml providers."""

from __future__ import annotations

import base64
import mailbox
import os
from email.message import EmailMessage
from pathlib import Path

import pytest
from _mail import rfc822

from workbench.providers.maillocal import MaildirMailbox, MboxMailbox
from workbench.providers.mailmock import MockMailbox
from workbench.providers.mailparse import (
    from_line_date,
    html_to_text,
    parse_envelope,
    parse_message,
    split_mbox,
)

MARCH_4 = 1_709_539_200_000  # Mon, 04 Mar 2024 08:00:00 +0000


def parse(raw: bytes, fallback: int = 0):  # type: ignore[no-untyped-def]
    return parse_message(raw, account="a", id="1", fallback_date=fallback)


def test_plain_message_envelope_and_body() -> None:
    raw = (
        b"From: Ana Lima <ana@example.com>\r\nTo: Bo <bo@example.com>, cy@example.com\r\n"
        b"Subject: =?utf-8?q?Caf=C3=A9_tonight?=\r\nDate: Mon, 04 Mar 2024 09:00:00 +0100\r\n"
        b"\r\nSee you at 8.\r\nA.\r\n"
    )
    m = parse(raw)
    e = m.envelope
    assert (e.subject, e.fromAddr, e.toAddrs, e.date) == (
        "Café tonight",
        "ana@example.com",
        ("bo@example.com", "cy@example.com"),
        MARCH_4,
    )
    assert m.body == "See you at 8.\nA." and m.attachments == ()


def test_alternative_prefers_plain_text() -> None:
    msg = EmailMessage()
    msg["Subject"] = "alt"
    msg.set_content("the plain version")
    msg.add_alternative("<p>the <b>html</b> version</p>", subtype="html")
    m = parse(msg.as_bytes())
    assert m.body == "the plain version" and m.attachments == ()


def test_html_only_mail_is_converted_to_text() -> None:
    msg = EmailMessage()
    msg.set_content(
        "<html><head><style>p{color:red}</style><title>t</title></head><body>"
        "<h1>Hello&nbsp;there</h1><p>Line   one<br>line two &amp; more</p>"
        "<ul><li>first</li><li>second</li></ul><script>alert(1)</script></body></html>",
        subtype="html",
    )
    body = parse(msg.as_bytes()).body
    assert "<" not in body and "alert" not in body and "color" not in body
    assert body.splitlines() == [
        "Hello\xa0there",
        "",
        "Line one",
        "line two & more",
        "",
        "- first",
        "- second",
    ]
    assert html_to_text("<div>  <p>  hi <b>there</b>\n you</p>\n\n  <p>x</p></div>") == "hi there you\n\nx"


def test_html_to_text_keeps_pre_blocks() -> None:
    assert html_to_text("<pre>a\n  b</pre>") == "a\n  b"


@pytest.mark.parametrize(
    "raw, expected",
    [
        (b"Content-Type: text/plain; charset=iso-8859-1\r\n\r\ncaf\xe9\r\n", "café"),
        (b"Content-Type: text/plain; charset=utf-8\r\n\r\ncaf\xe9 ok\r\n", "caf\ufffd ok"),
        (b"Content-Type: text/plain; charset=x-no-such-charset\r\n\r\nna\xefve\r\n", "na\ufffdve"),
        (b"Content-Type: text/plain\r\n\r\n\xff\xfe raw bytes\r\n", "\ufffd\ufffd raw bytes"),
        (
            b"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n"
            b"!!!not base64 at all###\r\n",
            None,
        ),
    ],
)
def test_non_utf8_and_broken_charsets_decode_with_replacement(raw: bytes, expected: str | None) -> None:
    m = parse(b"Subject: x\r\n" + raw)
    assert isinstance(m.body, str)
    m.body.encode("utf-8")  # always valid text
    if expected is not None:
        assert m.body == expected


def test_raw_8bit_headers_become_valid_text() -> None:
    m = parse(b"Subject: Gr\xfc\xdfe aus K\xc3\xb6ln\r\nFrom: J\xf6rg <j@example.com>\r\n\r\nhi\r\n")
    m.envelope.subject.encode("utf-8")
    assert m.envelope.subject.endswith("aus Köln") and m.envelope.fromAddr == "j@example.com"


@pytest.mark.parametrize(
    "date_header",
    [None, b"yesterday at noon", b"Mon, 99 Foo 2024 99:99:99", b"Thu, 01 Jan 1960 00:00:00 +0000", b""],
)
def test_missing_or_unparsable_date_uses_the_fallback(date_header: bytes | None) -> None:
    head = b"" if date_header is None else b"Date: " + date_header + b"\r\n"
    raw = head + b"Subject: undated\r\n\r\nbody\r\n"
    assert parse(raw, fallback=123_000).envelope.date == 123_000
    assert parse_envelope(raw, account="a", id="1").date == 0


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x00\x01\x02\xff garbage with no headers at all",
        b"no colon header line\r\nSubject: after junk\r\n\r\nbody",
        b'Content-Type: multipart/mixed; boundary="zz"\r\nSubject: cut\r\n\r\n--zz\r\n'
        b"Content-Type: text/plain\r\n\r\npart one, never closed",
        b"Content-Type: multipart/mixed\r\nSubject: no boundary\r\n\r\njust text",
        b"From: <<<>>>@@@\r\nTo: ,,,;;;\r\nSubject: =?bogus?x?abc?=\r\nContent-Type: text/\r\n\r\nx",
        b'Subject: x\r\nContent-Type: application/pdf; name="a.pdf"\r\n'
        b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0=\r\n",
    ],
)
def test_malformed_messages_still_give_an_envelope(raw: bytes) -> None:
    m = parse(raw, fallback=7)
    assert m.envelope.accountId == "a" and m.envelope.id == "1" and m.envelope.date == 7
    assert isinstance(m.envelope.subject, str) and isinstance(m.body, str)
    m.to_json()


def test_truncated_multipart_keeps_what_it_found() -> None:
    raw = (
        b'Content-Type: multipart/mixed; boundary="zz"\r\nSubject: cut\r\n\r\n--zz\r\n'
        b"Content-Type: text/plain\r\n\r\npart one, never closed"
    )
    assert parse(raw).body == "part one, never closed"


def test_attachments_metadata_and_sizes() -> None:
    msg = EmailMessage()
    msg["Subject"] = "files"
    msg.set_content("body text")
    msg.add_attachment(
        b"%PDF" + bytes(range(256)) * 40, maintype="application", subtype="pdf", filename="report.pdf"
    )
    msg.add_attachment("naïve text attachment\n", subtype="csv", filename="données.csv")
    inner = EmailMessage()
    inner["Subject"] = "forwarded"
    inner.set_content("inner body")
    msg.add_attachment(inner)
    m = parse(msg.as_bytes())
    assert m.body == "body text"
    assert [(a.filename, a.mimeType) for a in m.attachments] == [
        ("report.pdf", "application/pdf"),
        ("données.csv", "text/csv"),
        ("", "message/rfc822"),
    ]
    assert m.attachments[0].sizeBytes == 4 + 256 * 40
    assert m.attachments[1].sizeBytes == len("naïve text attachment\n".encode())
    assert m.attachments[2].sizeBytes > 0


@pytest.mark.parametrize("n", [0, 1, 2, 3, 57, 1000, 1001, 1002])
def test_base64_size_is_exact_from_the_encoded_length(n: int) -> None:
    data = bytes(i % 251 for i in range(n))
    raw = (
        b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n"
        b"x\r\n--b\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; "
        b"filename=d.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        + base64.encodebytes(data)
        + b"\r\n--b--\r\n"
    )
    assert parse(raw).attachments[0].sizeBytes == n


def test_inline_image_without_name_is_an_attachment() -> None:
    msg = EmailMessage()
    msg.set_content("<p>look</p>", subtype="html")
    msg.add_related(b"\x89PNG....", maintype="image", subtype="png", cid="<img1>")
    m = parse(msg.as_bytes())
    assert m.body == "look" and [a.mimeType for a in m.attachments] == ["image/png"]


# --- mbox splitting and the providers' date fallbacks --------------------------------------------


def test_split_mbox_matches_stdlib_mailbox(tmp_path: Path) -> None:
    path = tmp_path / "in.mbox"
    box = mailbox.mbox(path)
    try:
        for i in range(5):
            m = rfc822({"subject": f"s{i}", "body": f"From the start\nline {i}\n\n"})
            box.add(m)
        box.flush()
        expected = [box.get_bytes(k) for k in box.keys()]
    finally:
        box.close()
    with path.open("rb") as fp:
        parts = list(split_mbox(fp))
        got = []
        for _line, _headers, start, stop in parts:
            fp.seek(start)
            got.append(fp.read(stop - start))
    assert got == expected
    assert [parse_envelope(h, account="a", id="x").subject for _, h, _, _ in parts] == [
        f"s{i}" for i in range(5)
    ]


def test_from_line_date() -> None:
    assert from_line_date(b"From MAILER-DAEMON Mon Mar  4 08:00:00 2024\n") == MARCH_4
    assert from_line_date(b"From someone@example.com Mon Mar 4 08:00:00 2024 +0000\n") == MARCH_4
    assert from_line_date(b"From nobody\n") is None


def test_mbox_undated_message_uses_its_from_line(tmp_path: Path) -> None:
    path = tmp_path / "undated.mbox"
    path.write_bytes(
        b"From x@example.com Mon Mar  4 08:00:00 2024\nSubject: no date\n\nbody\n\n"
        b"From y@example.com\nSubject: nothing at all\n\nbody\n"
    )
    box = MboxMailbox(path)
    assert box.accounts() == ["undated"]
    dates = [(e.subject, e.date) for e in box.envelopes_since("undated", -1, 10)]
    assert dates == [("nothing at all", 0), ("no date", MARCH_4)]
    assert box.message("undated", "0").envelope.date == MARCH_4  # type: ignore[union-attr]
    assert MockMailbox.from_mbox(path).message("undated", "1").envelope.date == 0  # type: ignore[union-attr]


def test_maildir_undated_message_uses_the_file_mtime(tmp_path: Path) -> None:
    md = mailbox.Maildir(tmp_path / "acct", create=True)
    key = md.add(b"Subject: no date\n\nbody\n")
    path = next((tmp_path / "acct").glob(f"*/{key}*"))
    os.utime(path, (MARCH_4 / 1000, MARCH_4 / 1000))
    box = MaildirMailbox(tmp_path / "acct")
    assert [(e.id, e.date) for e in box.envelopes_since("acct", -1, 10)] == [(key, MARCH_4)]
    assert box.message("acct", key).body == "body"  # type: ignore[union-attr]


def test_maildir_ignores_dot_files_and_tmp(tmp_path: Path) -> None:
    md = mailbox.Maildir(tmp_path / "acct", create=True)
    md.add(b"Subject: real\n\nbody\n")
    (tmp_path / "acct" / "cur" / ".hidden").write_bytes(b"Subject: hidden\n\n")
    (tmp_path / "acct" / "tmp" / "123.partial").write_bytes(b"Subject: half-delivered\n\n")
    box = MaildirMailbox(tmp_path / "acct")
    assert [e.subject for e in box.envelopes_since("acct", -1, 10)] == ["real"]


def test_eml_folder_undated_message_uses_the_file_mtime(tmp_path: Path) -> None:
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "a.eml").write_bytes(b"Subject: undated\n\nbody\n")
    (folder / "b.eml").write_bytes(b"\xff\xfe\x00 broken")
    os.utime(folder / "a.eml", (MARCH_4 / 1000, MARCH_4 / 1000))
    box = MockMailbox.from_eml(folder)
    assert box.accounts() == ["inbox"]
    assert box.message("inbox", "a").envelope.date == MARCH_4  # type: ignore[union-attr]
    assert box.message("inbox", "b") is not None
