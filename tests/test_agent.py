"""Agent custom tools (seed 002, rules A1–A6) on the platform seam: the profile, its ctx in
Python and JS, ctx.tools' dispatch and limits, ctx.audit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import GemBuilder
from test_agent_outbox import smtpd  # noqa: F401  (a fixture: aiosmtpd on 127.0.0.1)

import workbench
from workbench import GemLoadError
from workbench.platforms import Limits

IDS = """
def handle(input, ctx):
    return {k: getattr(ctx, k) for k in ("agentId", "agentName", "powerUserId", "toolCallId", "conversationId")}
"""
JS_IDS = """
export async function handle(input, ctx) {
  const { agentId, agentName, powerUserId, toolCallId, conversationId } = ctx;
  return { agentId, agentName, powerUserId, toolCallId, conversationId };
}
"""
PLAIN = """
import { helper } from "./lib/helper.js";
async function handle(input, ctx) { return { plain: helper(input.x) }; }
"""
PY_ASYNC = """
async def handle(input, ctx):
    r = await ctx.tools.calculate({"expression": input["e"]})
    await ctx.audit("calculated", {"e": input["e"], "r": r})
    return r
"""
JS_CALC = """
export async function handle(input, ctx) {
  const r = await ctx.tools.calculate({ expression: input.e });
  await ctx.audit("calculated", { e: input.e, r });
  return r;
}
"""
LOOP = {
    "py": "def handle(input, ctx):\n    for i in range(100):\n        ctx.tools.calculate({'expression': '1+1'})\n    return 'done'\n",
    "js": "export async function handle(input, ctx) {\n  for (let i = 0; i < 100; i++) {\n    try { await ctx.tools.calculate({ expression: '1+1' }); } catch (e) {}\n  }\n  return 'done';\n}\n",
}


def agent_gem(gem: GemBuilder, **tools: tuple[str, str]) -> Path:
    for name, (src, ext) in tools.items():
        gem.tool(name, src, ext=ext)
    return gem.as_agent("agent-123", "Research helper").write()


@pytest.mark.deno
def test_A1_handle_exported_plain_or_python(gem: GemBuilder, opened: Callable) -> None:
    root = agent_gem(gem, plain=(PLAIN, "js"), ids=(IDS, "py"), jsids=(JS_IDS, "js"), pya=(PY_ASYNC, "py"))
    (root / "tools" / "lib").mkdir()
    (root / "tools" / "lib" / "helper.js").write_text("export const helper = (x) => x * 2;\n")
    bench = opened(root)
    assert bench.profile.name == "agent"
    assert bench.call("plain", {"x": 21}).value == {"plain": 42}  # its relative import works
    assert bench.call("pya", {"e": "6*7"}).value == {"result": 42}
    assert bench.call("jsids").ok and bench.call("ids").ok


@pytest.mark.deno
@pytest.mark.parametrize("tool", ["ids", "jsids"])
def test_A2_ctx_identity_per_bench_and_call(tool: str, gem: GemBuilder, opened: Callable) -> None:
    bench = opened(agent_gem(gem, ids=(IDS, "py"), jsids=(JS_IDS, "js")))
    owner = bench.call(tool).value
    assert owner["agentId"] == "agent-123" and owner["agentName"] == "Research helper"
    assert owner["powerUserId"] is None and owner["conversationId"] is None
    sub = bench.call(tool, as_user="sub-42", conversation="c-1").value
    assert sub["powerUserId"] == "sub-42" and sub["conversationId"] == "c-1"
    assert sub["toolCallId"].startswith("call_") and sub["toolCallId"] != owner["toolCallId"]


def test_A2_call_options_are_checked(gem: GemBuilder) -> None:
    with workbench.open(agent_gem(gem, ids=(IDS, "py"))) as bench:
        with pytest.raises(workbench.UsageError, match="as_user"):
            bench.call("ids", as_user=42)  # type: ignore[arg-type]


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_A3_A6_a_builtin_call_is_checked_and_audited(lang: str, gem: GemBuilder, opened: Callable) -> None:
    bench = opened(agent_gem(gem, calc=(PY_ASYNC if lang == "py" else JS_CALC, lang)))
    res = bench.call("calc", {"e": "2**10"})
    assert res.value == {"result": 1024}
    audit = bench.audit()
    assert audit["event"].tolist() == ["tool:calculate", "calculated"]
    assert audit["seq"].tolist() == [1, 2] and audit["toolCallId"].nunique() == 1
    assert audit["data"].iloc[1] == {"e": "2**10", "r": {"result": 1024}}
    bad = bench.call("calc", {"e": "__import__('os')"}).value  # A4: an envelope, not a throw
    assert bad["error"] == "invalid_expression"


def test_A4_invalid_input_to_a_builtin_is_an_envelope(gem: GemBuilder) -> None:
    src = "def handle(input, ctx):\n    return ctx.tools.calculate({'expr': 1})\n"
    with workbench.open(agent_gem(gem, t=(src, "py"))) as bench:
        env = bench.call("t").value
    assert env["error"] == "invalid_input" and env["details"]["tool"] == "calculate"


def test_A4_a_disabled_builtin_is_not_there(gem: GemBuilder) -> None:
    src = "def handle(input, ctx):\n    return sorted(dir(ctx.tools))\n"
    root = agent_gem(gem, t=(src, "py"))
    gem.manifest["builtins"] = ["calculate"]
    gem.write()
    with workbench.open(root) as bench:
        assert bench.call("t").value == ["calculate", "t"]


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_A5_the_51st_cross_tool_call_aborts_the_invocation(
    lang: str, gem: GemBuilder, opened: Callable
) -> None:
    bench = opened(agent_gem(gem, loop=(LOOP[lang], lang)))
    res = bench.call("loop")
    assert res.error is not None and res.error.code == "E_LIMIT", res
    assert res.error.details["limit"] == 50 and len(res.error.details["chain"]) == 51
    assert "calculate ×51" in res.error.message
    assert (bench.audit()["event"] == "tool:calculate").sum() == 50


def test_A5_the_limit_is_the_profiles_and_can_be_made_small(gem: GemBuilder) -> None:
    with workbench.open(agent_gem(gem, loop=(LOOP["py"], "py")), limits=Limits(tool_calls=3)) as bench:
        res = bench.call("loop")
    assert res.error.code == "E_LIMIT" and res.error.details["limit"] == 3


def test_agent_ctx_has_nothing_else(gem: GemBuilder) -> None:
    src = "def handle(input, ctx):\n    return sorted(dir(ctx))\n"
    with workbench.open(agent_gem(gem, t=(src, "py"))) as bench:
        names = bench.call("t").value
    assert names == ["agentId", "agentName", "audit", "conversationId", "powerUserId", "toolCallId", "tools"]


def test_agent_manifest_errors_name_the_file_and_pointer(gem: GemBuilder) -> None:
    root = agent_gem(gem, t=("def handle(i, c): return 1", "py"))
    gem.manifest.pop("agent")
    gem.manifest["builtins"] = ["teleport"]
    gem.write()
    with pytest.raises(GemLoadError) as err:
        workbench.open(root)
    pointers = {p["pointer"] for p in err.value.details["problems"]}
    assert {"", "/builtins/0"} <= pointers, pointers


def test_agent_tool_named_like_a_builtin_is_refused(gem: GemBuilder) -> None:
    root = agent_gem(gem, calculate=("def handle(i, c): return 1", "py"))
    with pytest.raises(GemLoadError, match="built-in"):
        workbench.open(root)


SEARCH = {
    "py": "def handle(input, ctx):\n    return ctx.tools.web_search({'query': input['q'], 'count': 2})\n",
    "js": "export async function handle(input, ctx) {\n  return await ctx.tools.web_search({ query: input.q, count: 2 });\n}\n",
}
FIXTURE = [
    {
        "query": "deno sandbox",
        "results": [{"title": "Deno", "url": "https://deno.example/", "snippet": "s"}] * 3,
    },
    {
        "query": "/^jupyter/",
        "results": [{"title": "Jupyter", "url": "https://jupyter.example/", "snippet": "j"}],
    },
]


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_A3_web_search_answers_from_the_gems_fixtures(lang: str, gem: GemBuilder, opened: Callable) -> None:
    import json

    root = agent_gem(gem, s=(SEARCH[lang], lang))
    (root / "fixtures").mkdir()
    (root / "fixtures" / "web_search.json").write_text(json.dumps(FIXTURE))
    bench = opened(root)
    assert [r["title"] for r in bench.call("s", {"q": "deno sandbox"}).value] == ["Deno", "Deno"]
    assert bench.call("s", {"q": "jupyter kernels"}).value[0]["title"] == "Jupyter"
    miss = bench.call("s", {"q": "nothing"}).value  # A4: an envelope naming the query
    assert miss["error"] == "search_failed" and "nothing" in miss["details"]["message"]


def test_A3_web_search_against_a_searxng_endpoint(gem: GemBuilder, httpserver: Any) -> None:
    answer = {"results": [{"title": "T", "url": "https://t.example/", "content": "snippet"}]}
    httpserver.expect_request("/search", query_string={"q": "q1", "format": "json"}).respond_with_json(answer)
    root = agent_gem(gem, s=(SEARCH["py"], "py"))
    with workbench.open(root, web_search=httpserver.url_for("/search")) as bench:
        value = bench.call("s", {"q": "q1"}).value
    assert value == [{"title": "T", "url": "https://t.example/", "snippet": "snippet"}]


NULL_COUNT = {
    "py": "def handle(input, ctx):\n    return ctx.tools.web_search({'query': input['q'], 'count': None})\n",
    "js": "export async function handle(input, ctx) {\n  return await ctx.tools.web_search({ query: input.q, count: null });\n}\n",
}
NULL_EXTRA = {
    "py": "def handle(input, ctx):\n    return ctx.tools.calculate({'expression': '1+1', 'zzz': None})\n",
    "js": "export async function handle(input, ctx) {\n  return await ctx.tools.calculate({ expression: '1+1', zzz: null });\n}\n",
}


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_A3_N8_builtins_apply_the_null_rule_as_the_gems_tools(
    lang: str, gem: GemBuilder, opened: Callable
) -> None:
    import json

    root = agent_gem(gem, s=(NULL_COUNT[lang], lang), extra=(NULL_EXTRA[lang], lang))
    (root / "fixtures").mkdir()
    (root / "fixtures" / "web_search.json").write_text(json.dumps(FIXTURE))
    bench = opened(root)
    found = bench.call("s", {"q": "deno sandbox"}).value  # count: null is absent, the default 5
    assert [r["title"] for r in found] == ["Deno"] * 3
    extra = bench.call("extra").value  # an undeclared null is still an extra field
    assert extra["error"] == "invalid_input"
    assert extra["details"]["violations"] == [
        {"path": "/zzz", "message": "unexpected field 'zzz' (additionalProperties is false)"}
    ]


MAIL = {
    "py": "def handle(input, ctx):\n    return ctx.tools.send_email(input)\n",
    "js": "export async function handle(input, ctx) {\n  return await ctx.tools.send_email(input);\n}\n",
}
NOTE = {"to": "ann@acme.example", "subject": "Re: sources", "body_text": "Hi — here's what we found."}


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_A3_send_email_goes_only_to_allowed_recipients(lang: str, gem: GemBuilder, opened: Callable) -> None:
    bench = opened(agent_gem(gem, mail=(MAIL[lang], lang)))
    refused = bench.call("mail", NOTE).value  # A4: the recipient check's envelope resolves
    assert refused["error"] == "recipient_not_allowed" and refused["details"]["recipients"] == [NOTE["to"]]
    assert bench.outbox().empty
    bench.allow_recipients("*@acme.example")
    sent = bench.call("mail", {**NOTE, "cc": ["bob@acme.example"]}).value
    assert sent["message_id"].startswith("<")
    out = bench.outbox()
    assert out["to"].tolist() == [[NOTE["to"]]] and out["cc"].tolist() == [["bob@acme.example"]]
    assert out["subject"].tolist() == ["Re: sources"] and out["id"].tolist() == [sent["message_id"]]
    assert (bench.audit()["event"] == "tool:send_email").sum() == 2  # each call audited


@pytest.mark.parametrize("subject", ["x\r\nBcc: all@evil.example", "x\nBcc: all@evil.example", "x\rY"])
def test_A3_send_email_refuses_a_header_injection(subject: str, gem: GemBuilder) -> None:
    with workbench.open(agent_gem(gem, mail=(MAIL["py"], "py"))) as bench:
        bench.allow_recipients("*@acme.example")
        env = bench.call("mail", {**NOTE, "subject": subject}).value
        assert env["error"] == "invalid_input" and env["details"]["reason"] == "header_injection"
        assert bench.outbox().empty


def test_allow_recipients_checks_its_patterns(gem: GemBuilder) -> None:
    with workbench.open(agent_gem(gem, mail=(MAIL["py"], "py"))) as bench:
        for bad in ("nobody", "a@x.example,b@y.example", "a@x\r\n"):
            with pytest.raises(workbench.UsageError):
                bench.allow_recipients(bad)


def test_A3_send_email_over_smtp(gem: GemBuilder, smtpd: Callable) -> None:
    from workbench.providers.outbox import SmtpOutbox

    recorder, port = smtpd()
    outbox = SmtpOutbox("127.0.0.1", port, sender="agent@acme.example", security="none")
    with workbench.open(agent_gem(gem, mail=(MAIL["py"], "py")), outbox=outbox) as bench:
        bench.allow_recipients("ann@acme.example")
        sent = bench.call("mail", NOTE).value
        refused = bench.call("mail", {**NOTE, "to": "eve@evil.example"}).value
    assert sent["message_id"] and refused["error"] == "recipient_not_allowed"
    assert len(recorder.received) == 1
    got = recorder.message()
    assert (
        got["Subject"] == "Re: sources"
        and got["To"] == NOTE["to"]
        and got["Message-ID"] == sent["message_id"]
    )


FORGE = {
    "py": "def handle(input, ctx):\n    ctx.audit('tool:send_email', input)\n    return ctx.tools.send_email(input)\n",
    "js": "export async function handle(input, ctx) {\n  await ctx.audit('tool:send_email', input);\n"
    "  return await ctx.tools.send_email(input);\n}\n",
}


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_A6_a_tools_own_row_is_told_from_the_platforms_in_every_view(
    lang: str, gem: GemBuilder, smtpd: Callable, opened: Callable
) -> None:
    """A tool writing ctx.audit('tool:send_email', …) as a real mail goes out over SMTP: its row
    says source "tool", the platform's "platform", and no argument of ctx.audit sets it."""
    from workbench.providers.outbox import SmtpOutbox

    recorder, port = smtpd()
    outbox = SmtpOutbox("127.0.0.1", port, sender="agent@acme.example", security="none")
    bench = opened(agent_gem(gem, forge=(FORGE[lang], lang)), outbox=outbox)
    bench.allow_recipients("ann@acme.example")
    res = bench.call("forge", {**NOTE, "source": "platform"})  # a field named like the column
    assert res.value["error"] == "invalid_input" and not recorder.received  # the extra field
    assert bench.call("forge", NOTE).value["message_id"] and len(recorder.received) == 1
    log = bench.audit()
    assert log["event"].tolist() == ["tool:send_email"] * 4
    assert log["source"].tolist() == ["tool", "platform"] * 2
    assert log["data"].iloc[0] == {**NOTE, "source": "platform"}  # the data, not the column
    assert log["data"].iloc[1] == {**NOTE, "source": "platform"}  # the input the model's call had


