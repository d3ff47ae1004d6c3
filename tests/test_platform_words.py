"""Issue 28, point 8: each platform's words in headers, tables, badges and errors — no
`sideEffect` where the platform has none, `parameters` where the platform calls the input
schema so, only the provider kinds of capabilities the platform has."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import workbench
from workbench.jupyter.display import bench_html
from workbench.scaffold._create import create

LANG = {"notochord": "py", "agent": "py", "ekanos": "ts"}
PLATFORMS = ["notochord", "agent", pytest.param("ekanos", marks=pytest.mark.deno)]


@pytest.fixture(params=PLATFORMS)
def bench(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[workbench.Bench]:
    """A bench on the gem `gem-workbench new --platform P` writes."""
    platform = request.param
    gem = create("words", platform=platform, lang=LANG[platform], parent=tmp_path)
    with workbench.open(gem, state_dir=tmp_path / "state") as opened:
        yield opened


def _header(html: str) -> str:
    start = html.index("<span class=m>")
    return html[start : html.index("</span>", start)]


def test_agent_and_ekanos_tools_show_no_side_effect(bench: workbench.Bench) -> None:
    """Only Notochord's format has `sideEffect`: bench.tools() and the bench's tool table show
    it for Notochord gems alone."""
    has = bench.manifest.platform == "notochord"
    assert ("sideEffect" in bench.tools().columns) is has
    assert ("sideEffect" in bench_html(bench)) is has
    assert bench.profile.side_effects is has


def test_ekanos_and_agent_schema_errors_say_parameters(bench: workbench.Bench) -> None:
    """An input that does not match is told in the platform's own word for the schema:
    Notochord's `inputSchema`, agent tools' and Ekanos' `parameters`."""
    word = "inputSchema" if bench.manifest.platform == "notochord" else "parameters"
    tool = next(iter(bench.manifest.tools))
    res = bench.call(tool, {"no such field": [1]})
    assert res.error is not None and res.error.code == "E_SCHEMA"
    assert f"does not match its {word} (" in res.error.message, res.error.message
    other = "parameters" if word == "inputSchema" else "inputSchema"
    assert other not in res.error.message


def test_agent_bench_header_lists_only_capabilities_it_has(bench: workbench.Bench) -> None:
    """The header lists the provider kinds the platform's capabilities sit on: files and
    storage for Notochord, storage (ctx.storage.account) for Ekanos, none for agent tools."""
    shown = {"notochord": "files=mock, storage=mock", "ekanos": "storage=mock", "agent": None}[
        bench.manifest.platform
    ]
    header, text = _header(bench_html(bench)), repr(bench)
    if shown is None:
        assert "providers" not in header and "files=" not in text and "storage=" not in text
    else:
        assert f"providers: {shown} ·" in header and f"tools, {shown}, 0 calls>" in text
