"""ctx.email (E1–E6): the rules, once, over any Mailbox provider and for both runners.

E1 the tool may read email only with `"email": {"read": true}` at the manifest's top level
   (or the draft shorthand `"email": true`) and in its own permissions; otherwise every call
   is E_PERM_DENIED naming both fields (JS tools get no `ctx.email` at all).
E2 only accounts the user allowed (`bench.email.allow(...)`): none at open; "all" also covers
   accounts added later; any other account is E_PERM_DENIED naming it.
E3 read-only: there is no method that sends, moves or deletes.
E4 `listSince({accountId?, since=0, limit=20})`: envelopes with date > since, oldest first,
   ordered by (date, accountId, id); `cursor` = the latest date returned (= `since` when none);
   no accountId = every allowed account, merged. `limit` is an integer >= 1; over 200 it is
   capped at 200 (the workbench's reading of "max 200": it does not fail).
E5 `getMessage({accountId, id})`: envelope + `body` (plain text) + `attachments`
   [{filename, mimeType, sizeBytes}] without content; an unknown id is E_NOT_FOUND.
E6 `email.onNewMessage` triggers get the envelope only (`bench.email.arrive`, in `bench/mail.py`).

Options may be given as one object (as in JS) or as Python keywords; `null` means absent;
an unknown option is E_INVALID_ARGUMENT (a typo would otherwise widen the query silently).

Hostile arguments and mail (SEC5, SEC7): every bad argument (wrong type, NaN, infinity, a
string `since`, lone surrogates in an id) is E_INVALID_ARGUMENT, never E_INTERNAL; a `since`
beyond ±2**62 ms reads as the far future or past; values are echoed in messages cut short.
What getMessage and listSince return is bounded (`providers.mail`: BODY_MAX_CHARS of body text,
then a note saying it was truncated; ATTACHMENTS_MAX attachments, then a note in the body;
subjects and addresses cut with "…"), and a provider reading mail stops at the call's deadline.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import islice
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from .._errors import UsageError, WorkbenchError
from ..providers import mail as _mail
from .email_state import EMAIL_SETUP, MAILBOX
from .spec import Action, CapabilitySpec, Flag, OpenContext, Option, View, path_or
from .surface import spell_action

if TYPE_CHECKING:
    from pathlib import Path

    # the mail types the Face names too (bench.email, the replay): it takes them from here,
    # the ctx layer being its one door to the providers
    from ..providers.mail import Envelope, Mailbox
    from ..providers.mailmock import MockClock
    from ._session import CallSession

DEFAULT_LIMIT, MAX_LIMIT = 20, 200
METHODS = ("listSince", "getMessage")
_FAR = 2**62  # ms: a `since` beyond ±this reads as the far future / past
_ORDER = attrgetter("date", "accountId", "id")  # E4: how pages of several accounts merge
ALLOW = "--allow-account"  # the bench action that allows accounts (E2), which hints name


def _show(value: Any) -> str:
    """A value as echoed in an error message: its repr, cut short (it may be megabytes)."""
    if isinstance(value, (list, dict, tuple, set)):
        return f"a {'list' if isinstance(value, (list, tuple)) else 'object'}"
    try:
        text = repr(value)
    except Exception:
        text = f"a {type(value).__name__}"
    return text if len(text) <= 80 else text[:79] + "…"


def _unicode(value: str, field: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"{field} is not valid Unicode (a lone surrogate at {exc.start})",
            field=field,
        ) from None
    return value


class Grant:
    """E2: the accounts the user allowed on the gem's page. None at install."""

    def __init__(self) -> None:
        self.all = False
        self.ids: tuple[str, ...] = ()

    def set(self, accounts: str | Iterable[str] | None) -> None:
        if accounts == "all":
            self.all, self.ids = True, ()
            return
        if accounts is None:
            accounts = ()
        elif isinstance(accounts, str):
            accounts = (accounts,)
        ids = tuple(accounts)
        if not all(isinstance(a, str) and a for a in ids):
            raise UsageError(f"allow({accounts!r}): give 'all' or a list of account ids (strings)")
        self.all, self.ids = False, tuple(dict.fromkeys(ids))

    @property
    def allowed(self) -> str | list[str]:
        return "all" if self.all else list(self.ids)

    def allows(self, account: str) -> bool:
        return self.all or account in self.ids

    def accounts(self, mailbox: Mailbox) -> list[str]:
        """The allowed accounts the mailbox holds now, in the mailbox's order."""
        return [a for a in mailbox.accounts() if self.allows(a)]

    def __repr__(self) -> str:
        return f"<Grant {self.allowed!r}>"


