"""The result display's "files" section (issue 28, point 2): each file the call created,
modified, moved or deleted (`res.files`), with a preview — text, Markdown rendered, CSV as a
table, an image — and, for an overwrite, a unified diff against the version before.

Everything here is what a tool wrote, so it is hostile: names and content are escaped, raw
HTML in Markdown is not passed through, links are checked (no `javascript:`), Markdown images
are not fetched, an SVG is shown as text (it can hold script), an image is embedded only when
its first bytes say it is PNG, JPEG, GIF or WebP (with that type, not the file name's), and
every part is bounded: lines, rows, columns, characters, and the display's embedding budget.
"""

from __future__ import annotations

import base64
import csv
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._text import terminal_safe
from ._html import clip, clip_escaped, esc, more

if TYPE_CHECKING:
    from ..bench.result import FileChange

MAX_FILES_LISTED = 200  # rows of the files table
MAX_PREVIEWS = 20  # files previewed (the others: their row only)
SHARE_FILES = 40_000  # HTML characters of the text previews and diffs, all files together
PREVIEW_CHARS = 8_000  # of one file's preview or diff
TEXT_LINES = 40  # lines of a text preview
DIFF_LINES = 200  # lines of a diff shown
DIFF_MAX_LINES = 5_000  # a side longer than this is not diffed (difflib is quadratic at worst)
MARKDOWN_CHARS = 20_000  # of a Markdown file rendered (past it: shown as text)
CSV_ROWS, CSV_COLUMNS, CSV_CELL = 20, 12, 100
IMAGE_EMBED = 2 * 1024 * 1024  # base64 characters of the images of one display, in all

_IMAGES = (  # magic bytes -> type: what the browser is told, whatever the name says
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)

FILES_CSS = """<style>
.wbd .da{background:rgba(46,125,50,.16)}.wbd .dd{background:rgba(198,40,40,.16)}
.wbd .dh{color:#888}.wbd img.pv{max-width:100%;max-height:24em;display:block}
.wbd .md{border-left:3px solid rgba(127,127,127,.3);padding:0 .8em;font-family:var(--jp-content-font-family,sans-serif)}
.wbd .md h1{font-size:1.3em}.wbd .md h2{font-size:1.15em}.wbd .md h3{font-size:1.05em}
</style>"""


def _size(n: int | None) -> str:
    return "—" if n is None else f"{n:,} B"


