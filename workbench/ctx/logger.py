"""ctx.logger.debug|info|warn|error(fields?, message) (K6, Ekanos integrations): structured
rows `{level, message, fields, seq}` in the call's `res.log_rows` (and under the result in
the notebook), pino's argument order: `(fields, message)` or `(message)`.

A log call never fails the tool (the platform's logger does not throw): what cannot be a row
(not JSON, too deep, over the log's size) is recorded as a row saying so. Known secrets are
masked in the message and fields.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._json import to_json
from .._text import well_formed, well_formed_value
from .spec import CapabilitySpec

if TYPE_CHECKING:
    from ._session import CallSession

LEVELS = ("debug", "info", "warn", "error")
MAX_MESSAGE_CHARS = 10_000


class Logger:
    """ctx.logger for one call (one instance per call: it counts the bytes logged)."""

    def __init__(self, session: CallSession) -> None:
        self.s = session
        self.used = 0  # bytes of rows this call, against limits.log_bytes

    def debug(self, *args: Any) -> None:
        self._log("debug", args)

    def info(self, *args: Any) -> None:
        self._log("info", args)

    def warn(self, *args: Any) -> None:
        self._log("warn", args)

    def error(self, *args: Any) -> None:
        self._log("error", args)

    def _log(self, level: str, args: tuple[Any, ...]) -> None:
        cap = self.s.limits.log_bytes
        if self.used >= cap:
            return  # the row saying the log is full was the last one
        fields: Any = None
        if args and not isinstance(args[0], str):
            fields, args = args[0], args[1:]
        message = well_formed(
            " ".join(a if isinstance(a, str) else _short(a) for a in args)[:MAX_MESSAGE_CHARS]
        )
        room = cap - self.used - len(message)
        text = "null"
        if fields is not None:
            value, err = to_json(fields, max_chars=max(room, 0), max_depth=min(self.s.limits.json_depth, 64))
            text = json.dumps(
                {"_dropped": f"fields not kept: {err.message}"} if err is not None else value,
                ensure_ascii=False,
            )
        self.used += len(message) + len(text)
        rows = self.s.of("logger").rows
        if self.used >= cap:
            level, message, text = "warn", f"(log full: over {cap:,} bytes in this call)", "null"
        elif len(rows) + 1 >= self.s.limits.log_rows:  # SEC5: ten thousand empty rows
            self.used = cap
            level, message, text = "warn", f"(log full: {self.s.limits.log_rows:,} rows in this call)", "null"
        http = self.s.http
        if http is not None:  # a secret the tool logged is shown masked, as everywhere
            shown = http.mask(message), http.mask(text)
            if shown != (message, text):  # K6: said, so the author (and the doctor) learn of it
                self.s.warn("K6: a secret's value reached ctx.logger (shown masked as ***)")
            message, text = shown
        rows.append(
            {
                "seq": len(rows) + 1,
                "level": level,
                "message": message,
                "fields": well_formed_value(json.loads(text)),  # rows are shown: no lone surrogate
            }
        )


def _short(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)[:200]
    except (TypeError, ValueError, RecursionError):
        return type(value).__name__


@dataclass(slots=True)
class LoggerCall:
    """ctx.logger's state in one call: its rows (a nested invocation's go into the same)."""

    rows: list[dict[str, Any]] = field(default_factory=list)

    def into(self, res: Any) -> None:
        res.log_rows = self.rows


#: ctx.logger as a unit
SPEC = CapabilitySpec(
    impl="logger", title="ctx.logger", implementation=Logger, call_state=lambda session: LoggerCall()
)