def test_SEC5_A6_the_platforms_row_keeps_a_copy_of_the_input_within_the_row_limit(
    gem: GemBuilder, opened: Callable
) -> None:
    """A ctx.tools call's input the tool changes afterwards, or one over audit_row_chars: the
    platform's row keeps what was passed, or says it kept nothing (it never refuses)."""
    src = (
        "def handle(input, ctx):\n    e = {'expression': '1+1'}\n    ctx.tools.calculate(e)\n"
        "    e['expression'] = 'changed'\n    return ctx.tools.calculate({'expression': '1+' * 600 + '1'})\n"
    )
    bench = opened(agent_gem(gem, t=(src, "py")), limits=Limits(audit_row_chars=1000))
    assert bench.call("t").value == {"result": 601}
    data = bench.audit()["data"].tolist()
    assert data[0] == {"expression": "1+1"}
    assert data[1]["_dropped"] == (
        "the input is not kept: the data is 1,218 JSON characters; an audit row holds at most 1,000 "
        "(Limits.audit_row_chars)"
    )


NESTED = {
    "self_py": "def handle(input, ctx):\n    return ctx.tools.self_py({'n': input.get('n', 0) + 1})\n",
    "self_js": "export async function handle(input, ctx) {\n  return await ctx.tools.self_py({ n: 0 });\n}\n",
    "self_jsr": "export async function handle(input, ctx) {\n  return await ctx.tools.self_jsr({});\n}\n",
    "double": "def handle(input, ctx):\n    return {'twice': input['x'] * 2}\n",
    "js_double": "export async function handle(input, ctx) { return { twice: input.x * 2 }; }\n",
    "boom": "def handle(input, ctx):\n    raise ValueError('no')\n",
    "odd": "def handle(input, ctx):\n    return {1, 2}\n",
    "caller_py": """
def handle(input, ctx):
    out = {}
    for name, arg in input['calls']:
        try:
            out[name] = getattr(ctx.tools, name)(arg)
        except Exception as exc:
            out[name] = {'thrown': getattr(exc, 'code', type(exc).__name__), 'message': str(exc)}
    return out
""",
    "caller_js": """
export async function handle(input, ctx) {
  const out = {};
  for (const [name, arg] of input.calls) {
    try { out[name] = await ctx.tools[name](arg); }
    catch (e) { out[name] = { thrown: e.code ?? e.name, message: e.message }; }
  }
  return out;
}
""",
}


