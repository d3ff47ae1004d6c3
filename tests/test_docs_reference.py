"""The reference pages say what the code does: docs/ctx/agent.md's table of what the built-ins
return (each built-in's input fields are its schema's, its result's keys those a call returns,
every envelope the module can return is named) and docs/email.md's replay keywords."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import GemBuilder

import workbench.ctx.tools as tools_module
from workbench.ctx.tools import SCHEMAS

PAGE = Path(__file__).resolve().parent.parent / "docs" / "ctx" / "agent.md"
CALL = """
def handle(input, ctx):
    return getattr(ctx.tools, input["builtin"])(input["input"])
"""
#: a good input of each built-in (the gem below has what they need)
GOOD = {
    "calculate": {"expression": "1 + 2"},
    "web_search": {"query": "deno workers"},
    "send_email": {"to": "a@acme.example", "subject": "s", "body_text": "b"},
    "surface_file": {"path": "notes.txt"},
}


def _rows() -> dict[str, list[str]]:
    """{built-in: [input, result, envelopes]} of the page's table."""
    section = PAGE.read_text(encoding="utf-8").split("### What the built-ins return", 1)[1]
    rows = {}
    for line in section.split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and (m := re.fullmatch(r"`(\w+)`", cells[0])):
            rows[m[1]] = cells[1:]
    return rows


def _keys(cell: str) -> list[str]:
    """The keys of the first `{…}` of a cell, as written (`count?` keeps its mark)."""
    found = re.search(r"`\{([^}`]*)\}`", cell)
    assert found, cell
    return [k.strip() for k in found[1].split(",")]


def test_the_table_has_every_built_in() -> None:
    assert sorted(_rows()) == sorted(SCHEMAS)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_a_built_ins_documented_input_is_its_schema(name: str) -> None:
    schema = SCHEMAS[name]
    expected = [k if k in schema.get("required", ()) else f"{k}?" for k in schema["properties"]]
    assert _keys(_rows()[name][0]) == expected


@pytest.fixture
def agent(gem: GemBuilder, opened) -> Any:
    gem.tool("call", CALL).as_agent(builtins=sorted(SCHEMAS))
    root = gem.write()
    (root / "fixtures" / "files").mkdir(parents=True)
    (root / "fixtures" / "files" / "notes.txt").write_text("hello")
    results = [{"title": "Workers", "url": "https://docs.deno.com/w", "snippet": "threads"}]
    (root / "fixtures" / "web_search.json").write_text(
        json.dumps([{"query": "deno workers", "results": results}])
    )
    bench = opened(root)
    bench.allow_recipients("*@acme.example")
    return bench


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_a_built_ins_documented_result_is_what_it_returns(name: str, agent: Any) -> None:
    value = agent.call("call", {"builtin": name, "input": GOOD[name]}).raise_for_error().value
    shape = value[0] if name == "web_search" else value  # a list of results
    assert "error" not in shape, value
    assert sorted(_keys(_rows()[name][1])) == sorted(shape)


def test_every_envelope_the_built_ins_return_is_documented() -> None:
    source = Path(tools_module.__file__).read_text(encoding="utf-8")
    section = PAGE.read_text(encoding="utf-8").split("### What the built-ins return", 1)[1]
    names = set(re.findall(r'envelope\(\s*"(\w+)"', source))
    assert names >= {"invalid_expression", "recipient_not_allowed", "unavailable"}  # the regex reads them
    assert {n for n in names if f"`{n}`" not in section} == set()


@pytest.mark.parametrize("method", ["replay_run", "replay"])
def test_docs_email_names_every_keyword_of_the_replay(method: str) -> None:
    """docs/email.md's replay section says each keyword `bench.email.replay_run` and
    `bench.email.replay` take (`input=` was missing)."""
    import inspect

    from workbench.bench.mail import BenchEmail

    page = (PAGE.parent.parent / "email.md").read_text(encoding="utf-8")
    section = page.split("## Replaying a cursor", 1)[1].split("\n## ", 1)[0]
    params = inspect.signature(getattr(BenchEmail, method)).parameters.values()
    keywords = [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
    assert [k for k in keywords if f"{k}=" not in section] == []


@pytest.mark.parametrize("platform, lang", [("notochord", "ts"), ("agent", "js"), ("ekanos", "ts")])
def test_the_docs_say_fixtures_only_where_new_writes_them(platform: str, lang: str) -> None:
    """The first-gem page's scaffold tip and docs/cli.md's `new` name the fixtures the platform's
    scaffold writes, and none where it writes none (the Ekanos scaffold)."""
    from workbench.scaffold._create import _files

    written = sorted({"/".join(p.split("/")[:2]) for p in _files("hello", platform, lang, "hello")
                      if p.startswith("fixtures/")})  # fmt: skip
    docs = PAGE.parent.parent
    page = (docs / "first-gem" / f"{platform}.md").read_text(encoding="utf-8")
    tip = page.split('!!! tip "Start from a scaffold"', 1)[1].split("\n\n", 1)[0]
    assert ("no fixtures" not in tip and "fixtures" in tip) == bool(written), tip
    cli = (docs / "cli.md").read_text(encoding="utf-8")
    new = cli[cli.index("`new` writes") :].split(". `call`", 1)[0]
    assert all(f"`{p}" in new for p in written), (written, new)
