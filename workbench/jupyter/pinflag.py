"""The `--pin NAME` flag at the end of a `%tool` line, told apart from the INPUT before it.

The INPUT is JSON, YAML or Python text that may itself hold "--pin" (`{"title": "a --pin b"}`),
so only a last ` --pin NAME` (or `--pin=NAME`) outside every string and bracket of the text
is the flag. Shared by the magics, their completion and the pin button.
"""

from __future__ import annotations

import re
from pathlib import Path

_FLAG = re.compile(r"(?:^|\s)--pin(?:(?:=|\s+)(?P<name>\S+))?\s*$")
_PREFIXES = {"r", "b", "f", "u", "rb", "br", "fr", "rf"}  # Python's string prefixes
_OPEN, _CLOSE = "{[(", "}])"


def split_pin(text: str) -> tuple[str, str | None, bool]:
    """(the INPUT, the case name, whether the flag was given) of a `%tool` line's text after
    the tool name; the name is None for a bare `--pin`."""
    m = _FLAG.search(text)
    if m is None or not outside(text, m.start()):
        return text, None, False
    return text[: m.start()], m["name"], True


def outside(text: str, end: int) -> bool:
    """Whether offset `end` of `text` is outside every string and bracket opened before it.

    A quote opens a string only where a string can start: not inside a word (`don't`),
    except after a Python string prefix (`f"…"`); a backslash escapes the next character."""
    depth, quote, i = 0, "", 0
    while i < end:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"" and _can_open(text, i):
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(0, depth - 1)
        i += 1
    return not quote and depth == 0


def _can_open(text: str, i: int) -> bool:
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_"):
        j -= 1
    word = text[j:i]
    return not word or word.lower() in _PREFIXES


def shown_path(path: Path) -> str:
    """A case's path as the notebook shows it: from the current folder when it is under it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except (ValueError, OSError):  # elsewhere, or no current folder: the whole path
        return str(path)