def nested_gem(gem: GemBuilder) -> Path:
    tools = {n: (src, "js" if "js" in n else "py") for n, src in NESTED.items()}
    tools["double"] = (NESTED["double"], "py")
    root = agent_gem(gem, **tools)
    for t in gem.manifest["tools"]:
        if t["name"] in ("double", "js_double"):
            t["parameters"] = {"type": "object", "required": ["x"], "properties": {"x": {"type": "number"}}}
    gem.write()
    return root


@pytest.mark.deno
@pytest.mark.parametrize("caller", ["caller_py", "caller_js"])
def test_A3_A4_a_tool_calls_the_gems_own_tools(caller: str, gem: GemBuilder, opened: Callable) -> None:
    bench = opened(nested_gem(gem))
    calls = [["double", {"x": 21}], ["boom", {}], ["odd", {}]]
    if caller == "caller_py":
        calls.append(["js_double", {"x": 4}])
    out = bench.call(caller, {"calls": calls}).raise_for_error().value
    assert out["double"] == {"twice": 42}
    assert out["boom"]["thrown"] == "E_TOOL_ERROR" and "ValueError" in out["boom"]["message"]  # A4: throws
    assert out["odd"]["thrown"] == "E_RESULT_NOT_JSON"
    if caller == "caller_py":
        assert out["js_double"] == {"twice": 8}
    bad = bench.call(caller, {"calls": [["double", {"x": "no"}]]}).value["double"]
    assert bad["error"] == "invalid_input"  # the callee's schema, as for the model
    events = bench.audit()["event"].tolist()
    assert "tool:double" in events and "tool:boom" in events


