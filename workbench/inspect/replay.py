"""Email-cursor replay: run a tool call by call and account for every message it should read.

    df = bench.email.replay_run("digest", arrivals={2: [{"subject": "x", "date": d}] * 3})
    assert (df.status == "once").all(), df.attrs["warnings"]

A `Replayer` calls the tool again and again (as a scheduler would), lets mail arrive and the
stored cursor be rewound between calls, and keeps, per message of the allowed accounts, how
many times the tool *processed* it and at which calls. The widget (`bench.email.replay`) and
`replay_run` are both built on it.

How a message counts as processed: the tool read it with `ctx.email.getMessage`. A tool that
never calls getMessage (it works on envelopes only) processes what `listSince` returned to it.
The reads are recorded exactly — during the replay's own calls the mailbox provider is wrapped
by a recorder that notes every message the ctx layer fetched for getMessage — and, for calls
of the tool made outside the replay (by an `email.onNewMessage` trigger or by hand), parsed
from the call's trace. What `listSince` returned is recomputed right after the call with the
same arguments through the same ctx layer (the mailbox cannot change during a call).

A message is *lost* when it was never processed and the cursor stored now is past its date:
`listSince` returns only mail strictly newer than `since`, so no later call can return it. (A
plain number cursor is past mail of exactly its date; a JSON cursor `{date, ids: [...]}`, which
re-reads its date, only past older mail. After a rewind to before its date a message is not
lost: the next calls can still read it.) `reason` says why: "boundary" — the page ended inside
a group of messages sharing one date and the cursor (the latest date seen) jumped past the rest
of the group; "late" — it arrived dated at or before the cursor already stored; "skipped" —
otherwise (e.g. the tool stored a cursor beyond what it read).
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import pandas as pd

from .._errors import UsageError, WorkbenchError
from ..ctx.storage import kv_put, kv_remove

if TYPE_CHECKING:
    from .._bench import Bench
    from .._result import CallResult
    from ..providers.mail import Envelope, Mailbox

Key = tuple[str, str]  # (accountId, id)

MESSAGE_COLUMNS = ["accountId", "id", "subject", "date", "date_ms", "arrived", "listed",
                   "processed", "status", "lost", "reason", "steps", "first_step"]
STEP_COLUMNS = ["step", "kind", "call_id", "ok", "error", "cursor_before", "cursor_after",
                "listed", "processed", "new", "arrived", "note"]
MAX_STEPS = 10_000  # replay_run's safety stop when the tool never settles
MAX_NAMED = 10      # messages named in one warning sentence


def when(ms: float | None) -> str:
    """A ms timestamp as a readable UTC date (milliseconds only when there are some)."""
    if ms is None or not math.isfinite(ms):
        return "—"
    try:
        dt = datetime.fromtimestamp(ms / 1000, timezone.utc)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    frac = int(ms) % 1000
    return dt.strftime("%Y-%m-%d %H:%M:%S") + (f".{frac:03d}" if frac else "") + " UTC"


def cursor_point(value: str | None) -> tuple[float, bool] | None:
    """Where a stored cursor points: (date in ms, whether mail of exactly that date is behind
    it). A number ("1709546760000") is passed back as `since`, and listSince returns only mail
    strictly newer, so that date is behind it. A JSON object with a numeric `date` (or `since`,
    `cursor`) is a cursor that may also keep ids: if it has a list of `ids` the tool re-reads
    that date, so only older mail is behind it. None: no cursor, or not readable as a date."""
    if value is None:
        return None
    try:
        number = float(value)
        return (number, True) if math.isfinite(number) else None
    except ValueError:
        pass
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    if isinstance(parsed, dict):
        for k in ("date", "since", "cursor"):
            v = parsed.get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                return float(v), not isinstance(parsed.get("ids"), list)
    return None


def cursor_date(value: str | None) -> float | None:
    """The date a stored cursor points at (see `cursor_point`), or None."""
    point = cursor_point(value)
    return None if point is None else point[0]


def behind(value: str | None, date: int) -> bool:
    """Whether mail dated `date` is behind the stored cursor: no later call returns it."""
    point = cursor_point(value)
    if point is None:
        return False
    at, strict = point
    return at > date or (strict and at == date)


# -- reading the trace ---------------------------------------------------------------------
_NAMES = {"true": True, "false": False, "null": None, "True": True, "False": False,
          "None": None}


def _literal(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _literal(node.operand)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values)
                if k is not None}
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    raise ValueError("not a literal")


_KWARG = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)


def parse_args(preview: str) -> tuple[list[Any], dict[str, Any]] | None:
    """The arguments of a trace row back from its `args` preview: positional arguments are
    JSON, keywords are JSON strings "name=repr(value)". None when the preview was cut or
    summarised (an argument over 60 characters, a preview over 160)."""
    if not isinstance(preview, str) or preview.endswith("…"):
        return None
    try:
        call = ast.parse(f"f({preview})", mode="eval").body
        assert isinstance(call, ast.Call) and not call.keywords
        values = [_literal(a) for a in call.args]
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for v in values:
            if isinstance(v, str) and v.startswith("<") and v.endswith(" chars>"):
                return None
            m = _KWARG.fullmatch(v) if isinstance(v, str) else None
            if m:
                kwargs[m[1]] = _literal(ast.parse(m[2], mode="eval").body)
            elif kwargs:
                return None  # a positional argument after keywords: not a preview of ours
            else:
                args.append(v)
    except (SyntaxError, ValueError, AssertionError, RecursionError):
        return None
    return args, kwargs


def _options(parsed: tuple[list[Any], dict[str, Any]]) -> dict[str, Any] | None:
    args, kwargs = parsed
    first = args[0] if args else {}
    if first is None:
        first = {}
    if not isinstance(first, dict) or len(args) > 1:
        return None
    return {**first, **kwargs}


def trace_reads(res: "CallResult") -> tuple[list[Key], int]:
    """Messages a call read with getMessage, from its trace; and how many reads could not be
    identified (their argument preview was cut)."""
    keys: list[Key] = []
    unknown = 0
    for row in res.trace_rows:
        if row.get("method") != "email.getMessage" or not row.get("ok"):
            continue
        parsed = parse_args(row.get("args", ""))
        opts = _options(parsed) if parsed else None
        if opts and isinstance(opts.get("accountId"), str) and isinstance(opts.get("id"), str):
            keys.append((opts["accountId"], opts["id"]))
        else:
            unknown += 1
    return keys, unknown


class _Recorder:
    """The mailbox provider as the ctx layer sees it during a replayed call, noting reads."""

    def __init__(self, inner: "Mailbox") -> None:
        self.inner = inner
        self.reads: list[Key] = []

    def accounts(self) -> list[str]:
        return self.inner.accounts()

    def envelopes_since(self, account: str, since: int, limit: int) -> "list[Envelope]":
        return self.inner.envelopes_since(account, since, limit)

    def message(self, account: str, id: str) -> Any:
        msg = self.inner.message(account, id)
        if msg is not None:
            self.reads.append((account, id))
        return msg

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _same(a: str | None, b: str | None) -> bool:
    """Two stored cursors point at the same place ("5" and "5.0" do)."""
    return a == b or (cursor_point(a) is not None and cursor_point(a) == cursor_point(b))


def _ids(keys: list[Key]) -> list[str]:
    return [f"{a}/{i}" for a, i in keys]


# -- the replay ----------------------------------------------------------------------------
@dataclass
class Step:
    """One event of a replay: a call of the tool, a rewind, or mail arriving."""

    step: int | None
    kind: str  # "call" (made by the replay), "outside" (a trigger or by hand), "rewind", "arrive"
    call_id: str | None = None
    ok: bool | None = None
    error: str | None = None
    cursor_before: str | None = None
    cursor_after: str | None = None
    listed: list[Key] = field(default_factory=list)
    processed: list[Key] = field(default_factory=list)
    new: list[Key] = field(default_factory=list)
    arrived: list[Key] = field(default_factory=list)
    note: str = ""

    def row(self) -> dict[str, Any]:
        return {"step": self.step, "kind": self.kind, "call_id": self.call_id, "ok": self.ok,
                "error": self.error, "cursor_before": self.cursor_before,
                "cursor_after": self.cursor_after,
                "listed": _ids(self.listed), "processed": _ids(self.processed),
                "new": _ids(self.new), "arrived": _ids(self.arrived),
                "note": self.note}


class Replayer:
    """Calls `tool` step by step on `bench` and accounts for every message of the allowed
    accounts: processed once, more than once, never, lost (see the module doc)."""

    def __init__(self, bench: "Bench", tool: str, *, cursor_key: str = "cursor",
                 input: Any = None) -> None:
        if tool not in bench.manifest.tools:
            raise WorkbenchError("E_UNKNOWN_TOOL", f"no tool {tool!r} in gem {bench.manifest.id} "
                                 f"(tools: {', '.join(bench.manifest.tools) or 'none'})", tool=tool)
        if not isinstance(cursor_key, str):
            raise UsageError(f"cursor_key={cursor_key!r}: give the kv key the tool keeps its "
                             "cursor in")
        self.bench, self.tool, self.cursor_key = bench, tool, cursor_key
        self.input = {} if input is None else input
        self.calls = 0                       # calls of the tool seen so far (replay + outside)
        self.events: list[Step] = []
        self.arrival: dict[Key, int] = {}    # message -> the call it arrived before (1 = start)
        self.envelopes: dict[Key, "Envelope"] = {}
        self.reads: dict[Key, list[int]] = {}
        self.listings: dict[Key, list[int]] = {}
        self.unidentified = 0                # reads whose message could not be told
        self.start_cursor = self.cursor()
        self._seen = len(bench.results)
        self._mail_count: int | None = None
        self._sync_mail()

    # -- state -------------------------------------------------------------------------
    def cursor(self) -> str | None:
        """The cursor the tool stored (kv `cursor_key`), or None."""
        self.bench._check_open()
        row = self.bench.providers.data_db.execute(
            "SELECT value FROM kv WHERE key = ?", (self.cursor_key,)).fetchone()
        return row[0] if row else None

    def cursors(self) -> list[tuple[int, str | None]]:
        """(step, cursor stored after it) for every call so far, plus (0, cursor at start)."""
        out: list[tuple[int, str | None]] = [(0, self.start_cursor)]
        out += [(e.step or 0, e.cursor_after) for e in self.events if e.kind in ("call", "outside")]
        return out

    def _sync_mail(self) -> None:
        """Note mail that appeared since the last look (added outside the replay, too)."""
        mailbox = self.bench.email.mailbox
        size = getattr(mailbox, "__len__", None)  # the mock knows its size: skip a full scan
        count = size() if callable(size) else None
        if count is not None and count == self._mail_count:
            return
        for e in self.bench.email.envelopes():
            key = (e.accountId, e.id)
            if key not in self.envelopes:
                self.envelopes[key] = e
                self.arrival[key] = self.calls + 1
        self._mail_count = count

    def _absorb_outside(self) -> None:
        """Calls of the tool made since the last look but not by the replay (a trigger, by hand)."""
        self.bench._check_open()
        for res in self.bench.results[self._seen:]:
            if res.tool != self.tool:
                continue
            keys, unknown = trace_reads(res)
            self.unidentified += unknown
            self.calls += 1
            self._record(Step(self.calls, "outside", res.call_id, res.ok,
                              res.error.code if res.error else None, None, None,
                              note="called outside the replay (a trigger or by hand); its cursor "
                                   "is not known"), keys, [])
        self._seen = len(self.bench.results)

    def _record(self, ev: Step, reads: list[Key], listed: list[Key]) -> None:
        seen = set(self.reads) | set(self.listings)
        ev.processed, ev.listed = reads, listed
        ev.new = [k for k in dict.fromkeys([*reads, *listed]) if k not in seen]
        for k in reads:
            self.reads.setdefault(k, []).append(ev.step or 0)
        for k in listed:
            self.listings.setdefault(k, []).append(ev.step or 0)
        self.events.append(ev)

    def _listed(self, res: "CallResult") -> list[Key]:
        """What listSince returned in the call: the same query again, through the ctx layer."""
        from ..ctx import CallSession
        from ..ctx.email import Email

        rows = [r for r in res.trace_rows if r.get("method") == "email.listSince" and r.get("ok")]
        if not rows:
            return []
        b = self.bench
        session = CallSession(call_id=f"{res.call_id}-replay", tool=b.manifest.tools[self.tool],
                              manifest=b.manifest, providers=b.providers,
                              conversation=b.conversation, strict=b.strict, trash=False,
                              email_grant=b.email.grant)
        email = Email(session)
        out: list[Key] = []
        for r in rows:
            parsed = parse_args(r.get("args", ""))
            if parsed is None:
                continue
            try:
                page = email.listSince(*parsed[0], **parsed[1])
            except (WorkbenchError, TypeError):  # arguments the call itself rejected
                continue
            out += [(m["accountId"], m["id"]) for m in page["messages"]]
        return out

    # -- actions -----------------------------------------------------------------------
    def step(self) -> "CallResult":
        """One call of the tool, as the platform's scheduler would make it."""
        self._absorb_outside()
        self._sync_mail()
        before = self.cursor()
        providers = self.bench.providers
        inner = providers.mailbox
        recorder = _Recorder(inner) if inner is not None else None
        providers.mailbox = recorder
        try:
            res = self.bench.call(self.tool, self.input)
        finally:
            providers.mailbox = inner
        self._seen = len(self.bench.results)
        self.calls += 1
        reads = list(recorder.reads) if recorder is not None else trace_reads(res)[0]
        self._record(Step(self.calls, "call", res.call_id, res.ok,
                          res.error.code if res.error else None, before, self.cursor()),
                     reads, self._listed(res))
        return res

    def arrive(self, messages: "dict[str, Any] | list[dict[str, Any]]", *,
               events: bool = False) -> list[dict[str, Any]]:
        """New mail before the next call: `bench.email.add` (events=True: `arrive`, which also
        runs the manifest's email.onNewMessage triggers). Returns the envelopes added."""
        self._absorb_outside()
        self._sync_mail()
        if events:
            before = self.bench.email.envelopes()
            self.bench.email.arrive(messages)
            known = {(e.accountId, e.id) for e in before}
            added = [e.to_json() for e in self.bench.email.envelopes()
                     if (e.accountId, e.id) not in known]
        else:
            added = self.bench.email.add(messages)
        keys = [(m["accountId"], m["id"]) for m in added]
        self._sync_mail()
        self.events.append(Step(None, "arrive", arrived=keys,
                                cursor_before=self.cursor(), cursor_after=self.cursor(),
                                note=f"{len(keys)} message{'s' if len(keys) != 1 else ''} "
                                     f"arrived before call {self.calls + 1}"))
        self._absorb_outside()  # the triggers' calls, when the tool is one of them
        return added

    def rewind(self, value: "str | int | float | None") -> None:
        """Set the stored cursor (kv `cursor_key`) as if the tool had stored `value`; None
        deletes it (start over). Not a tool call: the bench writes its storage directly."""
        self._absorb_outside()
        before = self.cursor()
        if isinstance(value, bool) or not isinstance(value, (str, int, float, type(None))):
            raise UsageError(f"rewind({value!r}): give a cursor (a string or a date in ms) or "
                             "None to start over")
        if value is not None and not isinstance(value, str):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            value = str(value)
        set_kv(self.bench, self.cursor_key, value)
        self.events.append(Step(None, "rewind", cursor_before=before, cursor_after=value,
                                note=f"cursor set to {value if value is not None else 'none'} "
                                     f"before call {self.calls + 1}"))

    def run(self, steps: int | None = None, *, arrivals: dict[int, Any] | None = None,
            rewinds: dict[int, Any] | None = None, events: bool = False) -> "pd.DataFrame":
        """`steps` calls (default: until a call processes nothing new, once no arrival or
        rewind is scheduled any more); `arrivals` {n: messages} and `rewinds` {n: cursor} are
        applied before the n-th call of this run. Returns `frame()`."""
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 0):
            raise UsageError(f"steps={steps!r}: give a number of calls (>= 0) or None")
        arrivals, rewinds = dict(arrivals or {}), dict(rewinds or {})
        for name, plan in (("arrivals", arrivals), ("rewinds", rewinds)):
            bad = [k for k in plan if isinstance(k, bool) or not isinstance(k, int) or k < 1]
            if bad:
                raise UsageError(f"{name}: keys are call numbers from 1, got {bad[0]!r}")
        n = 0
        while steps is None or n < steps:
            n += 1
            if n in rewinds:
                self.rewind(rewinds[n])
            if n in arrivals:
                self.arrive(arrivals[n], events=events)
            res = self.step()
            if steps is not None:
                continue
            if n >= MAX_STEPS:
                self.events[-1].note = f"stopped after {MAX_STEPS:,} calls: the tool never settled"
                break
            last = self.events[-1]
            settled = not last.new and (_same(last.cursor_before, last.cursor_after)
                                         or not (last.processed or last.listed))
            pending = any(k > n for k in (*arrivals, *rewinds))
            if (settled or not res.ok) and not pending:
                break
        return self.frame()

    # -- results -----------------------------------------------------------------------
    def _counts(self) -> dict[Key, list[int]]:
        """Per message, the calls that processed it: reads when the tool reads mail at all,
        else what listSince returned to it."""
        return self.reads if self.reads or self.unidentified else self.listings

    def _lost(self, key: Key, env: "Envelope", counts: dict[Key, list[int]],
              cursor: str | None) -> str | None:
        """Why a message is lost (never processed, and the stored cursor is past its date), or
        None. After a rewind before its date it is not lost: the next calls can still read it."""
        if counts.get(key) or not behind(cursor, env.date):
            return None
        arrived = self.arrival.get(key, 1)
        calls = [e for e in self.events if e.kind == "call" and (e.step or 0) >= arrived]
        at_arrival = calls[0].cursor_before if calls else cursor
        if behind(at_arrival, env.date):
            return "late"
        passed = next((e for e in reversed(calls) if behind(e.cursor_after, env.date)
                       and not behind(e.cursor_before, env.date)), None)
        if passed is None:
            return "skipped"
        siblings = [k for k, e in self.envelopes.items()
                    if e.date == env.date and k != key and passed.step in counts.get(k, ())]
        if cursor_date(passed.cursor_after) == env.date and siblings:
            return "boundary"
        return "skipped"

    def allowed(self) -> list[Key]:
        grant = self.bench.email.grant
        return [k for k in self.envelopes if grant.allows(k[0])]

    def frame(self) -> pd.DataFrame:
        """One row per message of the allowed accounts, by (date, accountId, id); warnings in
        `df.attrs["warnings"]`, the calls in `df.attrs["steps"]` (records of `steps_frame()`)."""
        self._absorb_outside()
        self._sync_mail()
        counts = self._counts()
        cursor = self.cursor()
        rows = []
        keys = sorted(self.allowed(), key=lambda k: (self.envelopes[k].date, k))
        for k in keys:
            e = self.envelopes[k]
            done = counts.get(k, [])
            reason = self._lost(k, e, counts, cursor)
            rows.append({"accountId": k[0], "id": k[1], "subject": e.subject, "date": e.date,
                         "date_ms": e.date, "arrived": self.arrival.get(k, 1) - 1,
                         "listed": len(self.listings.get(k, ())), "processed": len(done),
                         "status": "never" if not done else "once" if len(done) == 1 else "twice+",
                         "lost": reason is not None, "reason": reason,
                         "steps": list(done), "first_step": done[0] if done else None})
        df = pd.DataFrame(rows, columns=MESSAGE_COLUMNS)
        df["date_ms"] = df["date_ms"].astype("int64")
        df["date"] = pd.to_datetime(df["date_ms"], unit="ms").astype("datetime64[ns]")
        df["first_step"] = df["first_step"].astype("Int64")
        df["lost"] = df["lost"].astype(bool)
        df.attrs["warnings"] = self.warnings(df)
        df.attrs["steps"] = [e.row() for e in self.events]
        df.attrs["cursor"] = cursor
        return df

    def steps_frame(self) -> pd.DataFrame:
        """One row per event: calls (made by the replay, or outside it), rewinds, arrivals."""
        self._absorb_outside()
        df = pd.DataFrame([e.row() for e in self.events], columns=STEP_COLUMNS)
        df["step"] = df["step"].astype("Int64")
        return df

    def warnings(self, df: pd.DataFrame | None = None) -> list[str]:
        """Plain sentences naming lost and twice-processed messages, and why."""
        df = self.frame() if df is None else df
        out: list[str] = []
        if not self.bench.email.grant.all and not self.bench.email.grant.ids:
            out.append("No account is allowed, so the tool can read no mail: allow some with "
                       "bench.email.allow('all') or bench.email.allow(['id', …]) (E2).")
        if self.unidentified:
            out.append(f"{self.unidentified} getMessage call{'s' if self.unidentified > 1 else ''}"
                       " made outside the replay could not be matched to a message (its "
                       "arguments were cut in the trace); counts may be low.")

        def names(sub: pd.DataFrame) -> str:
            shown = [f"“{r.subject}” ({r.accountId}/{r.id}, {when(r.date_ms)})"
                     for r in sub.head(MAX_NAMED).itertuples()]
            more = len(sub) - MAX_NAMED
            return ", ".join(shown) + (f" and {more:,} more" if more > 0 else "")

        def were(n: int) -> str:
            return f"{n} message{'s were' if n != 1 else ' was'}"

        lost = df[df["lost"]]
        boundary = lost[lost["reason"] == "boundary"]
        if len(boundary):
            out.append(
                f"{were(len(boundary))} never processed: {names(boundary)} — listSince returns "
                "messages strictly newer than `since`, and the cursor (latest date seen) "
                "skipped messages sharing that date across a page boundary. Fix: keep "
                "(date, ids already processed at that date) in the cursor and ask for "
                "since = date − 1, skipping those ids; or re-read the boundary date the same "
                "way and dedupe by (accountId, id).")
        late = lost[lost["reason"] == "late"]
        if len(late):
            out.append(
                f"{were(len(late))} never processed: {names(late)} — they arrived dated at or "
                "before the cursor already stored, so no listSince(since = cursor) can return "
                "them. A date cursor cannot see late-dated mail; handle email.onNewMessage "
                "events for it, or re-read a window before the cursor and dedupe by id.")
        other = lost[lost["reason"] == "skipped"]
        if len(other):
            out.append(
                f"{were(len(other))} never processed although a stored cursor passed their "
                f"date: {names(other)} — the tool stored a cursor beyond messages it did not "
                "read (store listSince's `cursor`, or the date of the last message processed).")
        twice = df[df["processed"] > 1]
        if len(twice):
            rewound = [e for e in self.events if e.kind == "rewind"]
            why = ("the cursor was rewound (" + ", ".join(e.note for e in rewound) + ")"
                   if rewound else "later pages returned them again (since at or before their "
                   "date)")
            listed = ", ".join(f"“{r.subject}” ({r.accountId}/{r.id}) at calls "
                               f"{', '.join(map(str, r.steps))}"
                               for r in twice.head(MAX_NAMED).itertuples())
            if len(twice) > MAX_NAMED:
                listed += f" and {len(twice) - MAX_NAMED:,} more"
            out.append(f"{were(len(twice))} processed more than once: {listed} — {why}. A "
                       "tool that must not repeat work keeps the ids it processed, or makes "
                       "processing idempotent.")
        return out


