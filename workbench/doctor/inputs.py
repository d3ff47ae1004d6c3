"""Inputs for the doctor (issue 30 point 2): generated from a tool's schema, under its platform's
rules, weighted toward the edges; and invalid ones, which the platform's own check must stop.

Valid inputs come from the schema (its types, properties, items, bounds, enums, local `$ref`s,
anyOf/oneOf/allOf), each value drawn either from its edges — empty strings and arrays, 0 and
the schema's bounds, one character, non-ASCII and astral text, strings long enough to matter
for the platform's limits — or at large; each is kept only if the bench's own validator (N8,
the null rule, formats as annotations) accepts it, so a tool is never blamed for an input its
platform would refuse. (hypothesis-jsonschema's `from_schema` does not run on the hypothesis
this workbench needs; the platforms' schemas are the subset above.) Invalid inputs are valid ones
broken once: a required key dropped, a key of the wrong type, an extra key where
`additionalProperties` is false, a value that is not an object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .schemas import pointer_target

#: strings at the edges: empty, one character, spaces, non-ASCII, astral, a NUL, long ones
EDGE_STRINGS = (
    "",
    "a",
    " ",
    "é",
    "日本",
    "😀",
    "a\u0000b",
    "-1",
    "null",
    "x" * 1000,
    "😀" * 5000,
    "y" * 20_000,
)
EDGE_NUMBERS = (0, 1, -1, 2**31, -(2**31), 2**53, 0.5, -0.0, 1e308)
_DEPTH = 6  # of the edge strategy: deeper parts come from from_schema


def _type_of(schema: dict[str, Any]) -> str | None:
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), t[0] if t else None)
    return t if isinstance(t, str) else None


def _int(schema: dict[str, Any], key: str) -> int | None:
    v = schema.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _strings(
    schema: dict[str, Any], seeds: tuple[str, ...] = (), formats: Mapping[str, list[str]] | None = None
) -> Any:
    from hypothesis import strategies as st

    allowed = (formats or {}).get(str(schema.get("format")))
    if allowed:  # an address, a host or a URL: mostly one the bench allows (seeds.py), else any
        known_ = [s for s in allowed if _fits(schema, s)]
        if known_:
            rest = _strings({k: v for k, v in schema.items() if k != "format"}, seeds)
            return st.one_of(st.sampled_from(known_), st.sampled_from(known_), rest)

    lo, hi = _int(schema, "minLength") or 0, _int(schema, "maxLength")
    found = [s for s in EDGE_STRINGS if lo <= len(s) and (hi is None or len(s) <= hi)]
    found += ["x" * n for n in {lo, hi or 0} if n and n <= 100_000]
    edges = st.sampled_from(sorted(set(found), key=lambda s: (len(s), s))) if found else st.nothing()
    short = min(hi if hi is not None else lo + 30, lo + 30)
    parts = [edges, st.text(min_size=lo, max_size=max(lo, short))]
    known = [s for s in seeds if lo <= len(s) and (hi is None or len(s) <= hi)]
    if known:  # what the gem knows (seeds.py): a file that exists, a stored key, a mail id
        parts.append(st.sampled_from(known))
    return st.one_of(*parts)


def _fits(schema: dict[str, Any], value: str) -> bool:
    lo, hi = _int(schema, "minLength") or 0, _int(schema, "maxLength")
    return lo <= len(value) and (hi is None or len(value) <= hi)


def _numbers(schema: dict[str, Any], integer: bool) -> Any:
    from hypothesis import strategies as st

    lo = schema.get("minimum", schema.get("exclusiveMinimum"))
    hi = schema.get("maximum", schema.get("exclusiveMaximum"))
    lo = lo if isinstance(lo, (int, float)) and not isinstance(lo, bool) else None
    hi = hi if isinstance(hi, (int, float)) and not isinstance(hi, bool) else None
    step = 1 if integer else 0.5
    near = [b + d for b in (lo, hi) if b is not None for d in (-step, 0, step)]
    found = [n for n in (*EDGE_NUMBERS, *near) if not integer or float(n).is_integer()]
    edges = st.sampled_from([int(n) if integer else n for n in found])
    plain: Any
    if integer:
        plain = st.integers(
            min_value=int(lo) if lo is not None and float(lo).is_integer() else None,
            max_value=int(hi) if hi is not None and float(hi).is_integer() else None,
        )
    else:
        plain = st.floats(min_value=lo, max_value=hi, allow_nan=False, allow_infinity=False)
    return st.one_of(edges, plain)


def _any(depth: int) -> Any:
    from hypothesis import strategies as st

    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=20),
    )
    if depth > 2:
        return scalars
    return st.one_of(
        scalars, st.lists(scalars, max_size=3), st.dictionaries(st.text(max_size=8), scalars, max_size=3)
    )


class _Schemas:
    """A schema's strategies, with its local `$ref`s resolved (SEC6 bounded them at load)."""

    def __init__(
        self, root: Any, seeds: tuple[str, ...] = (), formats: Mapping[str, list[str]] | None = None
    ) -> None:
        self.root, self.seeds, self.formats = root, seeds, formats

    def ref(self, pointer: str) -> Any:
        return pointer_target(self.root, pointer)

    def of(self, schema: Any, depth: int = 0) -> Any:
        """Values for `schema`, edges first (not all valid: the caller filters)."""
        from hypothesis import strategies as st

        if schema is True or schema == {}:
            return _any(depth)
        if not isinstance(schema, dict) or depth > _DEPTH:
            return st.none()
        if isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#"):
            return self.of(self.ref(schema["$ref"]), depth + 1)
        if "const" in schema:
            return st.just(schema["const"])
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return st.sampled_from(schema["enum"])
        for key in ("anyOf", "oneOf", "allOf"):
            subs = schema.get(key)
            if isinstance(subs, list) and subs:
                rest = {k: v for k, v in schema.items() if k != key}
                if key == "allOf":
                    merged = dict(rest)
                    for sub in subs:
                        if isinstance(sub, dict):
                            merged.update(sub)
                    return self.of(merged, depth + 1)
                return st.one_of(
                    [self.of({**rest, **s} if isinstance(s, dict) else s, depth + 1) for s in subs]
                )
        t = _type_of(schema)
        if t is None and "properties" in schema:
            t = "object"
        if t == "string":
            return _strings(schema, self.seeds, self.formats)
        if t in ("integer", "number"):
            return _numbers(schema, t == "integer")
        if t == "boolean":
            return st.booleans()
        if t == "null":
            return st.none()
        if t == "array":
            items = schema.get("items", {})
            lo, hi = _int(schema, "minItems") or 0, _int(schema, "maxItems")
            return st.lists(
                self.of(items, depth + 1), min_size=lo, max_size=min(hi if hi is not None else lo + 4, lo + 4)
            )
        if t == "object":
            props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
            required = [k for k in schema.get("required", ()) if isinstance(k, str)]
            base = st.fixed_dictionaries(
                {k: self.of(props.get(k, {}), depth + 1) for k in required},
                optional={k: self.of(v, depth + 1) for k, v in props.items() if k not in required},
            )
            extra = schema.get("additionalProperties", True)
            if extra is False:
                return base
            more = st.dictionaries(
                st.text(min_size=1, max_size=8),
                self.of(extra if isinstance(extra, dict) else True, depth + 1),
                max_size=2,
            )
            return st.builds(lambda a, b: {**b, **a}, base, more)
        return _any(depth)