@pytest.mark.deno
def test_A3_a_js_tool_calls_a_js_tool_in_the_same_sandbox(gem: GemBuilder, opened: Callable) -> None:
    bench = opened(nested_gem(gem))
    res = bench.call("caller_js", {"calls": [["js_double", {"x": 1}], ["js_double", {"x": "no"}]]})
    out = res.raise_for_error().value
    assert out["js_double"]["error"] == "invalid_input"  # the callee's schema
    res = bench.call("caller_js", {"calls": [["js_double", {"x": 5}]]})
    assert res.value == {"js_double": {"twice": 10}}
    assert [c.tool for c in res.children] == ["js_double"] and res.children[0].parent == res.call_id
    # the caller's ctx still works after the nested call ended (its own call is in flight)
    again = bench.call("caller_js", {"calls": [["js_double", {"x": 2}], ["double", {"x": 3}]]})
    assert again.value == {"js_double": {"twice": 4}, "double": {"twice": 6}}


@pytest.mark.parametrize("tool", ["self_py", pytest.param("self_js", marks=pytest.mark.deno)])
def test_A5_recursion_is_stopped_at_50_calls_with_the_chain(
    tool: str, gem: GemBuilder, opened: Callable
) -> None:
    bench = opened(nested_gem(gem))
    res = bench.call(tool)
    assert res.error is not None and res.error.code == "E_LIMIT", res
    assert res.error.details["chain"] == ["self_py"] * 51
    assert "self_py ×51" in res.error.message


