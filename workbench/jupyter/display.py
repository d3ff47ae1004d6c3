"""Rich display of CallResult and Bench: HTML for notebooks, text for terminals.

Every display is bounded: long strings, long lists, long logs and long traces are cut with a
note saying how much was left out, and the whole HTML stays around `MAX_HTML` characters, so
printing a 50 MB result cannot flood a notebook. Everything shown is escaped.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .._text import terminal_safe
from ._html import (  # (MAX_* and json_html: names of this module, as the tests import them)
    CSS,
    MAX_CELL,
    MAX_DEPTH,
    MAX_HTML,
    MAX_ITEMS,
    MAX_STRING,
    MAX_TRACE_ROWS,
    OPEN_DEPTH,
    SHARE_ERROR,
    SHARE_INPUT,
    SHARE_LOGS,
    SHARE_TRACE,
    SHARE_VALUE,
    SHARE_WARN,
    badge,
    clip,
    clip_escaped,
    esc,
    json_html,
    more,
)

if TYPE_CHECKING:
    from .._errors import WorkbenchError
    from ..bench.bench import Bench
    from ..bench.result import CallResult

__all__ = [
    "MAX_CELL",
    "MAX_DEPTH",
    "MAX_HTML",
    "MAX_ITEMS",
    "MAX_STRING",
    "MAX_TRACE_ROWS",
    "OPEN_DEPTH",
    "bench_html",
    "clip",
    "error_html",
    "esc",
    "json_html",
    "result_html",
    "result_text",
]


# -- CallResult --------------------------------------------------------------------------------
def _table(
    header: list[str],
    rows: list[list[str]],
    *,
    limit: int = MAX_HTML,
    what: str = "row",
    total: int | None = None,
) -> str:
    """An HTML table of already-escaped cells; rows past `limit` HTML characters are left out
    with a note (`total`: how many rows there are in all, when `rows` is already cut)."""
    total = len(rows) if total is None else total
    head = "<tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr>" if header else ""
    body: list[str] = []
    left = limit - len(head)
    for r in rows:
        row = "<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>"
        if left - len(row) < 0 and body:
            break
        left -= len(row)
        body.append(row)
    note = f"<div class=m>{more(total - len(body), what)}</div>" if total > len(body) else ""
    return f"<table>{head}{''.join(body)}</table>{note}"


def _cell(value: Any, limit: int = MAX_CELL) -> str:
    shown, hidden = clip("" if value is None else str(value), limit)
    return esc(shown) + ("<span class=m>…</span>" if hidden else "")


def _marks(error: WorkbenchError | None) -> frozenset[str]:
    if error is None:
        return frozenset()
    paths = [v.get("path") for v in error.details.get("violations") or () if isinstance(v, dict)]
    paths.append(error.details.get("field"))
    return frozenset(p for p in paths if isinstance(p, str) and p.startswith("/") and p != "/")


def error_html(error: WorkbenchError, *, limit: int = SHARE_ERROR) -> str:
    """Code, message, and where: field, path, violations, other details, the tool's stack."""
    out = [f"<div class=e><b>{esc(error.code)}</b> {clip_escaped(error.message, 2_000)}</div>"]
    rows = []
    for k, v in list(error.details.items())[:20]:
        if k in ("violations", "stack") or v is None:
            continue
        text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=repr)
        rows.append([f"<b>{esc(k)}</b>", f"<code>{_cell(text, 300)}</code>"])
    if rows:
        out.append(_table([], rows, limit=limit // 4, what="detail"))
    violations = [v for v in error.details.get("violations") or () if isinstance(v, dict)]
    if violations:
        vrows = [
            [f"<code>{_cell(v.get('path'))}</code>", _cell(v.get("message"), 300)]
            for v in violations[:MAX_ITEMS]
        ]
        out.append(
            _table(["path", "problem"], vrows, limit=limit // 2, what="violation", total=len(violations))
        )
    stack = error.details.get("stack")
    if stack:
        out.append(f"<pre>{clip_escaped(str(stack), limit // 4)}</pre>")
    return "".join(out)


MAX_ARGS_OPEN = 1_500  # characters of one ctx call's args shown when its cell is unfolded
ARGS_OPEN_SHARE = SHARE_TRACE // 3  # of the trace's HTML, for unfolded args in all


def _full_args(params: Any, text: str) -> str:
    """The arguments as passed (the row's "params": (args, kwargs)), as indented JSON."""
    try:
        args, kwargs = params
        value = [*args, kwargs] if kwargs else list(args)
        return json.dumps(value[0] if len(value) == 1 else value, ensure_ascii=False, indent=2, default=repr)
    except (TypeError, ValueError):
        return text


def _args_cell(args: Any, params: Any, budget: list[int]) -> str:
    """A ctx call's args: the trace's preview, cut at MAX_CELL characters; a cut one (the
    preview ends in "…") unfolds, on a click, to the arguments as passed, indented JSON of up to
    MAX_ARGS_OPEN characters, while the trace's `budget` for them lasts."""
    text = "" if args is None else str(args)
    if len(text) <= MAX_CELL and not text.endswith("…") or params is None:
        return f"<code>{_cell(text)}</code>"
    opened = clip_escaped(_full_args(params, text), MAX_ARGS_OPEN)
    if len(opened) > budget[0]:  # the trace's share for them is spent: the cut cell only
        return f"<code>{_cell(text)}</code>"
    budget[0] -= len(opened)
    return (
        f"<details class=cell><summary title='click to show all the args'><code>{_cell(text)}</code>"
        f"</summary><pre>{opened}</pre></details>"
    )


def _trace_html(rows: list[dict[str, Any]]) -> str:
    budget = [ARGS_OPEN_SHARE]
    body = [
        [
            esc(r.get("seq", "")),
            f"<code>{_cell(r.get('method'))}</code>",
            _args_cell(r.get("args"), r.get("params"), budget),
            "<span class=e>✗</span>"
            if not r.get("ok")
            else "<span class=nt>⚠</span>"
            if r.get("notice")
            else "✓",
            _cell(r.get("error") or r.get("notice")),
            esc(f"{r['duration_us']:,.0f}" if isinstance(r.get("duration_us"), (int, float)) else ""),
        ]
        for r in rows[:MAX_TRACE_ROWS]
    ]
    return _table(
        ["#", "method", "args", "ok", "error", "µs"],
        body,
        limit=SHARE_TRACE,
        what="ctx call",
        total=len(rows),
    )


def _log_rows_html(rows: list[dict[str, Any]]) -> str:
    """ctx.logger's rows (Ekanos, K6): level, message, fields."""
    body = [
        [
            esc(r.get("level", "")),
            _cell(r.get("message"), 500),
            ""
            if r.get("fields") is None
            else f"<code>{_cell(json.dumps(r['fields'], ensure_ascii=False), 300)}</code>",
        ]
        for r in rows[:MAX_TRACE_ROWS]
    ]
    return _table(["level", "message", "fields"], body, limit=SHARE_LOGS, what="row", total=len(rows))


def _section(title: str, body: str, *, opened: bool) -> str:
    return (
        f"<details{' open' if opened else ''}><summary><b>{esc(title)}</b></summary>"
        f"<div>{body}</div></details>"
    )


def result_html(res: CallResult) -> str:
    """The HTML of one call: status, value, error and where, violations, ctx calls, logs."""
    n = res.ctx_calls
    status = (
        "<span class='b ef'>expected failure</span>"  # K2: an {error} the model explains
        if res.expected_failure
        else badge(res.ok, "ok" if res.ok else "failed")
    )
    head = (
        f"{status} <b>{esc(res.tool)}</b> "
        f"<span class=m>{res.duration_ms:,.2f} ms · {n:,} ctx call{'' if n == 1 else 's'}"
        f" · {esc(res.call_id)}</span>"
    )
    if (cause := res.cause) is not None:  # the ctx call that led to it, in the headline
        head += (
            f" · after <code>{_cell(cause.get('method'))}</code> (#{esc(cause.get('seq', ''))}): "
            + _cell(cause.get("error") or cause.get("notice"))
        )
    from .display_agent import SHAPE_KEYS, sees_html, surfaced_html, tree_html  # agent tools' parts

    out = [CSS, "<div class=wbd>", f"<div>{head}</div>"]
    warn_left = SHARE_WARN
    notes = [*res.violations, *res.warnings]
    for i, v in enumerate(notes):
        item = f"<div class=w>⚠ {clip_escaped(v, 1_000)}</div>"
        if warn_left - len(item) < 0:
            out.append(f"<div class=m>{more(len(notes) - i, 'warning')}</div>")
            break
        warn_left -= len(item)
        out.append(item)
    if res.error is not None:
        out.append(error_html(res.error))
    else:
        out.append(_section("value", json_html(res.value, limit=SHARE_VALUE), opened=True))
        if isinstance(res.value, dict) and SHAPE_KEYS & res.value.keys():
            out.append(
                _section("what the agent sees · what the user sees", sees_html(res.value), opened=True)
            )
    if res.children:
        out.append(_section(f"calls through ctx.tools ({len(res.children):,})", tree_html(res), opened=True))
    marks = _marks(res.error)
    if res.input not in (None, {}) or marks:
        out.append(
            _section("input", json_html(res.input, limit=SHARE_INPUT, marks=marks), opened=bool(marks))
        )
    if res.files:  # issue 28: what the call wrote, with previews and diffs
        from .display_files import files_html

        out.append(_section(f"files ({len(res.files):,})", files_html(res.files), opened=True))
    if res.surfaced:
        body = surfaced_html(res.surfaced)
        out.append(_section(f"shown to the user ({len(res.surfaced)})", body, opened=True))
    if res.trace_rows:
        out.append(_section(f"ctx calls ({n:,})", _trace_html(res.trace_rows), opened=n <= 10))
    if res.log_rows:
        out.append(_section(f"logger ({len(res.log_rows):,})", _log_rows_html(res.log_rows), opened=True))
    if res.logs:
        lines = res.logs.count("\n") + (not res.logs.endswith("\n"))
        out.append(
            _section(
                f"logs ({lines:,} line{'' if lines == 1 else 's'})",
                f"<pre>{clip_escaped(res.logs, SHARE_LOGS)}</pre>",
                opened=True,
            )
        )
    out.append("</div>")
    return "".join(out)


def result_text(res: CallResult) -> str:
    """Readable text of one call for terminals (IPython's pretty printer), bounded in size."""
    n = res.ctx_calls
    status = "expected failure" if res.expected_failure else "ok" if res.ok else "failed"
    lines = [
        f"{res.tool}: {status} ({res.duration_ms:,.2f} ms, {n:,} ctx "
        f"call{'' if n == 1 else 's'}, call {res.call_id})"
    ]
    if (cause := res.cause) is not None:
        said = cause.get("error") or cause.get("notice")
        lines.append(f"  after ctx call #{cause.get('seq')} {cause.get('method')}: {clip(str(said), 500)[0]}")
    for v in [*res.violations, *res.warnings][:20]:
        lines.append(f"  ⚠ {clip(v, 500)[0]}")
    if res.crash is not None:  # N7: call(crash=N)
        c = res.crash
        lines.append(
            f"  crash after ctx call {c.point}: "
            + ("rerun with the same idempotencyKey" if c.crashed else "not reached, no rerun")
        )
        lines += [f"  ⚠ duplicated: {clip(d, 500)[0]}" for d in c.duplicates[:20]]
    if res.error is not None:
        lines.append(f"  error {res.error.code}: {clip(res.error.message, 2_000)[0]}")
        for k, v in res.error.details.items():
            if k == "violations":
                lines += [f"    {p.get('path')}: {p.get('message')}" for p in v[:50] if isinstance(p, dict)]
            elif k == "stack" and v:
                lines += ["  " + s for s in clip(str(v), 2_000)[0].splitlines()]
            elif v is not None:
                lines.append(f"  {k}: {clip(str(v), 300)[0]}")
    else:
        text = json.dumps(res.value, ensure_ascii=False, indent=2, default=repr)
        shown, hidden = clip(text, 4_000)
        lines.append(
            "  value: " + shown.replace("\n", "\n  ") + (f"\n  {more(hidden, 'character')}" if hidden else "")
        )
    if res.files:
        from .display_files import files_text

        lines.append(f"  files ({len(res.files):,}):")
        lines += ["  " + ln for ln in files_text(res.files)]
    if res.logs:
        shown, hidden = clip(res.logs.rstrip("\n"), 2_000)
        lines.append(
            "  logs:\n    "
            + shown.replace("\n", "\n    ")
            + (f"\n    {more(hidden, 'character')}" if hidden else "")
        )
    return terminal_safe("\n".join(lines))


# -- Bench -------------------------------------------------------------------------------------
def bench_html(bench: Bench) -> str:
    """The HTML of an open bench: gem, providers, options, tools, calls so far."""
    m = bench.manifest
    shown = bench.provider_kinds  # only those of this platform's capabilities (agent: none)
    kinds = f" · providers: {', '.join(f'{esc(k)}={esc(v)}' for k, v in shown.items())}" if shown else ""
    failed = sum(1 for r in bench.results if not r.ok)
    calls = f"{len(bench.results):,} call{'' if len(bench.results) == 1 else 's'}" + (
        f" ({failed:,} failed)" if failed else ""
    )
    flags = [f for f, on in (("strict", bench.strict), ("no conversation", not bench.conversation)) if on]
    head = (
        f"<b>{esc(m.name)}</b> <code>{esc(m.id)}</code> {esc(m.version)} "
        f"<span class=m>{esc(m.platform)}{kinds}"
        f"{' · ' + ', '.join(flags) if flags else ''} · {calls}</span>"
    )
    rows = []
    side_effects = bench.profile.side_effects  # only a platform whose tools declare it
    for t in list(m.tools.values())[:200]:
        props = t.input_schema.get("properties") or {}
        required = set(t.input_schema.get("required") or ())
        inputs = ", ".join(p + ("*" if p in required else "") for p in props)
        rows.append(
            [
                f"<b>{esc(t.name)}</b>",
                esc(t.language),
                *([esc(t.side_effect)] if side_effects else []),
                f"<code>{_cell(inputs)}</code>",
                _cell(t.description),
            ]
        )
    out = [
        CSS,
        "<div class=wbd>",
        f"<div>{head}</div>",
        _table(
            [
                "tool",
                "language",
                *(["sideEffect"] if side_effects else []),
                "inputs (* required)",
                "description",
            ],
            rows,
            limit=MAX_HTML // 2,
            what="tool",
            total=len(m.tools),
        ),
    ]
    if m.collections:
        out.append(f"<div><span class=m>collections:</span> {esc(', '.join(m.collections))}</div>")
    dropped = bench.results.note("call")  # SEC5: the bench keeps the newest calls
    if dropped is not None:
        out.append(f"<div class=m>{esc(dropped)}</div>")
    out.append("</div>")
    return "".join(out)
