"""Schemas the doctor cannot draw inputs from: said once per tool, before any is drawn.

A schema no value satisfies (`not: {}`, `minimum` over `maximum`, an empty `enum`, a required
property whose schema requires itself again), one that needs huge values (`minLength:
2000000000`, `minItems: 1e9`, 3,000 `prefixItems`) or that the generator does not follow (a
long `$ref` chain, `$dynamicRef`) would otherwise end in hypothesis' own exceptions after a long
search, or in gigabytes of memory. The walk itself is bounded: nodes, depth and `$ref` hops.
"""

from __future__ import annotations

from typing import Any

MAX_LENGTH = 100_000  # characters of one drawn string (the edges' longest is 20,000)
MAX_ITEMS = 1_000  # items of one drawn array
MAX_PROPERTIES = 200  # keys of one drawn object
MAX_LIST = 256  # entries of prefixItems / anyOf / oneOf / allOf / required the doctor draws from
MAX_REFS = 32  # $ref hops followed one after another
MAX_NODES = 20_000  # schema nodes walked per tool
MAX_DEPTH = 64

#: size keyword -> the most the doctor draws
_SIZES = {"minLength": MAX_LENGTH, "minItems": MAX_ITEMS, "minProperties": MAX_PROPERTIES}
_PAIRS = (
    ("minimum", "maximum"),
    ("exclusiveMinimum", "maximum"),
    ("minimum", "exclusiveMaximum"),
    ("exclusiveMinimum", "exclusiveMaximum"),
    ("minLength", "maxLength"),
    ("minItems", "maxItems"),
    ("minProperties", "maxProperties"),
)


class _Problem(Exception):
    def __init__(self, keyword: str, message: str) -> None:
        super().__init__(message)
        self.keyword, self.message = keyword, message


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def problem(schema: Any) -> tuple[str, str] | None:
    """(keyword, what is wrong) for the first thing in `schema` the doctor cannot draw from;
    None when it can."""
    walk = _Walk(schema)
    try:
        walk.node(schema, 0, "#")
        walk.required_loop(schema)
    except _Problem as p:
        return p.keyword, p.message
    except RecursionError:  # a schema nested past Python's own stack
        return "$ref", "the schema nests too deep to draw from"
    return None


class _Walk:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.nodes = 0
        self.seen: set[int] = set()  # $ref targets walked already (a recursive schema: once)

    def ref(self, node: dict[str, Any], where: str) -> Any:
        """The schema a chain of local `$ref`s ends at (at most MAX_REFS hops)."""
        hops = 0
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#"):
            hops += 1
            if hops > MAX_REFS:
                raise _Problem("$ref", f"{where}: a chain of more than {MAX_REFS} $refs")
            node = pointer_target(self.root, node["$ref"])
        return node

    def node(self, node: Any, depth: int, where: str) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES or depth > MAX_DEPTH:
            raise _Problem("$ref", f"{where}: more than {MAX_NODES:,} schema nodes or {MAX_DEPTH} levels")
        if node is False:
            raise _Problem("false", f"{where}: the schema `false` accepts no value")
        if not isinstance(node, dict):
            return
        for key in ("$dynamicRef", "$recursiveRef"):
            if key in node:
                raise _Problem(key, f"{where}: the doctor does not follow {key} (it draws from local $refs)")
        if node.get("not") in ({}, True):
            raise _Problem("not", f"{where}: `not: {{}}` accepts no value")
        if isinstance(node.get("enum"), list) and not node["enum"]:
            raise _Problem("enum", f"{where}: an empty enum accepts no value")
        for key, cap in _SIZES.items():
            v = node.get(key)
            if v is not None and (not _number(v) or v < 0 or v != int(v)):
                raise _Problem(key, f"{where}: {key}={v!r} is not a whole number >= 0")
            if v is not None and v > cap:
                raise _Problem(key, f"{where}: {key}={v:,.0f} needs values over the doctor's {cap:,}")
        for lo, hi in _PAIRS:
            a, b = node.get(lo), node.get(hi)
            if _number(a) and _number(b) and (a > b or (a == b and "exclusive" in lo + hi)):  # type: ignore[operator]
                raise _Problem(lo, f"{where}: {lo}={a!r} and {hi}={b!r} leave no value between them")
        for key in ("prefixItems", "anyOf", "oneOf", "allOf", "required", "enum"):
            v = node.get(key)
            if isinstance(v, list) and len(v) > (MAX_LIST if key != "enum" else 10_000):
                raise _Problem(key, f"{where}: {len(v):,} entries in {key}, over the doctor's {MAX_LIST}")
        if "$ref" in node:
            target = self.ref(node, where)
            if id(target) not in self.seen:
                self.seen.add(id(target))
                self.node(target, depth + 1, f"{where}/$ref")
        for key in ("items", "additionalProperties", "not", "contains"):
            if isinstance(node.get(key), dict):
                self.node(node[key], depth + 1, f"{where}/{key}")
        for key in ("prefixItems", "anyOf", "oneOf", "allOf"):
            for i, sub in enumerate(node.get(key) or () if isinstance(node.get(key), list) else ()):
                self.node(sub, depth + 1, f"{where}/{key}/{i}")
        props = node.get("properties")
        if isinstance(props, dict):
            for k, sub in props.items():
                self.node(sub, depth + 1, f"{where}/properties/{k}")

    def required_loop(self, schema: Any) -> None:
        """A required property whose schema (through $refs) requires the same schema again:
        every value would need another inside it, without end."""
        path: list[int] = []

        def visit(node: Any, depth: int) -> None:
            node = self.ref(node, "#") if isinstance(node, dict) else node
            if not isinstance(node, dict) or depth > MAX_DEPTH:
                return
            if id(node) in path:
                raise _Problem(
                    "required", "a required property needs a value of its own schema again, without end"
                )
            path.append(id(node))
            props: dict[str, Any] = node["properties"] if isinstance(node.get("properties"), dict) else {}
            required: list[Any] = node["required"] if isinstance(node.get("required"), list) else []
            for k in required:
                if isinstance(k, str) and k in props:
                    visit(props[k], depth + 1)
            items = node.get("items")
            if isinstance(items, dict) and _number(node.get("minItems")) and node["minItems"] > 0:
                visit(items, depth + 1)
            path.pop()

        visit(schema, 0)


def pointer_target(root: Any, pointer: str) -> Any:
    """What a local `$ref` JSON pointer (`#/$defs/x`) names in `root`; {} when it names nothing."""
    node = root
    for part in pointer.lstrip("#").split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return {}
    return node