@pytest.mark.deno
def test_A5_a_js_tool_recursing_through_js_is_stopped_at_50_calls(gem: GemBuilder, opened: Callable) -> None:
    bench = opened(nested_gem(gem))
    res = bench.call("self_jsr")
    assert res.error is not None and res.error.code == "E_LIMIT", res
    assert res.error.details["chain"] == ["self_jsr"] * 51
    assert len(bench.calls()) == 51  # the top call and its 50 nested ones, each with its parent
    assert bench.call("js_double", {"x": 1}).value == {"twice": 2}  # the sandbox is still fine


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_A4_an_injected_dispatch_failure_throws_and_an_injected_envelope_resolves(
    lang: str, gem: GemBuilder, opened: Callable
) -> None:
    src = {
        "py": "def handle(input, ctx):\n    try:\n        return ctx.tools.calculate({'expression': '1+1'})\n"
        "    except Exception as exc:\n        return {'thrown': exc.code, 'message': str(exc)}\n",
        "js": "export async function handle(input, ctx) {\n  try { return await ctx.tools.calculate({ expression: '1+1' }); }\n"
        "  catch (e) { return { thrown: e.code, message: e.message }; }\n}\n",
    }
    bench = opened(agent_gem(gem, t=(src[lang], lang)))
    bench.inject_fault("calculate", times=2)
    bench.inject_fault("calculate", mode="envelope")
    first, second, third, fourth = (bench.call("t").value for _ in range(4))
    assert first["thrown"] == second["thrown"] == "E_DISPATCH" and "inject_fault" in first["message"]
    assert third == {"error": "unavailable", "details": {"tool": "calculate", "injected": True}}
    assert fourth == {"result": 2}


