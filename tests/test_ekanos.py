"""Ekanos integrations (seed 003, K1–K7) through the workbench: loading (the SDK's checks, the
module run in a Worker), the ctx (storage.account, secrets, fetch, logger), the three outcomes,
effective names and collisions. The SDK itself is tested in test_ekanos_sdk.py."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import workbench
from workbench import GemLoadError
from workbench._present import presenter
from workbench.ctx.http_egress import egress_problem
from workbench.platforms import lint
from workbench.platforms.ekanos.loader import egress_entry_problem
from workbench.providers.hostnames import read_address
from workbench.providers.http import HttpRequest, HttpResponse, RealTransport

pytestmark = pytest.mark.deno

ACME = Path(__file__).resolve().parent.parent / "notebooks" / "gems" / "acme-payments"
SDK = Path(workbench.__file__).parent / "platforms" / "ekanos" / "sdk"
LOCATION = {"label": "San Francisco", "latitude": 37.7749, "longitude": -122.4194}
WEATHER = {
    "match": "https://api.acme.example/v1/weather",
    "respond": {"json": {"temperature": 12.4, "units": "celsius"}},
}


def integration(root: Path, tools: str, *, slug: str = "demo", extra: str = "", head: str = "") -> Path:
    """An integration folder whose `tools: [...]` is the given TS text."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "integration.ts").write_text(
        "import { defineIntegration } from '@ekanos/sdk';\n"
        + head
        + f"export default defineIntegration({{ slug: '{slug}', egress: ['api.demo.example'], {extra}\n"
        + f"  tools: [{textwrap.dedent(tools)}] }});\n"
    )
    return root


def tool(
    name: str, run: str, *, params: str = "{ type: 'object', properties: {} }", example: str = "{ ok: true }"
) -> str:
    return f"{{ name: '{name}', description: 'd', parameters: {params}, outputExample: {example},\n  async run(ctx, args) {{ {run} }} }},\n"


@pytest.fixture
def acme(opened: Callable) -> Callable[..., workbench.Bench]:
    def make(**kw: Any) -> workbench.Bench:
        kw.setdefault("account_storage", {"settings/location": LOCATION})
        kw.setdefault("secrets", {"api_key": "sk_test_51Habc"})
        return opened(ACME, **kw)

    return make


# -- K1, K4: loading --------------------------------------------------------------------------


def test_K1_K4_the_seed_integration_loads_with_effective_names(acme: Callable) -> None:
    bench = acme()
    df = bench.tools()
    seed = ["get_current_weather", "list_recent_payments", "refund_payment"]
    assert df["name"].tolist() == [*seed, "get_data", "check_url"]
    assert df["effective_name"].tolist()[:3] == [f"acme_payments_{n}" for n in seed]
    assert bench.manifest.tools["refund_payment"].input_schema["required"] == ["paymentId"]
    assert lint(ACME) == []


def test_K1_run_gets_ctx_then_args_with_its_tool_as_this(tmp_path: Path, opened: Callable) -> None:
    root = integration(
        tmp_path / "i",
        tool(
            "probe",
            "return { args, self: this.name, ctx: Object.keys(ctx).sort(), store: Object.keys(ctx.storage) };",
        ),
    )
    res = opened(root).call("probe", {"a": 1})
    assert res.value == {
        "args": {"a": 1},
        "self": "probe",
        "ctx": ["fetch", "logger", "secrets", "storage"],
        "store": ["account"],
    }, res


