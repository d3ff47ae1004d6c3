"""A call's trace: one row per ctx call, whose argument preview is written when it is read.

Recording a ctx call costs what it must (its timing, and a copy of arguments a Python tool
could change afterwards); the text the trace shows ("args") and the arguments' copy as objects
("params") are made when a row is first read: `res.trace`, the notebook display, row["args"].
What is kept is bounded (SEC5): KEEP_PARAMS and KEEP_RESULT per row, KEEP_PER_CALL per call.
"""

from __future__ import annotations

import json
import marshal
import reprlib
from itertools import islice
from typing import Any

from .._text import well_formed

_ARG_PREVIEW = 160
_text = json.JSONEncoder(ensure_ascii=False).encode  # one scalar as JSON (made once: per row)


def _short(v: Any, out: list[str], budget: int) -> int:
    """Append a JSON-like rendering of v to out until about `budget` characters are spent:
    a preview costs the same for a 60,000-key document and cannot recurse without end."""
    if budget <= 0:
        return budget
    if isinstance(v, dict):
        out.append("{")
        budget -= 1
        for i, (k, x) in enumerate(v.items()):
            if budget <= 0:
                break
            text = (", " if i else "") + _text(str(k))[:60] + ": "
            out.append(text)
            budget = _short(x, out, budget - len(text))
        out.append("}")
        return budget - 1
    if isinstance(v, (list, tuple)):
        out.append("[")
        budget -= 1
        for i, x in enumerate(v):
            if budget <= 0:
                break
            if i:
                out.append(", ")
            budget = _short(x, out, budget - (2 if i else 0))
        out.append("]")
        return budget - 1
    if isinstance(v, (str, bytes)) and len(v) > 60:
        text = f"<{len(v)} chars>"
    elif v is None or isinstance(v, (str, bool, int, float)):
        try:
            text = _text(v)
        except ValueError:  # an int past Python's digit limit
            text = repr(v)
    else:
        text = f"<{type(v).__name__}>"
    out.append(text)
    return budget - len(text)


_REPR = reprlib.Repr()  # bounded in depth and length, safe on cycles
_REPR.maxstring = _REPR.maxother = 60


def preview(args: tuple, kwargs: dict) -> str:
    """The short text of a ctx call's arguments the trace shows (its "args" column)."""
    out: list[str] = []
    budget = _ARG_PREVIEW + 1
    for i, a in enumerate((*args, *kwargs.items())):
        if budget <= 0:
            break
        if i:
            out.append(", ")
        if i >= len(args):  # a keyword (Python tools): "name=repr(value)"
            text = _text(f"{a[0]}={_REPR.repr(a[1])}")
            out.append(text)
            budget -= len(text)
            continue
        budget = _short(a, out, budget)
    text = "".join(out)
    text = text if len(text) <= _ARG_PREVIEW else text[: _ARG_PREVIEW - 1] + "…"
    return text if text.isascii() else well_formed(text)  # shown: no lone surrogate


# The trace keeps each call's arguments ("params") as they were when passed and its result as
# the object itself (no copy: cost), when JSON-able and small: a big write or read is not held
# for the bench's life. Results may be larger than arguments: a listSince page (200 envelopes).
KEEP_PARAMS, KEEP_RESULT = 64 * 1024, 256 * 1024  # characters of JSON, about
# all a call's trace keeps is Limits.trace_chars, about: a tool making thousands of ctx calls
# with big arguments keeps the first ones' and then only the short previews; past
# Limits.trace_rows ctx calls, the rest are only counted, in one last row (SEC5)
_SAMPLE = 4  # items of a longer list measured; the rest are estimated from them
_DEPTH = 64  # deeper nesting is not kept (nor is a cycle, which nests without end)


