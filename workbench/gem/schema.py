"""Tool input schemas: the N8 checks at load (SEC6), and bounded input validation (SEC7).

The platform compiles each `inputSchema` (JSON Schema 2020-12) when a gem is packaged and
rejects `pattern`, `patternProperties` and `uniqueItems` anywhere in it, because checking them
can hang the app. "Anywhere" means every subschema validation can reach: through applicator
keywords and through `$ref`/`$dynamicRef`, which may point at any JSON pointer of the schema
(`#/$defs/x`, `#/properties`, `#/x-anything/…`). References resolve only inside the schema:
nothing is fetched (no http, file or urn), and the metaschemas bundled with jsonschema are not
reachable either. At call time a `null` for an optional top-level parameter counts as absent,
and checking one input is bounded in depth, steps and time, and lists a bounded number of
violations.
"""

from __future__ import annotations

import reprlib
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator
from urllib.parse import quote

from .._errors import WorkbenchError

if TYPE_CHECKING:
    from referencing._core import Resolver

UNSUPPORTED_KEYWORDS = ("pattern", "patternProperties", "uniqueItems")
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

# Bounds of the workbench's own (candidates for ctx/limits.py): far above what a real schema or
# input needs, low enough that a hostile one costs seconds, not minutes or gigabytes.
MAX_SCHEMA_STATES = 200_000     # (subschema, base URI) pairs the load check visits
MAX_VIOLATIONS = 5_000          # violations listed in error.details["violations"]
MAX_LISTED_IN_MESSAGE = 50      # of which the error message quotes the first
MAX_MESSAGE_CHARS = 300         # one violation's message (jsonschema's quote whole values)
CHECK_STEPS = 50_000            # keyword applications per input (~20 µs each), plus…
CHECK_STEPS_PER_VALUE = 64      # …this many per value in the input: linear in its size
CHECK_SECONDS = 10.0            # and wall clock, whichever comes first

# Keywords whose value is a schema, a list of schemas, or a map of name -> schema. Deliberately
# wider than 2020-12 (older drafts' `dependencies`, `additionalItems`, `definitions`): the walk
# must cover at least every place jsonschema applies a schema.
_SCHEMA_VALUED = ("additionalProperties", "items", "contains", "not", "if", "then", "else",
                  "propertyNames", "unevaluatedItems", "unevaluatedProperties",
                  "additionalItems")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas",
                "dependencies")
# Applied to the same instance: a cycle through only these (and refs) never ends.
_IN_PLACE = frozenset(("allOf", "anyOf", "oneOf", "not", "if", "then", "else",
                       "dependentSchemas", "dependencies", "$ref", "$dynamicRef"))

_short = reprlib.Repr()
_short.maxstring = _short.maxother = 60
_short.maxlevel = 2


def _raw_pointer(parts: Any) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def pointer(parts: Any) -> str:
    """JSON pointer (RFC 6901) for a sequence of keys and indexes; lone surrogates escaped."""
    text = _raw_pointer(parts)
    # a lone surrogate (JSON "\ud800") cannot be printed or written as UTF-8: show it escaped
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


def _clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    text = text if len(text) <= limit else text[:limit - 1] + "…"
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


# -- the load check ------------------------------------------------------------------------

class _Doc:
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
            if isinstance(dialect, str) and (node is not doc
                                             or dialect.rstrip("#") != DRAFT_2020_12):
                # jsonschema switches to another class (keyword set) wherever `$schema` sits
                self.problems.append((id(node), ("$schema",), "only JSON Schema 2020-12 is "
                                      "supported, declared at most once, at the root of "
                                      f"inputSchema (found {_short.repr(dialect)})"))
            if node is not doc and any(isinstance(node.get(k), str)
                                       for k in ("$id", "$anchor", "$dynamicAnchor")):
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


class _TooComplex(Exception):
    pass


