"""Tool input schemas: the N8 checks at load (SEC6), and bounded input validation (SEC7).

The platform compiles each `inputSchema` (JSON Schema 2020-12) when a gem is packaged and
rejects `pattern`, `patternProperties` and `uniqueItems` anywhere in it, because checking them
can hang the app. "Anywhere" means every subschema validation can reach: through applicator
keywords and through `$ref`/`$dynamicRef`, which may point at any JSON pointer of the schema
(`#/$defs/x`, `#/properties`, `#/x-anything/…`). References resolve only inside the schema:
nothing is fetched (no http, file or urn), and the metaschemas bundled with jsonschema are not
reachable either. At call time a `null` for a declared, optional top-level parameter counts as
absent (never for an undeclared or a required one), and checking one input is bounded in
depth, steps and time, and lists a bounded number of violations.

Here: the public entry points. The load check's walk is in schema_walk.py, the budget and
bounded keywords of validation in schema_budget.py, quoting in schema_text.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .._errors import WorkbenchError
from .._json import flat_chars, why_not_json
from .near import meant
from .rules import NOTOCHORD, SchemaRules
from .schema_budget import Budget, Exhausted, bounded_validator_class, current
from .schema_quick import quick_check
from .schema_text import clip, json_message, json_value, linked_pointer, pointer
from .schema_walk import MAX_SCHEMA_STATES, Doc, TooComplex, in_place_cycle, optional_fields, walk_schema

# Bounds of the workbench's own (candidates for ctx/limits.py): far above what a real schema or
# input needs, low enough that a hostile one costs seconds, not minutes or gigabytes.
MAX_VIOLATIONS = 5_000  # violations listed in error.details["violations"]
MAX_LISTED_IN_MESSAGE = 50  # of which the error message quotes the first
CHECK_STEPS = 50_000  # keyword applications per input (~20 µs each), plus…
CHECK_STEPS_PER_VALUE = 64  # …this many per value in the input: linear in its size
CHECK_SECONDS = 10.0  # and wall clock, whichever comes first


# -- the load check ------------------------------------------------------------------------


def check_input_schema(schema: Any, rules: SchemaRules = NOTOCHORD) -> list[tuple[str, str]]:
    """Problems that make an inputSchema unusable, as (pointer relative to it, message).

    SEC6: the platform's unsupported keywords (`rules`, N8) are looked for in every subschema
    a `$ref` can reach, refs must resolve inside the schema, and cycles that never consume
    the input are rejected. The caller bounds the schema's size and depth (the manifest's
    bounds)."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if isinstance(schema, bool) and rules.boolean_root:
        return []  # a JSON Schema: true accepts any input, false none
    if not isinstance(schema, dict):
        where = "a JSON Schema object" if rules.boolean_root else 'an object schema ({"type": "object", …})'
        return [("", f"the schema must be {where}, not {json_value(schema)}")]
    if rules.root_keys is not None:
        extra = sorted(k for k in schema if k not in rules.root_keys)
        if extra:
            return [
                (
                    f"/{extra[0]}",
                    f"the platform allows only {', '.join(rules.root_keys)} "
                    f"at the schema's root, not {clip(repr(extra[0]), 80)}",
                )
            ]
    doc = Doc(schema)
    try:
        walk = walk_schema(schema, doc, rules.unsupported_keywords)
    except TooComplex:
        return [
            ("", f"schema too complex to check: over {MAX_SCHEMA_STATES:,} subschemas reachable through $ref")
        ]
    if rules.re2_patterns:
        _check_patterns(walk, doc)
    problems = [(doc.path(node, rel), msg) for node, rel, msg in doc.problems]
    if not problems:
        cycle = in_place_cycle(walk)
        if cycle is not None:
            problems.append(
                (
                    cycle,
                    "$ref cycle that never reaches a property or item: "
                    "validating any input against it would never end",
                )
            )
    if problems:  # the metaschema check would compile the forbidden regexes: not needed now
        return sorted({(pointer(p), m) for p, m in problems})
    try:
        Draft202012Validator.check_schema(schema, format_checker=_metaschema_formats())
    except SchemaError as exc:
        return [(pointer(exc.absolute_path), f"schema does not compile: {json_message(exc)}")]
    except RecursionError:
        return [("", "schema nested too deeply to check")]
    return []


