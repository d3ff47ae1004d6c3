"""What `tools/list` and `tools/call` give per platform, from the profile's fields: an Ekanos
integration's effective names (K4), its outputExample as an outputSchema and an expected
failure (K2) as an isError result; an agent tool's result split as the platform splits it
(`_llm` for the model, `_render` / `_interactive` for the user only)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from _mcp import http_session
from conftest import GemBuilder

import workbench
from workbench.mcp.tools import listing

pytestmark = pytest.mark.deno

GEMS = Path(__file__).resolve().parent.parent / "notebooks" / "gems"
WEATHER = {
    "match": "https://api.acme.example/v1/weather",
    "respond": {"json": {"temperature": 12.4, "units": "celsius"}},
}
LOCATION = {"label": "SF", "latitude": 37.7749, "longitude": -122.4194}


def served_calls(bench: workbench.Bench, *calls: tuple[str, dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    """(tools/list's tools, each call's result) from an SDK client of `bench.serve_mcp()`."""
    serving = bench.serve_mcp()

    async def main() -> tuple[list[Any], list[Any]]:
        async with http_session(serving.url, serving.token) as s:
            tools = (await s.list_tools()).tools
            return tools, [await s.call_tool(name, args) for name, args in calls]

    try:
        return anyio.run(main)
    finally:
        serving.stop()


def test_an_ekanos_integration_is_offered_under_its_effective_names(
    opened: Callable[..., workbench.Bench],
) -> None:
    bench = opened(
        GEMS / "acme-payments",
        account_storage={"settings/location": LOCATION},
        secrets={},
        fetch_handlers=[WEATHER],
    )
    tools, (weather, unconfigured) = served_calls(
        bench,
        ("acme_payments_get_current_weather", {"units": "celsius"}),
        ("acme_payments_list_recent_payments", {}),  # no api_key: {error} returned (K2)
    )
    by_name = {t.name: t for t in tools}
    assert list(by_name)[:3] == [
        "acme_payments_get_current_weather",
        "acme_payments_list_recent_payments",
        "acme_payments_refund_payment",
    ]
    w = by_name["acme_payments_get_current_weather"]
    assert w.output_schema == {
        "type": "object",
        "properties": {"temperature": {"type": "number"}, "units": {"type": "string"}},
    }
    assert w.input_schema["properties"]["units"]["enum"] == ["celsius", "fahrenheit"]
    assert by_name["acme_payments_list_recent_payments"].output_schema["properties"]["payments"] == {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "amount": {"type": "number"},
                "status": {"type": "string"},
            },
        },
    }
    assert w.annotations is None  # Ekanos declares no sideEffect
    assert not weather.is_error and weather.structured_content == {"temperature": 12.4, "units": "celsius"}
    assert unconfigured.is_error and unconfigured.structured_content == {
        "error": "Integration not configured."
    }
    assert unconfigured.meta["dev.gem-workbench/outcome"] == "expected_failure"
    assert list(bench.calls().outcome) == ["success", "expected_failure"]  # the bench's own rows


def test_a_colliding_integration_is_refused_as_the_platform_refuses_it(
    opened: Callable[..., workbench.Bench],
) -> None:
    bench = opened(GEMS / "acme-payments")
    serving = bench.serve_mcp()
    try:
        with pytest.raises(workbench.GemLoadError, match="K4"):  # acme_payments_refund_payment twice
            opened(GEMS / "acme-legacy")
    finally:
        serving.stop()
    key, other = list(bench.manifest.tools)[:2]
    clash = dataclasses.replace(bench.manifest, aliases={key: other})  # one offered under another's name
    with pytest.raises(workbench.WorkbenchError, match="both offered as") as info:
        listing(clash, bench.profile)
    assert info.value.code == "E_MANIFEST"


@pytest.mark.parametrize("ext", ["py", "js"])
def test_an_agent_tool_gives_the_model_its_llm_part_and_the_user_the_rest(
    gem: GemBuilder, opened: Callable[..., workbench.Bench], ext: str
) -> None:
    src = {
        "py": "def handle(input, ctx):\n    return {'rows': 3, '_llm': 'three rows found', '_render': {'type': 'table'}}\n",
        "js": "export async function handle(input, ctx) {\n  return { rows: 3, _llm: 'three rows found', _render: { type: 'table' } };\n}\n",
    }[ext]
    plain = {
        "py": "def handle(input, ctx):\n    return {'sum': ctx.tools.calculate({'expression': '2+3'})['result'], '_interactive': [1]}\n",
        "js": "export async function handle(input, ctx) {\n  return { sum: (await ctx.tools.calculate({ expression: '2+3' })).result, _interactive: [1] };\n}\n",
    }[ext]
    gem.tool("rows", src, ext=ext, description="rows").tool("sum", plain, ext=ext, description="a sum")
    bench = opened(gem.as_agent())
    tools, (rows, total) = served_calls(bench, ("rows", {}), ("sum", {}))
    assert [t.name for t in tools] == ["rows", "sum"] and all(t.annotations is None for t in tools)
    assert rows.content[0].text == "three rows found"  # what the model is given
    assert rows.structured_content == {"result": "three rows found"}
    assert rows.meta["dev.gem-workbench/user"] == {"_render": {"type": "table"}}  # never the model's
    assert total.structured_content == {"sum": 5}  # no _llm: the value without the user's keys
    assert total.meta["dev.gem-workbench/user"] == {"_interactive": [1]}
    assert bench.results[-1].value == {"sum": 5, "_interactive": [1]}  # the bench keeps it whole
