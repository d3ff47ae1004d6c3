"""The escaped, bounded HTML parts every display is made of (display.py, display_agent.py,
replay.py): its public names are theirs to share.

A module of its own, below both: display_agent.py draws agent tools' parts with them, and
display.py draws the rest and calls display_agent.py, so neither imports the other's module
at import time and there is no circle.
"""

from __future__ import annotations

import html
import json
from typing import Any

from .._text import terminal_safe
from ..gem.schema import pointer

__all__ = [
    "CSS",
    "MAX_CELL",
    "MAX_DEPTH",
    "MAX_HTML",
    "MAX_ITEMS",
    "MAX_STRING",
    "MAX_TRACE_ROWS",
    "OPEN_DEPTH",
    "SHARE_ERROR",
    "SHARE_INPUT",
    "SHARE_LOGS",
    "SHARE_TRACE",
    "SHARE_VALUE",
    "SHARE_WARN",
    "badge",
    "clip",
    "clip_escaped",
    "esc",
    "json_html",
    "more",
]

MAX_HTML = 100_000  # characters of HTML per display, roughly (each part has its share)
MAX_STRING = 1_000  # characters of one string value shown
MAX_ITEMS = 100  # entries of one list or object shown
MAX_TRACE_ROWS = 100  # ctx calls listed
MAX_CELL = 200  # characters of one table cell (trace args, tool descriptions)
OPEN_DEPTH = 2  # JSON containers shown unfolded down to this depth
MAX_DEPTH = 40  # JSON containers nested deeper are summarised, not drawn

# shares of MAX_HTML; whatever is left over is markup and the style sheet
SHARE_VALUE, SHARE_INPUT, SHARE_TRACE, SHARE_LOGS, SHARE_ERROR, SHARE_WARN = (
    50_000,
    12_000,
    12_000,
    8_000,
    8_000,
    4_000,
)

# text-align is !important: JupyterLab right-aligns every cell of rendered HTML with a selector
# more specific than ours (`:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td`)
CSS = """<style>
.wbd{font-family:var(--jp-code-font-family,monospace);font-size:12px;line-height:1.45}
.wbd .b{display:inline-block;padding:0 .5em;border-radius:3px;color:#fff;font-weight:600}
.wbd .ok{background:#2e7d32}.wbd .no{background:#c62828}.wbd .ef{background:#b26a00}
.wbd .w{background:#fff3cd;color:#664d03;border-left:3px solid #f0ad4e;padding:2px 6px;margin:2px 0}
.wbd .e{color:#c62828;white-space:pre-wrap}.wbd .m{color:#888;font-style:italic}
.wbd .nt{color:#b26a00;font-weight:600}
.wbd details>div{padding-left:1.2em;border-left:1px dotted #bbb}.wbd summary{cursor:pointer}
.wbd .k{color:#7b1fa2}.wbd .s{color:#1565c0}.wbd .n{color:#2e7d32}.wbd .l{color:#aa5d00}
.wbd .x{background:rgba(229,57,53,.18);outline:1px solid #e53935}
.wbd table{border-collapse:collapse;font-size:11px;margin:2px 0}
.wbd td,.wbd th{padding:1px 8px;border-bottom:1px solid rgba(127,127,127,.3);text-align:left !important;vertical-align:top}
.wbd details.cell>summary{list-style:none}.wbd details.cell>summary::-webkit-details-marker{display:none}
.wbd details.cell>pre{max-width:60em}
.wbd pre{max-height:24em;overflow:auto;background:rgba(127,127,127,.08);padding:4px;margin:2px 0;white-space:pre-wrap}
</style>"""


def esc(value: Any) -> str:
    """Escaped for HTML, well-formed (a lone surrogate, which a JS string may hold, would make
    the kernel fail to send the whole display) and terminal-safe (no bidi override reorders
    what is shown; a control character is shown, not acted on)."""
    return html.escape(terminal_safe(str(value)), quote=True)


def more(n: int, what: str) -> str:
    return f"… {n:,} more {what}{'' if n == 1 else 's'} not shown"


