"""The doctor attacked (docs/security.md, "The doctor"): a bench that acts for real (SMTP, HTTP,
a web search) is refused before any call reaches a server; `seconds=` bounds the whole run,
crash probes and a tool that sleeps or spins past its timeout included; a schema it cannot
draw from is one coded finding, quickly and in little memory; the bench is exactly as it was;
a pinned N7 case of a tool with hundreds of ctx calls replays in a bounded number of crashes;
the JUnit report is well-formed for any message. Real servers on 127.0.0.1, stopped after."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import GemBuilder
from test_agent import agent_gem
from test_agent_outbox import smtpd  # noqa: F401  (a fixture: aiosmtpd on 127.0.0.1)

import workbench
from workbench import UsageError
from workbench.doctor.findings import KINDS, Finding
from workbench.doctor.report import DoctorReport
from workbench.doctor.run import ToolStats
from workbench.testing import replay_case

MAIL = {
    "py": "def handle(input, ctx):\n    return ctx.tools.send_email({'to': 'ann@acme.example', "
    "'subject': 's', 'body_text': 'b'})\n",
    "js": "export async function handle(input, ctx) {\n  return await ctx.tools.send_email("
    "{to: 'ann@acme.example', subject: 's', body_text: 'b'});\n}\n",
}
SEARCH = {
    "py": "def handle(input, ctx):\n    return ctx.tools.web_search({'query': 'rust'})\n",
    "js": "export async function handle(input, ctx) {\n  return await ctx.tools.web_search({query: 'rust'});\n}\n",
}
FETCH = {
    "py": "def handle(input, ctx):\n    return ctx.http.fetch(URL).status\n",
    "js": "export default async function (input, ctx) {\n  return (await ctx.http.fetch(URL)).status;\n}\n",
}
LANGS = ["py", pytest.param("js", marks=pytest.mark.deno)]


# -- harmless: a bench acting outside itself is refused ------------------------------------
@pytest.mark.parametrize("lang", LANGS)
def test_a_real_smtp_outbox_gets_no_mail(
    lang: str, gem: GemBuilder, smtpd: Callable, opened: Callable
) -> None:
    from workbench.providers.outbox import SmtpOutbox

    recorder, port = smtpd()
    outbox = SmtpOutbox("127.0.0.1", port, sender="agent@acme.example", security="none", timeout=5)
    bench = opened(agent_gem(gem, mail=(MAIL[lang], lang)), outbox=outbox)
    bench.allow_recipients("*@acme.example")
    with pytest.raises(UsageError, match="outbox=") as info:
        bench.doctor(seconds=3, examples=5)
    assert info.value.code == "E_USAGE" and info.value.details["options"] == ["outbox="]
    assert recorder.received == []  # not one mail reached the server


@pytest.mark.parametrize("lang", LANGS)
def test_a_real_web_search_gets_no_request(
    lang: str, gem: GemBuilder, httpserver: Any, opened: Callable
) -> None:
    httpserver.expect_request("/search").respond_with_json({"results": []})
    bench = opened(agent_gem(gem, search=(SEARCH[lang], lang)), web_search=httpserver.url_for("/search"))
    with pytest.raises(UsageError, match="web_search="):
        bench.doctor(seconds=3, examples=5)
    assert len(httpserver.log) == 0


@pytest.mark.parametrize("lang", LANGS)
def test_real_http_gets_no_request(lang: str, gem: GemBuilder, httpserver: Any, opened: Callable) -> None:
    httpserver.expect_request("/").respond_with_data("hi")
    url = json.dumps(httpserver.url_for("/"))
    gem.tool("fetch", FETCH[lang].replace("URL", url), ext=lang)
    gem.manifest["permissions"] = {"http": {"connections": {}}}
    bench = opened(gem, http="real")
    with pytest.raises(UsageError, match="http='real'"):
        bench.doctor(seconds=3, examples=5)
    assert len(httpserver.log) == 0


def test_the_command_refuses_real_http_with_a_coded_line(gem: GemBuilder, httpserver: Any) -> None:
    httpserver.expect_request("/").respond_with_data("hi")
    gem.tool("fetch", FETCH["py"].replace("URL", json.dumps(httpserver.url_for("/"))))
    gem.manifest["permissions"] = {"http": {"connections": {}}}
    cmd = [sys.executable, "-m", "workbench", "doctor", str(gem.write()), "--http", "real", "--seconds", "2"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "error E_USAGE" in run.stderr and "http='real'" in run.stderr
    assert "Traceback" not in run.stderr and len(httpserver.log) == 0


def test_a_plugin_capability_declaring_real_effects_is_refused(
    gem: GemBuilder, opened: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A capability's own declaration (CapabilitySpec.real_effects) is what the doctor reads:
    the row of ctx.tools made to declare its mock outbox real is refused by that name."""
    import dataclasses

    from workbench.ctx import registry

    bench = opened(agent_gem(gem, mail=(MAIL["py"], "py")))
    bench.allow_recipients("*@acme.example")
    spec = dataclasses.replace(registry.SPECS["tools"], real_effects=lambda backend: ("pager=",))
    monkeypatch.setitem(registry.SPECS, "tools", spec)
    with pytest.raises(UsageError, match="pager="):
        bench.doctor(seconds=3, examples=5)
    assert bench.outbox().empty


