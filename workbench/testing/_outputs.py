"""A running cell's outputs, bounded as they arrive (SEC5): a cell that flooded its output took
a notebook test to 1.9 GB, nbclient keeping every message whole until the cell ended.

Each cell keeps its first outputs up to HEAD characters and its last up to TAIL, with one
stream output between them saying how much was dropped; consecutive stream messages of one
name are merged first (a print per message would otherwise be an object each). A single output
larger than TAIL keeps the head and tail of its text (a stream's, or a result's text/plain;
its other formats are dropped). Reports show the end of a cell's output (`OUTPUT_TAIL`), which
TAIL holds many times over. Used by notebook's nbclient client (`output()`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ._shared import OUTPUT_TAIL

#: Characters of a cell's first outputs kept.
HEAD = 4 * OUTPUT_TAIL
#: Characters of a cell's last outputs kept (at most twice this between two trims).
TAIL = 12 * OUTPUT_TAIL
#: What one output costs beyond its text (a node and its dict): 10^6 empty prints add up.
OVERHEAD = 256


@dataclass
class _Cell:
    outputs: int = 0  # how many outputs the cell had after the last message: else a clear
    head: int = 0  # outputs before the note (or all, while there is none)
    head_chars: int = 0
    tail_chars: int = 0
    dropped: int = 0  # characters dropped (outputs counted at their size)
    note: Any = None  # the stream output saying so, at index `head`


class OutputBound:
    """The bound of every cell of one notebook run; `added(outs, cell_index, display_map)` is
    called after nbclient appended an output to `outs`."""

    def __init__(self) -> None:
        self.cells: dict[int, _Cell] = {}

    def added(self, outs: list[Any], cell_index: int, display_map: dict[str, dict[int, list[int]]]) -> None:
        cell = self.cells.get(cell_index)
        if cell is None or cell.outputs != len(outs) - 1:  # new, or cleared (clear_output)
            cell = self.cells[cell_index] = _Cell(head=len(outs) - 1)
        out = outs[-1]
        size = _shrink(out, TAIL)
        if cell.note is None and cell.head_chars + size <= HEAD:
            if _merge(outs, 0):
                size -= OVERHEAD
            else:
                cell.head += 1
            cell.head_chars += size
            cell.outputs = len(outs)
            return
        if _merge(outs, cell.head + (cell.note is not None)):
            size -= OVERHEAD
        cell.tail_chars += size
        if cell.tail_chars > 2 * TAIL:
            self._trim(cell, outs, cell_index, display_map)
        cell.outputs = len(outs)

    def _trim(self, cell: _Cell, outs: list[Any], cell_index: int, display_map: dict[str, Any]) -> None:
        """Drop the oldest tail outputs (or the start of the oldest's text) down to TAIL."""
        if cell.note is None:
            cell.note = {"output_type": "stream", "name": "stdout", "text": ""}
            outs.insert(cell.head, cell.note)
            _shift(display_map, cell_index, cell.head, +1)
        first = cell.head + 1
        while cell.tail_chars > TAIL and first < len(outs):
            oldest, excess = outs[first], cell.tail_chars - TAIL
            if oldest.get("output_type") == "stream" and len(oldest["text"]) > excess:
                oldest["text"] = oldest["text"][excess:]
                cell.dropped += excess
                cell.tail_chars -= excess
                break
            size = _size(oldest)
            del outs[first]
            _shift(display_map, cell_index, first, -1)
            cell.dropped += size
            cell.tail_chars -= size
        cell.note["text"] = (
            f"\n[… gem-workbench: {cell.dropped:,} characters of this cell's output dropped while it "
            f"ran; its first {HEAD:,} and last {TAIL:,} are kept …]\n"
        )


def _merge(outs: list[Any], start: int) -> bool:
    """Append the last output's text to the one before it, when both are streams of one name
    at or after index `start` (and the last is then removed)."""
    if len(outs) - 2 < start:
        return False
    prev, last = outs[-2], outs[-1]
    if prev.get("output_type") != "stream" or last.get("output_type") != "stream":
        return False
    if prev.get("name") != last.get("name"):
        return False
    text = prev.pop("text")  # (held by no one else: CPython appends in place, not a copy)
    text += last["text"]
    prev["text"] = text
    outs.pop()
    return True


def _size(out: Any) -> int:
    if out.get("output_type") == "stream":
        return len(out.get("text", "")) + OVERHEAD
    data = out.get("data") or {}
    return OVERHEAD + sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in data.values())


def _shrink(out: Any, limit: int) -> int:
    """An output over `limit` characters on its own keeps the head and tail of its text;
    its size (_size) afterwards."""
    size = _size(out)
    if size <= limit:
        return size
    if out.get("output_type") == "stream":
        out["text"] = _cut(out["text"], limit)
        return _size(out)
    data = out.get("data") or {}
    text = data.get("text/plain", "")
    text = "".join(text) if isinstance(text, list) else str(text)
    others = sorted(k for k in data if k != "text/plain")
    note = f" ({', '.join(others)} dropped)" if others else ""
    out["data"] = {"text/plain": _cut(text, limit - len(note) - 200) + note}
    return _size(out)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    dropped = len(text) - 2 * half
    return f"{text[:half]}\n[… gem-workbench: {dropped:,} characters dropped …]\n{text[-half:]}"


def _shift(display_map: dict[str, dict[int, list[int]]], cell_index: int, at: int, by: int) -> None:
    """Keep nbclient's display-id index of the cell's outputs right after an insert (+1) or a
    removal (-1) at `at`: update_display_data finds its outputs by index."""
    for cells in display_map.values():
        indexes = cells.get(cell_index)
        if indexes:
            cells[cell_index] = [i + by if i >= at else i for i in indexes if not (by < 0 and i == at)]
