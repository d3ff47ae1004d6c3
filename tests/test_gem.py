"""Gem loading: manifest errors with file and JSON pointer, N8 schema checks at load."""

from __future__ import annotations

import json

import pytest
from conftest import EXAMPLE_GEM

import workbench
from workbench.platforms import lint
from workbench.platforms import load as load_manifest
from workbench.platforms.notochord import PROFILE, manifest_schema


def test_example_gem_loads_typed():
    m = load_manifest(EXAMPLE_GEM)
    assert m.id == "acme.notes"
    assert m.tools["add_note"].language == "python"
    assert m.tools["list_notes"].side_effect == "read"
    assert m.collections["notes"].indexes == ("status", "priority")
    assert "CREATE TABLE closed" in (m.schema_sql or "")


def test_malformed_json_gives_line_and_column(tmp_path):
    (tmp_path / "manifest.json").write_text('{\n  "id": "x",\n  "name": \n}')
    with pytest.raises(workbench.GemLoadError) as ei:
        workbench.open(tmp_path)
    err = ei.value
    assert err.code == "E_MANIFEST"
    assert err.details["line"] == 4 and err.details["column"] == 1
    assert err.details["file"].endswith("manifest.json")


def test_missing_manifest(tmp_path):
    with pytest.raises(workbench.GemLoadError, match="manifest.json not found"):
        workbench.open(tmp_path)


def test_missing_gem_folder(tmp_path):
    with pytest.raises(workbench.GemLoadError, match="does not exist"):
        workbench.open(tmp_path / "nope")


def test_schema_error_names_json_pointer(gem):
    gem.tool("a", "def handle(i, c): return 1", side_effect="maybe")
    with pytest.raises(workbench.GemLoadError) as ei:
        workbench.open(gem.write())
    assert ei.value.details["pointer"] == "/tools/0/sideEffect"
    assert "maybe" in ei.value.message


def test_duplicate_tool_names_rejected(gem):
    gem.tool("a", "def handle(i, c): return 1").tool("a", "def handle(i, c): return 2")
    problems = lint(gem.write())
    assert [p["pointer"] for p in problems] == ["/tools/1/name"]
    assert "duplicate" in problems[0]["message"]


def test_missing_tool_file_rejected(gem):
    gem.tool("a", "def handle(i, c): return 1")
    gem.manifest["tools"][0]["file"] = "tools/missing.py"
    problems = lint(gem.write())
    assert problems[0]["pointer"] == "/tools/0/file" and "does not exist" in problems[0]["message"]


def test_tool_file_outside_tools_rejected(gem):
    gem.tool("a", "def handle(i, c): return 1")
    gem.manifest["tools"][0]["file"] = "tools/../manifest.py"
    (gem.root / "manifest.py").parent.mkdir(parents=True, exist_ok=True)
    (gem.root / "manifest.py").write_text("")
    assert lint(gem.write())[0]["pointer"] == "/tools/0/file"


@pytest.mark.parametrize(
    "keyword,schema,where",
    [
        (
            "pattern",
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}},
            "/tools/0/inputSchema/properties/a/pattern",
        ),
        (
            "patternProperties",
            {"type": "object", "patternProperties": {"^x": {}}},
            "/tools/0/inputSchema/patternProperties",
        ),
        (
            "uniqueItems",
            {
                "type": "object",
                "properties": {
                    "a": {"type": "array", "items": {"anyOf": [{"type": "array", "uniqueItems": True}]}}
                },
            },
            "/tools/0/inputSchema/properties/a/items/anyOf/0/uniqueItems",
        ),
        (
            "pattern",
            {"type": "object", "$defs": {"d": {"pattern": "x"}}},
            "/tools/0/inputSchema/$defs/d/pattern",
        ),
    ],
)
def test_N8_unsupported_keywords_rejected_at_any_depth(gem, keyword, schema, where):
    gem.tool("a", "def handle(i, c): return 1", schema=schema)
    problems = lint(gem.write())
    assert [p["pointer"] for p in problems] == [where]
    assert keyword in problems[0]["message"]


def test_N8_property_named_pattern_is_fine(gem):
    gem.tool(
        "a",
        "def handle(i, c): return 1",
        schema={"type": "object", "properties": {"pattern": {"type": "string"}}},
    )
    assert lint(gem.write()) == []


def test_N8_uncompilable_schema_rejected_at_load(gem):
    gem.tool(
        "a", "def handle(i, c): return 1", schema={"type": "object", "properties": {"a": {"type": "strang"}}}
    )
    with pytest.raises(workbench.GemLoadError) as ei:
        workbench.open(gem.write())
    assert ei.value.details["pointer"].startswith("/tools/0/inputSchema")
    assert "does not compile" in ei.value.message


def test_trigger_naming_unknown_tool(gem):
    gem.tool("a", "def handle(i, c): return 1")
    gem.manifest["triggers"] = [{"event": "email.onNewMessage", "tool": "b"}]
    assert lint(gem.write())[0]["pointer"] == "/triggers/0/tool"


def test_unknown_top_level_field_is_reported(gem):
    gem.tool("a", "def handle(i, c): return 1")
    gem.manifest["permisions"] = {}
    problems = lint(gem.write())
    assert problems and "permisions" in problems[0]["message"]