@pytest.mark.parametrize(
    "tools, pointer, words",
    [
        (tool("x", "return {};", params="{ title: 'T', type: 'object' }"), "tools.0.parameters", "title"),
        (tool("x", "return {};", params="{ type: 'string' }"), "tools.0.parameters", "object"),
        (tool("x", "return {};", params="{ type: 'object', $schema: 'x' }"), "tools.0.parameters", "$schema"),
        (tool("x", "return {};", params="true"), "tools.0.parameters", "got boolean"),  # K3: an object
        (tool("x", "return {};", params="false"), "tools.0.parameters", "got boolean"),
        (tool("ListPayments", "return {};"), "tools.0.name", "[a-z]"),
        (tool("list-payments", "return {};"), "tools.0.name", "[a-z]"),
        (tool("x", "return {};") + tool("x", "return {};"), "tools.1.name", ""),
        (tool("x", "return {};") + tool("demo_x", "return {};"), "tools.1.name", ""),  # same effective name
        (tool("x", "return {};", example="[{ id: 1 }]"), "tools.0.outputExample", "array"),
        ("{ name: 'x', description: 'd', outputExample: {}, run: 5 },", "tools.0.run", "function"),
        ("{ name: 'x', description: '', outputExample: {}, async run() {} },", "tools.0.description", ""),
        ("{ name: 'x', description: 'd', async run() {} },", "tools.0.outputExample", ""),
    ],
)
def test_K3_K4_K5_each_load_check_points_at_its_field(
    tmp_path: Path, tools: str, pointer: str, words: str
) -> None:
    root = integration(tmp_path / "bad", tools)
    with pytest.raises(GemLoadError) as err:
        workbench.open(root)
    e = err.value
    assert e.code == "E_MANIFEST" and e.details["pointer"] == pointer, e
    assert words in e.message and e.details["file"].endswith("integration.ts")
    assert [p["pointer"] for p in lint(root)][:1] == [pointer]


@pytest.mark.parametrize(
    "slug, extra, pointer",
    [
        ("Acme Payments", "", "slug"),
        ("acme-", "", "slug"),
        ("demo", "storage: { account: { k: { type: 'nope' } } },", "storage.account.k"),
    ],
)
def test_K1_integration_level_checks_point_at_their_field(
    tmp_path: Path, slug: str, extra: str, pointer: str
) -> None:
    root = integration(tmp_path / "bad", tool("x", "return {};"), slug=slug, extra=extra)
    with pytest.raises(GemLoadError) as err:
        workbench.open(root)
    assert err.value.details["pointer"].startswith(pointer), err.value


def test_K6_egress_entries_are_bare_host_names(tmp_path: Path) -> None:
    root = tmp_path / "bad"
    root.mkdir()
    (root / "integration.ts").write_text(
        "import { defineIntegration } from '@ekanos/sdk';\n"
        "export default defineIntegration({ slug: 'x', egress: ['api.x.example', 'https://evil.test/'],\n"
        "  tools: [{ name: 'a', description: 'd', outputExample: {}, async run() { return {}; } }] });\n"
    )
    with pytest.raises(GemLoadError) as err:
        workbench.open(root)
    assert err.value.details["pointer"] == "egress.1" and "host" in err.value.message


def test_K4_no_double_prefix_and_calls_by_either_name(tmp_path: Path, opened: Callable) -> None:
    root = integration(
        tmp_path / "i", tool("demo_ping", "return { ok: true };") + tool("pong", "return { ok: 2 };")
    )
    bench = opened(root)
    assert bench.tools()["effective_name"].tolist() == ["demo_ping", "demo_pong"]
    assert bench.call("demo_pong").value == {"ok": 2} and bench.call("pong").value == {"ok": 2}
    assert bench.calls()["tool"].tolist() == ["pong", "pong"]


def test_K4_two_open_integrations_may_not_share_an_effective_name(tmp_path: Path) -> None:
    a = integration(tmp_path / "a", tool("ping", "return {ok: true};"), slug="shop")
    b = integration(tmp_path / "b", tool("shop_ping", "return {ok: true};"), slug="shop")
    with workbench.open(a, state_dir=tmp_path / "sa"):
        with pytest.raises(GemLoadError) as err:
            workbench.open(b, state_dir=tmp_path / "sb")
        assert (
            "shop_ping" in err.value.message and str(a) in err.value.message and str(b) in err.value.message
        )
        # the same folder again is not a collision (a notebook cell run twice)
        workbench.open(a, state_dir=tmp_path / "sa2").close()
    with workbench.open(b, state_dir=tmp_path / "sb"):  # a is closed: b may open
        pass


