"""A recorded conversation's tool calls run again, in order, on a bench, each result compared
with the one recorded.

A call's tool is looked up by the name the model saw, through the manifest's own lookup (an
Ekanos effective name finds its tool); a name the gem lacks is a row marked `unknown_tool`,
not a crash. The recorded result is read as JSON when it is JSON, and compared with today's
value in the pinned call's words (pins/diff.py). What counts as an error on both sides:

- today: the call's error (E_TOOL_ERROR, E_SCHEMA, …);
- recorded: a result marked `is_error` (Anthropic), or, in the formats that have no mark, a
  JSON object with an "error" key, or a text that starts with "Error" or an E_ code.

An error then and an error now is a `match` (the model saw an error both times), with lines
saying how the messages differ; a result then and an error now is `error`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._errors import UsageError, WorkbenchError
from .._json import MAX_RESULT_CHARS
from ..pins.diff import short, text_diff, value_diff
from .read import Conversation, Recorded, RecordedCall, read_conversation

if TYPE_CHECKING:
    import pandas as pd

    from ..bench.bench import Bench
    from ..bench.result import CallResult

__all__ = ["STATUSES", "ConversationReplay", "Row", "compare", "replay_conversation"]

#: A row's status: the call's result is the recorded one; differs from it; the call fails
#: where the recorded one did not; no tool of that name; the transcript has no result for it.
STATUSES = ("match", "differs", "error", "unknown_tool", "no_result")
_OK = ("match", "no_result")
_ERROR_TEXT = re.compile(r"\s*(error\b|E_[A-Z_]+\b)", re.IGNORECASE)
_MAX_SHOWN = 40  # diff lines of one call in a report


@dataclass
class Row:
    """One replayed call: its place, the recorded call, the gem's tool, status and diff lines."""

    n: int
    call_id: str
    tool: str
    status: str
    diff: list[str] = field(default_factory=list)
    result: CallResult | None = field(default=None, repr=False)


@dataclass
class ConversationReplay:
    """A replayed conversation: `.rows` (a DataFrame), `.ok`, `.lines()`; `calls` the Row list."""

    gem: str
    format: str
    label: str
    calls: list[Row]
    saved: Any = None  # the path of the case `save=` wrote

    @property
    def ok(self) -> bool:
        """Whether every call's result is the recorded one (a call without one does not count)."""
        return all(r.status in _OK for r in self.calls)

    @property
    def rows(self) -> pd.DataFrame:
        """One row per call: n, call_id, tool, status, diff (its lines, one text)."""
        import pandas as pd

        return pd.DataFrame(
            [(r.n, r.call_id, r.tool, r.status, "\n".join(r.diff)) for r in self.calls],
            columns=["n", "call_id", "tool", "status", "diff"],
        )

    def counts(self) -> dict[str, int]:
        """How many calls have each status (those that occur)."""
        out: dict[str, int] = {}
        for r in self.calls:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    def summary(self) -> str:
        n = len(self.calls)
        shown = ", ".join(f"{k} {v}" for k, v in self.counts().items())
        verdict = "replays as recorded" if self.ok else "replays otherwise"
        return f"{self.label} ({self.format}, {n} call{'' if n == 1 else 's'}): {verdict}: {shown}"

    def lines(self) -> list[str]:
        """The table as text: a line per call, its diff lines indented, then the summary."""
        width = max([len(r.tool) for r in self.calls] + [4])
        out = [f"{'n':>4}  {'status':<12}  {'tool':<{width}}  call_id"]
        for r in self.calls:
            out.append(f"{r.n:>4}  {r.status:<12}  {r.tool:<{width}}  {r.call_id}")
            shown = r.diff[:_MAX_SHOWN]
            out.extend(f"        {line}" for line in shown)
            if len(r.diff) > len(shown):
                out.append(f"        … and {len(r.diff) - len(shown)} more")
        out.append(self.summary())
        return out

    def report(self) -> str:
        """What differs, for a failing test: the calls that do not match and their lines."""
        from .._text import terminal_safe

        out = [self.summary()]
        for r in self.calls:
            if r.status not in _OK:
                out.append(f"  call {r.n} {r.tool} ({r.call_id}): {r.status}")
                out.extend(f"    {line}" for line in r.diff[:_MAX_SHOWN])
        return terminal_safe("\n".join(out))

    def __repr__(self) -> str:
        return f"<ConversationReplay {self.summary()}>"

    def _repr_html_(self) -> str:
        from .view import replay_html

        return replay_html(self)


# -- comparing -------------------------------------------------------------------------------
def _expected(recorded: Recorded, got: Any) -> Any:
    """The recorded content as a value to compare with `got`: a text that is JSON, parsed
    (unless it is `got` itself, a text); content blocks and JSON values as they are."""
    content = recorded.content
    if not isinstance(content, str) or content == got:
        return content
    if len(content) <= MAX_RESULT_CHARS:
        try:
            return json.loads(content)
        except (ValueError, RecursionError):
            pass
    return content