def test_manifest_schema_ships_with_package():
    schema = manifest_schema()
    assert schema["$schema"].endswith("2020-12/schema")
    assert "tools" in schema["required"]


def test_email_permission_needs_top_level_and_tool(gem):
    gem.tool("a", "def handle(i, c): return 1", permissions={"email": {"read": True}})
    gem.tool("b", "def handle(i, c): return 1")
    gem.manifest["permissions"] = {"email": {"read": True}}
    m = load_manifest(gem.write())
    assert PROFILE.grants(m, m.tools["a"]).has("email")
    assert not PROFILE.grants(m, m.tools["b"]).has("email")
    gem.manifest.pop("permissions")
    gem.manifest["email"] = True  # Gem Studio draft shorthand
    m = load_manifest(gem.write())
    assert PROFILE.grants(m, m.tools["a"]).has("email")


def test_manifest_json_roundtrip_of_example_is_valid():
    raw = json.loads((EXAMPLE_GEM / "manifest.json").read_text())
    assert lint(EXAMPLE_GEM) == [] and raw["id"] == "acme.notes"


def test_N1_symlink_leading_outside_the_gem_is_a_load_error(gem, tmp_path):
    """Deno checks --allow-read paths as written: a link out of the gem would escape N1."""
    gem.tool("a", "export default async function () { return 1 }", ext="js")
    root = gem.write()
    (root / "data").symlink_to("/etc")
    (root / "tools" / "inside").symlink_to(root / "tools" / "a.js")  # inside: fine
    problems = lint(root)
    assert len(problems) == 1 and "data" in problems[0]["message"]
    with pytest.raises(workbench.GemLoadError, match="leads outside the gem"):
        workbench.open(root)


# -- boolean root schemas and the old `dependencies` (issue 26) --------------------------------
PY_ECHO = "def handle(input, ctx):\n    return input\n"


def test_N8_boolean_input_schema_is_a_json_schema(gem, opened, lang):
    """A Notochord inputSchema is JSON Schema 2020-12, where `true` and `false` are schemas:
    `true` runs the tool with any input, `false` refuses every call, in JSON terms."""
    src = PY_ECHO if lang == "py" else "export default async (input) => input"
    gem.tool("anything", src, ext=lang).tool("nothing", src, ext=lang)
    gem.manifest["tools"][0]["inputSchema"], gem.manifest["tools"][1]["inputSchema"] = True, False
    bench = opened(gem)
    assert bench.call("anything", {"a": [1, None]}).value == {"a": [1, None]}
    res = bench.call("nothing", {"a": True})
    assert res.error.code == "E_SCHEMA"
    assert '{"a": true} is not allowed here (the schema is false)' in res.error.message
    assert "True" not in res.error.message


@pytest.mark.parametrize("value", [True, False])
def test_A3_agent_parameters_must_be_an_object_schema_said_in_json_terms(gem, value):
    """An agent tool's `parameters` are the parameters defined on it: an object schema, and a
    boolean is refused naming the field with the value as the author wrote it."""
    gem.tool("t", PY_ECHO).as_agent()
    gem.manifest["tools"][0]["parameters"] = value
    with pytest.raises(workbench.GemLoadError) as err:
        workbench.open(gem.write())
    assert err.value.details["pointer"] == "/tools/0/parameters"
    assert f'{json.dumps(value)} is not of type "object"' in err.value.message
    assert str(value) not in err.value.message


@pytest.mark.parametrize(
    "bad, pointer", [({"allOf": [5]}, "/allOf/0"), ({"properties": {"x": [1]}}, "/properties/x")]
)
def test_N8_a_non_schema_where_a_schema_goes_is_said_in_json_terms(gem, bad, pointer):
    gem.tool("t", PY_ECHO, schema=bad)
    with pytest.raises(workbench.GemLoadError) as err:
        workbench.open(gem.write())
    assert err.value.details["pointer"] == "/tools/0/inputSchema" + pointer
    assert 'is not of type "object" or "boolean"' in err.value.message and "$id" not in err.value.message


def test_N8_dependencies_is_an_annotation_in_2020_12(gem, opened, lang):
    """2020-12 has no `dependencies` (split into dependentRequired and dependentSchemas): a
    schema using it loads, and it constrains nothing, as in any 2020-12 validator."""
    src = PY_ECHO if lang == "py" else "export default async (input) => input"
    schema = {"type": "object", "dependencies": {"bar": ["foo"], "baz": {"required": ["qux"]}}}
    bench = opened(gem.tool("t", src, ext=lang, schema=schema))
    assert bench.call("t", {"bar": 2, "baz": 1}).value == {"bar": 2, "baz": 1}


def test_N8_a_root_id_that_is_no_string_is_a_load_error_not_a_traceback(gem):
    gem.tool("t", PY_ECHO, schema={"$id": 5, "type": "object"})
    with pytest.raises(workbench.GemLoadError) as err:
        workbench.open(gem.write())
    assert err.value.details["pointer"] == "/tools/0/inputSchema/$id"
    assert "$id must be a string" in err.value.message
