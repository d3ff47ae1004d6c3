"""The IMAP mailbox provider: one folder of one IMAP account, read-only (stdlib imaplib).

    box = ImapMailbox("imap.example.com", user="ann@example.com")  # password from env/keyring
    box.envelopes_since("ann@example.com", 0, 20)

Ids are UIDs as strings. They are valid for one UIDVALIDITY of the folder: if the server changes
it (the folder was recreated), old ids may name other messages or none, and the envelope cache is
dropped (checked at each connect: Dovecot keeps serving a folder deleted under an open session).
Dates are INTERNALDATEs (arrival, whole seconds) in ms, not the Date header mailparse reads for
Maildir and mbox: SEARCH SINCE and SORT (ARRIVAL) work on INTERNALDATE, and cursors must agree
with them. Addresses and bodies follow mailparse's readings (bare addresses; its text decoding).

Reading never changes the mailbox: the folder is opened with EXAMINE and bodies are fetched with
BODY.PEEK, so \\Seen is never set. Attachment content is never fetched: sizes come from
BINARY.SIZE (or an estimate from BODYSTRUCTURE when the server lacks BINARY).

Hostile mail (SEC5): text parts are fetched partially (`BODY.PEEK[n]<0.N>`) within one budget
of mailparse.TEXT_MAX_BYTES per message (the message is then marked `cut`), BODYSTRUCTURE is
followed MIME_MAX_DEPTH deep and MIME_MAX_PARTS wide, subjects and addresses are cut to the
`providers.mail` bounds, and every exchange with the server stops at the ctx call's deadline
(E_TIMEOUT) as well as at `timeout`.
"""

from __future__ import annotations

import heapq
import imaplib
import re

from . import _imap_wire as wire
from . import mail as _mail
from . import mailparse as _parse
from ._imap_session import ImapSession
from .mail import Attachment, Envelope, Message

_UID = re.compile(r"[0-9]{1,10}")
DAY_MS = 86_400_000
ENVELOPE_ITEMS = "(UID INTERNALDATE ENVELOPE RFC822.SIZE)"
FETCH_ITEMS_PER_COMMAND = 100  # BODY.PEEK / BINARY.SIZE items per UID FETCH of one message
MAX_CACHED_ENVELOPES = 50_000  # dates are kept for every UID seen; envelopes up to this many