def _recorded_error(recorded: Recorded) -> bool:
    content = recorded.content
    if recorded.is_error:
        return True
    if isinstance(content, dict):
        return "error" in content
    if isinstance(content, str):
        value = _expected(recorded, None)
        return (isinstance(value, dict) and "error" in value) or bool(_ERROR_TEXT.match(content))
    return False


def _error_lines(recorded: Recorded, err: WorkbenchError) -> Iterator[str]:
    """How today's error says what the recorded one did (no lines: the same message)."""
    content = _expected(recorded, None)
    said = content.get("error") if isinstance(content, dict) else content
    if isinstance(said, dict):
        want = {k: said[k] for k in ("code", "message") if k in said}
        yield from value_diff(want, {k: getattr(err, k) for k in want}, "error")
        return
    if not isinstance(said, str):
        said = json.dumps(said, ensure_ascii=False)
    if err.message in said:  # "Error: E_X: message", "message", …: it says the same
        return
    yield from text_diff(said, err.message, "error.message")


def compare(recorded: Recorded | None, res: CallResult) -> tuple[str, list[str]]:
    """(status, diff lines) of today's result `res` against the `recorded` one."""
    if recorded is None:
        got = short(res.value) if res.error is None else f"{res.error.code}: {res.error.message}"
        return "no_result", [f"the conversation has no result for this call; today: {got[:200]}"]
    err = res.error
    if err is not None:
        if _recorded_error(recorded):
            return "match", list(_error_lines(recorded, err))
        expected = short(_expected(recorded, None))
        return "error", [f"error: expected {expected}, got {err.code}: {short(err.message)[1:-1]}"]
    if recorded.is_error:
        return "differs", [f"value: expected an error ({short(recorded.content)}), got {short(res.value)}"]
    lines = list(value_diff(_expected(recorded, res.value), res.value, "value"))
    return ("differs" if lines else "match"), lines


# -- running ---------------------------------------------------------------------------------
def _tool(bench: Bench, call: RecordedCall, names: Mapping[str, str]) -> str | None:
    """The gem's tool the model meant by the call's name (`names` first), or None."""
    spec = bench.manifest.tool(names.get(call.name, call.name))
    return None if spec is None else spec.name


def run_calls(bench: Bench, conv: Conversation, names: Mapping[str, str]) -> list[Row]:
    """Each call of `conv`, in order, on `bench`, compared with its recorded result."""
    rows = []
    for c in conv.calls:
        tool = _tool(bench, c, names)
        if tool is None:
            rows.append(Row(c.n, c.call_id, c.name, "unknown_tool", [bench.manifest.no_tool(c.name)]))
            continue
        res = bench.call(tool, c.arguments)
        status, lines = compare(c.result, res)
        rows.append(Row(c.n, c.call_id, tool, status, lines, res))
    return rows


def replay_conversation(
    bench: Bench,
    source: Any,
    *,
    save: str | None = None,
    names: Mapping[str, str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> ConversationReplay:
    """Replay `source` (read_conversation's) on `bench`; with `save`, keep it as the case
    tests/conversations/<save>.json of the gem, with the open `options` that matter (None:
    the bench's clock, if frozen, and seed)."""
    from .case import case_of, conversation_path, save_case

    if names is not None and not (
        isinstance(names, Mapping)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in names.items())
    ):
        raise UsageError(f"names={names!r}: give {{name the model saw: the gem's tool name}}")
    path = conversation_path(bench.manifest.root, save) if save is not None else None  # its name, first
    conv = read_conversation(source, depth=bench.limits.json_depth)
    if conv.gem is not None and conv.gem != bench.manifest.id:
        raise WorkbenchError(
            "E_CONVERSATION",
            f"{conv.label}: the case is of gem {conv.gem!r}, this bench's is {bench.manifest.id!r}",
            field="gem",
        )
    kept = dict(options) if options is not None else _bench_options(bench)
    names = {**conv.names, **(names or {})}  # a saved case's, then the caller's
    rows = run_calls(bench, conv, names)
    out = ConversationReplay(bench.manifest.id, conv.format, conv.label, rows)
    if path is not None:
        out.saved = save_case(path, case_of(conv, bench, kept, names))
    return out


def _bench_options(bench: Bench) -> dict[str, Any]:
    """What a saved case opens its bench with, of this bench: its frozen clock and its seed."""
    out: dict[str, Any] = {}
    if bench.clock.frozen:
        out["clock"] = bench.clock.now().isoformat().replace("+00:00", "Z")
    if bench.seed is not None:
        out["seed"] = bench.seed
    return out
