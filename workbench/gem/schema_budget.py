"""Bounded validation of one input (SEC7): a budget of steps and time, and the jsonschema
keywords replaced so that every one of them, and every subschema the unevaluated* keywords
walk, counts against it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from .schema_text import short
from .schema_walk import UNSUPPORTED_KEYWORDS


class Exhausted(Exception):
    """Raised inside jsonschema when one input's check used up its steps or time."""


class Budget:
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
            raise Exhausted
        if not self.steps & 63 and time.monotonic() > self.deadline:
            self.why = f"{self.seconds:g} s"
            raise Exhausted

    def take(self, n: int) -> None:
        """`n` steps at once (work done in bulk, e.g. once per field of the input)."""
        self.steps += n
        if self.steps > self.max_steps:
            self.why = f"{self.max_steps:,} steps"
            raise Exhausted
        if time.monotonic() > self.deadline:
            self.why = f"{self.seconds:g} s"
            raise Exhausted


current = threading.local()  # the budget of the check running on this thread


def _counted(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A keyword function that first takes one step from the current budget."""

    def keyword(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        budget = getattr(current, "budget", None)
        if budget is not None:
            budget.tick()
        return fn(validator, value, instance, schema)

    return keyword


def _take(n: int = 1) -> None:
    budget = getattr(current, "budget", None)
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


def _through_applicators(
    walk: Callable[[Any, Any, Any], set[Any]], validator: Any, instance: Any, schema: dict[str, Any]
) -> set[Any]:
    """What `walk` (either walk below) finds through the keywords both share: $ref and
    $dynamicRef (both looked up statically, as jsonschema does here), allOf/oneOf/anyOf
    subschemas the instance passes, and if/then/else."""
    found: set[Any] = set()
    for kw in ("$ref", "$dynamicRef"):
        ref = schema.get(kw)
        if ref is not None:
            # jsonschema has no public way to the resolver of the scope a validator is in; its own
            # find_evaluated_*_by_schema (the walks these replace) look up $ref the same way
            resolved = validator._resolver.lookup(ref)  # noqa: SLF001
            found |= walk(
                validator.evolve(schema=resolved.contents, _resolver=resolved.resolver),
                instance,
                resolved.contents,
            )
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
        listed = ", ".join(short.repr(instance[i]) for i in extra[:5])
        more = f" and {len(extra) - 5:,} more" if len(extra) > 5 else ""
        yield ValidationError(
            f"Unevaluated items are not allowed ({listed}{more} "
            f"{'was' if len(extra) == 1 else 'were'} unexpected)"
        )


def _unevaluated_properties(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    bad = []
    for name in instance:
        _take()
        if (
            name not in evaluated
            and next(iter(validator.descend(instance[name], value, path=name, schema_path=name)), None)
            is not None
        ):
            bad.append(name)
    if bad:
        if value is False:
            bad.sort(key=str)
        listed = ", ".join(short.repr(n) for n in bad[:5])
        more = f" and {len(bad) - 5:,} more" if len(bad) > 5 else ""
        verb = "was" if len(bad) == 1 else "were"
        yield ValidationError(
            f"Unevaluated properties are not allowed ({listed}{more} {verb} unexpected)"
            if value is False
            else f"Unevaluated properties are not valid under the given schema ({listed}{more} "
            f"{verb} unevaluated and invalid)"
        )


def _unsupported(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
    # Never reached for a loaded gem (rejected at load); if it is, do not run the regex.
    from jsonschema.exceptions import ValidationError

    yield ValidationError("this keyword is not supported by the platform and is not checked")


def _ecma_pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    # ECMAScript's reading, checked by RE2: linear in the string, never Python's backtracking `re`
    from jsonschema.exceptions import ValidationError

    from .ecma_pattern import PatternError, matches

    if not isinstance(instance, str) or not isinstance(pattern, str):
        return
    try:
        if matches(pattern, instance):
            return
    except PatternError:
        yield ValidationError(f"the pattern {short.repr(pattern)} cannot be checked")
        return
    yield ValidationError(f"{short.repr(instance)} does not match {short.repr(pattern)}")


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
    yield ValidationError(f"{short.repr(instance)} is not valid under any of the given schemas")


def _one_of(validator: Any, one_of: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    valid = [
        i
        for i, sub in enumerate(one_of)
        if next(iter(validator.descend(instance, sub, schema_path=i)), None) is None
    ]
    if not valid:
        yield ValidationError(f"{short.repr(instance)} is not valid under any of the given schemas")
    elif len(valid) > 1:
        which = ", ".join(map(str, valid[:5])) + ("…" if len(valid) > 5 else "")
        yield ValidationError(
            f"{short.repr(instance)} is valid under more than one of the given schemas (oneOf: {which})"
        )


_validator_class: Any = None


def bounded_validator_class() -> Any:
    """Draft 2020-12 whose every keyword counts against the check's budget, with N8's
    keywords inert, anyOf/oneOf/required reporting without keeping whole subtrees, and
    unevaluatedProperties/unevaluatedItems taking steps for the subschemas they walk."""
    global _validator_class
    if _validator_class is None:
        from jsonschema import Draft202012Validator, validators

        table = dict(Draft202012Validator.VALIDATORS)
        table.update(
            {kw: _unsupported for kw in UNSUPPORTED_KEYWORDS},
            pattern=_ecma_pattern,  # allowed only where a profile says so (SchemaRules.re2_patterns)
            anyOf=_any_of,
            oneOf=_one_of,
            required=_required,
            unevaluatedProperties=_unevaluated_properties,
            unevaluatedItems=_unevaluated_items,
        )
        _validator_class = validators.extend(
            Draft202012Validator, {k: _counted(fn) for k, fn in table.items()}
        )
    return _validator_class
