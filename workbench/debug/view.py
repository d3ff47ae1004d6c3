"""How a debug session shows in a notebook: a paused call (the ctx method, its arguments, the
trace so far, what to do next) and an ended one (the CallResult's own display, after a line of
what the debugger did). Bounded: each value is cut to a preview, each table to its first rows."""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any, cast

from .._present import presenter
from .._text import terminal_safe, well_formed

if TYPE_CHECKING:
    from .lines import LinePause
    from .session import DebugSession, Pause

__all__ = [
    "line_html",
    "line_text",
    "locals_html",
    "pause_html",
    "pause_text",
    "session_html",
    "session_text",
]

MAX_VALUE = 400  # characters of one argument or result shown
MAX_ROWS = 50  # trace rows shown while paused (the rest counted)
STYLE = (
    "<style>.wbdbg{font-family:var(--jp-code-font-family,monospace);font-size:12px}"
    ".wbdbg table{border-collapse:collapse}.wbdbg td,.wbdbg th{border:1px solid #ddd;padding:1px 6px;"
    "text-align:left;vertical-align:top}.wbdbg .p{background:#b26a00;color:#fff;padding:0 .5em;"
    "border-radius:3px}.wbdbg .d{background:#1565c0;color:#fff;padding:0 .4em;border-radius:3px}"
    ".wbdbg .e{color:#c62828}.wbdbg .m{color:#777}</style>"
)


def esc(value: Any) -> str:
    """Escaped for HTML, well-formed and terminal-safe (a tool's text is hostile)."""
    return html.escape(terminal_safe(well_formed(str(value))), quote=True)


def preview(value: Any, limit: int = MAX_VALUE) -> str:
    """A value as short JSON (its repr when not JSON), cut at `limit` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _trace_rows(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "<p class=m>no ctx call before this one</p>"
    body = "".join(
        f"<tr><td>{esc(r.get('seq', ''))}</td><td><code>ctx.{esc(r.get('method', ''))}</code></td>"
        f"<td><code>{esc(r.get('args', ''))}</code></td>"
        f"<td>{'✓' if r.get('ok') else '<span class=e>✗ ' + esc(r.get('error', '')) + '</span>'}"
        f"{' <span class=d>debugger</span>' if r.get('by') == 'debugger' else ''}</td>"
        f"<td><code>{esc(preview(r.get('result'), 120)) if r.get('ok') else ''}</code></td></tr>"
        for r in rows[:MAX_ROWS]
    )
    more = f"<p class=m>… and {len(rows) - MAX_ROWS} more</p>" if len(rows) > MAX_ROWS else ""
    return (
        "<table><tr><th>#</th><th>method</th><th>args</th><th>ok</th><th>result</th></tr>"
        f"{body}</table>{more}"
    )


def _source_html(pause: Pause) -> str:
    """The innermost frame of the tool's own code that made the ctx call, its line marked,
    and the frames above it as file:line (a Python tool's; a JS tool's need the inspector)."""
    if not pause.source:
        return ""
    file, line, fn, code = pause.source[-1]
    shown = "\n".join(f"{'→' if n == line else ' '}{n:5d}  {esc(text)}" for n, text in code)
    callers = " ← ".join(f"{esc(f)}:{n} {esc(name)}" for f, n, name, _ in reversed(pause.source[:-1]))
    return (
        f"<p>in <code>{esc(file)}:{line}</code> <code>{esc(fn)}</code>"
        f"{' ← ' + callers if callers else ''}</p><pre>{shown}</pre>"
    )


def pause_html(pause: Pause) -> str:
    """A pause: where (ctx call N of which call), the arguments table, the trace so far."""
    args = "".join(
        f"<tr><th>{esc(k)}</th><td><code>{esc(preview(v))}</code></td></tr>" for k, v in pause.args.items()
    )
    done = f" — {esc(pause.done)}" if pause.done else ""
    return (
        f"{STYLE}<div class=wbdbg><p><span class=p>paused</span> before ctx call "
        f"<b>{pause.seq}</b> of <code>{esc(pause.tool)}</code> ({esc(pause.call_id)}): "
        f"<code>{esc(pause.name)}</code>{done}</p>"
        f"<table>{args or '<tr><td class=m>no arguments</td></tr>'}</table>{_source_html(pause)}"
        f"<details><summary>the trace so far ({len(pause.trace)} ctx call"
        f"{'' if len(pause.trace) == 1 else 's'})</summary>{_trace_rows(pause.trace)}</details></div>"
    )


def line_html(pause: LinePause) -> str:
    """A source-line pause: the TS lines around it (its own marked), the function, the stack."""
    shown = "\n".join(f"{'→' if n == pause.line else ' '}{n:5d}  {esc(text)}" for n, text in pause.code)
    stack = " ← ".join(f"<code>{esc(f)}:{n}</code> {esc(fn)}" for f, n, fn in pause.stack[1:])
    done = f" — {esc(pause.done)}" if pause.done else ""
    return (
        f"{STYLE}<div class=wbdbg><p><span class=p>paused</span> at <code>{esc(pause.name)}</code> in "
        f"<code>{esc(pause.function)}</code> ({esc(pause.why)}){done}</p><pre>{shown}</pre>"
        f"{'<p class=m>called from ' + stack + '</p>' if stack else ''}</div>"
    )


def line_text(pause: LinePause) -> str:
    return f"<paused at {pause.name} in {pause.function} ({pause.why})>"


def locals_html(values: dict[str, Any]) -> str:
    """A frame's locals as a name/value table (each value a bounded preview)."""
    rows = "".join(
        f"<tr><th>{esc(k)}</th><td><code>{esc(preview(v))}</code></td></tr>" for k, v in values.items()
    )
    return f"{STYLE}<div class=wbdbg><table>{rows or '<tr><td class=m>no locals</td></tr>'}</table></div>"


