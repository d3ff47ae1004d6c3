"""The doctor's report in a notebook: a line saying where the time went, a table per tool and
a row per finding, each cell on one line.

A long cell (a message of ten lines' worth, a 20,000-character input, the calls that built a
state) shows its first line, clipped with an ellipsis; a click unfolds it to the whole text
(bounded), as the trace's arguments do. The style sheet is its own (this layer is below the
notebook displays) and scoped to the report.
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

from .._text import terminal_safe

if TYPE_CHECKING:
    from .report import DoctorReport

MAX_SHOWN = 4_000  # characters of one unfolded cell
MAX_ROWS = 200  # findings listed (one per tool and kind: more only on a gem of many tools)

# text-align is !important: JupyterLab right-aligns the cells of rendered HTML with a selector
# more specific than ours
CSS = """<style>
.gw-doctor{font-size:12px;line-height:1.45}
.gw-doctor table{border-collapse:collapse;margin:4px 0}
.gw-doctor td,.gw-doctor th{padding:1px 8px;border-bottom:1px solid rgba(127,127,127,.3);
text-align:left !important;vertical-align:top;white-space:nowrap}
.gw-doctor td code{white-space:nowrap !important;padding:0 2px}
.gw-doctor td.clip{white-space:normal}
.gw-doctor details{margin:0 !important;padding:0 !important}
.gw-doctor details>summary{display:block;list-style:none;cursor:pointer;white-space:nowrap;
overflow:hidden;text-overflow:ellipsis;margin:0 !important;padding:0 !important}
.gw-doctor details>summary::-webkit-details-marker{display:none}
.gw-doctor details[open]>summary{color:#888}
.gw-doctor details>pre{white-space:pre-wrap;max-height:20em;overflow:auto;margin:2px 0;
padding:4px;background:rgba(127,127,127,.08)}
.gw-doctor .m{color:#888}
</style>"""


def esc(value: Any) -> str:
    """Escaped, well-formed (a JS string's lone surrogate would fail the whole display) and
    terminal-safe (no bidi override reorders the row)."""
    return html.escape(terminal_safe(str(value)), quote=True)


def clipped(text: str, *, code: bool = False, width: int = 10) -> str:
    """A table cell of one line: `text` whole when it is short and on one line; else its start,
    clipped by the browser at `width` em, unfolding on a click to the whole (at most
    MAX_SHOWN characters) — the full text is also its tooltip."""
    one_line = " ".join(text.split())
    wrap = (lambda t: f"<code>{t}</code>") if code else (lambda t: t)
    if len(one_line) <= width * 2 and "\n" not in text:  # (an em holds about two characters)
        return f"<td>{wrap(esc(text))}</td>"
    whole = (
        text
        if len(text) <= MAX_SHOWN
        else text[:MAX_SHOWN] + f"… ({len(text) - MAX_SHOWN:,} more characters)"
    )
    tip = esc(one_line[:1_000])
    return (
        f"<td class=clip style='max-width:{width}em'><details><summary title='{tip}'>{wrap(esc(one_line[:300]))}</summary>"
        f"<pre>{esc(whole)}</pre></details></td>"
    )


def report_html(report: DoctorReport) -> str:
    """The report as HTML (see the module)."""
    rows = []
    for s in report.summary():
        kinds = ", ".join(f"{esc(k)} ×{n}" for k, n in s["findings"].items()) or "none"
        rows.append(
            f"<tr><td><code>{esc(s['tool'])}</code></td><td>{s['examples']} ({s['invalid']} invalid)</td>"
            f"<td>{kinds}</td><td>{s['seconds']:.2f} s</td><td>{s['probe_seconds']:.2f} s</td>"
            f"<td>{s['pin_seconds']:.2f} s</td></tr>"
        )
    found = []
    for f in report.findings[:MAX_ROWS]:
        found.append(
            f"<tr><td><code>{esc(f.tool)}</code></td><td>{esc(f.kind)}</td><td>{esc(f.rule)}</td>"
            + clipped(f.message, width=28)
            + clipped(json.dumps(f.input, ensure_ascii=False), code=True)
            + clipped(str(f.start))
            + clipped(f.repro, code=True)
            + "</tr>"
        )
    n = sum(s.examples for s in report.stats.values())
    head = (
        f"<b>doctor</b> {esc(report.gem)}: {len(report.findings)} finding(s), "
        f"{n} examples in {report.seconds:.1f} s (seed {report.seed})"
        + (f"; {esc(report.note)}" if report.note else "")
    )
    table = (
        "<table><tr><th>tool</th><th>examples</th><th>findings</th><th>searching</th><th>probes</th>"
        "<th>pinning</th></tr>" + "".join(rows) + "</table>"
    )
    more = len(report.findings) - MAX_ROWS
    detail = (
        "<table><tr><th>tool</th><th>kind</th><th>rule</th><th>what happened</th><th>input</th>"
        "<th>start</th><th>reproduce</th></tr>"
        + "".join(found)
        + "</table>"
        + (f"<div class=m>… {more} more findings: report.frame() has them all</div>" if more > 0 else "")
        if found
        else ""
    )
    return (
        f"{CSS}<div class='gw-doctor'><p>{head}<br><span class=m>{esc(report.time_said)}</span></p>"
        f"{table}{detail}</div>"
    )
