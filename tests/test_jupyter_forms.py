"""Forms generated from inputSchema: widgets per type, validation before running, results."""

from __future__ import annotations

import ipywidgets as widgets
import pytest
from conftest import EXAMPLE_GEM

import workbench
from workbench.jupyter.forms import ToolForm

ECHO = "def handle(input, ctx):\n    return input\n"

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "who"},
        "body": {"type": "string", "maxLength": 5000},
        "ratio": {"type": "number"},
        "count": {"type": "integer"},
        "flag": {"type": "boolean"},
        "nums": {"type": "array", "items": {"type": "integer"}},
        "colours": {"type": "array", "items": {"enum": ["red", "green", "blue"]}},
        "address": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "zip": {"type": ["string", "null"]},
                "geo": {"type": "object", "properties": {"lat": {"type": "number"}}},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
        "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "level": {"type": "string", "enum": ["low", "high"], "default": "low"},
    },
    "required": ["name", "flag"],
    "additionalProperties": False,
}


@pytest.fixture
def echo(gem):
    gem.tool("echo", ECHO, schema=SCHEMA)
    gem.tool("anything", ECHO, schema={"type": "object"})
    with workbench.open(gem.write()) as b:
        yield b


def html_of(form: ToolForm) -> str:
    return "".join(o["data"]["text/html"] for o in form.output.outputs)


# -- the example gem ---------------------------------------------------------------------------
def test_add_note_form_widgets(notes):
    f = notes.form("add_note")
    assert isinstance(f, ToolForm) and isinstance(f, widgets.Widget)
    assert set(f.fields) == {"title", "priority", "tags"}
    assert isinstance(f.fields["title"], widgets.Text)
    prio = f.fields["priority"]
    # never clamped nor rounded: the bounds are shown, the platform checks them
    assert type(prio) is widgets.FloatText and prio.tooltip == "integer, ≥ 1, ≤ 5" and prio.value == 1
    assert isinstance(f.fields["tags"], widgets.Textarea)
    assert isinstance(f.run_button, widgets.Button) and isinstance(f.output, widgets.Output)


def test_required_fields_are_marked(notes):
    f = notes.form("add_note")
    labels = [w.value for w in _walk(f) if isinstance(w, widgets.HTML) and "<b>" in w.value]
    title = next(v for v in labels if "<b>title</b>" in v)
    prio = next(v for v in labels if "<b>priority</b>" in v)
    assert "*" in title and "*" not in prio


def test_optional_fields_left_empty_are_omitted(notes):
    f = notes.form("add_note")
    f.fields["title"].value = "buy milk"
    assert f.collect() == {"title": "buy milk"}
    f.fields["priority"].value = 2
    f.fields["tags"].value = "home\n  today \n\n"
    assert f.collect() == {"title": "buy milk", "priority": 2, "tags": ["home", "today"]}


@pytest.mark.parametrize(
    "typed, words", [(10, "10 is greater than the maximum of 5"), (2.5, "2.5 is not of type 'integer'")]
)
def test_a_value_outside_the_schema_reaches_the_platform_as_typed(notes, typed, words):
    """Never clamped or rounded by the form: the platform's own E_SCHEMA says what is wrong."""
    f = notes.form("add_note")
    f.fields["title"].value = "t"
    f.fields["priority"].value = typed
    f.run_button.click()
    res = f.result
    assert res is not None and res.error is not None and res.error.code == "E_SCHEMA", res
    assert res.input["priority"] == typed and words in res.error.message


def test_run_calls_the_tool_and_shows_the_result(notes):
    f = notes.form("add_note")
    f.fields["title"].value = "buy <milk>"
    f.fields["priority"].value = 4
    f.run_button.click()
    res = f.result
    assert res is not None and res.ok
    calls = notes.calls()
    assert calls["tool"].tolist() == ["add_note"] and calls["call_id"][0] == res.call_id
    assert notes.data("notes")[["title", "priority"]].values.tolist() == [["buy <milk>", 4]]
    html = html_of(f)
    assert "'b ok'>ok<" in html and res.value["id"] in html and "buy &lt;milk&gt;" in html
    assert "ok" in f.status.value and not f.run_button.disabled
    f.run_button.click()  # the output shows the latest call only
    assert len(f.output.outputs) == 1 and len(notes.calls()) == 2