@dataclass
class _Walk:
    """Every subschema validation can reach, once per base URI, with the in-place edges."""

    doc: _Doc
    states: dict[tuple[int, str], int] = field(default_factory=dict)
    nodes: list[tuple[dict[str, Any], Any]] = field(default_factory=list)  # (schema, resolver)
    edges: list[list[tuple[int, tuple]]] = field(default_factory=list)  # (to, via: relative)
    pending: list[int] = field(default_factory=list)

    def add(self, schema: Any, resolver: "Resolver[Any]") -> int | None:
        """The state of `schema` validated with `resolver` (queued when new); None: a
        boolean schema, nothing to check or follow."""
        if not isinstance(schema, dict):
            return None
        # the base URI decides where the schema's relative refs lead
        key = (id(schema), str(getattr(resolver, "_base_uri", "")))
        if key not in self.states:
            if len(self.nodes) >= MAX_SCHEMA_STATES:
                raise _TooComplex
            self.states[key] = len(self.nodes)
            self.nodes.append((schema, resolver))
            self.edges.append([])
            self.pending.append(self.states[key])
        return self.states[key]

    def bad(self, schema: Any, rel: tuple, message: str) -> None:
        self.doc.problems.append((id(schema), rel, message))

    def follow(self, at: dict[str, Any], kw: str, resolver: "Resolver[Any]",
               ref: str) -> int | None:
        """The state `at[kw]` = `ref` leads to, or None after recording why it may not be
        followed (as jsonschema would: resolver.lookup, the target validated with the
        resolver it comes with)."""
        from referencing.exceptions import Unresolvable

        try:
            resolved = resolver.lookup(ref)
        except Unresolvable:
            self.bad(at, (kw,), f"$ref {_short.repr(ref)} " + (
                "points to nothing in the schema" if ref.startswith("#") else
                "does not resolve inside the schema (remote, file: and urn: references are not "
                "fetched)"))
            return None
        except Exception as exc:  # a malformed URI or pointer: urljoin, int("x"), str[...]
            self.bad(at, (kw,), f"$ref {_short.repr(ref)} cannot be resolved: "
                                f"{type(exc).__name__}: {_clip(str(exc), 120)}")
            return None
        target = resolved.contents
        if isinstance(target, bool):
            return None
        if not isinstance(target, dict):
            self.bad(at, (kw,), f"$ref {_short.repr(ref)} points at a "
                                f"{type(target).__name__}, not a schema")
            return None
        if id(target) not in self.doc.up:  # e.g. a metaschema bundled with jsonschema
            self.bad(at, (kw,), f"$ref {_short.repr(ref)} points outside this schema; "
                                "references resolve only inside it")
            return None
        return self.add(target, resolved.resolver)


def _walk(schema: dict[str, Any], doc: _Doc) -> _Walk:
    """Visit every subschema validation can reach (applicators and refs), each once per base
    URI, iteratively; record forbidden keywords, unresolvable refs and in-place edges."""
    from referencing import Registry
    from referencing.jsonschema import DRAFT202012
    from jsonschema.validators import SPECIFICATIONS

    # the registry the validator will use: the bundled metaschemas, nothing retrievable
    root = SPECIFICATIONS.combine(Registry()).resolver_with_root(
        DRAFT202012.create_resource(schema))
    walk = _Walk(doc)
    walk.add(schema, root)
    # Whatever a $dynamicRef may land on (its dynamic scope is known only while validating)
    # and whatever $id/$anchor names is checked as a schema too, located from the root.
    for target in doc.targets:
        try:
            ref = "#" + quote(_raw_pointer(doc.path(id(target))), safe="/~")
        except UnicodeEncodeError:  # a lone surrogate in a key: the manifest check says so
            continue
        walk.follow(target, next(k for k in ("$id", "$anchor", "$dynamicAnchor")
                                 if isinstance(target.get(k), str)), root, ref)
    anchors: dict[str, list[int]] = {}
    while walk.pending:
        i = walk.pending.pop()
        sub, resolver = walk.nodes[i]
        for kw in UNSUPPORTED_KEYWORDS:
            if kw in sub:
                walk.bad(sub, (kw,), f"'{kw}' is not supported by the platform (checking it "
                                     "can hang the app); check it in the tool's code instead")
        if isinstance(sub.get("$dynamicAnchor"), str):
            anchors.setdefault(sub["$dynamicAnchor"], []).append(i)
        for rel, child, in_place in _children(sub):
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


def _in_place_cycle(walk: _Walk) -> tuple | None:
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


