"""The load check's walk (N8, SEC6): every subschema validation can reach, through
applicator keywords and `$ref`/`$dynamicRef`, each once per base URI, with the edges between
subschemas applied to the same instance (a cycle of those never ends)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .schema_text import clip, raw_pointer, short

if TYPE_CHECKING:
    from referencing._core import Resolver

UNSUPPORTED_KEYWORDS = ("pattern", "patternProperties", "uniqueItems")
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
MAX_SCHEMA_STATES = 200_000  # (subschema, base URI) pairs the load check visits

# Keywords whose value is a schema, a list of schemas, or a map of name -> schema. Deliberately
# wider than 2020-12 (older drafts' `dependencies`, `additionalItems`, `definitions`): the walk
# must cover at least every place jsonschema applies a schema.
_SCHEMA_VALUED = (
    "additionalProperties",
    "items",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
)
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
# Applied to the same instance: a cycle through only these (and refs) never ends.
_IN_PLACE = frozenset(
    (
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "dependentSchemas",
        "dependencies",
        "$ref",
        "$dynamicRef",
    )
)


class Doc:
    """Where each dict and list of a schema document sits, by identity (parent links, so a
    deep, wide document costs memory linear in its size), found iteratively.

    Also: the misplaced `$schema`s, and the dicts that declare `$id`, `$anchor` or
    `$dynamicAnchor` (what a `$ref`, or a `$dynamicRef` in some dynamic scope, may name)."""

    def __init__(self, doc: Any) -> None:
        self.up: dict[int, tuple[int, Any]] = {}  # id -> (id of its parent, its key there)
        self.problems: list[tuple[int, tuple, str]] = []  # (node id, relative path, message)
        self.targets: list[dict[str, Any]] = []
        self.root = id(doc)
        stack: list[tuple[Any, int, Any]] = [(doc, 0, None)]
        while stack:
            node, parent, key = stack.pop()
            if id(node) in self.up:  # a caller's dict may share nodes (parsed JSON does not)
                continue
            self.up[id(node)] = (parent, key)
            items = node.items() if isinstance(node, dict) else enumerate(node)
            stack.extend((v, id(node), k) for k, v in items if isinstance(v, (dict, list)))
            if not isinstance(node, dict):
                continue
            dialect = node.get("$schema")
            if isinstance(dialect, str) and (node is not doc or dialect.rstrip("#") != DRAFT_2020_12):
                # jsonschema switches to another class (keyword set) wherever `$schema` sits
                self.problems.append(
                    (
                        id(node),
                        ("$schema",),
                        "only JSON Schema 2020-12 is "
                        "supported, declared at most once, at the schema's "
                        f"root (found {short.repr(dialect)})",
                    )
                )
            if node is not doc and any(
                isinstance(node.get(k), str) for k in ("$id", "$anchor", "$dynamicAnchor")
            ):
                self.targets.append(node)

    def path(self, node: int, rel: tuple = ()) -> tuple:
        parts = list(reversed(rel))
        while node != self.root:
            node, key = self.up[node]
            parts.append(key)
        return tuple(reversed(parts))


def _children(schema: dict[str, Any]) -> Iterator[tuple[tuple, Any, bool]]:
    """(relative path, subschema, applied to the same instance?) for each applicator value."""
    for key in _SCHEMA_VALUED:
        if isinstance(schema.get(key), (dict, bool)):
            yield (key,), schema[key], key in _IN_PLACE
    for key in _SCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            for i, s in enumerate(schema[key]):
                yield (key, i), s, key in _IN_PLACE
    for key in _SCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            for name, s in schema[key].items():
                # $defs are not applied where they sit: no edge of the in-place graph
                yield (key, name), s, key in _IN_PLACE


class TooComplex(Exception):
    pass


@dataclass
class _Walk:
    """Every subschema validation can reach, once per base URI, with the in-place edges."""

    doc: Doc
    states: dict[tuple[int, str], int] = field(default_factory=dict)
    nodes: list[tuple[dict[str, Any], Any]] = field(default_factory=list)  # (schema, resolver)
    edges: list[list[tuple[int, tuple]]] = field(default_factory=list)  # (to, via: relative)
    pending: list[int] = field(default_factory=list)

    def add(self, schema: Any, resolver: Resolver[Any]) -> int | None:
        """The state of `schema` validated with `resolver` (queued when new); None: a
        boolean schema, nothing to check or follow."""
        if not isinstance(schema, dict):
            return None
        # the base URI decides where the schema's relative refs lead
        key = (id(schema), str(getattr(resolver, "_base_uri", "")))
        if key not in self.states:
            if len(self.nodes) >= MAX_SCHEMA_STATES:
                raise TooComplex
            self.states[key] = len(self.nodes)
            self.nodes.append((schema, resolver))
            self.edges.append([])
            self.pending.append(self.states[key])
        return self.states[key]

    def bad(self, schema: Any, rel: tuple, message: str) -> None:
        self.doc.problems.append((id(schema), rel, message))

    def follow(self, at: dict[str, Any], kw: str, resolver: Resolver[Any], ref: str) -> int | None:
        """The state `at[kw]` = `ref` leads to, or None after recording why it may not be
        followed (as jsonschema would: resolver.lookup, the target validated with the
        resolver it comes with)."""
        from referencing.exceptions import Unresolvable

        try:
            resolved = resolver.lookup(ref)
        except Unresolvable:
            self.bad(
                at,
                (kw,),
                f"$ref {short.repr(ref)} "
                + (
                    "points to nothing in the schema"
                    if ref.startswith("#")
                    else "does not resolve inside the schema (remote, file: and urn: references are not "
                    "fetched)"
                ),
            )
            return None
        except Exception as exc:  # a malformed URI or pointer: urljoin, int("x"), str[...]
            self.bad(
                at,
                (kw,),
                f"$ref {short.repr(ref)} cannot be resolved: {type(exc).__name__}: {clip(str(exc), 120)}",
            )
            return None
        target = resolved.contents
        if isinstance(target, bool):
            return None
        if not isinstance(target, dict):
            self.bad(at, (kw,), f"$ref {short.repr(ref)} points at a {type(target).__name__}, not a schema")
            return None
        if id(target) not in self.doc.up:  # e.g. a metaschema bundled with jsonschema
            self.bad(
                at,
                (kw,),
                f"$ref {short.repr(ref)} points outside this schema; references resolve only inside it",
            )
            return None
        return self.add(target, resolved.resolver)


def walk_schema(
    schema: dict[str, Any], doc: Doc, unsupported: tuple[str, ...] = UNSUPPORTED_KEYWORDS
) -> _Walk:
    """Visit every subschema validation can reach (applicators and refs), each once per base
    URI, iteratively; record forbidden keywords, unresolvable refs and in-place edges."""
    from jsonschema.validators import SPECIFICATIONS
    from referencing import Registry
    from referencing.jsonschema import DRAFT202012

    walk = _Walk(doc)
    if "$id" in schema and not isinstance(schema["$id"], str):
        walk.bad(schema, ("$id",), "$id must be a string (a URI reference)")
        return walk
    # the registry the validator will use: the bundled metaschemas, nothing retrievable
    root = SPECIFICATIONS.combine(Registry()).resolver_with_root(DRAFT202012.create_resource(schema))
    walk.add(schema, root)
    # Whatever a $dynamicRef may land on (its dynamic scope is known only while validating)
    # and whatever $id/$anchor names is checked as a schema too, located from the root.
    for target in doc.targets:
        try:
            ref = "#" + quote(raw_pointer(doc.path(id(target))), safe="/~")
        except UnicodeEncodeError:  # a lone surrogate in a key: the manifest check says so
            continue
        walk.follow(
            target,
            next(k for k in ("$id", "$anchor", "$dynamicAnchor") if isinstance(target.get(k), str)),
            root,
            ref,
        )
    anchors: dict[str, list[int]] = {}
    while walk.pending:
        i = walk.pending.pop()
        sub, resolver = walk.nodes[i]
        for kw in unsupported:
            if kw in sub:
                walk.bad(
                    sub,
                    (kw,),
                    f"'{kw}' is not supported by the platform (checking it "
                    "can hang the app); check it in the tool's code instead",
                )
        if isinstance(sub.get("$dynamicAnchor"), str):
            anchors.setdefault(sub["$dynamicAnchor"], []).append(i)
        for rel, child, in_place in _children(sub):
            if not isinstance(child, (dict, bool)):
                # no schema (e.g. the old `dependencies`' string arrays, which 2020-12 does not
                # apply): the metaschema check judges it, nothing to descend into
                continue
            try:  # as jsonschema's descend(): a child with an $id has a new base URI
                child_resolver = resolver.in_subresource(DRAFT202012.create_resource(child))
            except Exception:  # e.g. "$id": 5
                walk.bad(child, ("$id",), "$id must be a string (a URI reference)")
                continue
            j = walk.add(child, child_resolver)
            if j is not None and in_place:
                walk.edges[i].append((j, rel))
        for kw in ("$ref", "$dynamicRef"):
            if isinstance(sub.get(kw), str):
                j = walk.follow(sub, kw, resolver, sub[kw])
                if j is not None:
                    walk.edges[i].append((j, (kw,)))
    # a $dynamicRef may land on any $dynamicAnchor of its name: in-place edges to all of them
    for i, (sub, _) in enumerate(walk.nodes):
        dynamic = sub.get("$dynamicRef")
        if isinstance(dynamic, str) and "#" in dynamic:
            for j in anchors.get(dynamic.rsplit("#", 1)[1], ()):
                walk.edges[i].append((j, ("$dynamicRef",)))
    return walk


def in_place_cycle(walk: _Walk) -> tuple | None:
    """The path of a `$ref` on a cycle of subschemas applied to the same instance, if any:
    validating such a schema never ends (jsonschema recurses until the stack runs out)."""
    state = [0] * len(walk.nodes)  # 0 new, 1 on the current path, 2 done
    for start in range(len(walk.nodes)):
        if state[start]:
            continue
        state[start] = 1
        stack = [(start, iter(walk.edges[start]))]
        while stack:
            node, it = stack[-1]
            step = next(it, None)
            if step is None:
                state[node] = 2
                stack.pop()
                continue
            nxt, via = step
            if state[nxt] == 1:
                return walk.doc.path(id(walk.nodes[node][0]), via)
            if state[nxt] == 0:
                state[nxt] = 1
                stack.append((nxt, iter(walk.edges[nxt])))
    return None


def optional_fields(schema: dict[str, Any]) -> frozenset[str]:
    """The names a `null` may stand in for as absent (N8's null rule): declared in `properties`
    of a subschema applied to the input itself (the root, allOf/anyOf/oneOf, if/then/else,
    dependentSchemas, $ref…), and required by none of them — not through `required`, nor
    `dependentRequired` or `dependencies`, however conditional (a kept null is for the schema
    to judge; a dropped one could hide a field the schema requires)."""
    try:
        walk = walk_schema(schema, Doc(schema), ())
    except TooComplex:  # refused at load anyway
        return frozenset()
    declared: set[str] = set()
    required: set[str] = set()
    seen, stack = {0}, [0]
    while stack:
        i = stack.pop()
        sub = walk.nodes[i][0]
        if isinstance(sub.get("properties"), dict):
            declared.update(sub["properties"])
        if isinstance(sub.get("required"), list):
            required.update(r for r in sub["required"] if isinstance(r, str))
        for key in ("dependentRequired", "dependencies"):
            if isinstance(sub.get(key), dict):
                for names in sub[key].values():
                    if isinstance(names, list):
                        required.update(n for n in names if isinstance(n, str))
        for j, _ in walk.edges[i]:
            if j not in seen:
                seen.add(j)
                stack.append(j)
    return frozenset(declared - required)
