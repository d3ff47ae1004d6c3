"""A script's source map (version 3), read both ways: a TS line to where V8 runs it (for a
breakpoint) and a generated position to its TS file and line (for a frame).

Deno hands V8 the JavaScript it transpiled from a `.ts` file, with the map inline at its end
(`//# sourceMappingURL=data:application/json;base64,…`), so a TS line and the line V8 counts
differ. No maintained PyPI library reads these (the ones there were last released in 2017-18),
so this is a small decoder of its own. A map is hostile input (a tool's author writes the file
it comes from): its size, its VLQ numbers and its indices are bounded, and each breach is an
E_SOURCEMAP naming what and where.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_to_bytes

from .._errors import WorkbenchError

__all__ = ["MAX_MAP_BYTES", "MAX_SEGMENTS", "Position", "SourceMap", "SourceMapError"]

MAX_MAP_BYTES = 32 << 20  # a map's JSON text; Deno's for a 10k-line tool is ~1 MB
MAX_SEGMENTS = 4_000_000  # mapped positions in one map
MAX_VLQ_DIGITS = 7  # 7 base64 digits hold 35 bits: a number over 2**31 is no position
_B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}
_MARK = "//# sourceMappingURL="


class SourceMapError(WorkbenchError):
    """A source map that cannot be read (E_SOURCEMAP): too large, not JSON, a broken VLQ
    number, an index out of range."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__("E_SOURCEMAP", message, **details)


@dataclass(frozen=True)
class Position:
    """A place in a source: its name as the map gives it, 0-based line and column."""

    source: str
    line: int
    column: int


class SourceMap:
    """One decoded map: `original(line, column)` and `generated(source, line)`."""

    def __init__(self, sources: list[str], lines: list[list[tuple[int, int, int, int]]]) -> None:
        self.sources = tuple(sources)
        # per generated line: its segments (generated column, source index, line, column), by column
        self._lines = lines
        self._by_source: dict[int, dict[int, tuple[int, int]]] | None = None

    # -- reading -----------------------------------------------------------------------------
    @classmethod
    def from_script(cls, script: str) -> SourceMap | None:
        """The inline map at the end of a generated script; None when it has none (a plain
        `.js` module, or a map in another file, which a sandbox may not read)."""
        at = script.rfind(_MARK)
        if at < 0:
            return None
        url = script[at + len(_MARK) :].split("\n", 1)[0].strip()
        return cls.from_url(url) if url.startswith("data:") else None

    @classmethod
    def from_url(cls, url: str) -> SourceMap:
        """A `data:` URL's map (base64 or percent-encoded), as scriptParsed's sourceMapURL has it."""
        head, comma, body = url.partition(",")
        if not head.startswith("data:") or not comma:
            raise SourceMapError("the source map URL is not a data: URL", field="sourceMapURL")
        if len(body) > MAX_MAP_BYTES * 4 // 3 + 4:
            raise SourceMapError(_too_large(len(body)), limit=MAX_MAP_BYTES)
        try:
            raw = (
                base64.b64decode(body, validate=True) if head.endswith(";base64") else unquote_to_bytes(body)
            )
        except (binascii.Error, ValueError):
            raise SourceMapError("the source map's base64 is broken", field="sourceMapURL") from None
        return cls.from_json(raw)

    @classmethod
    def from_json(cls, text: str | bytes) -> SourceMap:
        """A map from its JSON text (bounded: MAX_MAP_BYTES, MAX_SEGMENTS)."""
        if len(text) > MAX_MAP_BYTES:
            raise SourceMapError(_too_large(len(text)), limit=MAX_MAP_BYTES)
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            raise SourceMapError("the source map is not JSON") from None
        if not isinstance(data, dict) or data.get("version") != 3:
            raise SourceMapError("the source map is not a version 3 map", field="version")
        sources, mappings = data.get("sources"), data.get("mappings")
        if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
            raise SourceMapError("the source map's sources are not a list of names", field="sources")
        if not isinstance(mappings, str):
            raise SourceMapError("the source map's mappings are not a text", field="mappings")
        root = data.get("sourceRoot")
        if isinstance(root, str) and root:
            sources = [s if ":" in s else root.rstrip("/") + "/" + s for s in sources]
        return cls(sources, _decode(mappings, len(sources)))

    # -- both ways ---------------------------------------------------------------------------
    def original(self, line: int, column: int) -> Position | None:
        """Where generated (line, column) (0-based) comes from: the last segment at or before
        the column on that line; None when the line maps nothing."""
        if not 0 <= line < len(self._lines):
            return None
        segs = self._lines[line]
        if not segs:
            return None
        i = bisect.bisect_right(segs, (column, 1 << 62)) - 1
        gcol, src, oline, ocol = segs[max(i, 0)]
        return Position(self.sources[src], oline, ocol)

    def generated(self, source: str, line: int) -> tuple[int, int] | None:
        """The first generated (line, column) that a 0-based `line` of `source` maps to (a
        source is matched by its name or, for a path, the end of its name); when the line maps
        nothing (a type, a comment), the next line of it that does; None past its end."""
        src = self.source_index(source)
        if src is None:
            return None
        if self._by_source is None:
            self._by_source = _index(self._lines)
        lines = self._by_source.get(src, {})
        if not lines:
            return None
        keys = sorted(k for k in lines if k >= line)
        return lines[keys[0]] if keys else None

    def source_index(self, source: str) -> int | None:
        """The index of `source` in the map's sources: equal, or a path that ends it."""
        if source in self.sources:
            return self.sources.index(source)
        tail = "/" + source.lstrip("/")
        found = [i for i, s in enumerate(self.sources) if s.endswith(tail)]
        return found[0] if len(found) == 1 else None