def _left(v: Any, budget: int, depth: int = 0) -> int:
    """`budget` less about the characters of `v` as JSON; below 0 when `v` is larger or not
    JSON. An object is measured whole (its fields differ: a message's body is its 7th); a list
    on its first _SAMPLE items, the rest estimated from them (its items are alike), so the
    check costs the same for a 200-message page as for one message."""
    t = type(v)  # exact types first: this runs on every ctx call's arguments and result
    if t is str:
        return budget - len(v) - 2
    if v is None or t is int or t is float or t is bool:
        return budget - 8
    if isinstance(v, str):
        return budget - len(v) - 2
    if v is None or isinstance(v, (int, float)):
        return budget - 8
    is_dict = isinstance(v, dict)
    if not is_dict and not isinstance(v, (list, tuple)):
        return -1  # bytes, a Path, any other object
    n = len(v)
    budget -= 2 + (4 if is_dict else 2) * n  # brackets, separators, a key's quotes and colon
    if budget < 0 or not n:
        return budget
    if depth >= _DEPTH:
        return -1
    # a field or item that is a string or a number is counted here, not in a call of its own
    if is_dict:
        for key, item in v.items():
            if not isinstance(key, str):
                return -1
            ti = type(item)
            if ti is str:
                budget -= len(key) + len(item) + 2
            elif item is None or ti is int or ti is float or ti is bool:
                budget -= len(key) + 8
            else:
                budget = _left(item, budget - len(key), depth + 1)
            if budget < 0:
                return budget
        return budget
    start = budget
    for item in islice(v, _SAMPLE):
        ti = type(item)
        if ti is str:
            budget -= len(item) + 2
        elif item is None or ti is int or ti is float or ti is bool:
            budget -= 8
        else:
            budget = _left(item, budget, depth + 1)
        if budget < 0:
            return budget
    measured = min(n, _SAMPLE)
    return budget - (start - budget) * (n - measured) // measured


def kept(v: Any, budget: int) -> tuple[Any, int]:
    """(`v` itself, about its size as JSON) when it is JSON-able and within `budget`
    characters, else (None, 0)."""
    left = _left(v, budget)
    return (v, budget - left) if left >= 0 else (None, 0)


_SCALAR = (str, int, float, bool, type(None))
_LAZY = frozenset({"args", "params"})


def _fixed(args: tuple, kwargs: dict) -> bool:
    """Whether nothing in the arguments can change after the call: scalars only (most ctx
    calls: a path, a key, an id). `kwargs` is the call's own dict, which no tool holds."""
    for a in args:
        if type(a) not in _SCALAR:
            return False
    for a in kwargs.values():
        if type(a) not in _SCALAR:
            return False
    return True


class TraceRow(dict[str, Any]):
    """One ctx call of a trace, a dict: seq, method, args, ok, error, duration_us, params,
    result. "args" (the preview text) and "params" (the arguments as they were passed) are
    filled in when either is first read, or the row is read whole (iterated, copied, shown,
    compared, encoded); until then the row holds the arguments (or a copy of flat ones), or
    their bytes (marshal) when a tool could change them after the call."""

    __slots__ = ("_source",)  # set by `row`: the arguments, their bytes, or None (shown)
    _source: tuple[Any, ...] | bytes | None

    @classmethod
    def made(
        cls,
        seq: int,
        method: str,
        given: tuple[str | None, Any, Any, int],
        outcome: tuple[bool, str | None, float],
        result: Any,
    ) -> TraceRow:
        """The trace row of one ctx call: `given` from `arguments`, its (ok, error code, duration
        in µs) and the result it keeps."""
        text, params, source, _ = given
        ok, error, duration_us = outcome
        r = cls(
            seq=seq,
            method=method,
            args=text,
            ok=ok,
            error=error,
            duration_us=duration_us,
            params=params,
            result=result,
        )
        r._source = source
        return r

    def _shown(self) -> None:
        try:
            source = self._source
        except AttributeError:  # a row made otherwise than by `row` (a copy): nothing pending
            return
        if source is None:
            return
        params = marshal.loads(source) if type(source) is bytes else source
        dict.__setitem__(self, "params", params)
        dict.__setitem__(self, "args", preview(*params))
        self._source = None  # last: a reader in another thread meanwhile writes the same again

    def __getitem__(self, key: Any) -> Any:
        if key in _LAZY:
            self._shown()
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        if key in _LAZY:
            self._shown()
        return dict.get(self, key, default)

    def __iter__(self) -> Any:
        self._shown()
        return dict.__iter__(self)

    def keys(self) -> Any:
        self._shown()
        return dict.keys(self)

    def values(self) -> Any:
        self._shown()
        return dict.values(self)

    def items(self) -> Any:
        self._shown()
        return dict.items(self)

    def copy(self) -> dict[str, Any]:
        self._shown()
        return dict(dict.items(self))

    def __repr__(self) -> str:
        self._shown()
        return dict.__repr__(self)

    def __eq__(self, other: object) -> bool:
        self._shown()
        if isinstance(other, TraceRow):
            other._shown()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __reduce__(self) -> Any:  # pickled (and deep-copied) as the plain dict it shows
        self._shown()
        return (dict, (dict(dict.items(self)),))