def test_inject_fault_checks_its_arguments(gem: GemBuilder) -> None:
    with workbench.open(agent_gem(gem, t=("def handle(i, c): return 1", "py"))) as bench:
        for args, kw in (
            (("teleport",), {}),
            (("calculate",), {"times": 0}),
            (("calculate",), {"mode": "x"}),
        ):
            with pytest.raises(workbench.UsageError):
                bench.inject_fault(*args, **kw)


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_agent_ctx_files_is_undefined_with_an_explanation(
    lang: str, gem: GemBuilder, opened: Callable
) -> None:
    src = {
        "py": "def handle(input, ctx):\n    return ctx.files.read('a.txt')\n",
        "js": "export async function handle(input, ctx) {\n  return await ctx.files.read('a.txt');\n}\n",
    }
    err = opened(agent_gem(gem, t=(src[lang], lang))).call("t").error
    assert err.code == "E_TOOL_ERROR"
    assert "agent custom tools have no ctx.files" in err.message and "ctx.tools" in err.message


def test_nested_calls_are_in_bench_calls_with_their_parent(gem: GemBuilder) -> None:
    with workbench.open(nested_gem(gem)) as bench:
        outer = bench.call("caller_py", {"calls": [["double", {"x": 1}], ["boom", {}]]})
        calls = bench.calls()
    nested = calls[calls["parent"] == outer.call_id]
    assert nested["tool"].tolist() == ["double", "boom"] and nested["ok"].tolist() == [True, False]
    assert calls.loc[calls["call_id"] == outer.call_id, "parent"].isna().all()


SURFACE = {
    "py": "def handle(input, ctx):\n    return ctx.tools.surface_file(input)\n",
    "js": "export async function handle(input, ctx) {\n  return await ctx.tools.surface_file(input);\n}\n",
}


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_A3_surface_file_shows_a_file_of_the_agents_files(
    lang: str, gem: GemBuilder, opened: Callable, tmp_path: Path
) -> None:
    import os

    from workbench.jupyter.display import result_html

    root = agent_gem(gem, s=(SURFACE[lang], lang))
    files = tmp_path / "files"  # open(files=...): the agent's files, outside the gem
    (files / "reports").mkdir(parents=True)
    (files / "reports" / "q3.csv").write_text("region,total\nnorth,12\n")
    (tmp_path / "secret.txt").write_text("secret")
    (files / "link.txt").symlink_to(tmp_path / "secret.txt")
    os.mkfifo(files / "pipe.csv")
    bench = opened(root, files=files)
    res = bench.call("s", {"path": "reports/q3.csv", "title": "Q3"})
    assert res.value == {
        "surfaced": True,
        "path": "reports/q3.csv",
        "name": "q3.csv",
        "mimeType": "text/csv",
        "sizeBytes": 22,
        "title": "Q3",
    }
    page = result_html(res)
    assert "shown to the user (1)" in page and "north,12" in page
    for bad, error in (
        ("../manifest.json", "invalid_path"),
        ("/etc/passwd", "invalid_path"),
        ("link.txt", "invalid_path"),
        ("pipe.csv", "not_found"),
        ("nope.txt", "not_found"),
    ):
        assert bench.call("s", {"path": bad}).value["error"] == error, bad


