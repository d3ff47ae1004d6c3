"""The issue-5 IMAP benchmark: a page of 200 envelopes from a Dovecot on loopback, vs raw imaplib.

The server is tests/_dovecot.py's (the one tests/test_imap.py uses), started and stopped here, on
a folder of 2,000 messages written as Maildir files. Nothing here asserts a time: `run.py` prints
the figures and ratios (there is no target).
"""

from __future__ import annotations

import functools
import imaplib
import ssl
import statistics
import sys
from email.message import EmailMessage
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/_dovecot.py

from _dovecot import PASSWORD, USER, add_messages, running_dovecot  # noqa: E402
from benchlib import QUICK, Figures, Sizes, no_gc, paired_median_ns, time_ns  # noqa: E402

from workbench.providers.imap import ENVELOPE_ITEMS, ImapMailbox  # noqa: E402

MESSAGES = 2000
PAGE = 200
T0 = 1_700_000_000


def _folder(maildir: Path, count: int = MESSAGES) -> None:
    """2,000 small messages (`count`), three per second of INTERNALDATE (equal dates are common)."""
    messages = []
    for i in range(count):
        m = EmailMessage()
        m["Subject"] = f"Message {i}: quarterly report ünïcode"
        m["From"] = f"Sender {i % 17} <sender{i % 17}@example.com>"
        m["To"] = "tester@example.com, other@example.org"
        m.set_content(f"body {i}\n" * 20)
        messages.append((m, float(T0 + i // 3)))
    add_messages(maildir, messages)


def bench_imap_page(sizes: Sizes = QUICK) -> Figures:
    """envelopes_since(acct, 0, 200) on IMAPS: cold (new mailbox: connect, TLS, login, EXAMINE,
    all dates, 200 envelopes) and warm (same mailbox, cache filled; and cache emptied), each
    against raw imaplib `UID FETCH 1:200 (UID INTERNALDATE ENVELOPE RFC822.SIZE)` — cold with
    its own connect and login, warm on an open connection. Medians, alternating.
    """
    context = ssl._create_unverified_context()  # the server's certificate is self-signed
    count = 2 * PAGE if sizes.smoke else MESSAGES  # (writing and indexing them was most of the work)
    with running_dovecot(functools.partial(_folder, count=count)) as server:

        def box() -> ImapMailbox:
            return ImapMailbox(
                "127.0.0.1", server.imaps_port, user=USER, password=PASSWORD, ssl_context=context
            )

        def connect() -> imaplib.IMAP4:
            conn = imaplib.IMAP4_SSL("127.0.0.1", server.imaps_port, ssl_context=context)
            conn.login(USER, PASSWORD)
            conn.select("INBOX", readonly=True)
            return conn

        def page_cold() -> None:
            with box() as b:
                assert len(b.envelopes_since(USER, 0, PAGE)) == PAGE

        def raw_cold() -> None:
            conn = connect()
            conn.uid("FETCH", f"1:{PAGE}", ENVELOPE_ITEMS)
            conn.logout()

        with no_gc():
            cold, cold_raw = paired_median_ns(page_cold, raw_cold, sizes.batches, warmup=2)
        reps = sizes.batches * 4
        with box() as warm_box, no_gc():
            raw = connect()
            try:

                def page_uncached() -> None:
                    warm_box._dates.clear()  # as on a new mailbox, but on an open connection
                    warm_box._envelopes.clear()
                    warm_box.envelopes_since(USER, 0, PAGE)

                def raw_fetch() -> None:
                    raw.uid("FETCH", f"1:{PAGE}", ENVELOPE_ITEMS)
                    raw.untagged_responses.clear()

                uncached, raw_warm = paired_median_ns(page_uncached, raw_fetch, reps, warmup=3)
                warm_box.envelopes_since(USER, 0, PAGE)
                warm = statistics.median(
                    time_ns(lambda: warm_box.envelopes_since(USER, 0, PAGE)) for _ in range(reps)
                )
            finally:
                raw.logout()
    return {
        "messages": count,
        "cold_ms": cold / 1e6,
        "cold_raw_ms": cold_raw / 1e6,
        "cold_ratio": cold / cold_raw,
        "warm_ms": warm / 1e6,
        "uncached_ms": uncached / 1e6,
        "raw_ms": raw_warm / 1e6,
        "warm_ratio": warm / raw_warm,
        "uncached_ratio": uncached / raw_warm,
    }