def _scalar_chars(v: Any) -> int:
    """About the JSON characters of a plain scalar; -1 for anything else (a subclass too)."""
    t = type(v)
    if t is str:
        return len(v) + 2
    if v is None or t is int or t is float or t is bool:
        return 8
    return -1


def _flat_copy(args: tuple, budget: int) -> tuple[tuple, int] | None:
    """Arguments that are scalars, and objects or lists of scalars one level deep, kept as
    they are with each object or list copied (shallow is whole here: a later change by the tool
    reaches none of it), and about their size, measured in the same pass; None for anything
    else, or past `budget` (measuring stops there)."""
    size, copied = 8, None
    for i, a in enumerate(args):
        t = type(a)
        if t is str:  # most ctx calls: a key, a path, an id
            size += len(a) + 3
        elif a is None or t is int or t is float or t is bool:
            size += 8
        elif t is dict:  # a document, a patch, a row's params
            size += 2 + 4 * len(a)
            for k, v in a.items():
                n = _scalar_chars(v)
                if type(k) is not str or n < 0:
                    return None
                size += len(k) + n
            copied = copied or list(args)
            copied[i] = dict(a)
        elif t is list:
            size += 2 + 2 * len(a)
            for v in a:
                n = _scalar_chars(v)
                if n < 0:
                    return None
                size += n
            copied = copied or list(args)
            copied[i] = list(a)
        else:
            return None
        if size > budget:
            return None
    return (args if copied is None else tuple(copied)), size


def arguments(args: tuple, kwargs: dict, budget: int) -> tuple[str | None, Any, Any, int]:
    """What the trace keeps of a ctx call's arguments, taken when they are passed: the preview
    written now (None: when read), the arguments kept as objects now, what fills the row when
    read, and about how many characters it keeps (within `budget`). Past the budget, or not
    JSON, only the preview is kept, written now: the arguments themselves are not."""
    flat = None if kwargs else _flat_copy(args, budget)
    if flat is not None:  # nothing in them can change now
        return None, None, (flat[0], kwargs), flat[1]
    params, size = kept((args, kwargs), budget)
    if params is None:
        return preview(args, kwargs), None, None, 0
    if _fixed(args, kwargs):
        return None, None, params, size
    try:  # a copy as bytes, C-fast: a tool changing its dict after the call changes nothing here
        return None, None, marshal.dumps(params), size
    except ValueError:  # a subclass of str, dict, … (the tool's own type): kept as it is
        return preview(args, kwargs), params, None, size


#: The trace row of one ctx call (the name the call path uses).
row = TraceRow.made


UNKEPT: tuple[str | None, Any, Any, int] = ("", None, None, 0)  # `arguments` of an untraced call
UNTRACED = "(not kept)"  # the method of the trace's last row when it lists only the first calls


def untraced(trace: list[dict[str, Any]], calls: int, limit: int) -> None:
    """Count ctx call number `calls`, past the `limit` an invocation's traces list (its nested
    calls' included), in the trace's last row."""
    noted = bool(trace) and dict.get(trace[-1], "method") == UNTRACED
    listed = len(trace) - noted
    text = (
        f"ctx calls {listed + 1:,} to {calls:,} are not listed: a call's trace lists {limit:,} "
        f"(Limits.trace_rows){'' if listed == limit else ', its nested calls included'}"
    )
    if noted:
        dict.__setitem__(trace[-1], "args", text)
        return
    outcome = (True, None, 0.0)
    trace.append(row(calls, UNTRACED, (text, None, None, 0), outcome, None))
