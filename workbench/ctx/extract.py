"""ctx.extract: document-to-text extraction, available to every tool.

The seed names `ctx.extract` but gives no signature. The workbench's reading:

    ctx.extract(path, options?) -> { text, mimeType, pages? }

`path` is a gem path (run folder or `workspace:`), resolved and checked exactly as ctx.files
does (F9–F12: no `..`, no dot-entries in the conversation folder, 20 MB at most). Supported:
plain text, Markdown and CSV (decoded as UTF-8), HTML (the text, scripts and styles dropped;
Python's html.parser) and PDF (pypdf; `pages` is a list with the text of each page). Any other
type fails with E_UNSUPPORTED naming it. `options` may carry `{"maxChars": n}` to cut the text.
"""

from __future__ import annotations

import io
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from .files import Files
from .paths import resolve

if TYPE_CHECKING:
    from ._session import CallSession

TYPES = {".txt": "text/plain", ".text": "text/plain", ".md": "text/markdown",
         ".markdown": "text/markdown", ".csv": "text/csv", ".html": "text/html",
         ".htm": "text/html", ".pdf": "application/pdf"}
_BLOCK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section",
          "article", "header", "footer", "table", "ul", "ol", "pre", "blockquote", "title"}


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("script", "style", "noscript", "template"):
            self._skip += 1
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "noscript", "template"):
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)

    def text(self) -> str:
        lines = (" ".join(line.split()) for line in "".join(self.parts).splitlines())
        out: list[str] = []
        for line in lines:
            if line or (out and out[-1]):
                out.append(line)
        return "\n".join(out).strip()


def html_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    parser.close()
    return parser.text()


def pdf_pages(data: bytes, raw: str) -> list[str]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        return [(page.extract_text() or "") for page in reader.pages]
    except (PdfReadError, ValueError, KeyError, TypeError) as exc:
        raise WorkbenchError("E_INVALID_ARGUMENT", f"{raw!r} is not a readable PDF: {exc}",
                             path=raw) from None


def _decode(data: bytes, raw: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise WorkbenchError("E_INVALID_ARGUMENT", f"{raw!r} is not UTF-8 text (byte "
                             f"{exc.start})", path=raw) from None


class Extract:
    """The one method of ctx.extract."""

    def __init__(self, session: "CallSession") -> None:
        self.s = session
        self.files = Files(session)

    def extract(self, path: str, options: dict | None = None) -> dict[str, Any]:
        if options is not None and not isinstance(options, dict):
            raise WorkbenchError("E_INVALID_ARGUMENT", "extract options must be an object",
                                 path=path)
        max_chars = (options or {}).get("maxChars")
        if max_chars is not None and (not isinstance(max_chars, int) or isinstance(max_chars, bool)
                                      or max_chars < 0):
            raise WorkbenchError("E_INVALID_ARGUMENT", "options.maxChars must be a non-negative "
                                 "integer", path=path)
        p = resolve(self.s, path)
        e = self.files.existing_file(p)
        name = p.rel.rsplit("/", 1)[-1]
        ext = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
        mime = TYPES.get(ext)
        if mime is None:
            raise WorkbenchError("E_UNSUPPORTED", f"ctx.extract cannot read {p.raw!r}: type "
                                 f"{ext or '(no extension)'!r} is not supported (supported: "
                                 f"{', '.join(sorted(TYPES))})", path=p.raw, type=ext or None)
        data = self.files.read_checked(p, e)
        out: dict[str, Any] = {"mimeType": mime}
        if mime == "application/pdf":
            pages = pdf_pages(data, p.raw)
            out["pages"] = pages
            text = "\n\n".join(pages)
        elif mime == "text/html":
            text = html_text(_decode(data, p.raw))
        else:
            text = _decode(data, p.raw)
        if max_chars is not None:
            text = text[:max_chars]
        out["text"] = text
        return out
