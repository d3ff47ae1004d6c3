"""The mock mailbox: messages in memory, per account sorted by (date, id).

A page of `envelopes_since` is one `bisect` and a slice — O(log n + limit) — so a
1,000,000-message mailbox answers as fast as a small one. Loaded from a gem's
`fixtures/mailbox.json` (a list of messages shaped as getMessage returns them), a folder of
`.eml` files, or an mbox file; `add` puts more in, dating undated mail by a `MockClock`.

Hostile fixtures (SEC7): a `mailbox.json` over MAILBOX_JSON_MAX_BYTES, nested too deeply, not
JSON or of the wrong shape is a ValueError naming the place (`workbench.open` turns it into an
E_MANIFEST error); lone surrogates in its strings are stored as U+FFFD (as ctx.storage does).
`.eml` and mbox files are parsed as streams within mailparse's bounds; what is not a regular
file is skipped. Sizes of what getMessage returns are bounded at the ctx door (SEC5).
"""

from __future__ import annotations

import functools
import itertools
import os
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._text import well_formed
from ._regular import open_regular_file
from .mail import ADDRESS_MAX_CHARS, Attachment, Envelope, Message, cut

__all__ = ["DEFAULT_START", "DateIndex", "MockClock", "MockMailbox"]

DEFAULT_START = 1_704_067_200_000  # 2024-01-01T00:00:00Z: an empty mock mailbox's clock
TICK = 1000  # undated mail is stamped one second apart (Date: resolution)
MAX_DATE = 2**53 - 1  # JavaScript's largest safe integer
_GENERATIONS = itertools.count(1)  # MockMailbox._changes: each content of a mailbox its own number
_FIELDS = ("accountId", "id", "subject", "fromAddr", "toAddrs", "date", "body", "attachments")
MAILBOX_JSON_MAX_BYTES = 256 * 1024 * 1024  # a fixtures/mailbox.json larger than this is refused


def _short(v: object) -> str:
    if isinstance(v, (list, dict)):
        return type(v).__name__
    text = repr(v)
    return text if len(text) <= 80 else text[:79] + "…"


# Envelope((accountId, id, subject, fromAddr, toAddrs, date)) without NamedTuple's Python-level
# __new__: a listSince page makes hundreds
_envelope = functools.partial(tuple.__new__, Envelope)


class DateIndex:
    """Ids of one account sorted by (date, id); a page since a date is a bisect and a slice."""

    __slots__ = ("dates", "ids")

    def __init__(self, pairs: Iterable[tuple[int, str]] = ()) -> None:
        ordered = sorted(pairs)
        self.dates = array("q", [d for d, _ in ordered])
        self.ids = [i for _, i in ordered]

    def __len__(self) -> int:
        return len(self.ids)

    def insert(self, date: int, id: str) -> None:
        lo = bisect_left(self.dates, date)
        at = bisect_left(self.ids, id, lo, bisect_right(self.dates, date, lo))
        self.dates.insert(at, date)
        self.ids.insert(at, id)

    def since(self, since: float, limit: int) -> list[str]:
        """Ids with date > since, oldest first, at most `limit`."""
        start = bisect_right(self.dates, since)
        return self.ids[start : start + limit]


class MockClock:
    """The mock mailbox's clock (ms since the epoch): dates mail that is added without one."""

    def __init__(self, start: int = DEFAULT_START) -> None:
        self._now = _ms(start, "start")

    def now(self) -> int:
        return self._now

    def set(self, ms: int) -> int:
        self._now = _ms(ms, "ms")
        return self._now

    def advance(self, ms: int = TICK) -> int:
        self._now = _ms(self._now + _int(ms, "ms"), "ms")
        return self._now

    def __repr__(self) -> str:
        when = datetime.fromtimestamp(self._now / 1000, UTC)
        return f"<MockClock {self._now} ({when:%Y-%m-%d %H:%M:%S.%f}"[:-3] + " UTC)>"


def _int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and v.is_integer():
            return int(v)
        raise ValueError(f"{what}: expected an integer (ms since the epoch), got {_short(v)}")
    return v


def _ms(v: Any, what: str) -> int:
    v = _int(v, what)
    if not 0 <= v <= MAX_DATE:
        raise ValueError(f"{what}: {v} is outside 0..{MAX_DATE} ms since the epoch")
    return v