def check_input_schema(schema: Any) -> list[tuple[str, str]]:
    """Problems that make an inputSchema unusable, as (pointer relative to it, message).

    SEC6: N8's keywords are looked for in every subschema a `$ref` can reach, refs must
    resolve inside the schema, and cycles that never consume the input are rejected. The
    caller bounds the schema's size and depth (the manifest's bounds)."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, dict):
        return [("", "inputSchema must be an object")]
    doc = _Doc(schema)
    try:
        walk = _walk(schema, doc)
    except _TooComplex:
        return [("", f"schema too complex to check: over {MAX_SCHEMA_STATES:,} subschemas "
                     "reachable through $ref")]
    problems = [(doc.path(node, rel), msg) for node, rel, msg in doc.problems]
    if not problems:
        cycle = _in_place_cycle(walk)
        if cycle is not None:
            problems.append((cycle, "$ref cycle that never reaches a property or item: "
                                    "validating any input against it would never end"))
    if problems:  # the metaschema check would compile the forbidden regexes: not needed now
        return sorted({(pointer(p), m) for p, m in problems})
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return [(pointer(exc.absolute_path), f"schema does not compile: {_clip(exc.message)}")]
    except RecursionError:
        return [("", "schema nested too deeply to check")]
    return []


# -- bounded validation --------------------------------------------------------------------

class _Exhausted(Exception):
    """Raised inside jsonschema when one input's check used up its steps or time."""


class _Budget:
    def __init__(self, steps: int, seconds: float) -> None:
        self.steps = 0
        self.max_steps = steps
        self.deadline = time.monotonic() + seconds
        self.seconds = seconds
        self.why = ""

    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.max_steps:
            self.why = f"{self.max_steps:,} steps"
            raise _Exhausted
        if not self.steps & 63 and time.monotonic() > self.deadline:
            self.why = f"{self.seconds:g} s"
            raise _Exhausted

    def take(self, n: int) -> None:
        """`n` steps at once (work done in bulk, e.g. once per field of the input)."""
        self.steps += n
        if self.steps > self.max_steps:
            self.why = f"{self.max_steps:,} steps"
            raise _Exhausted
        if time.monotonic() > self.deadline:
            self.why = f"{self.seconds:g} s"
            raise _Exhausted


_local = threading.local()  # the budget of the check running on this thread


