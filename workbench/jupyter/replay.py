"""The email-cursor replay widget (`bench.email.replay("tool")`).

The mailbox as a timeline, oldest first: one row per message of the allowed accounts, messages
sharing a date grouped under one date cell (marked "×n same date"), and the cursor the tool
stored in kv drawn as a line between the mail behind it and the mail the next call will list.
Each message says whether the tool processed it once (green), more than once (orange), not yet
(grey), or never although the cursor is past it — lost (red). Warnings naming lost and
twice-processed messages, and why, are shown above the timeline.

Buttons: **Step** (one call of the tool), **Run to end** (calls until one processes nothing new),
**Rewind** (store an earlier cursor — or none — in kv; not a tool call), **Arrive** (N new
messages: all at one new time, one second apart, or dated at the stored cursor, i.e. late).

For tests and scripts: `w.step_button`, `w.run_button`, `w.rewind_button` with `w.rewind_to`,
`w.arrive_button` with `w.arrive_count` / `w.arrive_dates` / `w.arrive_account` (all
ipywidgets, `.click()` them); the same as methods `w.step()`, `w.run_to_end()`,
`w.rewind(value)`, `w.arrive(n, dates=…)`; and the state: `w.table` (one row per message, as
`bench.email.replay_run` returns), `w.steps` (one row per call, rewind, arrival), `w.state`
(a dict summary), `w.warnings`, `w.timeline.value` (the HTML), `w.status.value`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from .._errors import UsageError, WorkbenchError
from ..bench.email_replay import Replayer
from ..inspect.replay_cursor import behind, cursor_point, when
from ._html import CSS, esc

if TYPE_CHECKING:
    import pandas as pd

    from ..bench.bench import Bench
    from ..bench.result import CallResult

MAX_ROWS = 400  # timeline rows drawn; a bigger mailbox shows a window around the cursor

_STYLE = """<style>
.wbr td.d{white-space:nowrap}
.wbr tr.g td.d{background:rgba(255,193,7,.18);border-left:3px solid #f0ad4e}
.wbr .same{display:inline-block;margin-left:.4em;padding:0 .35em;border-radius:3px;background:#f0ad4e;color:#222;font-size:10px}
.wbr .pill{display:inline-block;min-width:5.5em;text-align:center;padding:0 .4em;border-radius:3px;color:#fff;font-weight:600}
.wbr .once{background:#2e7d32}.wbr .twice{background:#ef6c00}.wbr .pending{background:#9e9e9e}.wbr .lost{background:#c62828}
.wbr tr.lostrow td{background:rgba(198,40,40,.08)}
.wbr tr.cur td{border-top:2px solid #1565c0;border-bottom:2px solid #1565c0;color:#1565c0;font-weight:600;background:rgba(21,101,192,.06)}
.wbr .warn{border:2px solid #c62828;background:rgba(198,40,40,.07);color:#8e0000;padding:4px 8px;margin:4px 0;border-radius:4px;font-size:12px}
.wbr.legend>span{margin-right:1.2em;white-space:nowrap}
</style>"""

LEGEND = (
    "<div class='wbd wbr legend'>"
    "<span><span class='pill once'>once</span> processed once</span>"
    "<span><span class='pill twice'>twice+</span> processed more than once</span>"
    "<span><span class='pill pending'>not yet</span> not processed, ahead of the cursor</span>"
    "<span><span class='pill lost'>LOST</span> never processed, the cursor is past it</span>"
    "<span><span class='same'>×n same date</span> messages sharing one timestamp</span>"
    "</div>"
)

ARRIVE_DATES = [
    ("all at one new time", "same"),
    ("one second apart", "apart"),
    ("at the stored cursor's date (late)", "cursor"),
]


def shown_cursor(value: str | float | None) -> str:
    """A cursor as the timeline shows dates; its stored text when it is not a date."""
    if value is None:
        return "none"
    point = cursor_point(str(value))
    return when(point[0]) if point is not None else repr(value)


def _pill(row: Any) -> str:
    if row.lost:
        return f"<span class='pill lost' title='{esc(row.reason)}'>LOST</span>"
    if row.processed == 0:
        return "<span class='pill pending'>not yet</span>"
    if row.processed == 1:
        return "<span class='pill once'>once</span>"
    return f"<span class='pill twice'>{row.processed}×</span>"


def timeline_html(
    table: pd.DataFrame, cursor: str | None, cursor_key: str, *, max_rows: int = MAX_ROWS
) -> str:
    """The mailbox as an HTML table by date, equal dates grouped, the cursor as a line."""
    n = len(table)
    dates = table["date_ms"].tolist()
    at = sum(1 for d in dates if behind(cursor, d))  # messages behind the cursor come first
    point = cursor_point(cursor)
    if cursor is None:
        label = f"no cursor stored (kv '{cursor_key}' is not set): the next call starts from the beginning"
    elif point is None:
        label = f"cursor (kv '{cursor_key}') = {cursor!r}: not readable as a date"
    else:  # a date, as the timeline's (the stored value, often epoch ms, on hover)
        label = (
            f"cursor (kv '{cursor_key}'): {when(point[0])} — mail above this line "
            "is behind it; the next call lists mail below it"
        )
    stored = f" title='stored value: {esc(cursor)}'" if cursor is not None else ""
    marker = f"<tr class=cur><td colspan=6{stored}>▶ {esc(label)}</td></tr>"
    lo, hi = 0, n
    if n > max_rows:
        lo = max(0, min(at - max_rows // 2, n - max_rows))
        hi = lo + max_rows
    counts: dict[int, int] = {}
    for d in dates:
        counts[d] = counts.get(d, 0) + 1
    rows: list[str] = []
    if lo:
        rows.append(
            f"<tr><td colspan=6 class=m>… {lo:,} earlier message{'s' if lo != 1 else ''} not shown</td></tr>"
        )
    records = list(table.iloc[lo:hi].itertuples())
    for i, r in enumerate(records, start=lo):
        if i == at:
            rows.append(marker)
        group = counts[r.date_ms]
        first_of_group = i == lo or dates[i - 1] != r.date_ms or i == at
        cells = []
        if first_of_group:
            span = 1
            while i + span < hi and dates[i + span] == r.date_ms and i + span != at:
                span += 1
            same = f"<span class=same>×{group} same date</span>" if group > 1 else ""
            cells.append(f"<td class=d rowspan={span}>{esc(when(r.date_ms))}{same}</td>")
        steps = ", ".join(map(str, r.steps)) if r.steps else "—"
        cells += [
            f"<td><code>{esc(r.accountId)}/{esc(r.id)}</code></td>",
            f"<td>{esc(str(r.subject)[:120])}</td>",
            f"<td>{'start' if r.arrived == 0 else f'before call {r.arrived + 1}'}</td>",
            f"<td>{esc(steps)}</td>",
            f"<td>{_pill(r)}</td>",
        ]
        cls = " ".join(c for c in ("g" if group > 1 else "", "lostrow" if r.lost else "") if c)
        rows.append(f"<tr{f' class={chr(39)}{cls}{chr(39)}' if cls else ''}>{''.join(cells)}</tr>")
    if at >= hi and at <= n:
        rows.append(marker)
    if hi < n:
        rows.append(
            f"<tr><td colspan=6 class=m>… {n - hi:,} later message{'s' if n - hi != 1 else ''}"
            " not shown</td></tr>"
        )
    head = (
        "<tr><th>date</th><th>message</th><th>subject</th><th>arrived</th>"
        "<th>processed at call</th><th>status</th></tr>"
    )
    empty = "" if n else "<div class=m>the allowed accounts hold no mail</div>"
    return f"{CSS}{_STYLE}<div class='wbd wbr'><table>{head}{''.join(rows)}</table>{empty}</div>"


class ReplayView(widgets.VBox):
    """Step a tool through the mailbox, rewind its cursor, let mail arrive (see the module doc)."""

    def __init__(
        self, bench: Bench, tool: str, *, cursor_key: str = "cursor", input: Any = None, events: bool = False
    ) -> None:
        self.bench, self.tool, self.cursor_key, self.events = bench, tool, cursor_key, events
        self.replayer = Replayer(bench, tool, cursor_key=cursor_key, input=input)
        self.result: CallResult | None = None
        self.step_button = widgets.Button(
            description="Step", icon="step-forward", tooltip="one call of the tool"
        )
        self.run_button = widgets.Button(
            description="Run to end",
            icon="fast-forward",
            tooltip="call the tool until a call processes nothing new",
        )
        # a visible label: beside Rewind, a bare list of dates does not say what it is for
        self.rewind_to = widgets.Dropdown(
            options=[],
            description="rewind to:",
            tooltip="the earlier cursor Rewind stores",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="32em"),
        )
        self.rewind_button = widgets.Button(
            description="Rewind",
            icon="undo",
            tooltip="store the chosen earlier cursor in kv (not a tool call)",
        )
        self.arrive_count = widgets.BoundedIntText(
            value=3, min=1, max=1000, layout=widgets.Layout(width="5em")
        )
        self.arrive_dates = widgets.Dropdown(
            options=ARRIVE_DATES, value="same", layout=widgets.Layout(width="17em")
        )
        accounts = bench.email.accounts or ["inbox"]
        self.arrive_account = widgets.Dropdown(
            options=accounts, value=accounts[0], layout=widgets.Layout(width="10em")
        )
        self.arrive_button = widgets.Button(
            description="Arrive", icon="envelope", tooltip="add new mail before the next call"
        )
        self.warning = widgets.HTML()
        self.status = widgets.HTML()
        self.timeline = widgets.HTML()
        self.step_button.on_click(lambda _b: self._guard(self.step))
        self.run_button.on_click(lambda _b: self._guard(self.run_to_end))
        self.rewind_button.on_click(lambda _b: self._guard(self._rewind_chosen))
        self.arrive_button.on_click(
            lambda _b: self._guard(
                lambda: self.arrive(
                    self.arrive_count.value, dates=self.arrive_dates.value, account=self.arrive_account.value
                )
            )
        )
        self._arrivals = 0
        self._rewind_values: list[str | None] = []
        self._table: pd.DataFrame | None = None
        title = widgets.HTML(
            f"<b>Replay of {esc(tool)}</b> <span style='color:#888'>cursor in kv "
            f"'{esc(cursor_key)}' · accounts allowed: "
            f"{esc(bench.email.allowed)}</span>"
        )
        label = widgets.HTML("<span style='color:#888'>new mail:</span>")
        super().__init__(
            [
                title,
                widgets.HBox([self.step_button, self.run_button, self.rewind_to, self.rewind_button]),
                widgets.HBox(
                    [label, self.arrive_count, self.arrive_dates, self.arrive_account, self.arrive_button]
                ),
                self.status,
                self.warning,
                widgets.HTML(CSS + _STYLE + LEGEND),
                self.timeline,
            ]
        )
        self.refresh()

    # -- actions -----------------------------------------------------------------------
    def step(self) -> CallResult:
        """One call of the tool; the view is redrawn."""
        before = self.replayer.cursor()
        res = self.replayer.step()
        self.result = res
        last = self.replayer.ledger.events[-1]
        if res.ok:
            what = (
                f"<span style='color:#2e7d32'>✓</span> call {last.step}: processed "
                f"{len(last.processed)} ({len(last.new)} new)"
            )
        else:
            what = f"<span style='color:#c62828'>✗ call {last.step} failed: {esc(res.error)}</span>"
        self.refresh(f"{what} · cursor {esc(shown_cursor(before))} → {esc(shown_cursor(last.cursor_after))}")
        return res

    def run_to_end(self) -> pd.DataFrame:
        """Calls until one processes nothing new; returns the table."""
        first = self.replayer.ledger.calls + 1
        self.replayer.run()
        self.result = self.bench.results[-1] if self.bench.results else None
        last = self.replayer.ledger.calls
        self.refresh(f"ran calls {first}–{last}" if last > first else f"ran call {last}")
        return self.table

    def rewind(self, value: str | int | float | None) -> None:
        """Store `value` as the cursor (None: delete it, so the next call starts over)."""
        self.replayer.rewind(value)
        self.refresh(
            f"cursor rewound to {esc(shown_cursor(value)) if value is not None else 'none (start over)'}"
        )

    def _rewind_chosen(self) -> None:
        index = self.rewind_to.value
        if index is None or not 0 <= index < len(self._rewind_values):
            raise UsageError("choose a cursor to rewind to")
        self.rewind(self._rewind_values[index])

    def arrive(
        self, n: int = 3, *, dates: str = "same", account: str | None = None, date: int | None = None
    ) -> list[dict[str, Any]]:
        """`n` new messages before the next call. dates: "same" (all at one new time: the clock
        advanced one second), "apart" (one second apart), "cursor" (dated at the stored
        cursor's date: late mail); `date` overrides with an exact date."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise UsageError(f"arrive({n!r}): give a number of messages >= 1")
        if dates not in {v for _, v in ARRIVE_DATES}:
            raise UsageError(f"dates={dates!r}: use 'same', 'apart' or 'cursor'")
        accounts = self.bench.email.accounts
        account = account or (accounts[0] if accounts else "inbox")
        clock = self.bench.email.clock
        if date is None and dates == "cursor":
            point = cursor_point(self.replayer.cursor())
            date = int(point[0]) if point is not None else None
        if date is None and dates == "same":
            date = clock.advance(1000)
        self._arrivals += 1
        batch = self._arrivals
        messages = [
            {
                "accountId": account,
                "subject": f"arrival {batch}, message {i + 1} of {n}",
                "fromAddr": "someone@example.org",
                "body": f"new mail {i + 1} of {n}",
                **({"date": date} if date is not None else {}),
            }
            for i in range(n)
        ]
        added = self.replayer.arrive(messages, events=self.events)
        self.refresh(
            f"{len(added)} message{'s' if len(added) != 1 else ''} arrived in "
            f"{esc(account)} ({dict((v, k) for k, v in ARRIVE_DATES)[dates]})"
        )
        return added

    def _guard(self, action: Any) -> None:
        if self.bench.closed:  # say which bench and what to do, and stop offering the buttons
            self._closed()
            return
        try:
            action()
        except Exception as exc:  # a click handler's exception would only reach the kernel log
            if isinstance(exc, WorkbenchError):
                line = str(exc)
            else:
                sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, exc.__traceback__
                line = f"E_INTERNAL: {type(exc).__name__}: {exc}"
            self.status.value = f"<span style='color:#c62828'>error {esc(line)}</span>"

    def _closed(self) -> None:
        for button in (self.step_button, self.run_button, self.rewind_button, self.arrive_button):
            button.disabled = True
        self.status.value = (
            f"<span style='color:#c62828'>error E_USAGE: the bench of {esc(self.bench.manifest.id)} "
            "is closed — by a bench.close() run after this widget was made: run the cell that "
            "made it again, or give the widget a bench no later cell closes</span>"
        )

    # -- state -------------------------------------------------------------------------
    def refresh(self, message: str = "") -> None:
        """Recompute the table and redraw warnings, timeline and the rewind choices."""
        table = self.replayer.frame()
        self._table = table
        cursor = self.replayer.cursor()
        warnings = table.attrs["warnings"]
        self.warning.value = (
            (
                _STYLE
                + "<div class='wbr'>"
                + "".join(f"<div class=warn>⚠ {esc(w)}</div>" for w in warnings)
                + "</div>"
            )
            if warnings
            else ""
        )
        self.timeline.value = timeline_html(table, cursor, self.cursor_key)
        # earlier cursors, newest first; "start over" last
        seen: list[str | None] = []
        labels: list[str] = []
        for step, value in reversed(self.replayer.ledger.cursors()):
            if value is None or value in seen or value == cursor:
                continue
            seen.append(value)
            point = cursor_point(value)
            where = when(point[0]) if point else value
            labels.append(f"{'start' if step == 0 else f'after call {step}'}: {where}")
        seen.append(None)
        labels.append("no cursor (start over)")
        self._rewind_values = seen
        self.rewind_to.options = [(label, i) for i, label in enumerate(labels)]
        self.rewind_to.value = 0
        counts = self.state
        summary = (
            f"<span style='color:#888'>{counts['calls']} call{'s' if counts['calls'] != 1 else ''}"
            f" · {counts['messages']} messages: {counts['once']} once, {counts['twice']} "
            f"more than once, {counts['pending']} not yet, {counts['lost']} lost</span>"
        )
        self.status.value = f"{message} {'· ' if message else ''}{summary}"

    @property
    def table(self) -> pd.DataFrame:
        """One row per message (see `bench.email.replay_run`), as of the last redraw."""
        if self._table is None:
            self.refresh()
        assert self._table is not None
        return self._table

    @property
    def steps(self) -> pd.DataFrame:
        """One row per call (made here or outside), rewind and arrival."""
        return self.replayer.steps_frame()

    @property
    def warnings(self) -> list[str]:
        return list(self.table.attrs["warnings"])

    @property
    def state(self) -> dict[str, Any]:
        """calls, cursor, cursor_date, messages, once, twice, pending, lost, warnings."""
        t = self.table
        cursor = self.replayer.cursor()
        point = cursor_point(cursor)
        return {
            "calls": self.replayer.ledger.calls,
            "cursor": cursor,
            "cursor_date": point[0] if point else None,
            "messages": len(t),
            "once": int((t["processed"] == 1).sum()),
            "twice": int((t["processed"] > 1).sum()),
            "pending": int(((t["processed"] == 0) & ~t["lost"]).sum()),
            "lost": int(t["lost"].sum()),
            "warnings": list(t.attrs["warnings"]),
        }


def replay(
    bench: Bench, tool: str, *, cursor_key: str = "cursor", input: Any = None, events: bool = False
) -> ReplayView:
    """The replay widget for `tool` (see the module doc). events=True: Arrive also fires the
    manifest's email.onNewMessage triggers (`bench.email.arrive`)."""
    return ReplayView(bench, tool, cursor_key=cursor_key, input=input, events=events)
