"""The pinned-call diff: lines naming each value path where a replay's result differs from the
recorded one (a pin's, a bundle's, a conversation's), in one style.

Kept apart from the pinned call's replay (pins/replay.py, which opens benches) so that a
feature below the bench (a conversation's replay, conversations/) compares in the same words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

__all__ = ["short", "text_diff", "time_window", "value_diff"]


def value_diff(expected: Any, got: Any, where: str = "value", same: Any = None) -> Iterator[str]:
    """Lines naming each value path where `got` differs from `expected` (`same(a, b)`: leaves
    that agree although unequal, such as times of a call pinned on a running clock)."""
    if same is not None and same(expected, got):
        return
    if isinstance(expected, dict) and isinstance(got, dict):
        for k in list(expected) + [k for k in got if k not in expected]:
            if k not in got:
                yield f"{where}.{k}: expected {short(expected[k])}, got nothing"
            elif k not in expected:
                yield f"{where}.{k}: expected nothing, got {short(got[k])}"
            else:
                yield from value_diff(expected[k], got[k], f"{where}.{k}", same)
    elif isinstance(expected, list) and isinstance(got, list):
        for i in range(max(len(expected), len(got))):
            if i >= len(got):
                yield f"{where}[{i}]: expected {short(expected[i])}, got nothing (got {len(got)} items)"
            elif i >= len(expected):
                yield f"{where}[{i}]: expected nothing, got {short(got[i])} (expected {len(expected)} items)"
            else:
                yield from value_diff(expected[i], got[i], f"{where}[{i}]", same)
    elif isinstance(expected, str) and isinstance(got, str) and expected != got:
        yield from text_diff(expected, got, where, same)
    elif (
        expected != got
        or type(expected) is not type(got)
        and not (
            isinstance(expected, (int, float)) and isinstance(got, (int, float)) and not isinstance(got, bool)
        )
    ):
        yield f"{where}: expected {short(expected)}, got {short(got)}"


_JSON_TEXT = 1 << 20  # a string up to this long that holds JSON is compared by its paths
_DIFF_LINES = 30  # of a text's unified diff
_WINDOW = 60  # characters shown either side of where a one-line text first differs


def _json_text(v: str) -> Any:
    """`v` read as JSON when it holds an object or an array (an Ekanos record kept as a JSON
    text, a .json file), else None."""
    if len(v) > _JSON_TEXT or v.lstrip()[:1] not in ("{", "["):
        return None
    try:
        found = json.loads(v)
    except (ValueError, RecursionError):
        return None
    return found if isinstance(found, (dict, list)) else None


def text_diff(expected: str, got: str, where: str, same: Any = None) -> Iterator[str]:
    """Lines showing where two texts differ: by path when both hold JSON, a unified diff of
    the changed lines when either has several, else a window around the first difference
    (cutting both at one prefix hid it)."""
    a, b = _json_text(expected), _json_text(got)
    if a is not None and b is not None:
        lines = list(value_diff(a, b, where, same))
        if lines:  # (the same JSON written otherwise is a difference of the text below)
            yield from lines
            return
    if "\n" in expected or "\n" in got:
        import difflib

        old, new = expected.splitlines(), got.splitlines()
        diff = [
            d
            for d in difflib.unified_diff(old, new, "expected", "got", n=2, lineterm="")
            if not d.startswith(("---", "+++"))
        ]
        if not diff:  # only the line ends differ
            yield f"{where}: the same lines, ended otherwise (expected {short(expected[-2:])}, got {short(got[-2:])})"
            return
        yield f"{where}: text differs (expected {len(old)} lines, got {len(new)}):"
        for d in diff[:_DIFF_LINES]:
            yield "  " + (d if len(d) <= 200 else d[:199] + "…")
        if len(diff) > _DIFF_LINES:
            yield f"  … and {len(diff) - _DIFF_LINES} more diff lines"
        return
    if len(expected) <= 120 and len(got) <= 120:
        yield f"{where}: expected {short(expected)}, got {short(got)}"
        return
    at = next((i for i, (x, y) in enumerate(zip(expected, got)) if x != y), min(len(expected), len(got)))
    shown = f"expected {_window(expected, at)}, got {_window(got, at)}"
    yield f"{where}: {shown} (from character {at + 1:,})"


def _window(text: str, at: int) -> str:
    start, end = max(0, at - _WINDOW), at + _WINDOW
    shown = json.dumps(text[start:end], ensure_ascii=False)
    return ("…" if start else "") + shown + ("…" if end < len(text) else "")


_ISO = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?")


def _instant(v: Any) -> float | None:
    """`v` as epoch seconds when it looks like a time: an ISO 8601 text, or a number of
    seconds or milliseconds since the epoch (between 2001 and 2286)."""
    import datetime as dt

    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return v / 1000 if 1e12 <= v < 1e13 else float(v) if 1e9 <= v < 1e10 else None
    if isinstance(v, str) and len(v) <= 40 and _ISO.fullmatch(v):
        try:
            t = dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            return None
        return (t if t.tzinfo else t.replace(tzinfo=dt.UTC)).timestamp()
    return None


def time_window(case: dict[str, Any], res: Any) -> Any:
    """For a call pinned on a clock that ran (not frozen): two times agree when each falls in
    its own call's span (the pinned call's, the replay's: a replay's clock stands at the
    pinned call's start), so a timestamp it took is not a difference. None when frozen."""
    call = case["call"]
    started = call.get("started")
    if call.get("frozen") or not isinstance(started, (int, float)):
        return None
    span = (float(call.get("duration_ms") or 0) + 1000) / 1000
    pinned = (started - 1, started + span)
    replayed = (res.started - 1, res.started + (res.duration_ms or 0) / 1000 + 1)

    def same(expected: Any, got: Any) -> bool:
        a, b = _instant(expected), _instant(got)
        if a is None or b is None or type(expected) is not type(got):
            return False
        return pinned[0] <= a <= pinned[1] and replayed[0] <= b <= replayed[1]

    return same


def short(v: Any) -> str:
    """`v` as compact JSON text, cut to 120 characters."""
    text = json.dumps(v, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:119] + "…"