def clip(text: str, limit: int) -> tuple[str, int]:
    """The first `limit` characters of text, and how many were left out."""
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def clip_escaped(text: str, limit: int) -> str:
    """Escaped text of at most about `limit` HTML characters: head and tail, a note between."""
    if len(esc(text)) <= limit:
        return esc(text)
    keep = limit // 2
    while keep > 0:
        head, tail = text[:keep], text[-keep:]
        if len(esc(head)) + len(esc(tail)) <= limit:
            break
        keep = keep * 3 // 4
    hidden = len(text) - 2 * keep
    return (
        f"{esc(text[:keep])}<span class=m>\n{more(hidden, 'character')}\n</span>"
        f"{esc(text[-keep:]) if keep else ''}"
    )


# -- JSON tree ---------------------------------------------------------------------------------
class _Budget:
    """HTML characters a part may still emit."""

    def __init__(self, size: int) -> None:
        self.left = size


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        shown, hidden = clip(value, MAX_STRING)
        text = json.dumps(shown, ensure_ascii=False)
        note = f" <span class=m>{more(hidden, 'character')}</span>" if hidden else ""
        return f"<span class=s>{esc(text[:-1] + ('…' if hidden else '') + text[-1])}</span>{note}"
    if value is None or isinstance(value, bool):
        return f"<span class=l>{json.dumps(value)}</span>"
    if isinstance(value, (int, float)):
        return f"<span class=n>{esc(json.dumps(value) if isinstance(value, int) else repr(value))}</span>"
    shown, hidden = clip(repr(value), MAX_STRING)  # not JSON (an input as the caller gave it)
    return f"<span class=m>{esc(shown)}{'…' if hidden else ''}</span>"


def _tree(value: Any, budget: _Budget, key: str, depth: int, ptr: str, marks: frozenset[str]) -> str:
    bad = " class=x" if ptr in marks else ""
    if isinstance(value, (dict, list, tuple)) and value:
        is_dict, n = isinstance(value, dict), len(value)
        items: Any = value.items() if isinstance(value, dict) else enumerate(value)
        parts: list[str] = []
        if depth >= MAX_DEPTH:
            parts.append(f"<div class=m>… nested deeper than {MAX_DEPTH} levels: not shown</div>")
            items = ()
        for i, (k, child) in enumerate(items):
            if i >= MAX_ITEMS or budget.left <= 0:
                parts.append(f"<div class=m>{more(n - i, 'key' if is_dict else 'item')}</div>")
                break
            label = json.dumps(k, ensure_ascii=False) if isinstance(k, str) else str(k)
            parts.append(
                _tree(
                    child,
                    budget,
                    f"<span class=k>{esc(clip(label, 200)[0])}</span>: ",
                    depth + 1,
                    ptr + pointer([k]),
                    marks,
                )
            )
        opened = depth < OPEN_DEPTH or any(m.startswith(ptr + "/") for m in marks)
        count = f"{n:,} {'key' if is_dict else 'item'}{'' if n == 1 else 's'}"
        head = (
            f"<details{' open' if opened else ''}><summary{bad}>{key}"
            f"{'{…}' if is_dict else '[…]'} <span class=m>{count}</span></summary><div>"
        )
        budget.left -= len(head) + 16
        return head + "".join(parts) + "</div></details>"
    if isinstance(value, dict):
        text = "{}"
    elif isinstance(value, (list, tuple)):
        text = "[]"
    else:
        text = _scalar(value)
    out = f"<div{bad}>{key}{text}</div>"
    budget.left -= len(out)
    return out


def json_html(value: Any, *, limit: int = SHARE_VALUE, marks: frozenset[str] = frozenset()) -> str:
    """A collapsible, escaped, size-bounded tree of a JSON value; `marks`: pointers to flag."""
    return _tree(value, _Budget(limit), "", 0, "", marks)


def badge(ok: bool, text: str) -> str:
    return f"<span class='b {'ok' if ok else 'no'}'>{esc(text)}</span>"
