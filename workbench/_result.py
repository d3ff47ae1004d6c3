"""CallResult: everything one tool call produced, for assertions and for display."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._errors import WorkbenchError

if TYPE_CHECKING:
    import pandas as pd

MAX_RESULT_CHARS = 1_048_576  # N9, counted like JavaScript's string length (UTF-16 units)
TRACE_COLUMNS = ["seq", "method", "args", "ok", "error", "duration_us"]


@dataclass(eq=False)
class CallResult:
    """The outcome of `Bench.call`: never raised, always returned."""

    call_id: str
    tool: str
    input: Any
    value: Any = None
    error: WorkbenchError | None = None
    logs: str = ""
    violations: list[str] = field(default_factory=list)
    duration_ms: float = 0.0
    started: float = 0.0  # seconds since the epoch
    trace_rows: list[dict[str, Any]] = field(default_factory=list, repr=False)
    idempotency_key: str = ""  # N7: ctx.idempotencyKey of this call (kept on a crash rerun)
    crash: "CrashReport | None" = field(default=None, repr=False)  # set by call(crash=...)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def runs(self) -> list["CallResult"]:
        """N7: the crashed run then this one (the rerun) after call(crash=...); else [self]."""
        if self.crash is not None and self.crash.crashed is not None:
            return [self.crash.crashed, self]
        return [self]

    @property
    def trace(self) -> "pd.DataFrame":
        """One row per ctx call the tool made, in order."""
        import pandas as pd

        return pd.DataFrame(self.trace_rows, columns=TRACE_COLUMNS)

    def raise_for_error(self) -> "CallResult":
        """Raise the call's WorkbenchError if it failed; return self otherwise (for chaining)."""
        if self.error is not None:
            raise self.error
        return self

    def _repr_html_(self) -> str:
        from .jupyter.display import result_html

        return result_html(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        from .jupyter.display import result_text

        p.text(result_text(self))

    def __repr__(self) -> str:
        state = f"value={self.value!r:.200}" if self.ok else f"error={self.error}"
        extra = f", violations={len(self.violations)}" if self.violations else ""
        return (f"<CallResult {self.tool} {'ok' if self.ok else 'failed'} {state} "
                f"({self.duration_ms:.2f} ms, {len(self.trace_rows)} ctx calls{extra})>")


@dataclass(eq=False)
class CrashReport:
    """N7: what `bench.call(tool, input, crash=N)` did: the crashed run, then the rerun.

    `crashed` is the aborted run (None when the tool made fewer than N ctx calls, so nothing
    crashed); `diffs` the state change of each run (bench.diff rows); `duplicates` the
    entries the rerun added where the crashed run had already added some — a side effect done
    twice.
    """

    point: int
    crashed: "CallResult | None"
    diffs: list["pd.DataFrame"]
    duplicates: list[str]

    @property
    def crashed_run_diff(self) -> "pd.DataFrame":
        return self.diffs[0]

    @property
    def rerun_diff(self) -> "pd.DataFrame":
        return self.diffs[-1]


def why_not_json(value: Any, where: str = "result", seen: set[int] | None = None) -> str | None:
    """Where the first value JSON cannot carry is, and why; None if it is all JSON."""
    seen = set() if seen is None else seen
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} is {value} (JSON has no NaN/Infinity)"
    if isinstance(value, (list, tuple, dict)):
        if id(value) in seen:
            return f"{where} contains itself (a cycle)"
        seen.add(id(value))
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for k, v in items:
            if isinstance(value, dict) and not isinstance(k, str):
                return f"{where} has a non-string key {k!r}"
            sub = f"{where}.{k}" if isinstance(value, dict) else f"{where}[{k}]"
            if (why := why_not_json(v, sub, seen)):
                return why
        seen.discard(id(value))
        return None
    return f"{where} is a {type(value).__name__}, which is not JSON"


def to_json(value: Any, *, text: str | None = None) -> tuple[Any, WorkbenchError | None]:
    """The value as the caller would receive it (JSON round trip), or E_RESULT_* (N9).

    `text`: the value as the tool's runtime already serialised it (JS); else it is serialised
    here, after checking it is JSON at all.
    """
    if text is None:
        why = why_not_json(value)
        if why:
            return None, WorkbenchError("E_RESULT_NOT_JSON", f"the tool returned a value that is "
                                        f"not JSON: {why}", field=why.split(" ", 1)[0])
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    size = len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2
    if size > MAX_RESULT_CHARS:
        return None, WorkbenchError(
            "E_RESULT_TOO_LARGE", f"the result is {size:,} JSON characters; at most "
            f"{MAX_RESULT_CHARS:,}. Write large output to ctx.files or storage and return a "
            "summary", size=size, limit=MAX_RESULT_CHARS)
    return json.loads(text), None