def _check_patterns(walk: Any, doc: Doc) -> None:
    """Every `pattern` a $ref can reach is one JavaScript accepts (the `u` flag) and RE2 can
    check in linear time, which it does at call time (ecma_pattern)."""
    from .ecma_pattern import PatternError, compile_pattern

    for sub, _ in walk.nodes:
        pattern = sub.get("pattern") if isinstance(sub, dict) else None
        if pattern is None:
            continue
        if not isinstance(pattern, str):
            walk.bad(sub, ("pattern",), "'pattern' must be a string (a regular expression)")
            continue
        try:
            compile_pattern(pattern)
        except PatternError as exc:
            walk.bad(sub, ("pattern",), f"pattern {clip(repr(pattern), 80)} cannot be used: {exc}")


def _metaschema_formats() -> Any:
    """The metaschema's format checks, with `regex` read as ECMAScript (the metaschema marks
    `pattern` with it; jsonschema's own asks Python's `re`, which refuses `\\p{Letter}`): a
    pattern _check_patterns accepted is one JavaScript accepts."""
    from jsonschema import Draft202012Validator, FormatChecker

    from .ecma_pattern import PatternError, compile_pattern

    checker = FormatChecker(f for f in Draft202012Validator.FORMAT_CHECKER.checkers if f != "regex")

    @checker.checks("regex", raises=PatternError)
    def _regex(instance: object) -> bool:
        if isinstance(instance, str):
            compile_pattern(instance)
        return True

    return checker


# -- bounded validation --------------------------------------------------------------------


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

    def __init__(self, schema: dict[str, Any], rules: SchemaRules = NOTOCHORD) -> None:
        from referencing import Registry

        self.schema, self.rules = schema, rules
        # The root's `$schema` would make jsonschema swap in the stock validator class
        # (validator_for), dropping the bounds; the load check allows it only at the root.
        root = {k: v for k, v in schema.items() if k != "$schema"}
        # An empty registry: no retrieval of http/file refs (jsonschema's deprecated default)
        self._validator = bounded_validator_class()(root, registry=Registry())
        self._quick = quick_check(root)  # a sure "valid" for the common shape, without jsonschema
        self._optional = optional_fields(root) if rules.null_is_absent else frozenset()

    def normalise(self, args: Any) -> Any:
        """Drop top-level `null`s for declared, optional parameters where the platform treats
        them as absent (SchemaRules.null_is_absent, N8); a `null` for an undeclared or a
        required field stays, for the check to report."""
        if self._optional and isinstance(args, dict):
            return {k: v for k, v in args.items() if not (v is None and k in self._optional)}
        return args

    def sure_valid(self, args: Any) -> bool:
        """Whether `args` is valid for certain without jsonschema (schema_quick.py); False
        says nothing: `check` tells."""
        return self._quick is not None and self._quick(args)

    def check(self, args: Any, *, size: int = 1) -> Check:
        """Validate `args` (of `size` JSON values) within steps linear in `size` and
        CHECK_SECONDS; list at most MAX_VIOLATIONS violations, count the rest best-effort."""
        if self.sure_valid(args):
            return Check([], 0, complete=True)
        budget = Budget(CHECK_STEPS + CHECK_STEPS_PER_VALUE * size, CHECK_SECONDS)
        out: list[dict[str, str]] = []
        seen: set[tuple[str, str]] = set()
        total, stopped = 0, ""
        outer, current.budget = getattr(current, "budget", None), budget
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
        except Exhausted:
            stopped = (
                f"checking the input against {self.rules.schema_key} was stopped after {budget.why} "
                "(the schema, e.g. its $ref recursion, costs too much on this input)"
            )
        except RecursionError:
            stopped = "the input is nested too deeply for this schema's recursion to be checked"
        except Exception as exc:  # noqa: BLE001 — e.g. OverflowError in multipleOf: a coded error
            stopped = (
                f"the input could not be checked against {self.rules.schema_key}: "
                f"{type(exc).__name__}: {clip(str(exc), 200)}"
            )
        finally:
            current.budget = outer
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
        out = [{"path": f"{base}/{pointer([e.missing])[1:]}", "message": clip(e.message)}]
        return out[:room], 1
    if e.validator == "additionalProperties" and e.validator_value is False:
        props = e.schema.get("properties", {})
        extra = sorted(k for k in e.instance if k not in props)
        absent = [k for k in props if isinstance(k, str) and k not in e.instance]  # what a typo meant
        return [
            {
                "path": f"{base}/{pointer([name])[1:]}",
                "message": clip(
                    f"unexpected field '{name}' (additionalProperties is false{meant(name, absent, lead=': ')})"
                ),
            }
            for name in extra[:room]
        ], len(extra)
    # a false schema's own message spells the value as Python does ("False schema does not allow
    # True"); the rest are jsonschema's as they are
    message = json_message(e) if e.validator in (None, "not") else clip(e.message)
    return [{"path": base or "/", "message": message}][:room], 1


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
        return linked_pointer(parents, parent, key) or "/"

    while stack:
        v, depth, parent, key = stack.pop()
        if v is exit_mark:
            on_path.discard(depth)
            continue
        count += 1
        if not isinstance(v, (dict, list, tuple)):
            continue
        if depth + 1 > max_depth:
            return count, {
                "path": path_of(parent, key),
                "limit": max_depth,
                "message": f"is nested deeper than {max_depth} levels (limits.json_depth)",
            }
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