def _least(schema: Any, depth: int = 0, big: bool = False) -> Any:
    """The plainest value of `schema` at one end: "" / 0 / [] / {required keys} (`big`: the
    longest string and the largest bound instead); None when there is none to say."""
    if not isinstance(schema, dict) or depth > _DEPTH:
        return None
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][-1 if big else 0]
    t = _type_of(schema) or ("object" if "properties" in schema else None)
    if t == "string":
        lo, hi = _int(schema, "minLength") or 0, _int(schema, "maxLength")
        return "x" * (min(hi, 100_000) if big and hi is not None else 20_000 if big else lo)
    if t in ("integer", "number"):
        bound = schema.get("maximum" if big else "minimum")
        return (
            bound
            if isinstance(bound, (int, float)) and not isinstance(bound, bool)
            else (2**31 if big else 0)
        )
    if t == "boolean":
        return big
    if t == "array":
        n = _int(schema, "maxItems" if big else "minItems") or 0
        item = _least(schema.get("items", {}), depth + 1, big)
        return [item] * min(n, 100)
    if t == "object":
        props = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
        keys = list(props) if big else [k for k in schema.get("required", ()) if isinstance(k, str)]
        return {k: _least(props.get(k, {}), depth + 1, big) for k in keys}
    return None


def edge_examples(schema: Any) -> list[Any]:
    """Inputs every search tries first: the plainest (empty strings, zeros, required keys only)
    and the largest (the longest strings and bounds, every key)."""
    out = []
    for big in (False, True):
        value = _least(schema, big=big)
        if value is not None and value not in out:
            out.append(value)
    return out


def edges(schema: Any, seeds: tuple[str, ...] = (), formats: Mapping[str, list[str]] | None = None) -> Any:
    """A strategy of values for `schema`, weighted toward its edges (not all valid); string
    fields also draw from `seeds`, and one of a `format` the bench allows from `formats`."""
    return _Schemas(schema, seeds, formats).of(schema)


def valid_inputs(
    schema: dict[str, Any],
    accepts: Any,
    seeds: tuple[str, ...] = (),
    formats: Mapping[str, list[str]] | None = None,
) -> Any:
    """Inputs `accepts(value)` (the bench's validator: N8, the platform's rules) takes."""
    return edges(schema, seeds, formats).filter(accepts)


def broken(schema: dict[str, Any], value: Any, how: int) -> Any:
    """`value` broken once (how: which way, modulo the ways that apply), or None when no way
    applies to it: the platform's check must refuse what comes back (N8)."""
    ways: list[Any] = [[value]]  # not an object at all
    if isinstance(value, dict):
        required = [k for k in schema.get("required", ()) if k in value]
        ways += [{k: v for k, v in value.items() if k != r} for r in required]
        props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
        for k, sub in props.items():
            t = _type_of(sub) if isinstance(sub, dict) else None
            if t in ("string", "integer", "number", "boolean", "array", "object") and "enum" not in sub:
                wrong = {
                    "string": 12345,
                    "integer": "7",
                    "number": "7.5",
                    "boolean": "true",
                    "array": {},
                    "object": [],
                }
                ways.append({**value, k: wrong[t]})
        if schema.get("additionalProperties") is False:
            ways.append({**value, "__doctor_extra__": 1})
    return ways[how % len(ways)]
