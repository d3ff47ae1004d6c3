"""ctx.audit(event, data?) (A6): a structured row in the activity log, scoped to the call.

Rows are {toolCallId, seq, event, data, time}; `bench.audit()` shows them. The event is a
short name, the data any JSON value within the call's depth and the log's size bounds.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from .._json import to_json

if TYPE_CHECKING:
    from ._session import CallSession

MAX_EVENT_CHARS = 200  # an event name, as shown in the activity log


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
        value, err = to_json(data, max_chars=self.s.limits.log_bytes, max_depth=self.s.limits.json_depth)
        if err is not None:
            raise WorkbenchError("E_INVALID_ARGUMENT", f"audit({event!r}, data): {err.message}", field="data")
        record(self.s, event, value)


def record(session: CallSession, event: str, data: Any) -> None:
    """Append one row for `session`'s call (its own ctx.audit, or a ctx.tools call)."""
    session.audit_seq += 1
    seq = session.audit_seq
    session.audit_log.append(
        {
            "call_id": session.call_id,
            "toolCallId": session.values.get("toolCallId"),
            "seq": seq,
            "event": event,
            "data": data,
            "time": time.time(),
        }
    )