# -- bounded: seconds= is the whole run ------------------------------------------------------
MANY_CALLS = {  # 300 ctx calls; its last, an insert without an idempotency key, is N7's
    "py": "def handle(input, ctx):\n    for i in range(299):\n        ctx.storage.kv.get(f'k{i}')\n"
    "    return ctx.data.collection('notes').insert({'n': 1})\n",
    "js": "export default async function (input, ctx) {\n  for (let i = 0; i < 299; i++) await ctx.storage.kv.get(`k${i}`);\n"
    "  return await ctx.data.collection('notes').insert({n: 1});\n}\n",
}


@pytest.mark.parametrize("lang", LANGS)
def test_a_tool_with_hundreds_of_ctx_calls_gets_sampled_crash_points(
    lang: str, gem: GemBuilder, opened: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.bench import crash as _crash

    crashes = []
    real = _crash.crash_call
    monkeypatch.setattr(_crash, "crash_call", lambda *a, **k: crashes.append(a[3]) or real(*a, **k))
    gem.tool("count", MANY_CALLS[lang], ext=lang, schema={"type": "object", "additionalProperties": False})
    bench = opened(gem.collections(notes=[]))
    # examples=: the same run on a loaded machine; the work is counted in crashes below
    report = bench.doctor(examples=3, seed=3, write=False)
    assert ("count", "N7") in {(f.tool, f.kind) for f in report.findings}  # the last point: found
    assert 0 < len(crashes) <= 2 * 12  # (two examples at most, each a sample; it was 301 each)
    said = report.summary()[0]["crash_points"]
    assert said.endswith("of 300 (sampled)") and "N7 crashed" in report.note


SLEEPS = "import time\n\ndef handle(input, ctx):\n    time.sleep(60)\n    return 1\n"
SPINS = "export default async function () {\n  for (;;) {}\n}\n"


@pytest.mark.parametrize(
    "src,ext", [(SLEEPS, "py"), pytest.param(SPINS, "js", marks=pytest.mark.deno)], ids=["sleeps", "spins"]
)
def test_a_tool_past_its_timeout_does_not_outlast_seconds(
    src: str, ext: str, gem: GemBuilder, opened: Callable
) -> None:
    gem.tool("stuck", src, ext=ext, side_effect="read")
    bench = opened(gem)
    t0 = time.monotonic()
    report = bench.doctor(seconds=3, seed=1, write=False)
    took = time.monotonic() - t0
    assert took < 12, took  # (it was 60 s a call, or the sandbox's 30 s)
    assert report.stopped and "seconds=" in report.note
    assert report.findings == []  # the interrupt is the doctor's, not the tool's failure
    assert bench.calls().empty  # the cut-off calls are not left behind either


# -- hostile schemas: one coded finding, quickly, in little memory ------------------------
HOSTILE: dict[str, tuple[Any, str]] = {
    "minLength": ({"type": "object", "properties": {"s": {"type": "string", "minLength": 2_000_000_000}}, "required": ["s"]}, "minLength"),
    "minItems": ({"type": "object", "properties": {"a": {"type": "array", "minItems": 1e9}}, "required": ["a"]}, "minItems"),
    "required": ({"type": "object", "properties": {"me": {"$ref": "#"}}, "required": ["me"]}, "required"),
    "ref_chain": ({"$defs": {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(1000)} | {"d1000": {"type": "object"}}, "$ref": "#/$defs/d0"}, "$ref"),
    "not": ({"type": "object", "not": {}}, "not"),
    "min_over_max": ({"type": "object", "properties": {"n": {"type": "integer", "minimum": 10, "maximum": 1}}, "required": ["n"]}, "minimum"),
    "prefixItems": ({"type": "object", "properties": {"t": {"type": "array", "prefixItems": [{"type": "string"}] * 3000}}, "required": ["t"]}, "prefixItems"),
    "dynamicRef": ({"$dynamicAnchor": "x", "type": "object", "properties": {"a": {"$dynamicRef": "#x"}}, "required": ["a"]}, "$dynamicRef"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_schema_is_one_coded_finding(name: str, gem: GemBuilder, opened: Callable) -> None:
    schema, keyword = HOSTILE[name]
    gem.tool("t", "def handle(input, ctx):\n    return 1\n", schema=schema, side_effect="read")
    bench = opened(gem)  # (the manifest's own checks let each of these through)
    t0 = time.monotonic()
    report = bench.doctor(seconds=5, seed=1)
    assert time.monotonic() - t0 < 10
    [finding] = report.findings
    assert finding.kind == "schema" and finding.message.startswith("E_SCHEMA") and keyword in finding.message
    assert finding.case is None and report.to_json()["findings"][0]["kind"] == "schema"


MEMORY = """
import json, resource, sys
import workbench
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with workbench.open(sys.argv[1], state_dir=sys.argv[2]) as bench:
    report = bench.doctor(examples=5, seed=1, write=False)  # (counted: as many on a loaded machine)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"kinds": [f.kind for f in report.findings], "grew_kb": after - before}))
"""


def test_a_schema_needing_gigabytes_takes_none(gem: GemBuilder, tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {"s": {"type": "string", "minLength": 2_000_000_000}},
        "required": ["s"],
    }
    gem.tool("t", "def handle(input, ctx):\n    return 1\n", schema=schema, side_effect="read")
    root = gem.write()
    run = subprocess.run(
        [sys.executable, "-c", MEMORY, str(root), str(tmp_path / "state")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["kinds"] == ["schema"]
    assert out["grew_kb"] < 200_000  # under 200 MB past the interpreter's start (it was 2 GB)


# -- the bench exactly as before ----------------------------------------------------------
AGENT = """
def handle(input, ctx):
    ctx.audit('note', {'x': 1})
    ctx.tools.send_email({'to': 'ann@acme.example', 'subject': 's', 'body_text': 'b'})
    return {'ok': True}
"""
NOTO = """
def handle(input, ctx):
    ctx.storage.kv.set('n', 'x')
    return ctx.http.fetch('https://api.example/x').status
"""


def _said(bench: workbench.Bench) -> dict[str, Any]:
    views = {"calls": len(bench.calls()), "clock": (bench.clock.mode, bench.clock.time())}
    if bench.profile.name == "agent":
        views |= {"outbox": len(bench.outbox()), "audit": len(bench.audit())}
    else:
        views |= {"http": len(bench.http()), "kv": bench.kv().to_dict("records")}
    return views


@pytest.mark.parametrize("first", [True, False], ids=["after_a_call", "fresh"])
@pytest.mark.parametrize("platform", ["agent", "notochord"])
def test_the_bench_is_exactly_as_before(
    platform: str, first: bool, gem: GemBuilder, opened: Callable
) -> None:
    if platform == "agent":
        bench = opened(agent_gem(gem, act=(AGENT, "py")), clock="2030-01-02T03:04:05Z")
        bench.allow_recipients("*@acme.example")
    else:
        gem.tool("act", NOTO)
        gem.manifest["permissions"] = {"http": {"connections": {}}}
        bench = opened(
            gem, clock="2030-01-02T03:04:05Z", http=[{"match": "https://", "respond": {"text": "x"}}]
        )
    latest = bench.call("act", {}) if first else None
    before = _said(bench)
    seed_next = bench.core.rng.getstate()
    report = bench.doctor(seconds=3, seed=1, write=False)
    assert sum(s["examples"] for s in report.summary()) > 5  # it did call, many times
    assert _said(bench) == before  # the call log, outbox, audit, HTTP log, state and frozen clock
    assert bench.core.rng.getstate() == seed_next  # the bench's seed stream: the next call's ids as before
    assert latest is None or latest.pin("after_the_doctor").is_file()  # the latest call can still be pinned


def test_a_set_clock_runs_on_as_if_no_doctor_ran(gem: GemBuilder, opened: Callable) -> None:
    gem.tool(
        "act", NOTO.replace("    return ctx.http.fetch('https://api.example/x').status\n", "    return 1\n")
    )
    bench = opened(gem)
    bench.clock.set("2030-01-02T03:04:05Z")  # running on from there
    ahead = bench.clock.time() - time.time()
    bench.doctor(seconds=3, seed=1, write=False)
    assert bench.clock.mode == "running" and abs(bench.clock.time() - time.time() - ahead) < 0.5


# -- a hostile pinned case replays in few crashes ------------------------------------------
def test_a_pinned_n7_case_of_300_ctx_calls_replays_in_few_crashes(
    gem: GemBuilder, opened: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.bench import crash as _crash

    gem.tool("count", MANY_CALLS["py"], schema={"type": "object", "additionalProperties": False})
    bench = opened(gem.collections(notes=[]))
    report = bench.doctor(seconds=8, seed=3)
    [case] = [f.case for f in report.findings if f.kind == "N7"]
    crashes: list[int] = []
    real = _crash.crash_call
    monkeypatch.setattr(_crash, "crash_call", lambda *a, **k: crashes.append(a[3]) or real(*a, **k))
    assert not replay_case(case).ok and len(crashes) == 1  # its own crash point first: found again
    # the tool fixed (an idempotent write), so no point finds it: a sample, not 300 crashes
    fixed = MANY_CALLS["py"].replace(
        "return ctx.data.collection('notes').insert({'n': 1})", "ctx.storage.kv.set('n', '1')"
    )
    (gem.root / "tools" / "count.py").write_text(fixed)
    crashes.clear()
    t0 = time.monotonic()
    assert replay_case(case).ok
    assert 1 < len(crashes) <= 12 and time.monotonic() - t0 < 30


# -- the JUnit report is well-formed for any message ---------------------------------------
def test_the_junit_report_is_well_formed_for_any_message(tmp_path: Path) -> None:
    hostile = "a\x00b\x01c]]></failure><x>\ud800\udfff\ufffe\x1b[31m & \"'<"
    finding = Finding(hostile, "throw", "-", hostile, {"k": hostile}, "fixtures")
    report = DoctorReport(f"gem{hostile}", [finding], {hostile: ToolStats(examples=1)}, 1.0, 0)
    path = report.junit(tmp_path / "doctor.xml")
    root = ET.parse(path).getroot()
    [failed] = root.iter("failure")
    assert "]]></failure><x>" in failed.get("message", "") and "\\u0000" in failed.text
    assert "\x00" not in path.read_text("utf-8")
    assert len(list(root.iter("testcase"))) == len(KINDS)
