"""CallResult: everything one tool call produced, for assertions and for display."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from .._errors import WorkbenchError
from .._json import flat_chars, json_chars
from ..ctx.kept import ROW_CHARS, TRACE_ROW_CHARS, Ring
from ..ctx.written import PREVIEW_BYTES, FileChange, kept_bytes

__all__ = ["PREVIEW_BYTES", "CallResult", "CrashReport", "FileChange", "kept_chars", "results_ring"]

if TYPE_CHECKING:
    import pandas as pd


class _Empty(list):
    """The empty list a result holds where it has none of a kind (no warnings, no files, no
    nested calls, …): one for all results. bench.results keeps thousands of results, and seven
    empty lists each were most of what the garbage collector walked on every collection. It
    stays empty: a result that gets some is given a list of its own."""

    __slots__ = ()
    __hash__ = object.__hash__  # type: ignore[assignment]  # (a dataclass takes it as a default)

    def _refuse(self, *_: Any, **__: Any) -> NoReturn:
        raise TypeError("this empty list is shared by every CallResult: assign a new list instead")

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse


NONE: list[Any] = _Empty()
"""The shared empty list of CallResult's list fields (nothing can be added to it)."""

TRACE_COLUMNS = ["seq", "method", "args", "ok", "error", "duration_us"]
# Each trace row also holds, outside the DataFrame: "params", the call's (positional arguments,
# keyword arguments) as they were passed (a copy where a tool could change them afterwards),
# and "result", what it returned — the object itself, not a copy (a Python tool that changes it
# later changes this); None when the call failed, or when not JSON or too big to keep. "args"
# is the short text preview; it and "params" are made when the row is first read (ctx/_trace.py).