def check_input(
    validator: InputValidator, args: Any, *, tool: str, max_depth: int
) -> tuple[Any, WorkbenchError | None]:
    """The input as the tool receives it (a JSON copy, top-level nulls dropped), or E_SCHEMA
    naming the field: never an exception for any value (N8, SEC7)."""
    if max_depth >= 1 and flat_chars(args) >= 0:  # flat: nothing nests or cycles; a copy is its round trip
        copy = validator.normalise(args)
        if copy is args:
            copy = dict(args) if type(args) is dict else list(args)
        if validator.sure_valid(copy):
            return copy, None
        return _validated(validator, copy, 1 + len(args), tool)
    size, problem = scan_input(args, max_depth)
    if problem is not None:
        return None, WorkbenchError(
            "E_SCHEMA",
            f"input for '{tool}' {problem['message']}: {clip(problem['path'], 120)}",
            field=problem["path"],
            violations=[{k: problem[k] for k in ("path", "message")}],
            **({"limit": problem["limit"]} if "limit" in problem else {}),
        )
    try:  # a JSON round trip: what the platform's caller can send, and a copy the tool owns
        args = json.loads(json.dumps(args, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        why = why_not_json(args, "input") or "it cannot be serialised"
        return None, WorkbenchError(
            "E_SCHEMA", f"input for '{tool}' is not JSON: {why}", violations=[{"path": "/", "message": why}]
        )
    return _validated(validator, validator.normalise(args), size, tool)


def _validated(
    validator: InputValidator, args: Any, size: int, tool: str
) -> tuple[Any, WorkbenchError | None]:
    """`args` (the tool's copy, of `size` values) checked against the inputSchema (N8)."""
    result = validator.check(args, size=size)
    problems = list(result.violations)
    if result.stopped:
        problems.append({"path": "/", "message": result.stopped})
    if not problems:
        return args, None
    if not result.violations:  # stopped before finding any: say so, not "1 problem"
        return None, WorkbenchError(
            "E_SCHEMA",
            f"input for '{tool}': {result.stopped}",
            field="/",
            violations=problems,
            complete=False,
        )
    count = result.total + (1 if result.stopped else 0)
    at_least = "" if result.complete else "at least "
    shown = problems[:MAX_LISTED_IN_MESSAGE]
    listed = "; ".join(f"{p['path']}: {p['message']}" for p in shown)
    if count > len(shown):
        listed += (
            f"; and {at_least}{count - len(shown):,} more ({len(problems):,} listed in "
            "error.details['violations'])"
        )
    return None, WorkbenchError(
        "E_SCHEMA",
        f"input for '{tool}' does not match its {validator.rules.schema_key} ({at_least}{count:,} "
        f"problem{'s' if count != 1 else ''}): {listed}",
        field=problems[0]["path"],
        violations=problems,
        **({} if result.complete else {"complete": False}),
    )