def test_invalid_input_is_marked_and_the_platforms_error_is_the_result(notes):
    f = notes.form("add_note")
    f.run_button.click()
    assert f.result is not None and f.result.error.code == "E_SCHEMA"  # the platform's own, as a call
    assert "/title" in f.result.error.message and len(notes.calls()) == 1
    assert f.problems == [{"path": "/title", "message": "missing required field 'title'"}]
    assert "E_SCHEMA" in f.status.value and f.output.outputs
    errors = [w.value for w in _walk(f) if isinstance(w, widgets.HTML) and "✗ missing" in w.value]
    assert errors == ["<div style='color:#c62828'>✗ missing required field &#x27;title&#x27;</div>"]
    f.fields["title"].value = ""  # minLength 1: the empty string is left out, still missing
    f.run_button.click()
    assert f.result.error.code == "E_SCHEMA"
    f.fields["title"].value = "ok now"
    f.run_button.click()
    assert f.result.ok and len(notes.calls()) == 3
    assert not any("✗ missing" in w.value for w in _walk(f) if isinstance(w, widgets.HTML))


def test_list_notes_enum_is_a_dropdown(notes):
    notes.call("add_note", {"title": "a"})
    f = notes.form("list_notes")
    status = f.fields["status"]
    assert isinstance(status, widgets.Dropdown)
    assert [label for label, _ in status.options] == ["—", "open", "done"]
    assert f.collect() == {}
    status.value = "open"
    assert f.run().value["total"] == 1
    assert f.result.input == {"status": "open"}


def test_D4_result_from_a_form_shows_the_violation(notes):
    f = notes.form("count_views")
    assert f.fields == {} and isinstance(f.raw, widgets.Textarea)
    f.run_button.click()
    assert f.result.violations and "D4" in html_of(f)


def test_unknown_tool(notes):
    with pytest.raises(workbench.WorkbenchError) as info:
        notes.form("nope")
    assert info.value.code == "E_UNKNOWN_TOOL"


# -- every kind of field -----------------------------------------------------------------------
def test_widget_per_schema_type(echo):
    f = echo.form("echo")
    w = f.fields
    assert isinstance(w["name"], widgets.Text) and not isinstance(w["name"], widgets.Textarea)
    assert isinstance(w["body"], widgets.Textarea)
    assert isinstance(w["ratio"], widgets.FloatText) and isinstance(w["count"], widgets.FloatText)
    assert isinstance(w["flag"], widgets.Checkbox)
    assert isinstance(w["nums"], widgets.Textarea)
    assert isinstance(w["colours"], widgets.SelectMultiple)
    assert isinstance(w["address"], widgets.Box) and set(w["address"].fields) == {"city", "zip", "geo"}
    assert isinstance(w["address"].fields["geo"].fields["lat"], widgets.FloatText)
    assert isinstance(w["either"], widgets.Textarea)  # anyOf: raw JSON
    assert isinstance(w["level"], widgets.Dropdown) and w["level"].value == "low"


def test_defaults_and_untouched_values(echo):
    f = echo.form("echo")
    f.fields["name"].value = "x"
    # required boolean is always sent; an enum with a default is sent; nothing else is
    assert f.collect() == {"name": "x", "flag": False, "level": "low"}