def test_the_result_display_shows_the_call_tree(gem: GemBuilder) -> None:
    from workbench.jupyter.display import result_html

    with workbench.open(nested_gem(gem)) as bench:
        outer = bench.call("caller_py", {"calls": [["double", {"x": 1}], ["boom", {}]]})
        page = result_html(outer)
        assert [c.tool for c in outer.children] == ["double", "boom"]
        assert "calls through ctx.tools (2)" in page and "<b>double</b>" in page and "E_TOOL_ERROR" in page
        deep = bench.call("self_py")  # the recursion: 50 nested levels, one line each
        node, depth = deep, 0
        while node.children:
            node, depth = node.children[0], depth + 1
        assert depth == 50 and result_html(deep).count("<b>self_py</b>") == 51  # itself + 50 nested


def test_the_result_display_shows_what_the_agent_and_the_user_see(gem: GemBuilder) -> None:
    from workbench.jupyter.display import result_html

    src = "def handle(input, ctx):\n    return {'rows': 3, '_llm': 'three rows found', '_render': {'type': 'table'}}\n"
    with workbench.open(agent_gem(gem, t=(src, "py"))) as bench:
        page = result_html(bench.call("t"))
    assert "what the agent sees" in page and "three rows found" in page and "table" in page


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_A6_audit_refuses_what_a_log_row_cannot_hold(lang: str, gem: GemBuilder, opened: Callable) -> None:
    """Hostile arguments to ctx.audit: a coded E_INVALID_ARGUMENT each, nothing logged."""
    src = {
        "py": """
def handle(input, ctx):
    deep = []
    for _ in range(1000):
        deep = [deep]
    cyclic = {}
    cyclic["self"] = cyclic
    out = []
    for args in (("x" * 201,), (42,), ("", None), ("e", deep), ("e", cyclic), ("e", "x" * 2_000_000)):
        try:
            ctx.audit(*args)
            out.append("logged")
        except Exception as exc:
            out.append(exc.code)
    return out
""",
        "js": """
export async function handle(input, ctx) {
  let deep = [];
  for (let i = 0; i < 1000; i++) deep = [deep];
  const out = [];
  for (const args of [["x".repeat(201)], [42], ["", null], ["e", deep], ["e", 10n], ["e", "x".repeat(2000000)]]) {
    try { await ctx.audit(...args); out.push("logged"); } catch (e) { out.push(e.code); }
  }
  return out;
}
""",
    }
    bench = opened(agent_gem(gem, t=(src[lang], lang)))
    res = bench.call("t")
    assert res.value == ["E_INVALID_ARGUMENT"] * 6 or (
        lang == "js" and res.value[:4] == ["E_INVALID_ARGUMENT"] * 4
    ), res
    assert bench.audit().empty


@pytest.mark.parametrize(
    "file",
    ["tools/../../outside.py", "tools/../manifest.py", "tools/link.py"],
    ids=["up", "gem-root", "link-out"],
)
def test_the_agent_loader_confines_tool_files(file: str, gem: GemBuilder, tmp_path: Path) -> None:
    root = agent_gem(gem, t=("def handle(i, c): return 1", "py"))
    (tmp_path / "outside.py").write_text("def handle(i, c): return 'escaped'\n")
    (root / "manifest.py").write_text("def handle(i, c): return 'root'\n")
    (root / "tools" / "link.py").symlink_to(tmp_path / "outside.py")
    gem.manifest["tools"][0]["file"] = file
    gem.write()
    with pytest.raises(GemLoadError) as err:
        workbench.open(root)
    assert err.value.code == "E_MANIFEST"