def _date(v: Any, what: str) -> int:
    """An int of ms, an ISO 8601 string (no zone = UTC) or a datetime."""
    from .mailparse import date_ms

    if isinstance(v, str):
        try:
            v = datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{what}: {_short(v)} is not ms since the epoch or an ISO 8601 date") from None
    if isinstance(v, datetime):
        v = date_ms(v)
    return _ms(v, what)


def _str(d: dict[str, Any], key: str, where: str, default: str = "") -> str:
    v = d.get(key, default)
    if not isinstance(v, str):
        raise ValueError(f"{where}/{key}: expected a string, got {type(v).__name__}")
    return well_formed(v)


def _attachments(v: Any, where: str) -> tuple[Attachment, ...]:
    if not isinstance(v, list):
        raise ValueError(f"{where}/attachments: expected a list of {{filename, mimeType, sizeBytes}}")
    out = []
    for i, a in enumerate(v):
        w = f"{where}/attachments/{i}"
        if not isinstance(a, dict) or set(a) - {"filename", "mimeType", "sizeBytes"}:
            raise ValueError(f"{w}: expected {{filename, mimeType, sizeBytes}} only (no content)")
        size = a.get("sizeBytes", 0)
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(f"{w}/sizeBytes: expected an integer >= 0, got {_short(size)}")
        out.append(
            Attachment(_str(a, "filename", w), _str(a, "mimeType", w, "application/octet-stream"), size)
        )
    return tuple(out)


def _record(m: Message) -> tuple[Any, ...]:
    e = m.envelope
    if m.cut or m.more_attachments:  # parsed from a huge or hostile .eml / mbox (SEC5)
        return (e.date, e.subject, e.fromAddr, e.toAddrs, m.body, m.attachments, m.cut, m.more_attachments)
    return (e.date, e.subject, e.fromAddr, e.toAddrs, m.body, m.attachments)


