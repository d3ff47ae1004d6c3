"""A replayed conversation in a notebook: its summary line, then a row per call (n, status,
tool, call id) with the lines of what differs under it. Every text is the transcript's or a
tool's: escaped and made terminal-safe (a bidi override cannot reorder the row)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from .._text import terminal_safe

if TYPE_CHECKING:
    from .replay import ConversationReplay

MAX_ROWS = 500  # calls listed; the rest are counted
_COLOURS = {"match": "#2a7d2a", "no_result": "#888", "differs": "#b35900", "error": "#c0392b"}

CSS = """<style>
.gw-conv{font-size:12px;line-height:1.45}
.gw-conv table{border-collapse:collapse;margin:4px 0}
.gw-conv td,.gw-conv th{padding:1px 8px;border-bottom:1px solid rgba(127,127,127,.3);
text-align:left !important;vertical-align:top}
.gw-conv pre{white-space:pre-wrap;margin:0;padding:2px 4px;background:rgba(127,127,127,.08)}
</style>"""


def _esc(value: Any) -> str:
    return html.escape(terminal_safe(str(value)), quote=True)


def replay_html(replay: ConversationReplay) -> str:
    """The replay as HTML (see the module)."""
    rows = []
    for r in replay.calls[:MAX_ROWS]:
        colour = _COLOURS.get(r.status, "#c0392b")
        diff = f"<pre>{_esc(chr(10).join(r.diff[:40]))}</pre>" if r.diff else ""
        rows.append(
            f"<tr><td>{r.n}</td><td style='color:{colour}'><b>{_esc(r.status)}</b></td>"
            f"<td><code>{_esc(r.tool)}</code></td><td><code>{_esc(r.call_id)}</code></td><td>{diff}</td></tr>"
        )
    more = len(replay.calls) - MAX_ROWS
    tail = f"<p>… and {more:,} more calls</p>" if more > 0 else ""
    saved = f"<p>saved: <code>{_esc(replay.saved)}</code></p>" if replay.saved else ""
    return (
        f"{CSS}<div class=gw-conv><p>{_esc(replay.summary())}</p>"
        "<table><tr><th>n</th><th>status</th><th>tool</th><th>call id</th><th>diff</th></tr>"
        f"{''.join(rows)}</table>{tail}{saved}</div>"
    )
