"""ctx.audit(event, data?) (A6): a structured row in the activity log, scoped to the call.

Rows are {call_id, toolCallId, seq, source, event, data, time}; `bench.audit()` shows them.
`source` says who wrote the row, and no tool can set it: "tool" for its own ctx.audit rows,
"platform" for the rows the platform writes itself (each ctx.tools call, audited as the
model's), "workbench" for a note saying what was dropped. A tool's event name is free (the seed
reserves none), so `ctx.audit('tool:send_email', …)` is kept as written, as a "tool" row; the
call's result warns that it is named like the platform's rows, and `bench.audit()` has the
source as its index too, so a selection of columns still says who wrote each row.

Bounded (SEC5): one row's data is at most `Limits.audit_row_chars` of JSON (E_INVALID_ARGUMENT
past it); a call keeps `Limits.audit_rows` of its own rows, and one note row counts the rest;
the bench's log is a ring of `Limits.audit_bench_chars`, the oldest rows dropped first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .._errors import WorkbenchError
from .._json import json_chars, to_json
from .kept import ROW_CHARS, Ring
from .spec import CapabilitySpec, OpenContext, View
from .state_logs import ring_part

if TYPE_CHECKING:
    from ..platforms import Limits
    from ._session import CallSession

MAX_EVENT_CHARS = 200  # an event name, as shown in the activity log
COLUMNS = ["call_id", "toolCallId", "seq", "source", "event", "data", "time"]
Source = Literal["tool", "platform", "workbench"]
PLATFORM_PREFIX = "tool:"  # the event of the platform's row for a ctx.tools call: tool:<name>


def activity_log(limits: Limits) -> Ring[dict[str, Any]]:
    """A bench's activity log: its rows, the oldest dropped past `limits.audit_bench_chars`."""
    return Ring(limits.audit_bench_chars, _chars, "audit_bench_chars")


def log_of(providers: Any) -> Ring[dict[str, Any]] | None:
    """The activity log of the bench of `providers` (None: its platform has no ctx.audit)."""
    log: Ring[dict[str, Any]] | None = providers.backends.get(SPEC.impl)
    return log


def _chars(row: dict[str, Any]) -> int:
    return ROW_CHARS + len(row["event"]) + json_chars(row["data"])


def _backend(opening: OpenContext) -> Ring[dict[str, Any]]:
    """ctx.audit's backend: the bench's activity log (bench.audit() reads it)."""
    return activity_log(opening.limits)


@dataclass(slots=True)
class AuditCall:
    """ctx.audit's state in one invocation: the log it writes and what it wrote there."""

    log: Ring[dict[str, Any]]
    seq: int = 0  # rows this invocation added to the bench's activity log
    own: int = 0  # of them, the tool's own ctx.audit rows (at most limits.audit_rows)
    note: dict[str, Any] | None = None  # the row counting the ones past that

    def nested(self) -> AuditCall:
        """A nested invocation numbers its own rows, in the same log."""
        return AuditCall(self.log)


def _call_state(session: CallSession) -> AuditCall:
    log = session.providers.backends.get("audit")  # a session made outside a bench: its own
    return AuditCall(log if log is not None else activity_log(session.limits))


class Audit:
    """ctx.audit for one call."""

    def __init__(self, session: CallSession) -> None:
        self.s = session

    def audit(self, event: Any, data: Any = None) -> None:
        if not isinstance(event, str) or not event or len(event) > MAX_EVENT_CHARS:
            raise WorkbenchError(
                "E_INVALID_ARGUMENT",
                f"audit(event, data?): event is a name of 1 to {MAX_EVENT_CHARS} characters, "
                f"got {type(event).__name__}",
                field="event",
            )
        value, why = _row_data(self.s.limits, data)
        if why is not None:
            limit = {"limit": self.s.limits.audit_row_chars} if "Limits." in why else {}
            raise WorkbenchError(
                "E_INVALID_ARGUMENT", f"audit({event!r}, data): {why}", field="data", **limit
            )
        if event.startswith(PLATFORM_PREFIX):  # kept as written; the call result says so
            self.s.warn(
                f"A6: ctx.audit({event[:60]!r}) is named like the rows the platform writes for "
                f"ctx.tools calls; it is this tool's own row (source 'tool' in bench.audit()), "
                "not a call"
            )
        record(self.s, event, value, source="tool")


def _row_data(limits: Limits, data: Any) -> tuple[Any, str | None]:
    """`data` as a row keeps it (a JSON copy), or why it cannot be kept."""
    cap = limits.audit_row_chars
    value, err = to_json(data, max_chars=cap, max_depth=limits.json_depth)
    if err is not None and err.code == "E_RESULT_TOO_LARGE":
        return None, (
            f"the data is {err.details['size']:,} JSON characters; an audit row holds at most "
            f"{cap:,} (Limits.audit_row_chars)"
        )
    return value, None if err is None else err.message


def record(session: CallSession, event: str, data: Any, *, source: Source = "platform") -> None:
    """Append one row for `session`'s call: its own ctx.audit ("tool"), or a row the platform
    writes ("platform": a ctx.tools call, whose input is kept as a copy within the row limit)."""
    own = session.of("audit")
    log = own.log
    if source == "platform":
        data, why = _row_data(session.limits, data)
        if why is not None:
            data = {"_dropped": f"the input is not kept: {why}"}
    elif source == "tool":
        if own.own >= session.limits.audit_rows:  # the call's share is used: count it
            _dropped(session, len(event) + json_chars(data))
            return
        own.own += 1
    own.seq += 1
    log.append(
        {
            "call_id": session.call_id,
            "toolCallId": session.values.get("toolCallId"),
            "seq": own.seq,
            "source": source,
            "event": event,
            "data": data,
            "time": session.providers.now(),  # the bench's clock (ctx/clock.py)
        }
    )


def _dropped(session: CallSession, chars: int) -> None:
    """One more row of the call not kept: the call's note row says how many, and their size."""
    own = session.of("audit")
    note = own.note
    if note is None:
        record(session, "workbench:rows dropped", {"rows": 0, "chars": 0}, source="workbench")
        note = own.note = own.log[-1]
    data = note["data"]
    data["rows"] += 1
    data["chars"] += chars
    data["why"] = (
        f"this call wrote {own.own + data['rows']:,} audit rows; a call keeps "
        f"{session.limits.audit_rows:,} (Limits.audit_rows)"
    )


#: ctx.audit as a unit
SPEC = CapabilitySpec(
    impl="audit",
    state=(ring_part("audit", lambda log: log),),
    title="ctx.audit",
    implementation=Audit,
    backend=_backend,
    call_state=_call_state,
    views=(View("audit", "the audit log"),),
)