def pause_text(pause: Pause) -> str:
    args = ", ".join(f"{k}={preview(v, 80)}" for k, v in pause.args.items())
    return f"<paused before ctx call {pause.seq} of {pause.tool}: {pause.name}({args})>"


def _done_line(session: DebugSession) -> str:
    if not session.pauses:
        return "no breakpoint was hit"
    return "; ".join(f"{p.n}. {p.name}: {p.done or 'paused'}" for p in session.pauses[:20]) + (
        " …" if len(session.pauses) > 20 else ""
    )


def session_html(session: DebugSession) -> str:
    """Paused: the pause and what to do next; ended: the result's own display."""
    pause = session.paused
    head = f"<code>{esc(session.label)}</code>"
    if pause is not None and session.at_line:
        return (
            line_html(cast("LinePause", pause))  # (at_line says it is one)
            + f"<div class=wbdbg><p class=m>{head}: <code>.locals</code>, <code>.eval('…')</code>, "
            "<code>.next()</code> steps over, <code>.step()</code> steps in, <code>.cont()</code> "
            "runs on</p></div>"
        )
    if pause is not None:
        return (
            pause_html(cast("Pause", pause))
            + f"<div class=wbdbg><p class=m>{head}: <code>.cont()</code> runs it, "
            "<code>.answer(value)</code> returns a value of yours, <code>.fail('E_NOT_FOUND', "
            "'…')</code> fails it, <code>.abort()</code> ends the call</p></div>"
        )
    if session.state == "running":
        return f"{STYLE}<div class=wbdbg><p>{head}: running (between two breakpoints)</p></div>"
    res = session.result
    shown = presenter("result_html")(res) if res is not None else "<p class=e>no result</p>"
    return (
        f"{STYLE}<div class=wbdbg><p><span class=d>ended</span> {head} — {esc(_done_line(session))}; "
        f"{session.paused_seconds:.1f} s paused (not counted against the timeout)</p></div>{shown}"
    )


def session_text(session: DebugSession) -> str:
    if session.state == "paused":
        return f"<{session.label} {session.where!r}>"
    if session.state == "ended":
        res = session.result
        return f"<{session.label} ended: {res!r}; {_done_line(session)}>"
    return f"<{session.label} running>"
