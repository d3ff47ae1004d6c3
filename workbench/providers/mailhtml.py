"""HTML to plain text, for HTML-only mail and ctx.extract: one linear scan (SEC5), no
html.parser (its recovery from unclosed constructs is quadratic)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

from . import mail as _mail

_BLOCK = frozenset(
    {
        "p",
        "div",
        "br",
        "li",
        "tr",
        "table",
        "ul",
        "ol",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "blockquote",
        "pre",
        "hr",
        "section",
        "article",
        "header",
        "footer",
    }
)
_SKIP = frozenset({"script", "style", "head", "title", "template"})
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]{0,31})")
_MARKUP = re.compile(r"<[A-Za-z/!?]")  # where markup may start; a bare "<" is text
_SKIP_END = {t: re.compile(rf"</{t}\b", re.I) for t in _SKIP}
_SPACE = re.compile(r"[ \t\r\n\f]+")


def html_to_text(source: str, check: Callable[[], Any] | None = None) -> str:
    """Readable plain text from HTML: blocks on their own lines, no tags, entities decoded.

    A linear scanner (str.find and anchored matches only): hostile nesting or unclosed
    comments and tags cost no more than the length of the text (Python's html.parser is
    quadratic on some of them). `check()` runs every 65,536 steps and raises to stop: the
    default checks a mail read's deadline. Used for mail bodies and by ctx.extract."""
    check = check or (lambda: _mail.check_deadline("email.getMessage"))
    out: list[str] = []
    pre = 0
    pos, n = 0, len(source)

    def data(text: str) -> None:
        if not text:
            return
        text = html.unescape(text)
        if not pre:
            text = _SPACE.sub(" ", text)
            if not out or out[-1].endswith("\n") or out[-1] == "- ":
                text = text.lstrip(" ")
        if text:
            out.append(text)

    steps = 0
    while pos < n:
        steps += 1
        if steps % 65536 == 0:
            check()
        start = _MARKUP.search(source, pos)
        if start is None:
            data(source[pos:])
            break
        lt = start.start()
        data(source[pos:lt])
        if source.startswith("<!--", lt):
            end = source.find("-->", lt + 4)
            pos = n if end < 0 else end + 3
            continue
        m = _TAG.match(source, lt)
        if m is None:
            if source.startswith(("<!", "<?"), lt):  # doctype, CDATA, processing instruction
                end = source.find(">", lt)
                pos = n if end < 0 else end + 1
            else:
                data("<")
                pos = lt + 1
            continue
        end = source.find(">", m.end())
        if end < 0:  # an unclosed tag: the rest is not text
            break
        pos = end + 1
        closing, tag = m.group(1), m.group(2).lower()
        if tag in _SKIP:
            if not closing and not source.startswith("/", end - 1):
                skip = _SKIP_END[tag].search(source, pos)
                if skip is None:
                    break
                close = source.find(">", skip.end())
                pos = n if close < 0 else close + 1
        elif tag in _BLOCK:
            if closing:
                if tag != "li":  # list items: one per line, no blank between
                    out.append("\n")
                    pre = max(0, pre - (tag == "pre"))
            else:
                out.append("\n")
                if tag == "li":
                    out.append("- ")
                pre += tag == "pre"
    lines = [line.rstrip() for line in "".join(out).split("\n")]
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip()