def set_kv(bench: "Bench", key: str, value: str | None) -> None:
    """Write (None: delete) one kv entry of the gem's storage directly, outside any call."""
    if not isinstance(key, str) or (value is not None and not isinstance(value, str)):
        raise UsageError(f"kv keys and values are strings (D2), got {key!r} = {value!r}")
    if value is None:
        kv_remove(bench.providers.data_db, key)
    else:
        kv_put(bench.providers.data_db, key, value)


def replay_run(bench: "Bench", tool: str, *, steps: int | None = None,
               arrivals: dict[int, Any] | None = None, rewinds: dict[int, Any] | None = None,
               cursor_key: str = "cursor", events: bool = False,
               input: Any = None) -> pd.DataFrame:
    """Call `tool` repeatedly and account for every message of the allowed accounts.

    steps: how many calls (default: until a call processes nothing new and no arrival or
        rewind is still scheduled).
    arrivals: {n: message or [messages]} added with `bench.email.add` before the n-th call
        (events=True: with `bench.email.arrive`, which also fires email.onNewMessage triggers).
        Give several the same `date` to test equal timestamps.
    rewinds: {n: cursor value or None} stored in kv `cursor_key` before the n-th call.
    input: the tool's input on every call (default {}).

    Returns one row per message, ordered by (date, accountId, id): accountId, id, subject,
    date (datetime), date_ms, arrived (calls made before it arrived), listed (times listSince
    returned it), processed (times the tool read it), status ("once" / "twice+" / "never"),
    lost, reason ("boundary" / "late" / "skipped"), steps (the calls that processed it),
    first_step. `df.attrs["warnings"]`: sentences naming lost and twice-processed messages;
    `df.attrs["steps"]`: one record per call, rewind and arrival; `df.attrs["cursor"]`: the
    stored cursor at the end.
    """
    return Replayer(bench, tool, cursor_key=cursor_key, input=input).run(
        steps, arrivals=arrivals, rewinds=rewinds, events=events)