def _too_large(size: int) -> str:
    return f"the source map is {size:,} bytes; at most {MAX_MAP_BYTES:,} are read"


def _decode(mappings: str, n_sources: int) -> list[list[tuple[int, int, int, int]]]:
    """The mappings' segments per generated line; each field is relative to the one before
    (the column to the line's last, the rest to the map's last); 1- and 4-field segments
    are kept (the name, a 5th field, is not used), other lengths refused."""
    lines: list[list[tuple[int, int, int, int]]] = []
    src = oline = ocol = 0
    count = 0
    for lineno, text in enumerate(mappings.split(";")):
        segs: list[tuple[int, int, int, int]] = []
        gcol = 0
        for seg in text.split(",") if text else ():
            fields = _vlq(seg, lineno)
            if len(fields) not in (1, 4, 5):
                raise SourceMapError(
                    f"a segment of {len(fields)} fields on generated line {lineno + 1}",
                    field="mappings",
                    line=lineno + 1,
                )
            count += 1
            if count > MAX_SEGMENTS:
                raise SourceMapError(f"the source map has over {MAX_SEGMENTS:,} segments", limit=MAX_SEGMENTS)
            gcol += fields[0]
            if len(fields) == 1:
                continue  # a position that maps to no source
            src, oline, ocol = src + fields[1], oline + fields[2], ocol + fields[3]
            if not 0 <= src < n_sources or oline < 0 or ocol < 0 or gcol < 0:
                raise SourceMapError(
                    f"a segment on generated line {lineno + 1} points out of range "
                    f"(source {src} of {n_sources}, line {oline}, column {ocol})",
                    field="mappings",
                    line=lineno + 1,
                )
            segs.append((gcol, src, oline, ocol))
        segs.sort()
        lines.append(segs)
    return lines


def _vlq(seg: str, lineno: int) -> list[int]:
    """One segment's base64 VLQ numbers (each at most MAX_VLQ_DIGITS digits)."""
    out: list[int] = []
    value = shift = digits = 0
    for ch in seg:
        d = _B64.get(ch)
        digits += 1
        if d is None or digits > MAX_VLQ_DIGITS:
            why = f"{ch!r} is no base64 digit" if d is None else f"a number over {MAX_VLQ_DIGITS} digits"
            raise SourceMapError(
                f"a broken VLQ number on generated line {lineno + 1}: {why}",
                field="mappings",
                line=lineno + 1,
            )
        value += (d & 31) << shift
        if d & 32:
            shift += 5
            continue
        out.append(-(value >> 1) if value & 1 else value >> 1)
        value = shift = digits = 0
    if digits:
        raise SourceMapError(
            f"a VLQ number cut short on generated line {lineno + 1}", field="mappings", line=lineno + 1
        )
    return out


def _index(lines: list[list[tuple[int, int, int, int]]]) -> dict[int, dict[int, tuple[int, int]]]:
    """{source: {original line: its first generated (line, column)}}."""
    out: dict[int, dict[int, tuple[int, int]]] = {}
    for gline, segs in enumerate(lines):
        for gcol, src, oline, _ in segs:
            out.setdefault(src, {}).setdefault(oline, (gline, gcol))
    return out
