"""N8, K3: each platform's argument check against the official JSON-Schema-Test-Suite
(draft 2020-12, a copy in tests/data/json-schema-test-suite with its LICENSE and SOURCE), each
case direct and wrapped as a required property. A case either loads and then agrees with the
suite on every instance, or is refused at load for a reason this module predicts (a keyword
the platform forbids, a remote `$ref`, another dialect, a root the platform does not allow);
docs/readings.md lists where the workbench's reading differs and why."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.gem.lint import root_schema
from workbench.gem.schema import InputValidator, check_input, check_input_schema
from workbench.platforms import profile

SUITE = Path(__file__).parent / "data" / "json-schema-test-suite" / "draft2020-12"
DIALECT = "https://json-schema.org/draft/2020-12/schema"

# Refused everywhere, for a reason a keyword scan does not see: (file, case) -> what the error says
REFUSED = {
    ("defs.json", "validate definition against metaschema"): "points outside this schema",
    ("ref.json", "remote ref, containing refs itself"): "points outside this schema",
    ("dynamicRef.json", "strict-tree schema, guards against misspelled properties"): "not fetched",
    ("dynamicRef.json", "tests for implementation dynamic anchor and reference link"): "not fetched",
    ("dynamicRef.json", "$ref and $dynamicAnchor are independent of order - $defs first"): "not fetched",
    ("dynamicRef.json", "$ref and $dynamicAnchor are independent of order - $ref first"): "not fetched",
    ("dynamicRef.json", "$ref to $dynamicRef finds detached $dynamicAnchor"): "not fetched",
}
# keys whose value maps names to schemas (the names are not keywords) or holds data
_NAMED = ("properties", "patternProperties", "$defs", "dependentSchemas")
_DATA = ("const", "enum", "default", "examples")


def suite() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted(SUITE.glob("*.json")):
        for case in json.loads(path.read_text()):
            yield path.name, case


def keywords(schema: Any) -> set[str]:
    """Every keyword used anywhere in `schema` (a plain scan, not the load check's walk)."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            found.add(key)
            if key in _NAMED and isinstance(value, dict):
                stack.extend(value.values())
            elif key not in _DATA:
                stack.append(value)
    return found


def wrap(schema: Any) -> dict[str, Any]:
    """The case as a required property `x`; its own `#` refs keep their meaning (an `$id`)."""
    if isinstance(schema, dict):
        schema = {k: v for k, v in schema.items() if not (k == "$schema" and v == DIALECT)}
        schema.setdefault("$id", "urn:workbench:case")
    return {"type": "object", "properties": {"x": schema}, "required": ["x"]}


#: refused by the platform's manifest schema, before the argument check sees the schema
MANIFEST = "(the manifest's schema)"


def expected_refusal(platform: str, file: str, case: dict[str, Any], wrapped: bool) -> str | None:
    """What the load error must say for this case on this platform, or None: it loads."""
    rules = profile(platform).schema_rules
    schema = case["schema"]
    if not wrapped and not isinstance(schema, dict):
        # a Notochord inputSchema may be true or false, as 2020-12 allows; an agent tool's
        # `parameters` must be an object, which its manifest's own schema says (tested in
        # test_gem: test_A3_agent_parameters_must_be_an_object_schema_said_in_json_terms)
        return {"notochord": None, "agent": MANIFEST}.get(platform, "must be an object")
    if not wrapped and rules.root_keys is not None and set(schema) - set(rules.root_keys):
        return "at the schema's root"
    forbidden = sorted(keywords(schema) & set(rules.unsupported_keywords))
    if forbidden:
        return f"'{forbidden[0]}' is not supported"
    if file == "refRemote.json":
        return "resolve"
    if (file, case["description"]) in REFUSED:
        return REFUSED[(file, case["description"])]
    if isinstance(schema, dict) and schema.get("$schema", DIALECT) != DIALECT:
        return "only JSON Schema 2020-12"
    return None


@pytest.mark.parametrize("wrapped", [False, True], ids=["direct", "wrapped"])
@pytest.mark.parametrize("platform", ["notochord", "agent", "ekanos"])
def test_N8_K3_argument_checks_agree_with_the_json_schema_suite(platform: str, wrapped: bool) -> None:
    rules = profile(platform).schema_rules
    depth = profile(platform).limits.json_depth
    wrong: list[str] = []
    instances = refused = 0
    for file, case in suite():
        schema = wrap(case["schema"]) if wrapped else case["schema"]
        where = f"{file}: {case['description']}"
        problems = check_input_schema(schema, rules)
        expected = expected_refusal(platform, file, case, wrapped)
        if expected is not None:
            refused += 1
            if expected == MANIFEST:
                continue
            if not any(expected in message for _, message in problems):
                wrong.append(f"{where}: expected a load error saying {expected!r}, got {problems[:2]}")
            continue
        if problems:
            wrong.append(f"{where}: refused at load: {problems[:2]}")
            continue
        validator = InputValidator(root_schema(schema), rules)  # as the loader hands it on
        for test in case["tests"]:
            instances += 1
            data = {"x": test["data"]} if wrapped else test["data"]
            _, err = check_input(validator, data, tool="t", max_depth=depth)
            if (err is None) != test["valid"]:
                why = err.message if err is not None else "accepted"
                wrong.append(f"{where}: {test['description']}: suite says valid={test['valid']}: {why}")
    assert wrong == []
    # the suite is really run: most of it loads (Ekanos allows only 4 keys at a root)
    assert instances > (900 if wrapped or platform != "ekanos" else -1) and refused >= 40