def _options(method: str, options: Any, kwargs: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"email.{method} takes one options object {{{', '.join(names)}}}, got {type(options).__name__}",
            field="options",
        )
    merged = {k: v for k, v in {**options, **kwargs}.items() if v is not None}
    unknown = sorted((k for k in merged if k not in names), key=str)
    if unknown:
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"email.{method} has no option {_show(unknown[0])} (options: {', '.join(names)})",
            field=_mail.cut(str(unknown[0]), 80),
        )
    return merged


def _account(value: Any, *, required: bool) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            "accountId must be a string (an account id from "
            f"listSince), got {'nothing' if value is None else type(value).__name__}",
            field="accountId",
        )
    return _unicode(value, "accountId")


def _since(value: Any) -> int | float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or (isinstance(value, float) and not math.isfinite(value))
    ):
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            "since must be a finite number: a date in ms "
            f"since the epoch, as listSince's cursor, got {_show(value)}",
            field="since",
        )
    return value


def _limit(value: Any) -> int:
    integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not integral or value < 1:
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"limit must be an integer >= 1 (at most {MAX_LIMIT} are returned), got {_show(value)}",
            field="limit",
        )
    return min(int(value), MAX_LIMIT)


class Email:
    """ctx.email for one call."""

    def __init__(self, session: CallSession) -> None:
        self.s = session

    def _mailbox(self) -> tuple[Mailbox, Grant]:
        s = self.s
        s.grants.require("email")  # E1: decided once per tool by the platform profile
        access: MailAccess | None = s.providers.backends.get("email")  # none: made outside a bench
        if access is None or access.mailbox is None:
            raise WorkbenchError(
                "E_INTERNAL",
                "ctx.email: this call has no mailbox (a session made outside workbench.open gets none)",
            )
        access.deliver()  # scheduled mail whose time came (bench.email.arrive at=)
        return access.mailbox, access.grant

    @contextmanager
    def _reading(self) -> Any:
        """Providers read mail until the call's deadline (`providers.mail.check_deadline`)."""
        token = _mail.DEADLINE.set(self.s.deadline)
        try:
            yield
        finally:
            _mail.DEADLINE.reset(token)

    def _check(self, grant: Grant, account: str) -> None:
        if not grant.allows(account):
            allowed = "none" if not grant.ids else ", ".join(grant.ids)
            raise WorkbenchError(
                "E_PERM_DENIED",
                f"account {_show(account)} is not allowed for this "
                f"gem (E2; allowed: {allowed}); the user chooses accounts on the "
                f"gem's page: {spell_action(ALLOW, among=(SPEC,))} or {spell_action(ALLOW, 'all', among=(SPEC,))}",
                field="accountId",
                accountId=_mail.cut(account, 200),
            )

    def listSince(self, options: Any = None, /, **kwargs: Any) -> dict[str, Any]:
        """{messages: [envelope], cursor}: envelopes with date > since, oldest first (E4)."""
        mailbox, grant = self._mailbox()
        opts = _options("listSince", options, kwargs, ("accountId", "since", "limit"))
        account = _account(opts.get("accountId"), required=False)
        since = _since(opts.get("since", 0))
        limit = _limit(opts.get("limit", DEFAULT_LIMIT))
        if account is not None:
            self._check(grant, account)
            accounts = [account] if account in mailbox.accounts() else []
        else:
            accounts = grant.accounts(mailbox)
            if not grant.all and not grant.ids and mailbox.accounts():  # E2: nothing allowed yet
                self.s.warn(
                    "email.listSince covered no account: the user has allowed none yet (E2); "
                    f"allow them with {spell_action(ALLOW, 'all', among=(SPEC,))} or {spell_action(ALLOW, among=(SPEC,))} "
                    f"(the mailbox has {', '.join(mailbox.accounts()[:5])})"
                )
        # dates are whole ms: date > since <=> date > floor(since)
        floor = max(-_FAR, min(_FAR, math.floor(since)))
        with self._reading():
            pages: list[list[Envelope]] = [mailbox.envelopes_since(a, floor, limit) for a in accounts]
        merged = pages[0] if len(pages) == 1 else heapq.merge(*pages, key=_ORDER)
        messages = [e.to_json() for e in islice(merged, limit)]
        cursor = messages[-1]["date"] if messages else since
        return {"messages": messages, "cursor": cursor}

    def getMessage(self, options: Any = None, /, **kwargs: Any) -> dict[str, Any]:
        """The envelope plus `body` (plain text) and `attachments` metadata, no content (E5)."""
        mailbox, grant = self._mailbox()
        opts = _options("getMessage", options, kwargs, ("accountId", "id"))
        account = _account(opts.get("accountId"), required=True)
        assert account is not None
        id_ = opts.get("id")
        if not isinstance(id_, str):
            raise WorkbenchError(
                "E_INVALID_ARGUMENT",
                "id must be a string (a message id from "
                f"listSince), got {'nothing' if id_ is None else type(id_).__name__}",
                field="id",
            )
        _unicode(id_, "id")
        self._check(grant, account)
        with self._reading():
            msg = mailbox.message(account, id_) if account in mailbox.accounts() else None
        if msg is None:
            raise WorkbenchError(
                "E_NOT_FOUND",
                f"no message {_show(id_)} in account {_show(account)}",
                field="id",
                accountId=_mail.cut(account, 200),
                id=_mail.cut(id_, 200),
            )
        return msg.to_json()  # bounded: body, attachments, subject, addresses (SEC5)