@dataclass(eq=False, slots=True)
class CallResult:
    """The outcome of `Bench.call`: never raised, always returned."""

    call_id: str
    tool: str
    input: Any
    value: Any = None
    error: WorkbenchError | None = None
    logs: str = ""
    violations: list[str] = field(default=NONE)
    duration_ms: float = 0.0
    started: float = 0.0  # seconds since the epoch
    trace_rows: list[dict[str, Any]] = field(default=NONE, repr=False)
    idempotency_key: str = ""  # N7: ctx.idempotencyKey of this call (kept on a crash rerun)
    crash: CrashReport | None = field(default=None, repr=False)  # set by call(crash=...)
    parent: str | None = None  # agent tools: the call_id of the call whose ctx.tools ran this one
    surfaced: list[dict[str, Any]] = field(default=NONE)  # agent tools: surface_file's files
    children: list[CallResult] = field(default=NONE, repr=False)  # its nested ctx.tools calls
    # Ekanos (K2, K6): the value is `{error}` the model explains; ctx.logger's rows; warnings
    # about the result (its shape against outputExample)
    expected_failure: bool = False
    log_rows: list[dict[str, Any]] = field(default=NONE, repr=False)
    warnings: list[str] = field(default=NONE)
    # ctx calls made (None: as many as trace_rows lists; SEC5: it lists at most Limits.trace_rows)
    calls_made: int | None = field(default=None, repr=False)
    trace_chars: int = field(default=0, repr=False)  # characters of arguments and results it keeps
    # each file the call created, modified, moved or deleted, in order (ctx.files' platforms;
    # [] on the others): path, area, change, from_path, size, before_size, type; and their
    # content as the call left it and before (bounded: ctx/written.py)
    files: list[FileChange] = field(default=NONE, repr=False)
    # what a replay of it needs to see the same draws and times (a pinned call, issue 29): its
    # seed (None: none), its clock at the start in ms (None: the wall clock), whether frozen,
    # the sandbox's reads of a clock that ran (ticks) and the ctx layer's (times)
    replay: dict[str, Any] = field(default_factory=dict, repr=False)
    # how its bench pins it (`pin`): set by the bench's call (None: not made by a bench's call)
    pinner: Any = field(default=None, repr=False, compare=False)

    @property
    def ctx_calls(self) -> int:
        """How many ctx calls the tool made (the trace lists the first Limits.trace_rows)."""
        return len(self.trace_rows) if self.calls_made is None else self.calls_made

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def outcome(self) -> str:
        """K2's three outcomes: "success", "expected_failure" (Ekanos: a returned `{error}`) or
        "fault" (a throw, or any error of the call)."""
        if self.error is not None:
            return "fault"
        return "expected_failure" if self.expected_failure else "success"

    @property
    def runs(self) -> list[CallResult]:
        """N7: the crashed run then this one (the rerun) after call(crash=...); else [self]."""
        if self.crash is not None and self.crash.crashed is not None:
            return [self.crash.crashed, self]
        return [self]

    @property
    def trace(self) -> pd.DataFrame:
        """One row per ctx call the tool made, in order."""
        import pandas as pd

        return pd.DataFrame(self.trace_rows, columns=TRACE_COLUMNS)

    def pin(self, name: str) -> Any:
        """Save this call as a regression case, `tests/calls/<tool>/<name>.json` of its gem: its
        input, options, clock and seed, the state it found, its effects, result and changes,
        secrets masked (docs/pins.md). `gem-workbench test` replays it. Returns the path."""
        if self.pinner is None:
            from .._errors import UsageError

            raise UsageError("this result was not made by a bench's call: it cannot be pinned")
        return self.pinner(self, name)

    def pin_button(self, name: str = "") -> Any:
        """A notebook control to pin this call: a case name, a **pin** button and a line with
        the path or the error (ipywidgets; the result's own display stays plain HTML)."""
        from .._present import presenter

        return presenter("pin_button")(self, name)

    def raise_for_error(self) -> CallResult:
        """Raise the call's WorkbenchError if it failed; return self otherwise (for chaining)."""
        if self.error is not None:
            raise self.error
        return self

    @property
    def cause(self) -> dict[str, Any] | None:
        """For a failed call or an expected failure, the last ctx call that failed or returned
        a failure (an error envelope, an HTTP status >= 400: its row's `notice`); else None."""
        if self.error is None and not self.expected_failure:
            return None
        return next((r for r in reversed(self.trace_rows) if not r.get("ok") or r.get("notice")), None)

    def _repr_html_(self) -> str:
        from .._present import presenter

        return presenter("result_html")(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        from .._present import presenter

        p.text(presenter("result_text")(self))

    def __repr__(self) -> str:
        state = f"value={self.value!r:.200}" if self.ok else f"error={self.error}"
        extra = f", violations={len(self.violations)}" if self.violations else ""
        return (
            f"<CallResult {self.tool} {'ok' if self.ok else 'failed'} {state} "
            f"({self.duration_ms:.2f} ms, {self.ctx_calls} ctx calls{extra})>"
        )


@dataclass(eq=False)
class CrashReport:
    """N7: what `bench.call(tool, input, crash=N)` did: the crashed run, then the rerun.

    `crashed` is the aborted run (None when the tool made fewer than N ctx calls, so nothing
    crashed); `diffs` the state change of each run (bench.diff rows); `duplicates` what the
    crashed run and the rerun did more or otherwise than one clean call from the same start
    (ctx/rerun.py): a mail sent twice, a second document, a balance moved twice — N7.
    """

    point: int
    crashed: CallResult | None
    diffs: list[pd.DataFrame]
    duplicates: list[str]

    @property
    def crashed_run_diff(self) -> pd.DataFrame:
        return self.diffs[0]

    @property
    def rerun_diff(self) -> pd.DataFrame:
        return self.diffs[-1]


def kept_chars(res: CallResult) -> int:
    """About the characters `res` holds (its value, logs, log rows, trace, input, error and
    nested calls): what keeping it in bench.results costs."""
    trace = res.trace_rows
    n = ROW_CHARS + len(res.logs) + res.trace_chars + _chars(res.value) + _chars(res.input)
    if trace:
        n += TRACE_ROW_CHARS * len(trace)
    # (most calls have none of these: each is looked at only when there is one)
    if res.log_rows or res.surfaced:
        n += ROW_CHARS * (len(res.log_rows) + len(res.surfaced))
        n += sum(len(str(r.get("message", ""))) + json_chars(r.get("fields")) for r in res.log_rows)
    if res.files:
        n += ROW_CHARS * len(res.files) + kept_bytes(res.files)
    if res.error is not None:
        n += len(res.error.message) + json_chars(res.error.details)
    served = res.replay.get("served")
    if served is not None:  # the answers a bundle's replay serves back
        n += served.chars
    if res.children:
        n += sum(kept_chars(c) for c in res.children)
    return n


def _chars(value: Any) -> int:
    """About a value's JSON characters: for a small flat value, the bound `flat_chars` gives
    (at most 6 times the text, a few hundred characters: nothing against the ring's cap), so
    most results are not serialised only to be measured; else the text's length."""
    bound = flat_chars(value)
    return bound if 0 <= bound <= SMALL else json_chars(value)


SMALL = 1024  # characters under which a flat value's bound stands for its size


def results_ring(cap: int) -> Ring[CallResult]:
    """A bench's `results`: the calls' CallResults, the oldest dropped past `cap` characters."""
    return Ring(cap, kept_chars, "results_bench_chars")