class ImapMailbox(ImapSession):
    """One IMAP folder as a Mailbox; `ssl`: True (IMAPS, port 993), "starttls" or False (143).

    `password=None` reads GEM_WORKBENCH_IMAP_PASSWORD_<ACCOUNT> (account id upper-cased, other
    characters as "_"), then GEM_WORKBENCH_IMAP_PASSWORD, then keyring (service
    "gem-workbench", username "user@host") if installed, at each connect, so nothing needs
    to be written in a notebook. `ssl_context` defaults to a verifying one. Connecting, logging
    in, reconnecting and the deadlines are `ImapSession`'s; this class reads the mail.
    """

    def __repr__(self) -> str:
        return (
            f"ImapMailbox(host={self.host!r}, port={self.port}, user={self.user!r}, "
            f"account_id={self.account_id!r}, ssl={self.ssl!r}, folder={self.folder!r})"
        )

    # -- the Mailbox interface -------------------------------------------------------------

    def accounts(self) -> list[str]:
        return [self.account_id]

    def envelopes_since(self, account: str, since: int, limit: int) -> list[Envelope]:
        """Envelopes with INTERNALDATE > since (ms), ordered by (date, numeric UID), at most limit.

        SINCE is day-granular (and in the server's time zone), so the search starts the day
        before `since` and exact dates filter the rest. With SORT (RFC 5256) the server orders
        the UIDs; without it the date of every UID found is fetched once and cached. Envelopes
        are fetched for the page only, and cached by UID.
        """
        if account != self.account_id or limit <= 0:
            return []
        return self._run(lambda conn: self._page(conn, since, limit))

    def message(self, account: str, id: str) -> Message | None:
        """Envelope, plain-text body (only text parts are fetched) and attachment metadata."""
        if account != self.account_id or not _UID.fullmatch(id):  # ASCII digits, 32 bits
            return None
        return self._run(lambda conn: self._message(conn, int(id)))

    # -- pages and messages ----------------------------------------------------------------

    def _page(self, conn: imaplib.IMAP4, since: int, limit: int) -> list[Envelope]:
        # mail that arrived meanwhile is announced only in reply to a command, and Dovecot's
        # SEARCH does not see it before it was announced: NOOP first
        self._check(conn.noop(), "NOOP")
        self._note_uidvalidity(conn)
        criteria = ["ALL"] if since < 2 * DAY_MS else ["SINCE", wire.imap_day(since - DAY_MS)]
        for _ in range(3):  # a message expunged between SEARCH and FETCH: search again
            page = self._page_uids(conn, since, limit, criteria)
            self._fetch_envelopes(conn, [u for u in page if u not in self._envelopes])
            gone = [u for u in page if u not in self._envelopes]
            if not gone:
                break
            for u in gone:
                self._dates.pop(u, None)
        return [self._envelopes[u] for u in page if u in self._envelopes]

    def _page_uids(self, conn: imaplib.IMAP4, since: int, limit: int, criteria: list[str]) -> list[int]:
        """The page's UIDs in (date, uid) order: from SORT if the server has it, else from the
        dates of every UID SEARCH found (each fetched once, then cached)."""
        if self._sort:
            # RFC 5256: ARRIVAL is the INTERNALDATE, ties in mailbox order, i.e. by UID
            found = conn.uid("SORT", "(ARRIVAL)", "UTF-8", *criteria)
            ordered = wire.numbers(self._check(found, "UID SORT"))
            start = self._first_after(conn, ordered, since, limit)
            return ordered[start : start + limit]
        # imaplib skips a None argument: no CHARSET
        found = conn.uid("SEARCH", None, *criteria)  # type: ignore[arg-type]
        uids = wire.numbers(self._check(found, "UID SEARCH"))
        self._fetch_dates(conn, [u for u in uids if u not in self._dates])
        return [
            u
            for _, u in heapq.nsmallest(
                limit, ((self._dates[u], u) for u in uids if self._dates.get(u, -1) > since)
            )
        ]

    def _first_after(self, conn: imaplib.IMAP4, ordered: list[int], since: int, step: int) -> int:
        """Index of the first UID dated after `since` in a date-ordered list; dates are fetched
        in chunks doubling from `step`, so a long run of older mail costs few round trips."""
        start = 0
        while start < len(ordered):
            chunk = ordered[start : start + max(step, 1)]
            self._fetch_dates(conn, [u for u in chunk if u not in self._dates])
            for i, u in enumerate(chunk):
                if self._dates.get(u, -1) > since:
                    return start + i
            start, step = start + len(chunk), step * 2
        return len(ordered)

    def _fetch_dates(self, conn: imaplib.IMAP4, uids: list[int]) -> None:
        for uid_set in wire.uid_sets(uids):
            data = self._check(conn.uid("FETCH", uid_set, "(UID INTERNALDATE)"), "UID FETCH")
            self._dates.update(wire.fetch_dates(data))

    def _fetch_envelopes(self, conn: imaplib.IMAP4, uids: list[int]) -> None:
        for uid_set in wire.uid_sets(uids):
            for item in self._fetch(conn, uid_set, ENVELOPE_ITEMS):
                if "UID" in item and "ENVELOPE" in item and "INTERNALDATE" in item:
                    self._remember(self._envelope(item))
        while len(self._envelopes) > MAX_CACHED_ENVELOPES:  # oldest cached first
            del self._envelopes[next(iter(self._envelopes))]

    def _envelope(self, item: wire.Fetched) -> Envelope:
        env = item["ENVELOPE"] if isinstance(item["ENVELOPE"], list) else []
        env = env + [None] * (10 - len(env))
        from_ = wire.addresses(env[2])
        to = wire.addresses(env[5])[: _mail.ADDRESSES_MAX]
        return Envelope(
            accountId=self.account_id,
            id=item["UID"].decode("ascii"),
            subject=_mail.cut(" ".join(_parse.clean(wire.text(env[1])).split()), _mail.SUBJECT_MAX_CHARS),
            fromAddr=_mail.cut(from_[0], _mail.ADDRESS_MAX_CHARS) if from_ else "",
            toAddrs=tuple(_mail.cut(a, _mail.ADDRESS_MAX_CHARS) for a in to),
            date=wire.internaldate_ms(item["INTERNALDATE"]),
        )

    def _remember(self, envelope: Envelope) -> None:
        uid = int(envelope.id)
        self._envelopes[uid] = envelope
        self._dates[uid] = envelope.date

    def _message(self, conn: imaplib.IMAP4, uid: int) -> Message | None:
        items = [
            i
            for i in self._fetch(conn, str(uid), "(UID INTERNALDATE ENVELOPE BODYSTRUCTURE)")
            if i.get("UID") == str(uid).encode() and "BODYSTRUCTURE" in i
        ]
        if not items:
            return None
        envelope = self._envelope(items[0])
        self._remember(envelope)
        count = [0]
        texts, files = wire.leaves(items[0]["BODYSTRUCTURE"], count=count)
        more = max(0, count[0] - _parse.MIME_MAX_PARTS)
        # only the text parts, within one budget for the message; attachments: their size only
        budget, cut, wanted = _parse.TEXT_MAX_BYTES, False, []
        fetched = []
        for p in texts:
            n = min(budget, p.size + 2 if p.size > 0 else budget)
            if n <= 0:
                cut = True
                continue
            cut = cut or p.size > n
            budget -= n
            fetched.append(p)
            wanted.append(f"BODY.PEEK[{p.section}]<0.{n}>")
        encoded = [p for p in files if p.encoding in ("base64", "quoted-printable")]
        if self._binary:
            wanted += [f"BINARY.SIZE[{p.section}]" for p in encoded]
        got: wire.Fetched = {}
        for at in range(0, len(wanted), FETCH_ITEMS_PER_COMMAND):
            chunk = wanted[at : at + FETCH_ITEMS_PER_COMMAND]
            for item in self._fetch(conn, str(uid), f"({' '.join(chunk)})"):
                got.update(item)
        bodies = []
        for p in fetched:
            text, part_cut = wire.part_text(
                p, wire.as_bytes(got.get(f"BODY[{p.section}]<0>", got.get(f"BODY[{p.section}]"))), cut=True
            )
            bodies.append(text)
            cut = cut or part_cut
        return Message(
            envelope=envelope,
            body="\n".join(b for b in bodies if b.strip()),
            attachments=tuple(
                Attachment(_mail.cut(p.filename, 1000), p.mime, wire.decoded_size(p, got)) for p in files
            ),
            cut=cut,
            more_attachments=more,
        )

    def _fetch(self, conn: imaplib.IMAP4, uid_set: str, items: str) -> list[wire.Fetched]:
        return wire.parse_fetch(self._check(conn.uid("FETCH", uid_set, items), "UID FETCH"))