def access_of(providers: Any) -> MailAccess | None:
    """ctx.email's backend of the bench of `providers` (None: its platform has no ctx.email)."""
    access: MailAccess | None = providers.backends.get(SPEC.impl)
    return access


def mail_clock(mailbox: Mailbox | None = None) -> MockClock:
    """The clock that dates mail added without a date: the mock mailbox's own (it never runs
    behind its newest mail), else a new mock clock (`bench.email.clock` on every bench)."""
    from ..providers.mailmock import MockClock, MockMailbox  # ctx loads without the mock

    return mailbox.clock if isinstance(mailbox, MockMailbox) else MockClock()


class MailAccess:
    """ctx.email's backend: the mailbox it reads and the accounts the user allowed (E2:
    `bench.email.allow`; none at open), the same for every call of the bench; and what the
    user does to the mail outside any call (`bench.email`: its clock, add, envelopes)."""

    def __init__(self, mailbox: Mailbox) -> None:
        self.mailbox: Mailbox | None = mailbox  # another (a recorder) only while a replay swaps it
        self.grant = Grant()
        self.clock = mail_clock(mailbox)
        self.now: Callable[[], float] = time.time  # the bench's clock (ctx/clock.py), set by use_clock
        # mail scheduled for a virtual time (bench.email.arrive/add at=): [at ms, seq, message, fires]
        self.pending: list[tuple[int, int, dict[str, Any], bool]] = []
        self.fired: list[dict[str, Any]] = []  # delivered envelopes whose triggers are still due
        self._seq = 0

    def schedule(self, messages: dict[str, Any] | list[dict[str, Any]], at_ms: int, *, fires: bool) -> None:
        """Keep `messages` out of the mailbox until the clock reaches `at_ms`; then they are
        added dated `at_ms` (and, if `fires`, their envelopes wait in `fired` for the triggers)."""
        items = [messages] if isinstance(messages, dict) else messages
        if not isinstance(items, list) or not all(isinstance(m, dict) for m in items):
            raise UsageError("bench.email: expected a message object or a list of them")
        for m in items:
            if "date" in m:
                raise UsageError(
                    f"bench.email: a message scheduled with at= takes its date from at; drop date={m['date']!r}"
                )
        for m in items:
            self._seq += 1
            self.pending.append((at_ms, self._seq, dict(m), fires))
        self.pending.sort(key=lambda p: (p[0], p[1]))
        self.deliver()  # at= now or in the past: at once

    def replace_pending(
        self, pending: list[tuple[int, dict[str, Any], bool]], fired: list[dict[str, Any]]
    ) -> None:
        """The scheduled mail (at ms, message, fires) and the fired envelopes, replaced (a
        restore, a put of the bench's setup); delivered when the clock reaches them."""
        self.pending = []
        for at_ms, message, fires in pending:
            self._seq += 1
            self.pending.append((at_ms, self._seq, dict(message), fires))
        self.pending.sort(key=lambda p: (p[0], p[1]))
        self.fired = list(fired)

    def deliver(self) -> None:
        """Add the scheduled mail whose time the clock has reached (before every read)."""
        if not self.pending or self.pending[0][0] > self.now() * 1000 or isinstance(self.mailbox, _Recorder):
            return
        due_ms = self.now() * 1000
        due = [p for p in self.pending if p[0] <= due_ms]
        self.pending = [p for p in self.pending if p[0] > due_ms]
        for at_ms, _seq, message, fires in due:
            added = self.add({**message, "date": at_ms})
            if fires:
                self.fired.extend(added)

    def add(self, messages: dict[str, Any] | list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Put mail into the mock mailbox (`bench.email.add`); returns the envelopes added.
        UsageError when the mailbox is not the mock or a message is malformed."""
        from ..providers.mailmock import MockMailbox

        mailbox = self.mailbox
        if not isinstance(mailbox, MockMailbox):
            raise UsageError(f"bench.email.add needs the mock mailbox; this bench reads {mailbox!r}")
        try:
            return [e.to_json() for e in mailbox.add_dicts(messages)]
        except ValueError as exc:
            raise UsageError(f"bench.email.add: {exc}") from None

    def envelopes(self) -> list[Envelope]:
        """Every envelope of every account, ordered by (date, accountId, id)."""
        self.deliver()
        mailbox: Any = self.mailbox
        out = [e for a in mailbox.accounts() for e in mailbox.envelopes_since(a, -1, 2**62)]
        return sorted(out, key=lambda e: (e.date, e.accountId, e.id))

    @contextmanager
    def recording(self) -> Iterator[list[tuple[str, str]] | None]:
        """Within the block calls read the mailbox through a recorder: the list yielded gets
        (accountId, id) of every message the ctx layer fetched for getMessage, exactly
        (None: there is no mailbox). The email replay's account of what a call read."""
        inner = self.mailbox
        recorder = _Recorder(inner) if inner is not None else None
        self.mailbox = recorder
        try:
            yield recorder.reads if recorder is not None else None
        finally:
            self.mailbox = inner


class _Recorder:
    """The mailbox provider as the ctx layer sees it during a replayed call, noting reads."""

    def __init__(self, inner: Mailbox) -> None:
        self.inner = inner
        self.reads: list[tuple[str, str]] = []

    def accounts(self) -> list[str]:
        return self.inner.accounts()

    def envelopes_since(self, account: str, since: int, limit: int) -> list[Envelope]:
        return self.inner.envelopes_since(account, since, limit)

    def message(self, account: str, id: str) -> Any:
        msg = self.inner.message(account, id)
        if msg is not None:
            self.reads.append((account, id))
        return msg

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _backend(opening: OpenContext) -> MailAccess:
    from ..providers import make_mailbox

    return MailAccess(make_mailbox(opening.options.get("mailbox"), gem_root=opening.manifest.root))


def _fixtures(root: Path) -> object:
    """The mock mailbox of fixtures/mailbox.json, as an open without mailbox= reads it."""
    from ..providers import make_mailbox

    return make_mailbox(None, gem_root=root)


#: ctx.email as a unit
SPEC = CapabilitySpec(
    impl="email",
    title="ctx.email",
    implementation=Email,
    backend=_backend,
    fixtures=_fixtures,
    # E3: every method reads the mailbox, which is outside the bench's state: a replay serves
    # the pages and messages the pinned call saw (ctx/served.py)
    replayed=lambda method: True,
    state=(MAILBOX, EMAIL_SETUP),
    options=(
        Option(
            "mailbox",
            "what ctx.email reads: a .json list of messages or a folder of .eml files (mock), a "
            "Maildir folder or an mbox file (read in place), {account id: path}, or a Mailbox",
            type="str | os.PathLike[str] | Mailbox | Mapping[str, str | os.PathLike[str]] | None",
            default_doc="the mock, from fixtures/mailbox.json if present, else empty",
            more="no account is allowed until bench.email.allow(...) (E2)",
            flags=(Flag("--mailbox", metavar="PATH", help="the mail ctx.email reads", parse=path_or()),),
        ),
    ),
    views=(
        View("mailbox", "the mailbox's messages"),
        View("email", "the mailbox: allow(), add(), clock", table=False),
    ),
    actions=(
        Action(
            ALLOW,
            "ID",
            "allow the gem to read this account (repeatable; 'all': every account) (E2)",
            lambda bench, ids: bench.email.allow("all" if "all" in ids else list(ids)),
            python="bench.email.allow({})",
            python_values="[account ids]",
        ),
    ),
)