@pytest.mark.parametrize(
    "source, words",
    [
        ("throw new Error('boom at import');", "threw while loading"),
        ("export const x = 1;", "no default export"),
        ("export default { slug: 'x', tools: [] };", "not the value defineIntegration"),
        ("export default defineIntegration({ slug: 'x', tools: [ { name: 'a' ", "integration.ts"),  # syntax
        ("import x from 'npm:left-pad'; export default x;", "integration.ts"),
    ],
)
def test_K1_bad_modules_are_coded_load_errors(tmp_path: Path, source: str, words: str) -> None:
    root = tmp_path / "bad"
    root.mkdir()
    (root / "integration.ts").write_text("import { defineIntegration } from '@ekanos/sdk';\n" + source + "\n")
    with pytest.raises(GemLoadError) as err:
        workbench.open(root)
    assert words in err.value.message, err.value.message
    assert "Traceback" not in err.value.message


# -- K2: three outcomes -------------------------------------------------------------------------


def test_K2_success_expected_failure_and_fault(tmp_path: Path, opened: Callable, acme: Callable) -> None:
    bench = acme(secrets={}, fetch_handlers=[WEATHER])
    ok = bench.call("get_current_weather", {"units": "celsius"})
    expected = bench.call("list_recent_payments", {})  # no api_key: "Integration not configured."
    root = integration(tmp_path / "f", tool("boom", "throw new Error(`API returned 500`);"))
    fault = opened(root).call("boom")
    assert (ok.outcome, expected.outcome, fault.outcome) == ("success", "expected_failure", "fault")
    assert expected.ok and expected.value == {"error": "Integration not configured."}
    assert fault.error is not None and "API returned 500" in fault.error.message
    df = bench.calls()
    assert df["outcome"].tolist() == ["success", "expected_failure"]
    assert df["message"].tolist()[1] == "Integration not configured."
    assert "expected failure" in expected._repr_html_() and "failed" in fault._repr_html_()


def test_beyond_K5_a_result_unlike_its_output_example_is_warned(tmp_path: Path, opened: Callable) -> None:
    root = integration(
        tmp_path / "i",
        tool("w", "return args.r;", params="{ type: 'object', properties: { r: {} } }",
             example="{ temperature: 12.4, units: 'celsius', list: [{ id: 'a' }] }"),
    )  # fmt: skip
    bench = opened(root)
    good = bench.call("w", {"r": {"temperature": 1, "units": "c", "list": [{"id": "b"}], "extra": 1}})
    bad = bench.call("w", {"r": {"temperature": "hot", "list": [{"id": 3}]}})
    assert good.warnings == []
    text = " ".join(bad.warnings)
    assert "temperature is string" in text and "units is missing" in text and "list[0].id is number" in text
    assert bench.call("w", {"r": {"error": "nope"}}).warnings == []  # an expected failure: no shape


# -- K6: ctx ------------------------------------------------------------------------------------


def test_K6_account_storage_get_wraps_and_set_checks_the_declared_schema(
    tmp_path: Path, opened: Callable
) -> None:
    schemas = "storage: { account: { 'prefs': { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } } },"
    run = """
      const before = await ctx.storage.account.get('prefs');
      await ctx.storage.account.set('prefs', { n: args.n });
      const after = await ctx.storage.account.get('prefs');
      const errs = {};
      for (const [k, v] of [['prefs', { n: 'x' }], ['other', 1]]) {
        try { await ctx.storage.account.set(k, v); } catch (e) { errs[k] = [e.code, e.message]; }
      }
      return { before, after, errs };"""
    root = integration(
        tmp_path / "i", tool("s", run, params="{ type: 'object', properties: { n: {} } }"), extra=schemas
    )
    bench = opened(root)
    out = bench.call("s", {"n": 3}).raise_for_error().value
    assert out["before"] is None
    assert (
        out["after"]["key"] == "prefs"
        and out["after"]["data"] == {"n": 3}
        and out["after"]["updatedAt"].endswith("Z")
    )
    assert out["errs"]["prefs"][0] == "E_SCHEMA" and "prefs" in out["errs"]["prefs"][1]
    assert (
        out["errs"]["other"][0] == "E_INVALID_ARGUMENT" and "declares no such key" in out["errs"]["other"][1]
    )


