"""JSON as the platform sees it: what a value may hold, how deep, how long (N9, SEC7).

Neutral ground: the ctx layer (documents), both runners (results, ctx arguments) and the bench
use these, and none of them owns them. The defaults are the platform's; callers pass their
bench's `Limits` (ctx/limits.py, which this module cannot import: ctx imports it).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ._errors import WorkbenchError

MAX_RESULT_CHARS = 1_048_576  # N9, counted like JavaScript's string length (UTF-16 units)
MAX_JSON_DEPTH = 200  # SEC7: nesting of results and arguments (limits.DEFAULT.json_depth)

_FLOATY = re.compile(r"[0-9][.e]")  # a float may be in the text (or a string: then harmless)
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # made once: it is per call
_WIDE = 1 << 63  # a flat value's ints are below this: far from Python's digit limit for str()


def _flat_chunks() -> Any:
    """The C encoder json.dumps builds for each call, built once, or None where the C encoder
    is missing or differs (another Python's private API). It has no circular check: for flat
    values only, in which nothing nests."""
    try:
        from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]

        chunks = c_make_encoder(None, None, encode_basestring, None, ":", ",", False, False, False)
        probe = {"a": [1, "é\n\ud800", None, True, -(2**62)], "b": ""}
        return chunks if "".join(chunks(probe, 0)) == _ENCODE(probe) else None
    except Exception:  # noqa: BLE001
        return None


_CHUNKS = _flat_chunks()


_LONE = re.compile("[\ud800-\udfff]")


def utf8(text: str) -> bytes:
    """JSON text as UTF-8 bytes for the sandbox. A lone surrogate, which UTF-8 cannot hold,
    goes as its `\\udXXX` escape: JSON.parse reads it back into the same lone UTF-16 unit,
    which is how the platform's JSON carries it to a tool (SEC7). Only such text pays."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # only inside string literals: escaping there keeps it JSON
        return _LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def dump_flat(value: Any) -> str:
    """A `flat` value as compact JSON text, as json.dumps(separators=(",", ":"),
    ensure_ascii=False) writes it, in half the time for a small document."""
    return "".join(_CHUNKS(value, 0)) if _CHUNKS is not None else _ENCODE(value)


def flat(value: Any) -> bool:
    """Whether `value` is a dict (string keys) or list of str, bool, None and ints below 2**63,
    exactly those types: nothing in it nests, cycles, is NaN or is written otherwise by JS, so
    its JSON round trip is a shallow copy. Most results and inputs are; checked in one pass."""
    return flat_chars(value) >= 0


def flat_chars(value: Any) -> int:
    """At most how many characters (UTF-16 units) a `flat` value takes as JSON (a string of n
    characters: 6n + 2, each escaped as \\uXXXX); -1 when it is not flat."""
    t = type(value)
    if t is dict:
        n = 2 + len(value)
        for k, v in value.items():
            if type(k) is not str:
                return -1
            tv = type(v)
            if tv is str:
                n += 6 * (len(k) + len(v)) + 5
            elif tv is bool or v is None or (tv is int and -_WIDE < v < _WIDE):
                n += 6 * len(k) + 23
            else:
                return -1
        return n
    if t is list:
        n = 2 + len(value)
        for v in value:
            tv = type(v)
            if tv is str:
                n += 6 * len(v) + 2
            elif tv is bool or v is None or (tv is int and -_WIDE < v < _WIDE):
                n += 20
            else:
                return -1
        return n
    return -1


def why_not_json(
    value: Any, where: str = "result", seen: set[int] | None = None, *, max_depth: int = MAX_JSON_DEPTH
) -> str | None:
    """Where the first value JSON cannot carry is, and why; None if it is all JSON.

    Iterative (SEC7): a value nested 100,000 levels deep, or one that contains itself, is an
    answer here, not a RecursionError. Nesting beyond `max_depth` (limits.json_depth) is one.
    The path of a value ("result.items[3].name") is spelled out only for the one found.
    """
    if max_depth >= 1 and (seen is None or id(value) not in seen) and flat(value):
        return None  # the common case (a document, a row), in one pass: nothing in it nests
    path = set() if seen is None else seen  # the containers on the way down: a cycle's mark
    links: list[tuple[int, Any]] = []  # container -> (its parent container, its key there)
    # (value, depth, parent container, key); a negative depth leaves container ~depth
    stack: list[tuple[Any, int, int, Any]] = [(value, 0, -1, None)]

    def at(parent: int, key: Any) -> str:
        keys = []
        while parent >= 0:
            keys.append(key)
            parent, key = links[parent]
        return where + "".join(f"[{k}]" if type(k) is int else f".{k}" for k in reversed(keys))

    while stack:
        v, depth, parent, key = stack.pop()
        if depth < 0:
            path.discard(id(v))
            continue
        t = type(v)
        if t is str or t is int or t is bool or v is None:
            continue
        if t is float or isinstance(v, float):
            if not math.isfinite(v):
                return f"{at(parent, key)} is {v} (JSON has no NaN/Infinity)"
        elif isinstance(v, (str, bool, int)):
            continue
        elif isinstance(v, (list, tuple, dict)):
            if id(v) in path:
                return f"{at(parent, key)} contains itself (a cycle)"
            if depth >= max_depth:
                full = at(parent, key)
                short = full if len(full) <= 80 else f"{full[:40]}…{full[-30:]}"
                return f"{short} is nested deeper than {max_depth} levels"
            path.add(id(v))
            stack.append((v, -1, -1, None))
            links.append((parent, key))
            me = len(links) - 1
            if isinstance(v, dict):
                for k in v:
                    if not isinstance(k, str):
                        return f"{at(parent, key)} has a non-string key {k!r}"
                items: Any = v.items()
            else:
                items = enumerate(v)
            # reversed: the first item is looked at first
            stack.extend([(c, depth + 1, me, k) for k, c in items][::-1])
        else:
            return f"{at(parent, key)} is a {type(v).__name__}, which is not JSON"
    return None


def json_chars(value: Any) -> int:
    """About the characters of a JSON value as text: what keeping it costs (0 when it is not
    JSON: nothing that is not is kept)."""
    t = type(value)
    if t is str:
        return len(value) + 2
    if (t is dict or t is list) and not value:
        return 2
    try:
        return len(_ENCODE(value))
    except (TypeError, ValueError, RecursionError):
        return 0


def js_number(f: float) -> str:
    """A finite float as JavaScript's `String(n)` / `JSON.stringify` writes it (the same
    shortest digits as Python's repr, placed by ECMA-262 Number::toString's rules)."""
    if f == 0:
        return "0"
    r = repr(f)
    sign, r = ("-", r[1:]) if r.startswith("-") else ("", r)
    mant, _, exp = r.partition("e")
    ip, _, fp = mant.partition(".")
    fp = "" if fp == "0" else fp
    lead = ip.lstrip("0")
    n = len(lead) + int(exp or 0) if lead else int(exp or 0) - (len(fp) - len(fp.lstrip("0")))
    digits = (lead + fp).lstrip("0").rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        out = "0." + "0" * -n + digits
    else:
        e = n - 1
        out = (digits if k == 1 else f"{digits[0]}.{digits[1:]}") + f"e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + out


def _as_js(value: Any) -> tuple[Any, int]:
    """(value with integral floats as ints, extra characters JS needs for the other floats):
    what `JSON.stringify` would write for a Python result, without a slow pure-Python encoder."""
    extra = 0

    def conv(v: Any) -> Any:
        nonlocal extra
        if isinstance(v, float) and not isinstance(v, bool):
            if v.is_integer() and abs(v) < 1e21:
                return int(v)
            extra += len(js_number(v)) - len(repr(v))
        return v

    root: list[Any] = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:  # iterative: why_not_json already bounded the depth, and found no cycle
        parent, key = stack.pop()
        v = parent[key]
        if isinstance(v, dict):
            v = parent[key] = dict(v)
            stack.extend((v, k) for k in v)
        elif isinstance(v, (list, tuple)):
            v = parent[key] = list(v)
            stack.extend((v, i) for i in range(len(v)))
        else:
            parent[key] = conv(v)
    return root[0], extra


def load_file_json(
    data: bytes, *, depth: int = MAX_JSON_DEPTH, constants: bool = True
) -> tuple[Any, str | None]:
    """A file's JSON written by someone else (a case, a bundle's entry, a state folder): its
    value and None, or None and why it is refused — not UTF-8 or not JSON, nested deeper than
    `depth` (the parser's own guard included), or, with `constants` False, NaN or Infinity."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON value")

    try:
        value = json.loads(data.decode("utf-8"), parse_constant=None if constants else refuse)
    except RecursionError:
        return None, f"nests deeper than {depth} levels"
    except (UnicodeDecodeError, ValueError) as exc:
        return None, f"is not JSON: {exc}"
    if deeper_than(value, depth):
        return None, f"nests deeper than {depth} levels"
    return value, None


def deeper_than(value: Any, max_depth: int) -> bool:
    """Whether parsed JSON nests lists/objects deeper than `max_depth` (iteratively)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > max_depth:
            return True
        for c in v.values() if isinstance(v, dict) else v:
            if isinstance(c, (list, dict)):
                stack.append((c, depth + 1))
    return False


def _size(text: str) -> int:
    """Length of `text` as JavaScript counts it (UTF-16 units)."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


def _too_large(size: int, max_chars: int) -> WorkbenchError:
    return WorkbenchError(
        "E_RESULT_TOO_LARGE",
        f"the result is {size:,} JSON characters; at most "
        f"{max_chars:,}. Write large output to ctx.files or storage and return a "
        "summary",
        size=size,
        limit=max_chars,
    )


def to_json(
    value: Any, *, text: str | None = None, max_chars: int = MAX_RESULT_CHARS, max_depth: int = MAX_JSON_DEPTH
) -> tuple[Any, WorkbenchError | None]:
    """The value as the caller would receive it (JSON round trip), or E_RESULT_* (N9, SEC7).

    `text`: the value as the tool's runtime already serialised it (JS); else it is serialised
    here, after checking it is JSON at all. Never raises: a cycle or a value nested past
    `max_depth` (limits.json_depth) is E_RESULT_NOT_JSON naming the limit; over `max_chars`
    (limits.result_chars) is E_RESULT_TOO_LARGE.
    """
    extra = 0  # characters JS would write beyond Python's text (tiny floats)
    bound = flat_chars(value) if text is None and max_depth >= 1 else -1
    if bound >= 0:  # JSON as it is: the text is made only to measure one that may be too large
        size = bound if bound <= max_chars else _size(_ENCODE(value))
        if size > max_chars:
            return None, _too_large(size, max_chars)
        return (dict(value) if type(value) is dict else list(value)), None
    if text is None:
        why = why_not_json(value, max_depth=max_depth)
        if why:
            limit = {"limit": max_depth} if "nested deeper" in why else {}
            return None, WorkbenchError(
                "E_RESULT_NOT_JSON",
                f"the tool returned a value that is not JSON: {why}",
                field=why.split(" ", 1)[0],
                **limit,
            )
        text = _ENCODE(value)
        if _FLOATY.search(text):  # N9 counts what JSON.stringify writes: 1.0 is "1", 1e-5 "0.00001"
            value, extra = _as_js(value)
            text = _ENCODE(value)
    size = _size(text) + extra
    if size > max_chars:
        return None, _too_large(size, max_chars)
    try:
        parsed = json.loads(text)
        too_deep = isinstance(parsed, (list, dict)) and deeper_than(parsed, max_depth)
    except RecursionError:
        too_deep = True
    if too_deep:
        return None, WorkbenchError(
            "E_RESULT_NOT_JSON",
            f"the result is nested deeper than {max_depth} levels (limit json_depth)",
            limit=max_depth,
        )
    return parsed, None