def _counted(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A keyword function that first takes one step from the current budget."""
    def keyword(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        budget = getattr(_local, "budget", None)
        if budget is not None:
            budget.tick()
        return fn(validator, value, instance, schema)
    return keyword


def _take(n: int = 1) -> None:
    budget = getattr(_local, "budget", None)
    if budget is not None:
        if n == 1:
            budget.tick()
        else:
            budget.take(n)


# unevaluatedProperties/unevaluatedItems: jsonschema's helpers (find_evaluated_*_by_schema)
# follow $ref, $dynamicRef, dependentSchemas, allOf/anyOf/oneOf and if/then/else by plain
# recursion, not through a keyword, so no step of the budget was taken there: a chain of
# `{"$ref": next, "$dynamicRef": next}` (or dependentSchemas to `next` twice) doubles the work
# per level, unbounded (42 s at depth 20). These are the same walks, with the same results,
# taking one step per subschema visited and one per field or item looked at; the evaluated
# names are kept in sets (jsonschema's lists make `not in` quadratic in the input's size).

def _through_applicators(walk: Callable[[Any, Any, Any], set[Any]], validator: Any,
                         instance: Any, schema: dict[str, Any]) -> set[Any]:
    """What `walk` (either walk below) finds through the keywords both share: $ref and
    $dynamicRef (both looked up statically, as jsonschema does here), allOf/oneOf/anyOf
    subschemas the instance passes, and if/then/else."""
    found: set[Any] = set()
    for kw in ("$ref", "$dynamicRef"):
        ref = schema.get(kw)
        if ref is not None:
            resolved = validator._resolver.lookup(ref)
            found |= walk(validator.evolve(schema=resolved.contents, _resolver=resolved.resolver),
                          instance, resolved.contents)
    for kw in ("allOf", "oneOf", "anyOf"):
        for sub in schema.get(kw, ()):
            if next(iter(validator.descend(instance, sub)), None) is None:
                found |= walk(validator, instance, sub)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            found |= walk(validator, instance, schema["if"])
            if "then" in schema:
                found |= walk(validator, instance, schema["then"])
        elif "else" in schema:
            found |= walk(validator, instance, schema["else"])
    return found


def _evaluated_keys(validator: Any, instance: Any, schema: Any) -> set[Any]:
    _take()
    if validator.is_type(schema, "boolean") or not isinstance(schema, dict):
        return set()
    keys: set[Any] = set()
    properties = schema.get("properties")
    if isinstance(properties, dict):
        _take(1 + min(len(properties), len(instance)))
        keys |= properties.keys() & instance.keys()
    for kw in ("additionalProperties", "unevaluatedProperties"):
        sub = schema.get(kw)
        if sub is None:
            continue
        for key, value in instance.items():
            _take()
            if next(iter(validator.descend(value, sub)), None) is None:
                keys.add(key)
    # patternProperties: rejected at load, and never run here (a gem's regex)
    dependent = schema.get("dependentSchemas")
    if isinstance(dependent, dict):
        for name, sub in dependent.items():
            _take()
            if name in instance:
                keys |= _evaluated_keys(validator, instance, sub)
    return keys | _through_applicators(_evaluated_keys, validator, instance, schema)


def _evaluated_indexes(validator: Any, instance: Any, schema: Any) -> set[int]:
    _take()
    if validator.is_type(schema, "boolean") or not isinstance(schema, dict):
        return set()
    if "items" in schema:
        _take(1 + len(instance))
        return set(range(len(instance)))
    indexes: set[int] = set()
    if "prefixItems" in schema:
        _take(1 + min(len(schema["prefixItems"]), len(instance)))
        indexes |= set(range(min(len(schema["prefixItems"]), len(instance))))
    for kw in ("contains", "unevaluatedItems"):
        if kw in schema:
            checker = validator.evolve(schema=schema[kw])
            for k, v in enumerate(instance):
                _take()
                if checker.is_valid(v):
                    indexes.add(k)
    return indexes | _through_applicators(_evaluated_indexes, validator, instance, schema)


def _unevaluated_items(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "array"):
        return
    evaluated = _evaluated_indexes(validator, instance, schema)
    extra = [i for i in range(len(instance)) if i not in evaluated]
    if extra:
        listed = ", ".join(_short.repr(instance[i]) for i in extra[:5])
        more = f" and {len(extra) - 5:,} more" if len(extra) > 5 else ""
        yield ValidationError(f"Unevaluated items are not allowed ({listed}{more} "
                              f"{'was' if len(extra) == 1 else 'were'} unexpected)")


def _unevaluated_properties(validator: Any, value: Any, instance: Any,
                            schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    bad = []
    for name in instance:
        _take()
        if name not in evaluated and next(iter(validator.descend(
                instance[name], value, path=name, schema_path=name)), None) is not None:
            bad.append(name)
    if bad:
        if value is False:
            bad.sort(key=str)
        listed = ", ".join(_short.repr(n) for n in bad[:5])
        more = f" and {len(bad) - 5:,} more" if len(bad) > 5 else ""
        verb = "was" if len(bad) == 1 else "were"
        yield ValidationError(
            f"Unevaluated properties are not allowed ({listed}{more} {verb} unexpected)"
            if value is False else
            f"Unevaluated properties are not valid under the given schema ({listed}{more} "
            f"{verb} unevaluated and invalid)")


def _unsupported(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
    # Never reached for a loaded gem (rejected at load); if it is, do not run the regex.
    from jsonschema.exceptions import ValidationError

    yield ValidationError("this keyword is not supported by the platform and is not checked")


def _required(validator: Any, required: Any, instance: Any, schema: Any) -> Iterator[Any]:
    # jsonschema's, keeping which field is missing (its message is the only trace of it)
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    for name in required:
        if name not in instance:
            err = ValidationError(f"missing required field '{name}'")
            err.missing = name  # read back by _violations_of
            yield err


def _any_of(validator: Any, any_of: Any, instance: Any, schema: Any) -> Iterator[Any]:
    # jsonschema's keeps every branch's errors (each quoting its subtree): O(size × depth)
    # memory for nested anyOf; one error with a short quote is enough here.
    from jsonschema.exceptions import ValidationError

    for index, sub in enumerate(any_of):
        if next(iter(validator.descend(instance, sub, schema_path=index)), None) is None:
            return
    yield ValidationError(f"{_short.repr(instance)} is not valid under any of the given schemas")


def _one_of(validator: Any, one_of: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    valid = [i for i, sub in enumerate(one_of)
             if next(iter(validator.descend(instance, sub, schema_path=i)), None) is None]
    if not valid:
        yield ValidationError(f"{_short.repr(instance)} is not valid under any of the given "
                              "schemas")
    elif len(valid) > 1:
        which = ", ".join(map(str, valid[:5])) + ("…" if len(valid) > 5 else "")
        yield ValidationError(f"{_short.repr(instance)} is valid under more than one of the "
                              f"given schemas (oneOf: {which})")


_validator_class: Any = None


def _bounded_validator_class() -> Any:
    """Draft 2020-12 whose every keyword counts against the check's budget, with N8's
    keywords inert, anyOf/oneOf/required reporting without keeping whole subtrees, and
    unevaluatedProperties/unevaluatedItems taking steps for the subschemas they walk."""
    global _validator_class
    if _validator_class is None:
        from jsonschema import Draft202012Validator, validators

        table = dict(Draft202012Validator.VALIDATORS)
        table.update({kw: _unsupported for kw in UNSUPPORTED_KEYWORDS},
                     anyOf=_any_of, oneOf=_one_of, required=_required,
                     unevaluatedProperties=_unevaluated_properties,
                     unevaluatedItems=_unevaluated_items)
        _validator_class = validators.extend(
            Draft202012Validator, {k: _counted(fn) for k, fn in table.items()})
    return _validator_class


@dataclass
class Check:
    """One input's check: the first violations, how many there are (or at least), and
    whether the check stopped early on its budget."""

    violations: list[dict[str, str]]
    total: int
    complete: bool
    stopped: str = ""  # why it stopped early ("" when it ran to the end)


class InputValidator:
    """Validates call arguments against one tool's compiled inputSchema, within bounds."""

    def __init__(self, schema: dict[str, Any]) -> None:
        from referencing import Registry

        self.schema = schema
        # The root's `$schema` would make jsonschema swap in the stock validator class
        # (validator_for), dropping the bounds; the load check allows it only at the root.
        root = {k: v for k, v in schema.items() if k != "$schema"}
        # An empty registry: no retrieval of http/file refs (jsonschema's deprecated default)
        self._validator = _bounded_validator_class()(root, registry=Registry())
        required = schema.get("required", ())
        self._required = set(required) if isinstance(required, list) else set()

    def normalise(self, args: Any) -> Any:
        """Drop top-level `null`s for optional parameters: the platform treats them as absent."""
        if isinstance(args, dict):
            return {k: v for k, v in args.items() if not (v is None and k not in self._required)}
        return args

    def check(self, args: Any, *, size: int = 1) -> Check:
        """Validate `args` (of `size` JSON values) within steps linear in `size` and
        CHECK_SECONDS; list at most MAX_VIOLATIONS violations, count the rest best-effort."""
        budget = _Budget(CHECK_STEPS + CHECK_STEPS_PER_VALUE * size, CHECK_SECONDS)
        out: list[dict[str, str]] = []
        seen: set[tuple[str, str]] = set()
        total, stopped = 0, ""
        outer, _local.budget = getattr(_local, "budget", None), budget
        try:
            for e in self._validator.iter_errors(args):
                listed, count = _violations_of(e, MAX_VIOLATIONS - len(out))
                total += count
                for v in listed:
                    key = (v["path"], v["message"])
                    if key in seen:  # e.g. one field required by two allOf branches
                        total -= 1
                        continue
                    seen.add(key)
                    out.append(v)
        except _Exhausted:
            stopped = (f"checking the input against inputSchema was stopped after {budget.why} "
                       "(the schema, e.g. its $ref recursion, costs too much on this input)")
        except RecursionError:
            stopped = "the input is nested too deeply for this schema's recursion to be checked"
        except Exception as exc:  # noqa: BLE001 — e.g. OverflowError in multipleOf: a coded error
            stopped = (f"the input could not be checked against inputSchema: "
                       f"{type(exc).__name__}: {_clip(str(exc), 200)}")
        finally:
            _local.budget = outer
        out.sort(key=lambda v: v["path"])
        return Check(out, total, complete=not stopped, stopped=stopped)

    def violations(self, args: Any) -> list[dict[str, str]]:
        """The first violations as {path, message}, path a JSON pointer into the input
        ('' = root); a check stopped early is one more violation at '/' saying why."""
        result = self.check(args, size=_size(args))
        if result.stopped:
            return [*result.violations, {"path": "/", "message": result.stopped}]
        return result.violations


def _violations_of(e: Any, room: int) -> tuple[list[dict[str, str]], int]:
    """At most `room` violations as {path, message} from one jsonschema error, and how many
    it holds (additionalProperties: false reports every unexpected field in one error)."""
    base = pointer(e.absolute_path)
    if e.validator == "required" and hasattr(e, "missing"):
        out = [{"path": f"{base}/{pointer([e.missing])[1:]}", "message": _clip(e.message)}]
        return out[:room], 1
    if e.validator == "additionalProperties" and e.validator_value is False:
        props = e.schema.get("properties", {})
        extra = sorted(k for k in e.instance if k not in props)
        return [{"path": f"{base}/{pointer([name])[1:]}",
                 "message": _clip(f"unexpected field '{name}' (additionalProperties is false)")}
                for name in extra[:room]], len(extra)
    return [{"path": base or "/", "message": _clip(e.message)}][:room], 1


def _size(value: Any) -> int:
    """How many JSON values `value` holds (iteratively; shared nodes counted each time)."""
    n, stack = 0, [value]
    while stack:
        v = stack.pop()
        n += 1
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return n


# -- the whole input check of one call -------------------------------------------------------

def scan_input(value: Any, max_depth: int) -> tuple[int, dict[str, Any] | None]:
    """(number of values, first problem as {path, message[, limit]}) of a tool input, found
    iteratively: nesting deeper than `max_depth`, or a container that contains itself.

    Lone surrogates ("\\ud800") are not a problem: the platform's JSON carries them as escapes
    into JS strings, so they reach the tool (ctx decides what a file name or a file's text
    may hold); messages and pointers that quote them escape them."""
    exit_mark = object()
    on_path: set[int] = set()
    parents: list[tuple[int, Any]] = []  # container -> (its parent container, its key there)
    # (value, depth, parent container, key); (exit_mark, id, …) leaves a container
    stack: list[tuple[Any, int, int, Any]] = [(value, 0, -1, None)]
    count = 0

    def path_of(parent: int, key: Any) -> str:
        parts = [] if parent < 0 else [key]
        while parent >= 0:
            parent, k = parents[parent]
            if parent >= 0:
                parts.append(k)
        return pointer(reversed(parts)) or "/"

    while stack:
        v, depth, parent, key = stack.pop()
        if v is exit_mark:
            on_path.discard(depth)
            continue
        count += 1
        if not isinstance(v, (dict, list, tuple)):
            continue
        if depth + 1 > max_depth:
            return count, {"path": path_of(parent, key), "limit": max_depth,
                           "message": f"is nested deeper than {max_depth} levels "
                                      "(limits.json_depth)"}
        if id(v) in on_path:
            return count, {"path": path_of(parent, key), "message": "contains itself (a cycle)"}
        on_path.add(id(v))
        parents.append((parent, key))
        me = len(parents) - 1
        stack.append((exit_mark, id(v), -1, None))
        if isinstance(v, dict):
            stack.extend((item, depth + 1, me, k) for k, item in v.items())
        else:
            stack.extend((item, depth + 1, me, i) for i, item in enumerate(v))
    return count, None


def check_input(validator: InputValidator, args: Any, *, tool: str,
                max_depth: int) -> tuple[Any, WorkbenchError | None]:
    """The input as the tool receives it (a JSON copy, top-level nulls dropped), or E_SCHEMA
    naming the field: never an exception for any value (N8, SEC7)."""
    import json

    from .._json import why_not_json

    size, problem = scan_input(args, max_depth)
    if problem is not None:
        return None, WorkbenchError(
            "E_SCHEMA", f"input for '{tool}' {problem['message']}: {_clip(problem['path'], 120)}",
            field=problem["path"], violations=[{k: problem[k] for k in ("path", "message")}],
            **({"limit": problem["limit"]} if "limit" in problem else {}))
    try:  # a JSON round trip: what the platform's caller can send, and a copy the tool owns
        args = json.loads(json.dumps(args, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        why = why_not_json(args, "input") or "it cannot be serialised"
        return None, WorkbenchError("E_SCHEMA", f"input for '{tool}' is not JSON: {why}",
                                    violations=[{"path": "/", "message": why}])
    args = validator.normalise(args)
    result = validator.check(args, size=size)
    problems = list(result.violations)
    if result.stopped:
        problems.append({"path": "/", "message": result.stopped})
    if not problems:
        return args, None
    if not result.violations:  # stopped before finding any: say so, not "1 problem"
        return None, WorkbenchError("E_SCHEMA", f"input for '{tool}': {result.stopped}",
                                    field="/", violations=problems, complete=False)
    count = result.total + (1 if result.stopped else 0)
    at_least = "" if result.complete else "at least "
    shown = problems[:MAX_LISTED_IN_MESSAGE]
    listed = "; ".join(f"{p['path']}: {p['message']}" for p in shown)
    if count > len(shown):
        listed += (f"; and {at_least}{count - len(shown):,} more ({len(problems):,} listed in "
                   "error.details['violations'])")
    return None, WorkbenchError(
        "E_SCHEMA", f"input for '{tool}' does not match its inputSchema ({at_least}{count:,} "
        f"problem{'s' if count != 1 else ''}): {listed}",
        field=problems[0]["path"], violations=problems,
        **({} if result.complete else {"complete": False}))
