"""What the result display adds for agent tools: what the agent and the user see, the tree of
nested ctx.tools calls, and the files surface_file showed."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from ._html import CSS, SHARE_VALUE, badge, clip_escaped, esc, json_html, more

if TYPE_CHECKING:
    from ..bench.result import CallResult


# The seed names a result-shape contract (_render, _interactive, _llm) detailed on a page we do
# not have. The workbench's reading: `_llm`, when present, is what the agent (the model) is
# given, else the value without these keys; `_render` and `_interactive` are what the user is
# shown (a render spec, interactive elements), never sent to the model.
SHAPE_KEYS = {"_render", "_interactive", "_llm"}


def sees_html(value: dict[str, Any]) -> str:
    agent = value["_llm"] if "_llm" in value else {k: v for k, v in value.items() if k not in SHAPE_KEYS}
    user = {k: value[k] for k in ("_render", "_interactive") if k in value}
    cell = "<td style='vertical-align:top;width:50%'>"
    return (
        f"<table><tr><th>what the agent sees</th><th>what the user sees</th></tr><tr>"
        f"{cell}{json_html(agent, limit=SHARE_VALUE // 2)}</td>"
        f"{cell}{json_html(user, limit=SHARE_VALUE // 2) if user else '<span class=m>(nothing beyond the reply)</span>'}</td>"
        "</tr></table>"
    )


_TREE_NODES = 200  # nested calls listed in one result's tree


def tree_html(res: CallResult) -> str:
    """The calls a tool made through ctx.tools, nested as they ran (agent tools)."""
    lines: list[str] = []
    stack = [(child, 0) for child in reversed(res.children)]
    while stack and len(lines) < _TREE_NODES:
        node, depth = stack.pop()
        status = badge(node.ok, "ok" if node.ok else (node.error.code if node.error else "failed"))
        lines.append(
            f"<div style='margin-left:{depth * 1.5}em'>{status} <b>{esc(node.tool)}</b> "
            f"<span class=m>{node.duration_ms:,.2f} ms · {esc(node.call_id)}</span></div>"
        )
        stack.extend((child, depth + 1) for child in reversed(node.children))
    if stack:
        lines.append(f"<div class=m>{more(len(stack), 'call')}</div>")
    return "".join(lines)


_IMAGE, _TEXT = 1024 * 1024, 64 * 1024  # bytes of one surfaced image / text shown inline
# HTML characters the surfaced files of one display embed in all (an image is its base64): 50
# surfaced images of 2 MiB made a display of 140 MB. The others are listed by name and size.
EMBED = 4 * 1024 * 1024
_LISTED = 200  # files listed by name past the embedding budget


def surfaced_html(files: list[dict[str, Any]]) -> str:
    """The files an agent tool surfaced (surface_file), as the platform shows them to the user:
    each image inline and text as text while the display's EMBED budget lasts, then by name,
    type and size with a note saying how many were not embedded."""
    out: list[str] = []
    left, listed = EMBED, 0
    for f in files:
        part = _surfaced(f, left) if left > 0 else None
        if part is not None:
            left -= len(part)
            out.append(part)
            continue
        listed += 1
        if listed <= _LISTED:
            out.append(_head(f))
    if listed:
        shown = f"; {more(listed - _LISTED, 'file')}" if listed > _LISTED else ""
        out.append(
            f"<div class=m>{listed:,} file{'' if listed == 1 else 's'} listed, not embedded: a display "
            f"embeds {EMBED:,} characters of surfaced files in all{shown}</div>"
        )
    return "".join(out)


def _head(f: dict[str, Any]) -> str:
    return (
        f"<div><b>{esc(f['title'] or f['name'])}</b> <span class=m>{esc(f['path'])} · "
        f"{esc(f['mimeType'])} · {f['sizeBytes']:,} bytes</span></div>"
    )


def _surfaced(f: dict[str, Any], left: int) -> str | None:
    """One file: an image inline, text as text, else its name, type and size; None when what
    it would embed does not fit in `left` characters."""
    head = _head(f)
    mime, size = f["mimeType"], f["sizeBytes"]
    try:
        if mime.startswith("image/") and size <= _IMAGE and mime != "image/svg+xml":  # svg: script
            if len(head) + 4 * (size + 2) // 3 + 100 > left:
                return None
            with open(f["file"], "rb") as fh:
                data = base64.b64encode(fh.read(_IMAGE)).decode()
            return f"{head}<img src='data:{esc(mime)};base64,{data}' style='max-width:100%'>"
        if mime.startswith("text/") or mime in ("application/json", "text/csv"):
            limit = min(_TEXT, left - len(head) - 100)
            if limit < 1_000:
                return None
            with open(f["file"], "rb") as fh:
                text = fh.read(_TEXT).decode("utf-8", "replace")
            return f"{head}<pre>{clip_escaped(text, limit)}</pre>"
    except OSError:
        return f"{head}<div class=m>(the file cannot be read now)</div>"
    return head


MAX_OUTBOX_ROWS = 200  # messages drawn by the outbox view
MAX_BODY = 4_000  # characters of one body shown


def outbox_html(frame: Any) -> str:
    """`bench.outbox()` (or a selection of it) as a table whose text keeps its line breaks
    (pre-wrap), escaped, each cell and the number of rows bounded."""
    from .._text import terminal_safe

    def cell(value: Any) -> str:
        text = terminal_safe("" if value is None else str(value))
        return (
            text
            if len(text) <= MAX_BODY
            else text[:MAX_BODY] + f"\n{more(len(text) - MAX_BODY, 'character')}"
        )

    shown = frame.head(MAX_OUTBOX_ROWS)
    table = shown.to_html(
        formatters={c: cell for c in shown.columns}, escape=True, classes="wbo", border=0, max_cols=None
    )
    note = f"<div class=m>{more(len(frame) - len(shown), 'message')}</div>" if len(frame) > len(shown) else ""
    style = (
        "<style>.wbd table.wbo td{white-space:pre-wrap;text-align:left !important;vertical-align:top;"
        "max-width:60em}</style>"
    )
    return f"{CSS}{style}<div class=wbd>{table}{note}</div>"
