"""The one call pipeline (workbench/_pipeline.py): it names no platform; what differs comes
from the profile's hooks (Profile.judge, K2) and the session's capabilities (masking, K6)."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable
from pathlib import Path

from conftest import GemBuilder
from test_agent import agent_gem

from workbench.platforms.base import SUCCESS, Verdict

PIPELINE = Path(__file__).resolve().parent.parent / "workbench" / "bench/pipeline.py"


def test_the_pipeline_names_no_platform() -> None:
    """No comparison with a profile's name, no platform's name as a string, no platform import."""
    tree = ast.parse(PIPELINE.read_text(encoding="utf-8"))
    compared = [
        ast.unparse(n)
        for n in ast.walk(tree)
        if isinstance(n, ast.Compare)
        and any(isinstance(x, ast.Attribute) and x.attr == "name" for x in (n.left, *n.comparators))
    ]
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    imported = [
        n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and "platforms" in (n.module or "")
    ]
    assert compared == [] and strings.isdisjoint({"notochord", "agent", "ekanos"}) and imported == []


def test_a_profiles_verdict_is_the_results_outcome(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("answer", "def handle(input, ctx):\n    return {'n': input.get('n', 0)}\n", ext="py")
    bench = opened(gem.write())
    assert bench.profile.judge(bench.manifest, bench.manifest.tool("answer"), {"error": "x"}) is SUCCESS
    seen = []

    def judge(manifest, tool, value):
        seen.append((tool.name, value))
        return Verdict(expected_failure=value["n"] < 0, warnings=("odd",) if value["n"] % 2 else ())

    bench.profile = dataclasses.replace(bench.profile, judge=judge)
    ok, odd, failed = (
        bench.call("answer", {"n": 2}),
        bench.call("answer", {"n": 3}),
        bench.call("answer", {"n": -2}),
    )
    assert (ok.outcome, ok.warnings) == ("success", [])
    assert (odd.outcome, odd.warnings) == ("success", ["odd"])
    assert failed.outcome == "expected_failure" and failed.ok
    assert seen == [("answer", {"n": 2}), ("answer", {"n": 3}), ("answer", {"n": -2})]
    assert bench.call("nope").outcome == "fault" and len(seen) == 3  # an error is not judged


def test_K6_a_secret_a_nested_call_printed_is_masked_in_its_logs(gem: GemBuilder, opened: Callable) -> None:
    secret = "pipeline-secret-4711"
    tools = {
        "leaf": (f"def handle(input, ctx):\n    print({secret!r})\n    return 1\n", "py"),
        "top": ("def handle(input, ctx):\n    print('top')\n    return ctx.tools.leaf({})\n", "py"),
    }
    bench = opened(agent_gem(gem, **tools))
    # agent tools have no ctx.http, whose state holds the secrets a bench masks: give the bench
    # one, as a platform with both nested calls and ctx.http would have
    from workbench.ctx.http_credentials import HttpState
    from workbench.providers.http import make_transport

    bench.providers.backends["http"] = HttpState(make_transport("mock"))
    bench.providers.backends["http"].remember_secret(secret)
    res = bench.call("top")
    assert res.ok, res.error
    (child,) = res.children
    assert secret not in child.logs and "***" in child.logs