def test_every_kind_of_value_reaches_the_tool(echo):
    f = echo.form("echo")
    w = f.fields
    w["name"].value = "ann"
    w["body"].value = "line 1\nline 2"
    w["ratio"].value = 0.5
    w["count"].value = 0  # unchanged from the widget's start: not sent
    w["count"].value = 7
    w["flag"].value = True
    w["nums"].value = "1\n2\n3"
    w["colours"].value = ("red", "blue")
    w["address"].fields["city"].value = "Oslo"
    w["address"].fields["geo"].fields["lat"].value = 59.9
    w["either"].value = "42"
    w["level"].value = "high"
    res = f.run()
    expected = {
        "name": "ann",
        "body": "line 1\nline 2",
        "ratio": 0.5,
        "count": 7,
        "flag": True,
        "nums": [1, 2, 3],
        "colours": ["red", "blue"],
        "address": {"city": "Oslo", "geo": {"lat": 59.9}},
        "either": 42,
        "level": "high",
    }
    assert res is not None and res.ok and res.value == expected
    assert echo.calls()["tool"].tolist() == ["echo"]


def test_optional_number_can_be_unsent_again(echo):
    f = echo.form("echo")
    f.fields["name"].value = "x"
    f.fields["count"].value = 3
    assert f.collect()["count"] == 3
    include = next(
        w for w in _walk(f) if isinstance(w, widgets.Checkbox) and w.description == "send" and w.value
    )
    include.value = False
    assert "count" not in f.collect()


def test_nested_object_violations_are_shown_at_the_nested_field(echo):
    f = echo.form("echo")
    f.fields["name"].value = "x"
    f.fields["address"].fields["zip"].value = "0150"  # address given, its required city not
    assert f.run().error.code == "E_SCHEMA" and len(echo.calls()) == 1
    assert f.problems == [{"path": "/address/city", "message": "missing required field 'city'"}]
    city_error = [
        w.value for w in _walk(f.fields["address"]) if isinstance(w, widgets.HTML) and "✗" in w.value
    ]
    assert city_error and "city" in city_error[0]


def test_unreadable_fields_are_problems_not_calls(echo):
    f = echo.form("echo")
    f.fields["name"].value = "x"
    f.fields["nums"].value = "1\ntwo\n3"
    f.fields["either"].value = "{not json"
    with pytest.raises(workbench.WorkbenchError) as info:
        f.collect()
    assert info.value.code == "E_SCHEMA"
    f.run_button.click()
    assert len(echo.calls()) == 0 and f.result is None
    paths = {p["path"] for p in f.problems}
    assert paths == {"/nums/1", "/either"}
    assert "2 problems" in f.status.value
    messages = " ".join(w.value for w in _walk(f) if isinstance(w, widgets.HTML) and "✗" in w.value)
    assert "line 2: &#x27;two&#x27; is not a integer" in messages and "not valid JSON" in messages


def test_raw_json_fallback_for_schemas_without_properties(echo):
    f = echo.form("anything")
    f.raw.value = '{"any": ["thing", 1]}'
    assert f.run().value == {"any": ["thing", 1]}
    f.raw.value = "[1]"  # not an object: the schema says so, inline, and the call's E_SCHEMA
    assert f.run().error.code == "E_SCHEMA" and f.problems[0]["path"] == "/"
    assert "is not of type &#x27;object&#x27;" in f.children[1].children[1].value
    assert len(echo.calls()) == 2


def test_form_on_a_closed_bench_reports_instead_of_raising(echo):
    f = echo.form("anything")
    echo.close()
    assert f.run() is None
    assert "error E_USAGE" in f.status.value and "closed" in f.status.value


def _walk(w):
    yield w
    for child in getattr(w, "children", ()):
        yield from _walk(child)


def test_a_form_for_an_agent_tool_is_built_from_its_parameters(tmp_path):
    bench = workbench.open(EXAMPLE_GEM.parent / "agent-research", state_dir=tmp_path)
    try:
        f = bench.form("research")
        assert set(f.fields) == {"email", "topic", "domain"}
        labels = [w.value for w in _walk(f) if isinstance(w, widgets.HTML) and "<b>" in w.value]
        assert all("*" in v for v in labels if "<b>topic</b>" in v)
    finally:
        bench.close()
