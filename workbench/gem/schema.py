"""Tool input schemas: the N8 checks at load, and argument validation at call time.

The platform compiles each `inputSchema` (JSON Schema 2020-12) when a gem is packaged and
rejects `pattern`, `patternProperties` and `uniqueItems` anywhere in it, because checking them
can hang the app. At call time a `null` for an optional top-level parameter counts as absent.
"""

from __future__ import annotations

from typing import Any, Iterator

UNSUPPORTED_KEYWORDS = ("pattern", "patternProperties", "uniqueItems")

# Keywords whose value is a schema, a list of schemas, or a map of name -> schema.
_SCHEMA_VALUED = ("additionalProperties", "items", "contains", "not", "if", "then", "else",
                  "propertyNames", "unevaluatedItems", "unevaluatedProperties",
                  "additionalItems")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "dependentSchemas")


def pointer(parts: Any) -> str:
    """JSON pointer (RFC 6901) for a sequence of keys and indexes."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _walk(schema: Any, path: tuple) -> Iterator[tuple[tuple, str]]:
    """Yield (path, keyword) for every unsupported keyword, looking only at keyword positions
    (a *property* named `pattern` is fine)."""
    if not isinstance(schema, dict):
        return
    for key in UNSUPPORTED_KEYWORDS:
        if key in schema:
            yield path + (key,), key
    for key in _SCHEMA_VALUED:
        if key in schema:
            sub = schema[key]
            if isinstance(sub, list):  # draft-4 style tuple `items`
                for i, s in enumerate(sub):
                    yield from _walk(s, path + (key, i))
            else:
                yield from _walk(sub, path + (key,))
    for key in _SCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            for i, s in enumerate(schema[key]):
                yield from _walk(s, path + (key, i))
    for key in _SCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            for name, s in schema[key].items():
                yield from _walk(s, path + (key, name))


def check_input_schema(schema: Any) -> list[tuple[str, str]]:
    """Problems that make an inputSchema unusable, as (pointer relative to it, message)."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    problems = [(pointer(p), f"'{kw}' is not supported by the platform (checking it can hang the "
                              f"app); check it in the tool's code instead")
                for p, kw in _walk(schema, ())]
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        problems.append((pointer(exc.absolute_path), f"schema does not compile: {exc.message}"))
    return problems


class InputValidator:
    """Validates call arguments against one tool's compiled inputSchema."""

    def __init__(self, schema: dict[str, Any]) -> None:
        from jsonschema import Draft202012Validator

        self.schema = schema
        self._validator = Draft202012Validator(schema)
        self._required = set(schema.get("required", ()))

    def normalise(self, args: Any) -> Any:
        """Drop top-level `null`s for optional parameters: the platform treats them as absent."""
        if isinstance(args, dict):
            return {k: v for k, v in args.items() if not (v is None and k not in self._required)}
        return args

    def violations(self, args: Any) -> list[dict[str, str]]:
        """Every violation as {path, message}, path a JSON pointer into the input ('' = root)."""
        errors = sorted(self._validator.iter_errors(args), key=lambda e: list(map(str, e.absolute_path)))
        out: list[dict[str, str]] = []
        for e in errors:
            base = pointer(e.absolute_path)
            if e.validator == "required":
                for name in e.validator_value:
                    if isinstance(e.instance, dict) and name not in e.instance:
                        out.append({"path": f"{base}/{name}", "message": f"missing required field '{name}'"})
            elif e.validator == "additionalProperties" and e.validator_value is False:
                for name in sorted(set(e.instance) - set(e.schema.get("properties", {}))):
                    out.append({"path": f"{base}/{name}",
                                "message": f"unexpected field '{name}' (additionalProperties is false)"})
            else:
                out.append({"path": base or "/", "message": e.message})
        # one `required` error covers several missing fields: keep each once
        return [dict(t) for t in dict.fromkeys(tuple(d.items()) for d in out)]
