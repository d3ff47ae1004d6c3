"""Rich display of CallResult and Bench: contents, escaping, error fields, bounded size."""

from __future__ import annotations

import re

import pytest

import workbench
from workbench.jupyter.display import MAX_HTML, bench_html, json_html, result_html

ECHO = "def handle(input, ctx):\n    return input\n"
NOISY = """
def handle(input, ctx):
    for i in range(input.get("lines", 0)):
        print("line", i, "<tag>")
    for i in range(input.get("kv", 0)):
        ctx.storage.kv.set(f"k{i}", "v")
    if input.get("fail"):
        raise ValueError("bad <thing> & more")
    return input.get("value")
"""


@pytest.fixture
def noisy(gem):
    gem.tool("noisy", NOISY, schema={"type": "object"})
    gem.tool("echo", ECHO, schema={"type": "object"})
    with workbench.open(gem.write()) as b:
        yield b


def visible_text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html.split("</style>", 1)[-1])


def test_ok_result_shows_badge_value_duration_and_trace(notes):
    res = notes.call("add_note", {"title": "buy milk"})
    html = res._repr_html_()
    assert html == result_html(res)
    assert "'b ok'>ok<" in html and "add_note" in html and " ms" in html
    assert res.value["id"] in html
    assert "<details open><summary><b>value</b>" in html
    assert "ctx calls (1)" in html and "<code>data.insert</code>" in html
    assert "E_" not in visible_text(html)


def test_value_is_a_collapsible_escaped_tree(noisy):
    value = {
        "html": "<script>alert('x')</script>",
        "list": [1, 2.5, True, None],
        "nested": {"deep": {"deeper": {"k": "v"}}},
    }
    html = result_html(noisy.call("noisy", {"value": value}))
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert html.count("<details") >= 5 and html.count("<summary") == html.count("<details")
    # the top levels are unfolded, deeper ones folded
    assert "<details open><summary><span class=k>&quot;nested&quot;</span>" in html
    assert "<details><summary><span class=k>&quot;deeper&quot;</span>" in html


def test_failed_result_shows_code_message_and_offending_fields(notes):
    res = notes.call("add_note", {"title": 3, "colour": "<red>"})
    html = result_html(res)
    assert "'b no'>failed<" in html and "<b>E_SCHEMA</b>" in html
    assert "<td><code>/colour</code></td>" in html and "<td><code>/title</code></td>" in html
    assert "unexpected field &#x27;colour&#x27;" in html
    assert "<b>field</b>" in html
    # the bad fields of the input are highlighted, and the input is unfolded to show them
    assert "<details open><summary><b>input</b>" in html
    assert "<div class=x><span class=k>&quot;title&quot;</span>: <span class=n>3</span>" in html
    assert "&lt;red&gt;" in html and "<red>" not in html


def test_tool_error_shows_the_stack_and_logs(noisy):
    res = noisy.call("noisy", {"fail": True, "lines": 2})
    html = result_html(res)
    assert "<b>E_TOOL_ERROR</b>" in html and "bad &lt;thing&gt; &amp; more" in html
    assert re.search(r"<pre>[^<]*tools/noisy\.py", html)
    assert "logs (2 lines)" in html and "line 1 &lt;tag&gt;" in html
    assert "<b>file</b>" in html


def test_D4_violation_is_highlighted(notes):
    res = notes.call("count_views")
    html = result_html(res)
    assert res.violations
    assert re.search(r"<div class=w>⚠ D4: tool &#x27;count_views&#x27; is declared", html)
    assert "'b ok'>ok<" in html  # not strict: the call still succeeds


def test_long_strings_are_cut_with_a_note(noisy):
    html = result_html(noisy.call("noisy", {"value": "x" * 13_345}))
    assert "… 12,345 more characters not shown" in html
    assert len(html) < 5_000


def test_long_lists_and_objects_are_cut_with_a_note(noisy):
    html = result_html(noisy.call("noisy", {"value": list(range(1_100))}))
    assert "… 1,000 more items not shown" in html
    html = result_html(noisy.call("noisy", {"value": {f"k{i}": i for i in range(150)}}))
    assert "… 50 more keys not shown" in html


@pytest.mark.parametrize(
    "value",
    [
        [["<&>" * 400] * 100] * 100,  # much escaping
        {f"k{i}": {"s": "y" * 900, "l": list(range(50))} for i in range(1_000)},
        [[i, str(i)] for i in range(200_000)],
    ],
)
def test_huge_values_never_flood_the_notebook(value):
    res = workbench.CallResult(call_id="c", tool="t", input={"big": value}, value=value)
    html = result_html(res)
    assert len(html) <= MAX_HTML * 1.1
    assert "not shown" in html