def _sniff(data: bytes) -> str | None:
    for magic, mime in _IMAGES:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _ext(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


def _change(f: FileChange) -> str:
    if f.change == "moved" and f.from_path is not None:
        return f"moved from {f.from_path}"
    return f.change


def _sizes(f: FileChange) -> str:
    if f.type == "folder":
        return "folder"
    if f.change == "deleted":
        return f"— (was {_size(f.before_size)})"
    if f.before_size is not None and f.before_size != f.size:
        return f"{_size(f.size)} (was {_size(f.before_size)})"
    return _size(f.size)


# -- HTML --------------------------------------------------------------------------------------
def files_html(files: Sequence[FileChange]) -> str:
    """The table of `files` (path, area, change, size), then a preview of each of the first
    MAX_PREVIEWS, within SHARE_FILES characters (images: IMAGE_EMBED)."""
    rows = []
    for f in files[:MAX_FILES_LISTED]:
        rows.append(
            "<tr>"
            f"<td><code>{clip_escaped(f.path, 300)}</code></td><td>{esc(f.area)}</td>"
            f"<td>{clip_escaped(_change(f), 400)}</td><td>{esc(_sizes(f))}</td></tr>"
        )
    out = [
        FILES_CSS,
        "<table><tr><th>path</th><th>area</th><th>change</th><th>size</th></tr>",
        *rows,
        "</table>",
    ]
    if len(files) > MAX_FILES_LISTED:
        out.append(f"<div class=m>{more(len(files) - MAX_FILES_LISTED, 'file')}</div>")
    left, images = SHARE_FILES, IMAGE_EMBED
    for i, f in enumerate(files):
        if i >= MAX_PREVIEWS or left <= 0:
            out.append(f"<div class=m>{more(len(files) - i, 'file')} previewed (res.files has them)</div>")
            break
        part, embedded = _preview_html(f, min(PREVIEW_CHARS, left), images)
        images -= embedded
        left -= len(part) - embedded
        opened = i < 5
        out.append(
            f"<details{' open' if opened else ''}><summary><code>{clip_escaped(f.path, 300)}</code> "
            f"<span class=m>{clip_escaped(_change(f), 400)}</span></summary><div>{part}</div></details>"
        )
    return "".join(out)


def _preview_html(f: FileChange, limit: int, images: int) -> tuple[str, int]:
    """One file's preview in about `limit` characters (an image: within `images` more), and
    how many characters of image it embedded."""
    if f.type == "folder":
        return "<span class=m>a folder</span>", 0
    if f.change == "deleted":
        gone = f.before_text
        if gone is None:
            return f"<span class=m>deleted ({esc(_size(f.before_size))})</span>", 0
        return "<div class=m>deleted; it held:</div>" + _text_html(gone, limit), 0
    if f.data is None:
        return (
            f"<span class=m>too large to preview or diff ({esc(_size(f.size))}; a preview keeps "
            f"{_cap():,} bytes): read it with bench.read({esc(repr(f.path))}, call=res)</span>",
            0,
        )
    if f.change in ("modified", "moved") and f.before is not None and f.before != f.data:
        diff = _diff_html(f, limit)
        if diff is not None:
            return diff, 0
    elif f.change == "modified" and f.before is None and f.before_size is not None:
        note = f"<div class=m>too large to diff: the version before was {esc(_size(f.before_size))}</div>"
        body, embedded = _content_html(f, limit, images)
        return note + body, embedded
    return _content_html(f, limit, images)


def _cap() -> int:
    from ..bench.result import PREVIEW_BYTES

    return PREVIEW_BYTES


def _content_html(f: FileChange, limit: int, images: int) -> tuple[str, int]:
    data = f.data or b""
    mime = _sniff(data)
    if mime is not None:
        uri = base64.b64encode(data).decode("ascii")
        if len(uri) > images:
            return (
                f"<span class=m>{esc(mime)}, {len(data):,} bytes: over the display's image budget</span>",
                0,
            )
        return f"<img class=pv alt='{esc(f.path)}' src='data:{mime};base64,{uri}'>", len(uri)
    text = f.text
    if text is None:
        return f"<span class=m>{len(data):,} bytes, not text (bench.read(…, encoding=None))</span>", 0
    ext = _ext(f.path)
    if ext == "svg" or "<svg" in text[:1000].lower():
        return "<div class=m>SVG, shown as text (never drawn: it can hold script)</div>" + _text_html(
            text, limit
        ), 0
    if ext in ("md", "markdown"):
        rendered = markdown_html(text, limit)
        if rendered is not None:
            return rendered, 0
    if ext in ("csv", "tsv"):
        table = csv_html(text, delimiter="\t" if ext == "tsv" else ",", limit=limit)
        if table is not None:
            return table, 0
    return _text_html(text, limit), 0


def _text_html(text: str, limit: int) -> str:
    """The first TEXT_LINES lines, escaped, in about `limit` characters."""
    lines = text.splitlines()
    head = "\n".join(lines[:TEXT_LINES])
    note = f"<div class=m>{more(len(lines) - TEXT_LINES, 'line')}</div>" if len(lines) > TEXT_LINES else ""
    return f"<pre>{clip_escaped(head, limit)}</pre>{note}"


def markdown_html(text: str, limit: int) -> str | None:
    """Markdown rendered safely (CommonMark and pipe tables, raw HTML escaped, links checked,
    images not fetched); None when it is too long, renders too large, or no renderer is installed."""
    if len(text) > MARKDOWN_CHARS:
        return None
    try:
        from markdown_it import MarkdownIt
    except ImportError:  # a declared dependency; without it, Markdown is shown as text
        return None
    # GFM pipe tables are what reports are written in; raw HTML stays off (escaped as text), and
    # an image would fetch a URL
    md = MarkdownIt("commonmark", {"html": False}).enable("table").disable("image")
    out = md.render(terminal_safe(text))
    if len(out) > limit:
        return None
    return f"<div class=md>{out}</div>"


def csv_html(text: str, *, delimiter: str = ",", limit: int = PREVIEW_CHARS) -> str | None:
    """The first CSV_ROWS rows and CSV_COLUMNS columns as a table (the first row as its head),
    each cell escaped and cut; None when it is not CSV."""
    rows: list[list[str]] = []
    lines = 0
    try:
        for row in csv.reader(io.StringIO(text), delimiter=delimiter):
            lines += 1
            if len(rows) <= CSV_ROWS:
                rows.append(row)
    except csv.Error:
        return None
    if not rows:
        return None
    width = max(len(r) for r in rows)

    def cells(row: list[str], tag: str) -> str:
        shown = [f"<{tag}>{esc(clip(c, CSV_CELL)[0])}{'…' if len(c) > CSV_CELL else ''}</{tag}>" for c in row]
        return (
            "<tr>" + "".join(shown[:CSV_COLUMNS]) + ("<td>…</td>" if len(row) > CSV_COLUMNS else "") + "</tr>"
        )

    body = [cells(rows[0], "th"), *(cells(r, "td") for r in rows[1:CSV_ROWS])]
    out: list[str] = []
    size = 0
    for r in body:
        size += len(r)
        if size > limit and out:
            break
        out.append(r)
    notes = []
    if lines > len(out):
        notes.append(more(lines - len(out), "row"))
    if width > CSV_COLUMNS:
        notes.append(more(width - CSV_COLUMNS, "column"))
    note = f"<div class=m>{esc('; '.join(notes))}</div>" if notes else ""
    return f"<table>{''.join(out)}</table>{note}"


def _diff_lines(f: FileChange) -> list[str] | None:
    old, new = f.before_text, f.text
    if old is None or new is None:
        return None
    if old.count("\n") > DIFF_MAX_LINES or new.count("\n") > DIFF_MAX_LINES:
        return None
    diff = f.diff()
    return None if diff is None else diff.splitlines()


def _diff_html(f: FileChange, limit: int) -> str | None:
    """The unified diff against the version before, each line marked, in about `limit`."""
    lines = _diff_lines(f)
    if lines is None:
        return None
    out, size = [], 0
    for i, line in enumerate(lines[:DIFF_LINES]):
        cls = (
            "dh"
            if line.startswith(("@@", "---", "+++"))
            else "da"
            if line[:1] == "+"
            else "dd"
            if line[:1] == "-"
            else ""
        )
        shown, cut = clip(line, 500)
        part = f"<span class={cls}>{esc(shown)}{'…' if cut else ''}</span>" if cls else esc(shown)
        size += len(part) + 1
        if size > limit:
            out.append(f"<span class=m>{more(len(lines) - i, 'line')}</span>")
            break
        out.append(part)
    else:
        if len(lines) > DIFF_LINES:
            out.append(f"<span class=m>{more(len(lines) - DIFF_LINES, 'line')}</span>")
    return "<div class=m>changes against the version before:</div><pre>" + "\n".join(out) + "</pre>"


# -- text --------------------------------------------------------------------------------------
def files_text(files: Sequence[FileChange], *, previews: bool = False) -> list[str]:
    """Lines of the files table (change, path, area, size) for a terminal; `previews`: each
    file's text (its first lines) or its diff against the version before, bounded."""
    lines: list[str] = []
    for f in files[:MAX_FILES_LISTED]:
        moved = f.change == "moved" and f.from_path is not None
        lines.append(
            f"  {f.change:<8} {clip(f.from_path, 300)[0] + ' -> ' if moved and f.from_path else ''}"
            f"{clip(f.path, 300)[0]}  ({f.area}, {_sizes(f)})"
        )
        if previews and len(lines) < 4_000:
            lines += ["      " + ln for ln in _preview_text(f)]
    if len(files) > MAX_FILES_LISTED:
        lines.append(f"  {more(len(files) - MAX_FILES_LISTED, 'file')}")
    return [terminal_safe(ln) for ln in lines]


def _preview_text(f: FileChange) -> list[str]:
    if f.type == "folder" or f.change == "deleted":
        return []
    if f.data is None:
        return [f"(too large to preview or diff: {_size(f.size)})"]
    if f.change in ("modified", "moved") and f.before is not None and f.before != f.data:
        diff = _diff_lines(f)
        if diff is not None:
            shown = [clip(ln, 500)[0] for ln in diff[:DIFF_LINES]]
            return shown + ([more(len(diff) - DIFF_LINES, "line")] if len(diff) > DIFF_LINES else [])
    elif f.change == "modified" and f.before is None and f.before_size is not None:
        return [f"(too large to diff: the version before was {_size(f.before_size)})"]
    if _sniff(f.data) is not None:
        return [f"({_sniff(f.data)}, {len(f.data):,} bytes)"]
    text = f.text
    if text is None:
        return [f"({len(f.data):,} bytes, not text)"]
    body = text.splitlines()
    shown = [clip(ln, 500)[0] for ln in body[:TEXT_LINES]]
    return shown + ([more(len(body) - TEXT_LINES, "line")] if len(body) > TEXT_LINES else [])