class MockMailbox:
    """Messages in memory. Providers are plain storage: no permission or paging rule here."""

    def __init__(
        self,
        messages: Iterable[Message] = (),
        *,
        accounts: Iterable[str] = (),
        clock: MockClock | None = None,
    ) -> None:
        # per account: id -> (date, subject, fromAddr, toAddrs, body, attachments[, cut, more])
        self._records: dict[str, dict[str, tuple[Any, ...]]] = {a: {} for a in accounts}
        pairs: dict[str, list[tuple[int, str]]] = {a: [] for a in self._records}
        latest = None
        for m in messages:
            e = m.envelope
            records = self._records.setdefault(e.accountId, {})
            if e.id in records:
                raise ValueError(f"account {e.accountId!r} has two messages with id {e.id!r}")
            records[e.id] = _record(m)
            pairs.setdefault(e.accountId, []).append((e.date, e.id))
            latest = e.date if latest is None else max(latest, e.date)
        self._index = {a: DateIndex(p) for a, p in pairs.items()}
        self.clock = clock or MockClock(DEFAULT_START if latest is None else latest)
        self._seq = 0
        # which content it holds, a number no other content of any mailbox had: a restore to the
        # content it holds does nothing
        self._changes = next(_GENERATIONS)

    def __len__(self) -> int:
        return sum(len(r) for r in self._records.values())

    def __repr__(self) -> str:
        return f"<MockMailbox: {len(self)} messages in {len(self._records)} accounts>"

    # -- the Mailbox interface ------------------------------------------------------------
    def accounts(self) -> list[str]:
        return list(self._records)

    def envelopes_since(self, account: str, since: int, limit: int) -> list[Envelope]:
        index = self._index.get(account)
        if index is None:
            return []
        records = self._records[account]
        return [
            _envelope((account, i, (r := records[i])[1], r[2], r[3], r[0])) for i in index.since(since, limit)
        ]

    def message(self, account: str, id: str) -> Message | None:
        rec = self._records.get(account, {}).get(id)
        if rec is None:
            return None
        return Message(self._envelope(account, id, rec), rec[4], rec[5], *rec[6:])

    @staticmethod
    def _envelope(account: str, id: str, rec: tuple[Any, ...]) -> Envelope:
        return Envelope(account, id, rec[1], rec[2], rec[3], rec[0])

    # -- the bench's state part (ctx/email_state.py) ------------------------------------
    def saved(self) -> tuple[Any, ...]:
        """What `put_back` needs to make the mailbox as it is now (records are immutable
        tuples: shared, not copied)."""
        index = {a: (array("q", i.dates), list(i.ids)) for a, i in self._index.items()}
        records = {a: dict(r) for a, r in self._records.items()}
        return (records, index, self.clock.now(), self._seq, self._changes)

    def put_back(self, saved: tuple[Any, ...]) -> None:
        """The mailbox as it was at `saved` (its clock object stays: the bench shows it)."""
        records, index, now, self._seq, changes = saved
        self.clock.set(now)
        if changes == self._changes:  # nothing added since: as it was
            return
        self._changes = changes
        self._records = {a: dict(r) for a, r in records.items()}
        self._index = {}
        for a, (dates, ids) in index.items():
            i = DateIndex()
            i.dates, i.ids = array("q", dates), list(ids)
            self._index[a] = i

    def dicts(self) -> list[dict[str, Any]]:
        """Every message as fixtures/mailbox.json holds it, unbounded, ordered by (accountId,
        date, id)."""
        out = []
        for account in sorted(self._records):
            index = self._index.get(account)
            for id in index.ids if index is not None else ():
                rec = self._records[account][id]
                out.append(
                    {
                        "accountId": account,
                        "id": id,
                        "subject": rec[1],
                        "fromAddr": rec[2],
                        "toAddrs": list(rec[3]),
                        "date": rec[0],
                        "body": rec[4],
                        "attachments": [
                            {"filename": a.filename, "mimeType": a.mimeType, "sizeBytes": a.sizeBytes}
                            for a in rec[5]
                        ],
                    }
                )
        return out

    # -- adding mail ----------------------------------------------------------------------
    def add(self, message: Message) -> None:
        e = message.envelope
        records = self._records.setdefault(e.accountId, {})
        if e.id in records:
            raise ValueError(f"account {e.accountId!r} already has a message with id {e.id!r}")
        records[e.id] = _record(message)
        self._changes = next(_GENERATIONS)
        self._index.setdefault(e.accountId, DateIndex()).insert(e.date, e.id)
        if e.date > self.clock.now():  # the clock never runs behind the newest mail
            self.clock.set(e.date)

    def _new_id(self, account: str, taken: set[tuple[str, str]]) -> str:
        while True:
            self._seq += 1
            id = f"m{self._seq:04d}"
            if id not in self._records.get(account, {}) and (account, id) not in taken:
                return id

    def add_dicts(self, items: Any, where: str = "") -> list[Envelope]:
        """Add messages given as getMessage-shaped dicts; all or none (ValueError names the field).

        Missing `id`: a new one (`m0001`, …). Missing `accountId`: the only account, if there is
        exactly one. Missing `date`: the clock advanced by one second (TICK), so undated mail is
        newer than everything before it; pass `date` to set it (equal dates included).
        """
        if isinstance(items, dict):
            items = [items]
        if not isinstance(items, list):
            raise ValueError(f"{where or '/'}: expected a message object or a list of them")
        staged: list[dict[str, Any]] = []
        taken: set[tuple[str, str]] = set()
        for i, d in enumerate(items):
            w = f"{where}/{i}"
            if not isinstance(d, dict):
                raise ValueError(f"{w}: expected an object with {', '.join(_FIELDS)}")
            unknown = sorted(set(d) - set(_FIELDS))
            if unknown:
                raise ValueError(f"{w}/{unknown[0]}: unknown field (fields: {', '.join(_FIELDS)})")
            account = d.get("accountId")
            if account is None:
                known = self.accounts()
                if len(known) != 1:
                    raise ValueError(
                        f"{w}/accountId: required (the mailbox has "
                        f"{len(known)} accounts{': ' + ', '.join(known) if known else ''})"
                    )
                account = known[0]
            if not isinstance(account, str) or not account:
                raise ValueError(f"{w}/accountId: expected a non-empty string, got {_short(account)}")
            account = well_formed(account)
            id = d.get("id")
            if id is not None and (not isinstance(id, str) or not id):
                raise ValueError(f"{w}/id: expected a non-empty string, got {_short(id)}")
            id = None if id is None else well_formed(id)
            if id is not None and (id in self._records.get(account, {}) or (account, id) in taken):
                raise ValueError(f"{w}/id: account {account!r} already has a message {id!r}")
            to = d.get("toAddrs", [])
            if not isinstance(to, list) or not all(isinstance(a, str) for a in to):
                raise ValueError(f"{w}/toAddrs: expected a list of strings")
            staged.append(
                {
                    "accountId": account,
                    "id": id,
                    "subject": _str(d, "subject", w),
                    "fromAddr": _str(d, "fromAddr", w),
                    "toAddrs": tuple(cut(well_formed(a), ADDRESS_MAX_CHARS) for a in to),
                    "date": None if d.get("date") is None else _date(d["date"], f"{w}/date"),
                    "body": _str(d, "body", w),
                    "attachments": _attachments(d.get("attachments", []), w),
                }
            )
            if id is not None:
                taken.add((account, id))
        out = []
        for s in staged:
            if s["id"] is None:
                s["id"] = self._new_id(s["accountId"], taken)
            if s["date"] is None:
                s["date"] = self.clock.advance(TICK)
            env = Envelope(s["accountId"], s["id"], s["subject"], s["fromAddr"], s["toAddrs"], s["date"])
            self.add(Message(env, s["body"], s["attachments"]))
            out.append(env)
        return out

    # -- loading --------------------------------------------------------------------------
    @classmethod
    def from_json(cls, path: str | os.PathLike[str], *, clock: MockClock | None = None) -> MockMailbox:
        """A list of getMessage-shaped objects; undated ones are dated after the dated ones."""
        import json

        try:
            with open_regular_file(path) as fp:
                size = os.fstat(fp.fileno()).st_size
                if size > MAILBOX_JSON_MAX_BYTES:
                    raise ValueError(
                        f"{size:,} bytes, over the {MAILBOX_JSON_MAX_BYTES:,} a mailbox "
                        "fixture may hold (MAILBOX_JSON_MAX_BYTES)"
                    )
                text = fp.read(MAILBOX_JSON_MAX_BYTES + 1).decode("utf-8")
            items = json.loads(text)
        except OSError as exc:
            raise ValueError(f"cannot be read ({exc.strerror or exc})") from None
        except RecursionError:
            raise ValueError("nested too deeply to be a list of messages") from None
        if not isinstance(items, list):
            raise ValueError("/: expected a list of messages")
        latest = None
        for i, d in enumerate(items):
            if isinstance(d, dict) and d.get("date") is not None:
                ms = _date(d["date"], f"/{i}/date")
                latest = ms if latest is None else max(latest, ms)
        box = cls(clock=clock)
        if latest is not None and latest > box.clock.now():
            box.clock.set(latest)  # undated fixtures come after the dated ones
        box.add_dicts(items)
        return box

    @classmethod
    def from_eml(cls, folder: str | os.PathLike[str]) -> MockMailbox:
        """`*.eml` files of a folder (account = the folder's name; each subfolder with `.eml`
        files is an account of its own); id = the file name without `.eml`."""
        from .mailparse import parse_message

        root = Path(folder)
        messages = []
        for sub in [root, *sorted(p for p in root.iterdir() if p.is_dir())]:
            for f in sorted(sub.glob("*.eml")):
                try:
                    fp = open_regular_file(f)
                except OSError:  # a FIFO, device, folder or broken link named *.eml: skipped
                    continue
                with fp:  # streamed within mailparse's bounds
                    mtime = os.fstat(fp.fileno()).st_mtime_ns // 1_000_000
                    messages.append(parse_message(fp, account=sub.name, id=f.stem, fallback_date=mtime))
        return cls(messages)

    @classmethod
    def from_mbox(cls, path: str | os.PathLike[str], *, account: str | None = None) -> MockMailbox:
        """Every message of an mbox file, parsed into memory (id = its position, from 0)."""
        from .mailparse import from_line_date, parse_message, split_mbox

        p = Path(path)
        account = account or (p.stem if p.suffix == ".mbox" else p.name)
        messages = []

        with open_regular_file(p) as fp:
            parts = list(split_mbox(fp))
            for key, (from_line, _headers, start, stop) in enumerate(parts):
                fp.seek(start)
                messages.append(
                    parse_message(
                        fp,
                        account=account,
                        id=str(key),
                        limit=stop - start,
                        fallback_date=from_line_date(from_line) or 0,
                    )
                )
        return cls(messages, accounts=[account])