def test_huge_logs_trace_and_input_are_bounded(noisy):
    res = noisy.call("noisy", {"lines": 100_000, "kv": 500, "value": 1, "pad": ["<" * 1000] * 200})
    html = result_html(res)
    assert len(html) <= MAX_HTML * 1.1
    assert "ctx calls (500)" in html and "more ctx calls not shown" in html
    assert "more characters not shown" in html  # logs: head and tail, a note between
    assert "line 0 " in html and "line 99999 " in html


def test_many_violations_are_bounded(gem):
    props = {f"p{i}": {"type": "integer"} for i in range(3_000)}
    gem.tool("echo", ECHO, schema={"type": "object", "properties": props})
    bench = workbench.open(gem.write())
    res = bench.call("echo", {f"p{i}": "<x>" * 50 for i in range(3_000)})
    assert res.error.code == "E_SCHEMA" and len(res.error.details["violations"]) == 3_000
    html = result_html(res)
    assert len(html) <= MAX_HTML * 1.1 and "more violations not shown" in html
    bench.close()


def test_deep_nesting_is_summarised():
    value: object = "leaf"
    for _ in range(200):
        value = [value]
    html = json_html(value)
    assert "nested deeper than" in html and html.count("<details") <= 45


def test_input_that_is_not_json_is_shown(noisy):
    res = noisy.call("echo", {"when": object()})
    assert res.error.code == "E_SCHEMA"
    assert "&lt;object object at" in result_html(res)


def test_plain_text_for_terminals(notes):
    from IPython.lib.pretty import pretty

    ok = pretty(notes.call("add_note", {"title": "a"}))
    assert ok.startswith("add_note: ok (") and '"id":' in ok
    bad = pretty(notes.call("add_note", {"title": 1}))
    assert "error E_SCHEMA" in bad and "/title: 1 is not of type 'string'" in bad
    d4 = pretty(notes.call("count_views"))
    assert "⚠ D4" in d4
    assert repr(notes.call("count_views")).startswith("<CallResult count_views ok")


def test_bench_html(notes):
    notes.call("add_note", {"title": "a"})
    notes.call("add_note", {})
    html = notes._repr_html_()
    assert html == bench_html(notes)
    assert "<b>Notes</b> <code>acme.notes</code> 0.1.0" in html
    assert "files=mock" in html and "storage=mock" in html
    assert "2 calls (1 failed)" in html
    for tool in ("add_note", "list_notes", "close_note", "write_report", "count_views"):
        assert f"<b>{tool}</b>" in html
    assert "<code>title*, priority, tags</code>" in html
    assert "collections:</span> notes" in html


def test_bench_html_escapes_and_shows_flags(gem):
    gem.manifest["name"] = "<b>Bold</b>"
    gem.tool("t", ECHO, description="uses <ctx> & more")
    with workbench.open(gem.write(), strict=True, conversation=False) as bench:
        html = bench_html(bench)
    assert "&lt;b&gt;Bold&lt;/b&gt;" in html and "uses &lt;ctx&gt; &amp; more" in html
    assert "strict, no conversation" in html and "0 calls" in html


SURFACE_MANY = {
    "py": "def handle(input, ctx):\n    for i in range(50):\n        ctx.tools.surface_file({'path': f'shot{i % 2}.png'})\n"
    "    print('<x>' * 2_000_000)\n    return 'x' * 1_000_000\n",
    "js": "export async function handle(input, ctx) {\n  for (let i = 0; i < 50; i++) await ctx.tools.surface_file({ path: `shot${i % 2}.png` });\n"
    "  console.log('<x>'.repeat(2000000));\n  return 'x'.repeat(1000000);\n}\n",
}


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_SEC5_a_result_display_embeds_at_most_EMBED_of_surfaced_files(lang, gem, tmp_path) -> None:
    """50 surfaced images of ~1 MB (a 66 MB display before): a few are embedded, the rest listed
    by name and size with a note; with a 6 MB log and a 1 MB value the display stays bounded."""
    from workbench.jupyter.display_agent import EMBED

    gem.tool("shots", SURFACE_MANY[lang], ext=lang).as_agent("a", "Shots", builtins=["surface_file"])
    files = tmp_path / "files"
    files.mkdir()
    for i in range(2):
        (files / f"shot{i}.png").write_bytes(b"\x89PNG" + bytes([i]) * 999_996)
    with workbench.open(gem.write(), files=files, state_dir=tmp_path / "s") as bench:
        res = bench.call("shots")
    assert res.ok and len(res.surfaced) == 50, res.error
    page = result_html(res)
    assert len(page) < EMBED + 2 * MAX_HTML, len(page)
    assert page.count("<img ") == 3 and page.count("1,000,000 bytes") == 50
    assert "47 files listed, not embedded: a display embeds 4,194,304 characters" in page
