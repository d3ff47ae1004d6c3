"""IMAP response parsing without a server: what Dovecot happened not to send in tests/test_imap.py
(escaped quoted strings, RFC 2231 file names, zone offsets, servers without BINARY)."""

from __future__ import annotations

from workbench.providers import _imap_wire as wire


def test_fetch_items_with_literals_escapes_and_nil() -> None:
    data = [
        (b"1 (UID 7 ENVELOPE (NIL {5}", b'he"l)'),
        b' (("A \\"q\\" \\\\ b" NIL "a" "x.org")) NIL NIL NIL NIL NIL NIL NIL NIL))',
        b"2 (UID 8 FLAGS (\\Seen))",
        None,
    ]
    first, second = wire.parse_fetch(data)
    assert first["UID"] == b"7"
    env = first["ENVELOPE"]
    assert env[0] is None and env[1] == b'he"l)'
    assert env[2] == [[b'A "q" \\ b', None, b"a", b"x.org"]]
    assert wire.addresses(env[2]) == ("a@x.org",)
    assert second == {"UID": b"8", "FLAGS": [b"\\Seen"]}
    assert wire.parse_fetch([b"3 (UID 9 ENVELOPE (NIL"]) == [{"UID": b"9", "ENVELOPE": [None]}]


def test_dates_days_and_uid_sets() -> None:
    assert wire.internaldate_ms(b"14-Nov-2023 22:13:20 +0000") == 1_700_000_000_000
    assert wire.internaldate_ms(b" 4-Jan-2024 01:30:00 +0130") == 1_704_326_400_000  # midnight UTC
    assert wire.fetch_dates([b'5 (UID 12 INTERNALDATE "14-Nov-2023 22:13:20 +0000")']) == {
        12: 1_700_000_000_000
    }
    assert wire.imap_day(1_700_000_000_000) == "14-Nov-2023"
    assert wire.imap_day(2**62) == "31-Dec-9999"  # no overflow for a cursor far ahead
    assert wire.uid_sets([5, 1, 2, 3, 9, 10]) == ["1:3,5,9:10"]
    sets = wire.uid_sets(list(range(1, 4000, 2)), max_chars=50)
    assert all(len(s) <= 50 for s in sets)
    assert [int(u) for s in sets for u in s.split(",")] == list(range(1, 4000, 2))
    # RFC 2047: the space between two encoded words goes; an unknown charset still decodes
    assert wire.text(b"=?utf-8?q?caf=C3=A9?= =?bogus?q?x?= ok") == "caféx ok"


def test_bodystructure_leaves() -> None:
    plain = [
        b"text",
        b"plain",
        [b"charset", b"iso-8859-1"],
        None,
        None,
        b"quoted-printable",
        b"120",
        b"3",
        None,
        None,
        None,
        None,
    ]
    html = [b"text", b"html", [b"charset", b"utf-8"], None, None, b"7bit", b"300", b"9"]
    pdf = [
        b"application",
        b"pdf",
        None,
        None,
        None,
        b"base64",
        b"7800",
        None,
        [b"attachment", [b"filename*", b"utf-8''Gr%C3%BC%C3%9Fe.pdf"]],
        None,
        None,
    ]
    doc = [[[plain, html, b"alternative"], pdf, b"mixed", [b"boundary", b"x"], None, None]][0]
    texts, files = wire.leaves(doc)
    assert [(p.section, p.mime, p.params["charset"]) for p in texts] == [("1.1", "text/plain", "iso-8859-1")]
    assert [(p.section, p.filename, p.mime) for p in files] == [("2", "Grüße.pdf", "application/pdf")]
    assert wire.decoded_size(files[0], {}) == 5700  # estimated without BINARY
    assert wire.decoded_size(files[0], {"BINARY.SIZE[2]": b"5698"}) == 5698
    assert wire.leaves(html)[0][0].section == "1"
    assert wire.part_text(texts[0], b"caf=E9=\r\n au lait") == "café au lait"