def test_K6_real_account_storage_lives_in_the_state_file(tmp_path: Path, acme: Callable) -> None:
    state = tmp_path / "state"
    with workbench.open(ACME, providers="real", state_dir=state,
                        account_storage={"settings/location": LOCATION}):  # fmt: skip
        pass
    assert (state / "data.sqlite").is_file()
    with workbench.open(ACME, providers="real", state_dir=state, fetch_handlers=[WEATHER]) as bench:
        res = bench.call("get_current_weather", {})
    assert res.value == {"temperature": 12.4, "units": "celsius"}


def test_K6_account_storage_fixtures_are_checked(tmp_path: Path) -> None:
    with pytest.raises(workbench.UsageError, match="settings/location"):
        workbench.open(
            ACME, state_dir=tmp_path / "s", account_storage={"settings/location": {"latitude": "x"}}
        )


def test_K6_secrets_are_strings_or_null_and_masked_everywhere(tmp_path: Path, opened: Callable) -> None:
    secret = "sk_live_0123456789"
    run = """
      const k = await ctx.secrets.get('api_key');
      const none = await ctx.secrets.get('missing');
      console.log('key is ' + k);
      ctx.logger.info({ k }, 'using ' + k);
      const r = await ctx.fetch('https://api.demo.example/v1?key=' + k);
      return { type: typeof k, none, status: r.status };"""
    root = integration(tmp_path / "i", tool("s", run))
    bench = opened(
        root,
        secrets={"api_key": secret},
        fetch_handlers=[{"match": "https://api.demo.example/", "respond": {"json": {}}}],
    )
    res = bench.call("s").raise_for_error()
    assert res.value == {"type": "string", "none": None, "status": 200}
    shown = json.dumps([res.trace_rows, res.log_rows], default=str) + bench.http().to_string()
    assert secret not in shown and "***" in shown
    assert res.trace_rows[0]["result"] is None  # secrets.get's value is never kept


