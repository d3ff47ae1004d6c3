"""Email-cursor replay, the readings a `workbench.inspect.replay.Ledger` is built from: where a
stored cursor points (`cursor_point`, `behind`), and which messages a call listed and read, from
its trace (`trace_listed`, `trace_reads`). Pure functions: they call nothing and change nothing.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..bench.result import CallResult

Key = tuple[str, str]  # (accountId, id)


def when(ms: float | None) -> str:
    """A ms timestamp as a readable UTC date (milliseconds only when there are some)."""
    if ms is None or not math.isfinite(ms):
        return "—"
    try:
        dt = datetime.fromtimestamp(ms / 1000, UTC)
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


def same_cursor(a: str | None, b: str | None) -> bool:
    """Two stored cursors point at the same place ("5" and "5.0" do)."""
    return a == b or (cursor_point(a) is not None and cursor_point(a) == cursor_point(b))


# -- reading the trace ---------------------------------------------------------------------
def _options(params: tuple[Any, Any]) -> dict[str, Any] | None:
    """The options of an email call from its trace `params`: one object and/or keywords."""
    args, kwargs = params
    first = args[0] if args else None
    if first is None:
        first = {}
    if not isinstance(first, dict) or len(args) > 1:
        return None
    return {**first, **kwargs}


def _calls(res: CallResult, method: str) -> list[dict[str, Any]]:
    return [r for r in res.trace_rows if r.get("method") == method and r.get("ok")]


def trace_reads(res: CallResult) -> tuple[list[Key], int]:
    """Messages a call read with getMessage, from its trace; and how many reads could not be
    told (the trace did not keep their arguments: not JSON, or too big)."""
    keys: list[Key] = []
    unknown = 0
    for row in _calls(res, "email.getMessage"):
        params = row.get("params")
        opts = _options(params) if params is not None else None
        if opts and isinstance(opts.get("accountId"), str) and isinstance(opts.get("id"), str):
            keys.append((opts["accountId"], opts["id"]))
        else:
            unknown += 1
    return keys, unknown


def trace_listed(res: CallResult) -> tuple[list[Key], int]:
    """Messages listSince returned in a call, from its trace; and how many listSince results
    the trace did not keep (too big)."""
    keys: list[Key] = []
    unknown = 0
    for row in _calls(res, "email.listSince"):
        page = row.get("result")
        if isinstance(page, dict) and isinstance(page.get("messages"), list):
            # the page the tool got, not a copy: skip what a Python tool put in it since
            keys += [
                (m["accountId"], m["id"])
                for m in page["messages"]
                if isinstance(m, dict)
                and isinstance(m.get("accountId"), str)
                and isinstance(m.get("id"), str)
            ]
        else:
            unknown += 1
    return keys, unknown