def test_K6_secrets_from_the_environment(
    tmp_path: Path, opened: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEM_WORKBENCH_SECRET_ACME_PAYMENTS__API_KEY", "sk_env_123456")
    monkeypatch.setenv("GEM_WORKBENCH_SECRET_ACME__PAYMENTS_API_KEY", "sk_other_slug")
    assert opened(ACME).call("list_recent_payments", {}).outcome == "expected_failure"  # not asked for
    bench = opened(
        ACME,
        secrets="local",
        fetch_handlers=[
            {"match": "https://api.acme.example/v1/payments", "respond": {"json": {"payments": []}}}
        ],
    )
    assert bench.call("list_recent_payments", {}).value == {"payments": []}


def test_K6_fetch_returns_a_real_response(tmp_path: Path, opened: Callable) -> None:
    run = """
      const r = await ctx.fetch('https://api.demo.example/v1/x', { method: 'POST', body: JSON.stringify({ a: 1 }) });
      return { real: r instanceof Response, status: r.status, ok: r.ok, type: r.headers.get('x-kind'),
               url: r.url, body: await r.json(), used: r.bodyUsed };"""
    root = integration(tmp_path / "i", tool("f", run))
    handler = {
        "match": "https://api.demo.example/",
        "respond": {"status": 201, "headers": {"x-kind": "k"}, "json": {"b": 2}},
    }
    res = opened(root, fetch_handlers=[handler]).call("f").raise_for_error()
    assert res.value == {"real": True, "status": 201, "ok": True, "type": "k",
                         "url": "https://api.demo.example/v1/x", "body": {"b": 2}, "used": True}  # fmt: skip


def test_K6_fetch_gives_the_runtimes_response_after_a_tool_replaced_the_globals(
    tmp_path: Path, opened: Callable
) -> None:
    # The bridge takes Response and Request as Deno's lazy getters and calls them on first use
    # (worker/primordials.ts lazyGlobal): here that first use comes after the tool replaced both
    # globals without touching them (the runtime's setter defines plain values, nothing loaded)
    run = """
      class Fake { constructor() { throw new Error('the fake ran'); } }
      globalThis.Response = Fake;
      globalThis.Request = Fake;
      const r = await ctx.fetch('https://api.demo.example/v1/x');
      const proto = Object.getPrototypeOf(r);
      return { fake: r instanceof Fake, name: proto.constructor.name, clone: typeof r.clone,
               status: r.status, body: await r.json(), still: globalThis.Response === Fake };"""
    root = integration(tmp_path / "i", tool("f", run))
    handler = {"match": "https://api.demo.example/", "respond": {"status": 201, "json": {"b": 2}}}
    res = opened(root, fetch_handlers=[handler]).call("f").raise_for_error()
    assert res.value == {"fake": False, "name": "Response", "clone": "function", "status": 201,
                         "body": {"b": 2}, "still": True}  # fmt: skip


@pytest.mark.parametrize(
    "url",
    [
        "http://api.demo.example/v1",
        "https://api.demo.example@evil.test/",
        "https://api.demo.example.evil.test/",
        "https://evil.test/",
        "https://api.demo.example:8443/",
        "https://api.demo.example./",
    ],
)
def test_K6_fetch_outside_egress_throws_and_reaches_nothing(
    url: str, tmp_path: Path, opened: Callable
) -> None:
    reached: list[str] = []
    run = f"try {{ await ctx.fetch({json.dumps(url)}); return 'sent'; }} catch (e) {{ return [e.code, e.message]; }}"
    root = integration(tmp_path / "i", tool("f", run))
    bench = opened(
        root, fetch_handlers=[{"match": lambda req: reached.append(req.url) or True, "respond": {"json": {}}}]
    )
    code, message = bench.call("f").value
    assert code == "E_PERM_DENIED" and "api.demo.example" in message and reached == []


def _table() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """egress_cases.json: its URL cases and its entry cases."""
    cases = json.loads((SDK / "egress_cases.json").read_text(encoding="utf-8"))
    return [c for c in cases if "url" in c], [c for c in cases if "entry" in c]


def test_K6_egress_rules_agree_with_the_sdk_table() -> None:
    urls, entries = _table()
    wrong = [c for c in urls if (egress_problem(c["egress"], c["url"]) is None) != c["allowed"]]
    assert wrong == [] and len(urls) >= 20
    wrong = [c for c in entries if (egress_entry_problem(c["entry"]) is None) != c["valid"]]
    assert wrong == [] and len(entries) >= 20


def test_K6_the_host_normaliser_reads_the_table_as_the_url_parser_does() -> None:
    """Every spelling of an address in the table (hex, octal, one number, short forms, a
    trailing dot, IPv4 inside IPv6, fullwidth digits, ideographic dots, percent-escapes) is
    read as the address the table names; Deno's URL parser is held to the same column in
    test_ekanos_sdk.py."""
    import ipaddress

    urls, entries = _table()
    spelled = [(c["url"][8:].split("/", 1)[0], c["address"]) for c in urls if "address" in c]
    spelled += [(c["entry"], c["address"]) for c in entries if "address" in c]
    assert len(spelled) >= 25
    wrong = [(h, a) for h, a in spelled if read_address(h) != ipaddress.ip_address(a)]
    assert wrong == []
    assert read_address("api.acme.example") is None and read_address("0x.example") is None


def test_K6_a_redirect_outside_egress_is_refused(tmp_path: Path, opened: Callable) -> None:
    run = "try { await ctx.fetch('https://api.demo.example/go'); return 'followed'; } catch (e) { return e.code; }"
    root = integration(tmp_path / "i", tool("f", run))
    handlers = [
        {
            "match": "https://api.demo.example/go",
            "respond": {"status": 302, "headers": {"location": "https://evil.test/x"}},
        },
        {"match": "https://evil.test/", "respond": {"json": {"stolen": True}}},
    ]
    bench = opened(root, fetch_handlers=handlers)
    assert bench.call("f").value == "E_PERM_DENIED"
    assert bench.http()["url"].tolist() == ["https://api.demo.example/go"]


def test_K6_logger_rows_are_structured(tmp_path: Path, opened: Callable) -> None:
    run = """
      ctx.logger.debug('plain');
      ctx.logger.error({ status: 500 }, 'Forecast fetch failed.');
      ctx.logger.warn({ big: 'x'.repeat(2e6) }, 'too big');
      ctx.logger.info(10n);
      return 1;"""
    root = integration(tmp_path / "i", tool("l", run))
    res = opened(root).call("l").raise_for_error()
    rows = [(r["level"], r["message"], r["fields"]) for r in res.log_rows]
    assert rows[0] == ("debug", "plain", None)
    assert rows[1] == ("error", "Forecast fetch failed.", {"status": 500})
    assert rows[2][0] == "warn" and "_dropped" in rows[2][2]
    assert len(rows) == 3 and "logger.info" in res.logs  # a BigInt cannot be sent: said on stderr


def test_SEC5_logger_keeps_log_rows_rows_per_call(tmp_path: Path, opened: Callable) -> None:
    """20,000 empty log lines (each under log_bytes' reach) keep Limits.log_rows rows, the last
    saying the log is full."""
    from workbench.platforms import Limits

    run = "for (let i = 0; i < 20000; i++) ctx.logger.info(''); return 1;"
    root = integration(tmp_path / "i", tool("l", run))
    res = opened(root, limits=Limits(log_rows=50)).call("l").raise_for_error()
    assert len(res.log_rows) == 50 and res.log_rows[-1]["level"] == "warn"
    assert res.log_rows[-1]["message"] == "(log full: 50 rows in this call)"


# -- K7: the same fixtures as createMockContext --------------------------------------------------


def test_K7_the_seed_test_fixtures_give_the_same_result_in_python(opened: Callable) -> None:
    """The seed's Testing snippet, with its fixtures given to workbench.open instead."""
    bench = opened(
        ACME,
        account_storage={"account": {"settings/location": LOCATION}},
        secrets={"account": {"api_key": "test_key"}},
        fetch_handlers=[
            {
                "match": "https://api.acme.example",
                "respond": {"json": {"temperature": 12.4, "units": "celsius"}},
            }
        ],
    )
    assert bench.call("get_current_weather", {"units": "celsius"}).value == {
        "temperature": 12.4,
        "units": "celsius",
    }


# -- real providers: httpx to a loopback server ----------------------------------------------------


class _Resolve(RealTransport):
    """Real httpx; https://api.demo.example is sent as http on the test server's port (TLS
    ends here), and the bench's own hosts table (RealTransport(hosts=…), out of tools' reach) says the name is
    127.0.0.1, which the bench's private_hosts= must name. The request keeps its
    egress guard: any other name is resolved and checked."""

    def __init__(self, port: int) -> None:
        super().__init__(hosts={"api.demo.example": "127.0.0.1"})
        self.port = port

    def send(self, request: HttpRequest, timeout: float) -> HttpResponse:
        url = request.url.replace("https://api.demo.example", f"http://api.demo.example:{self.port}", 1)
        return super().send(dataclasses.replace(request, url=url), timeout)


def test_K6_real_fetch_through_httpx_with_redirects_checked(
    tmp_path: Path, opened: Callable, httpserver: Any
) -> None:
    from werkzeug import Response

    httpserver.expect_request("/v1/data", method="POST").respond_with_handler(
        lambda req: Response(
            json.dumps({"got": req.get_json()}), headers={"content-type": "application/json"}
        )
    )
    httpserver.expect_request("/v1/away").respond_with_handler(
        lambda req: Response("", status=302, headers={"location": "https://evil.test/steal"})
    )
    run = """
      const r = await ctx.fetch('https://api.demo.example/v1/data', { method: 'POST',
        headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: 1 }) });
      let away;
      try { await ctx.fetch('https://api.demo.example/v1/away'); away = 'followed'; } catch (e) { away = e.code; }
      return { real: r instanceof Response, body: await r.json(), away };"""
    root = integration(tmp_path / "i", tool("f", run))
    bench = opened(root, http=_Resolve(httpserver.port), private_hosts=["api.demo.example"])
    res = bench.call("f").raise_for_error()
    assert res.value == {"real": True, "body": {"got": {"a": 1}}, "away": "E_PERM_DENIED"}
    assert [r.path for r, _ in httpserver.log] == ["/v1/data", "/v1/away"]  # evil.test never asked


def test_K3_inside_properties_pattern_is_checked_with_re2(tmp_path: Path, opened: Callable) -> None:
    params = "{ type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]{3}$' }, s: { type: 'string', pattern: '^(a+)+$' } } }"
    bench = opened(integration(tmp_path / "i", tool("p", "return { ok: true };", params=params)))
    assert bench.call("p", {"code": "ABC"}).ok
    bad = bench.call("p", {"code": "abc"})
    assert bad.error is not None and bad.error.code == "E_SCHEMA" and "code" in bad.error.message
    slow = bench.call("p", {"s": "a" * 50_000 + "!"})  # catastrophic for a backtracking engine
    assert slow.error is not None and slow.error.code == "E_SCHEMA"
    backref = "{ type: 'object', properties: { c: { type: 'string', pattern: '(a)\\\\1' } } }"
    with pytest.raises(GemLoadError) as err:
        workbench.open(integration(tmp_path / "j", tool("p", "return {};", params=backref)))
    assert (
        err.value.details["pointer"] == "tools.0.parameters.properties.c.pattern"
        and "RE2" in err.value.message
    )


def test_K6_a_secret_is_masked_in_its_escaped_and_encoded_forms_too(tmp_path: Path, opened: Callable) -> None:
    secret = 'k+y/"pem\nline=='
    run = """
      const k = await ctx.secrets.get('api_key');
      ctx.logger.info({ k }, 'x');
      await ctx.fetch('https://api.demo.example/v1?key=' + encodeURIComponent(k));
      throw new Error('bad key ' + k);"""
    root = integration(tmp_path / "i", tool("s", run))
    bench = opened(root, secrets={"api_key": secret},
                   fetch_handlers=[{"match": "https://api.demo.example/", "respond": {"json": {}}}])  # fmt: skip
    res = bench.call("s")
    shown = (
        json.dumps([res.trace_rows, res.log_rows], default=str) + bench.http().to_string() + res.error.message
    )
    from urllib.parse import quote

    for form in (secret, json.dumps(secret)[1:-1], quote(secret, safe="")):
        assert form not in shown, form
    assert res.error.code == "E_TOOL_ERROR" and "***" in res.error.message


@pytest.mark.parametrize(
    "head, words",
    [
        (
            "for (let i = 0; i < 40; i++) await Deno.stdout.write(new Uint8Array(1 << 20));\n",
            "printed too much",
        ),
        ("const BIG = 'x'.repeat(2e6);\n", "too large as JSON"),
    ],
)
def test_K1_loading_is_bounded_in_output_and_size(tmp_path: Path, head: str, words: str) -> None:
    example = "{ big: BIG }" if "BIG" in head else "{ ok: true }"
    root = integration(tmp_path / "i", tool("x", "return {};", example=example), head=head)
    with pytest.raises(GemLoadError, match=words):
        workbench.open(root)


def test_K1_a_module_that_printed_too_much_before_the_first_look_is_stopped(tmp_path, monkeypatch) -> None:
    # the loader looks at the output every 10 ms; a busy machine may let the module print it
    # all and exit before the first look (seen in CI): each wait here lasts until the exit
    import subprocess

    wait = subprocess.Popen.wait
    monkeypatch.setattr(subprocess.Popen, "wait", lambda self, timeout=None: wait(self))
    head = "for (let i = 0; i < 20; i++) await Deno.stdout.write(new Uint8Array(1 << 20));\n"
    root = integration(tmp_path / "i", tool("x", "return {};"), head=head)
    with pytest.raises(GemLoadError, match="printed too much"):
        workbench.open(root)


def test_N1_a_link_out_of_the_integration_stops_loading(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("private")
    root = integration(tmp_path / "i", tool("x", "return {};"))
    (root / "leak.txt").symlink_to(secret)
    with pytest.raises(GemLoadError, match="leak.txt"):
        workbench.open(root)


def test_lone_surrogates_are_kept_in_values_and_never_break_a_display(
    tmp_path: Path, opened: Callable
) -> None:
    """A JS string may hold a lone surrogate: the result keeps it (as the platform's JSON would
    carry it), what the workbench shows or makes (HTML, text, log rows, errors) is well-formed."""
    run = "ctx.logger.info({ f: 'a\\ud800' }, 'm\\udc00'); if (args.t) throw new Error('e\\ud800'); return { ok: 'x\\ud800', error: args.e ? 'y\\udfff' : undefined };"
    bench = opened(
        integration(tmp_path / "i", tool("s", run, params="{ type: 'object', properties: { t: {}, e: {} } }"))
    )
    assert bench.call("s").value == {"ok": "x\ud800"}
    for args in ({}, {"t": True}, {"e": True}):
        res = bench.call("s", args)
        shown = json.dumps([res.log_rows, res.error and res.error.message], ensure_ascii=False)
        for text in (shown, res._repr_html_(), presenter("result_text")(res)):
            text.encode("utf-8")  # raises on a lone surrogate
    bench.calls().to_html().encode("utf-8")


def test_K6_response_headers_are_byte_strings_as_fetch_gives_them(
    tmp_path: Path, opened: Callable, httpserver: Any
) -> None:
    from werkzeug import Response

    name = "日本".encode().decode("latin-1")  # the UTF-8 bytes, as a server sends them
    httpserver.expect_request("/v1/h").respond_with_handler(
        lambda req: Response("ok", headers={"x-name": name})
    )
    run = "const r = await ctx.fetch('https://api.demo.example/v1/h'); return { h: r.headers.get('x-name'), t: await r.text() };"
    bench = opened(
        integration(tmp_path / "i", tool("h", run)),
        http=_Resolve(httpserver.port),
        private_hosts=["api.demo.example"],
    )
    assert bench.call("h").raise_for_error().value == {"h": name, "t": "ok"}


def test_K6_a_request_object_is_refused_not_sent_as_a_get(tmp_path: Path, opened: Callable) -> None:
    run = "try { await ctx.fetch(new Request('https://api.demo.example/', { method: 'POST', body: 'x' })); return 'sent'; } catch (e) { return e.message; }"
    bench = opened(
        integration(tmp_path / "i", tool("r", run)),
        fetch_handlers=[{"match": "https://api.demo.example/", "respond": {"json": {}}}],
    )
    assert "Request object is not supported" in bench.call("r").value and bench.http().empty


def test_SEC5_the_trace_keeps_a_bounded_share_of_many_big_ctx_calls(tmp_path: Path, opened: Callable) -> None:
    run = "const big = 'x'.repeat(60000); for (let i = 0; i < 400; i++) ctx.logger.info({ big }, 'm'); return 1;"
    res = opened(integration(tmp_path / "i", tool("l", run))).call("l").raise_for_error()
    assert len(res.trace_rows) == 400
    kept = [r for r in res.trace_rows if r["params"] is not None]
    assert 200 < len(kept) < 400  # the first ones, then previews only
    assert sum(len(json.dumps(r["params"])) for r in kept) < 17 * 1024 * 1024
    assert all(r["args"] for r in res.trace_rows)  # every row keeps its short preview


@pytest.mark.parametrize("key", ["input_schema", "inputSchema", "paramters"])
def test_a_tool_key_misspelling_parameters_is_a_warning_naming_it(tmp_path: Path, key: str) -> None:
    """The SDK keeps an unknown tool key (the tool then takes no parameters, silently): the
    workbench loads it as the platform does and points at the key meant (issue 28)."""
    from workbench._errors import GemWarning

    root = integration(
        tmp_path / "i",
        f"{{ name: 'a', description: 'd', {key}: {{ type: 'object' }}, outputExample: {{}},"
        " async run() { return {}; } }",
    )
    with pytest.warns(GemWarning, match=rf"tools\.0\.{key}: unknown key: did you mean 'parameters'\?"):
        bench = workbench.open(root)
    bench.close()


def test_a_tool_key_with_no_likely_meaning_loads_quietly(tmp_path: Path) -> None:
    import warnings

    root = integration(tmp_path / "i", tool("a", "return {};").replace("name:", "owner: 'me', name:"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        workbench.open(root).close()


def test_check_prints_the_misspelling_as_one_warning_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from workbench.cli import main

    root = integration(
        tmp_path / "i",
        "{ name: 'a', description: 'd', input_schema: { type: 'object' }, outputExample: {},"
        " async run() { return {}; } }",
    )
    import warnings

    with warnings.catch_warnings():  # pytest makes warnings errors; the command's user does not
        warnings.simplefilter("always")
        assert main(["check", str(root)]) == 0
    err = capsys.readouterr().err
    assert (
        err.startswith("warning: ") and "tools.0.input_schema: unknown key: did you mean 'parameters'?" in err
    )
    assert "GemWarning" not in err and "loader.py" not in err
