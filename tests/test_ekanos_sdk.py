"""The Ekanos SDK the workbench serves (K1, K3–K7): defineIntegration's checks, the mock ctx,
the egress table both sides share, and the vitest shim, each run by Deno through the import map."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from workbench.platforms.ekanos.loader import IMPORT_MAP
from workbench.platforms.ekanos.loader import SDK as SDK_DIR

pytestmark = pytest.mark.deno
ACME = Path(__file__).resolve().parent.parent / "notebooks" / "gems" / "acme-payments"
CASES = SDK_DIR / "egress_cases.json"


def deno_json(tmp_path: Path, body: str, *readable: Path) -> object:
    """Run a TS module (`body`) with the SDK's import map; what it prints last, as JSON."""
    from deno import find_deno_bin

    script = tmp_path / "check.ts"
    script.write_text(textwrap.dedent(body))
    read = ",".join(str(p) for p in (tmp_path, SDK_DIR, *readable))
    out = subprocess.run(
        [find_deno_bin(), "run", "--no-prompt", "--no-config", "--no-lock", "--no-npm", "--no-remote"]
        + [f"--import-map={IMPORT_MAP}", f"--allow-read={read}", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "DENO_DIR": str(tmp_path / "deno"), "NO_COLOR": "1"},
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


# A good tool, and a probe: each case patches one field and reports the error's path and message.
PROBE = """
import { defineIntegration, effectiveName, isIntegration, describeIntegration } from '@ekanos/sdk';
const tool = (over = {}) => ({ name: 'get_thing', description: 'Gets a thing.', outputExample: { ok: true },
  parameters: { type: 'object', properties: {}, required: [], additionalProperties: false },
  run: async () => ({ ok: true }), ...over });
const good = (over = {}) => ({ slug: 'acme-payments', egress: ['api.acme.example'], tools: [tool()], ...over });
function probe(def) {
  try { defineIntegration(def); return null; }
  catch (e) { return { name: e.name, path: e.path, message: e.message, issues: e.issues }; }
}
"""


def probe(tmp_path: Path, cases: str) -> dict:
    return deno_json(tmp_path, PROBE + f"console.log(JSON.stringify({{{cases}}}));")  # type: ignore[return-value]


def test_K1_tool_fields_are_checked(tmp_path: Path):
    got = probe(
        tmp_path,
        """
        ok: probe(good()),
        noRun: probe(good({ tools: [tool({ run: 'nope' })] })),
        noDescription: probe(good({ tools: [tool(), tool({ name: 'b', description: ' ' })] })),
        notObject: probe(good({ tools: [tool(), 'x'] })),
        noTools: probe(good({ tools: [] })),
        """,
    )
    assert got["ok"] is None
    assert got["noRun"]["name"] == "IntegrationDefinitionError"
    assert got["noRun"]["path"] == "tools.0.run"
    assert got["noDescription"]["path"] == "tools.1.description"
    assert got["notObject"]["path"] == "tools.1"
    assert got["noTools"]["path"] == "tools"


def test_K3_parameters_root_keys_are_strict(tmp_path: Path):
    got = probe(
        tmp_path,
        """
        title: probe(good({ tools: [tool({ parameters: { title: 'My Schema', type: 'object' } })] })),
        type: probe(good({ tools: [tool(), tool({ name: 'b', parameters: { type: 'string' } })] })),
        schema: probe(good({ tools: [tool({ parameters: { $schema: 'x', type: 'object' } })] })),
        oneOf: probe(good({ tools: [tool({ parameters: { type: 'object', oneOf: [] } })] })),
        props: probe(good({ tools: [tool({ parameters: { type: 'object', properties: [] } })] })),
        required: probe(good({ tools: [tool({ parameters: { type: 'object', required: [1] } })] })),
        extra: probe(good({ tools: [tool({ parameters: { type: 'object', additionalProperties: 'no' } })] })),
        array: probe(good({ tools: [tool({ parameters: [] })] })),
        absent: probe(good({ tools: [tool({ parameters: undefined })] })),
        seedValid: probe(good({ tools: [tool({ parameters: { type: 'object', properties: {
          id: { type: 'string' }, nested: { type: 'object', properties: { count: { type: 'number' } } },
          items: { type: 'array', items: { type: 'string' } }, status: { enum: ['active', 'inactive'] } },
          required: ['id'], additionalProperties: false } })] })),
        """,
    )
    assert got["title"]["path"] == "tools.0.parameters"
    assert got["title"]["message"] == (
        'defineIntegration: tools.0.parameters: unknown key "title" at the root; '
        "allowed: type, properties, required, additionalProperties"
    )
    assert got["type"]["path"] == "tools.1.parameters" and "'object'" in got["type"]["message"]
    for case in ("schema", "oneOf", "props", "required", "extra", "array"):
        assert got[case]["path"] == "tools.0.parameters", case
    assert '"$schema"' in got["schema"]["message"] and '"oneOf"' in got["oneOf"]["message"]
    assert got["absent"] is None and got["seedValid"] is None


def test_K4_tool_names_match_the_pattern_and_are_unique(tmp_path: Path):
    got = probe(
        tmp_path,
        """
        pascal: probe(good({ tools: [tool({ name: 'ListPayments' })] })),
        hyphen: probe(good({ tools: [tool(), tool({ name: 'list-payments' })] })),
        space: probe(good({ tools: [tool({ name: 'list payments' })] })),
        digit: probe(good({ tools: [tool({ name: '1list' })] })),
        dup: probe(good({ tools: [tool(), tool()] })),
        effective: probe(good({ tools: [tool({ name: 'list' }), tool({ name: 'acme_payments_list' })] })),
        """,
    )
    for case, index in (("pascal", 0), ("hyphen", 1), ("space", 0), ("digit", 0)):
        assert got[case]["path"] == f"tools.{index}.name", case
    assert got["dup"]["path"] == "tools.1.name" and "duplicate" in got["dup"]["message"]
    assert got["effective"]["path"] == "tools.1.name"
    assert 'effective name "acme_payments_list" collides with tools.0' in got["effective"]["message"]


def test_K4_effective_names_are_prefixed_once(tmp_path: Path):
    got = deno_json(
        tmp_path,
        """
        import { effectiveName } from '@ekanos/sdk';
        console.log(JSON.stringify([effectiveName('acme-payments', 'list_payments'),
          effectiveName('acme-payments', 'acme_payments_list_payments'), effectiveName('a-b-c', 'x'),
          effectiveName('acme', 'acmex')]));
        """,
    )
    assert got == ["acme_payments_list_payments", "acme_payments_list_payments", "a_b_c_x", "acme_acmex"]


def test_K5_output_example_must_be_an_object(tmp_path: Path):
    got = probe(
        tmp_path,
        """
        array: probe(good({ tools: [tool({ outputExample: [{ id: 1 }] })] })),
        nul: probe(good({ tools: [tool(), tool({ name: 'b', outputExample: null })] })),
        missing: probe(good({ tools: [tool({ outputExample: undefined })] })),
        text: probe(good({ tools: [tool({ outputExample: 'ok' })] })),
        fn: probe(good({ tools: [tool({ outputExample: { f() {} } })] })),
        """,
    )
    assert (
        got["array"]["path"] == "tools.0.outputExample" and "not a top-level array" in got["array"]["message"]
    )
    assert got["nul"]["path"] == "tools.1.outputExample"
    assert got["missing"]["path"] == got["text"]["path"] == "tools.0.outputExample"
    assert got["fn"]["path"] == "tools.0.outputExample.f"


def test_slug_egress_and_storage_are_checked(tmp_path: Path):
    got = probe(
        tmp_path,
        """
        upper: probe(good({ slug: 'Acme' })), trailing: probe(good({ slug: 'acme-' })),
        long: probe(good({ slug: 'a'.repeat(64) })), max: probe(good({ slug: 'a'.repeat(63) })),
        scheme: probe(good({ egress: ['api.acme.example', 'x.example', 'https://api.acme.example'] })),
        port: probe(good({ egress: ['api.acme.example:443'] })), path: probe(good({ egress: ['a.example/v1'] })),
        user: probe(good({ egress: ['u@a.example'] })), ip: probe(good({ egress: ['127.0.0.1'] })),
        tld: probe(good({ egress: ['*.example'] })), caps: probe(good({ egress: ['API.acme.example'] })),
        wild: probe(good({ egress: ['*.acme.example'] })), storage: probe(good({ storage: { account: { k: 1 } } })),
        storageKey: probe(good({ storage: { team: {} } })),
        """,
    )
    assert got["upper"]["path"] == got["trailing"]["path"] == got["long"]["path"] == "slug"
    assert got["max"] is None and got["wild"] is None
    assert got["scheme"]["path"] == "egress.2"
    for case in ("port", "path", "user", "ip", "tld", "caps"):
        assert got[case]["path"] == "egress.0", case
    assert got["storage"]["path"] == "storage.account.k"
    assert got["storageKey"]["path"] == "storage"


def test_every_problem_is_listed_the_first_in_the_message(tmp_path: Path):
    got = probe(tmp_path, "many: probe({ slug: 'X', egress: ['a/b'], tools: [{ name: 'A' }] }),")["many"]
    paths = [i["path"] for i in got["issues"]]
    assert paths[:2] == ["slug", "egress.0"]
    assert {"tools.0.name", "tools.0.description", "tools.0.outputExample", "tools.0.run"} <= set(paths)
    assert got["message"].startswith("defineIntegration: slug: ") and "more problems" in got["message"]


def test_hostile_definitions_are_errors_not_hangs(tmp_path: Path):
    got = probe(
        tmp_path,
        """
        cycle: (() => { const p = { type: 'object', properties: {} }; p.properties.self = p;
          return probe(good({ tools: [tool({ parameters: p })] })); })(),
        deep: (() => { let s = { type: 'string' }; for (let i = 0; i < 100; i++) s = { type: 'object', properties: { a: s } };
          return probe(good({ tools: [tool({ parameters: s })] })); })(),
        wide: probe(good({ tools: [tool({ outputExample: { a: Array.from({ length: 20000 }, () => 1) } })] })),
        many: probe(good({ tools: Array.from({ length: 201 }, (_, i) => tool({ name: `t${i}` })) })),
        notObject: probe(42), bigint: probe(good({ tools: [tool({ outputExample: { n: 1n } })] })),
        """,
    )
    assert got["cycle"]["path"].startswith("tools.0.parameters") and "cycle" in got["cycle"]["message"]
    assert "deeper than 64" in got["deep"]["message"]
    assert "more than 10000 values" in got["wide"]["message"]
    assert got["many"]["path"] == "tools" and "200" in got["many"]["message"]
    assert got["notObject"]["name"] == "IntegrationDefinitionError"
    assert got["bigint"]["path"] == "tools.0.outputExample.n"


def test_K4_defined_integrations_are_frozen_registered_and_described(tmp_path: Path):
    got = deno_json(
        tmp_path,
        PROBE
        + """
        const input = good({ tools: [tool({ name: 'acme_payments_get' }), tool({ name: 'list' })] });
        const x = defineIntegration(input);
        input.tools[0].parameters.properties.added = { type: 'string' };
        let thrown = null;
        try { describeIntegration({ ...x }); } catch (e) { thrown = e.name; }
        const frozen = [Object.isFrozen(x), Object.isFrozen(x.tools), Object.isFrozen(x.tools[0]),
          Object.isFrozen(x.tools[0].parameters.properties), Object.isFrozen(x.tools[0].outputExample)];
        console.log(JSON.stringify({ is: isIntegration(x), copy: isIntegration({ ...x }),
          proxy: isIntegration(new Proxy(x, {})), json: isIntegration(JSON.parse(JSON.stringify(x))),
          prim: isIntegration('x'), frozen, thrown, describe: describeIntegration(x) }));
        """,
    )
    assert got["is"] is True and not any(got[k] for k in ("copy", "proxy", "json", "prim"))
    assert got["frozen"] == [True] * 5 and got["thrown"] == "TypeError"
    assert got["describe"] == {
        "slug": "acme-payments",
        "egress": ["api.acme.example"],
        "storage": None,
        "tools": [
            {
                "index": i,
                "name": name,
                "effectiveName": eff,
                "description": "Gets a thing.",
                "parameters": {
                    "type": "object",
                    "properties": {},
                    "required": [],
                    "additionalProperties": False,
                },
                "outputExample": {"ok": True},
                "extraKeys": [],
            }
            for i, (name, eff) in enumerate([("acme_payments_get",) * 2, ("list", "acme_payments_list")])
        ],
    }


def test_K1_seed_integration_describes(tmp_path: Path):
    got = deno_json(
        tmp_path,
        f"""
        import integration from '{(ACME / "integration.ts").as_uri()}';
        import {{ describeIntegration }} from '@ekanos/sdk';
        console.log(JSON.stringify(describeIntegration(integration)));
        """,
        ACME,
    )
    assert [t["effectiveName"] for t in got["tools"]] == [
        "acme_payments_get_current_weather",
        "acme_payments_list_recent_payments",
        "acme_payments_refund_payment",
        "acme_payments_get_data",
        "acme_payments_check_url",
    ]
    assert got["storage"]["account"]["settings/location"]["required"] == ["latitude", "longitude"]
    assert got["tools"][1]["outputExample"] == {
        "payments": [{"id": "pay_123", "amount": 100, "status": "completed"}]
    }


def test_K6_egress_cases_table(tmp_path: Path):
    """egress_cases.json, which the Python side checks too: the rule and ctx.fetch agree with it."""
    cases = [c for c in json.loads(CASES.read_text(encoding="utf-8")) if "url" in c]
    assert len(cases) >= 20 and {True, False} == {c["allowed"] for c in cases}
    got = deno_json(
        tmp_path,
        f"""
        import {{ createMockContext, egressAllows }} from '@ekanos/sdk/testing';
        const cases = JSON.parse(await Deno.readTextFile({json.dumps(str(CASES))})).filter((c) => 'url' in c);
        const out = [];
        for (const c of cases) {{
          const ctx = createMockContext({{ integration: {{ slug: 'acme' }}, egress: c.egress,
            fetchHandlers: [{{ match: () => true, respond: () => new Response('ok') }}] }});
          let fetched;
          try {{ fetched = (await (await ctx.fetch(c.url)).text()) === 'ok'; }}
          catch (e) {{ fetched = e.name === 'EgressError' ? false : e.name; }}
          out.push({{ url: c.url, rule: egressAllows(c.egress, c.url), fetched }});
        }}
        console.log(JSON.stringify(out));
        """,
    )
    for case, row in zip(cases, got):
        assert (row["rule"], row["fetched"]) == (case["allowed"], case["allowed"]), case


def test_K6_egress_table_entries_and_addresses_as_deno_reads_them(tmp_path: Path):
    """The table's entry cases, in Deno: egressEntryProblem and defineIntegration accept and
    refuse them as the loader does (test_ekanos.py); and its address column is what Deno's
    URL parser makes of each disguised host (127.0.0.0x1, 0x7f.1, fullwidth digits, …), the
    reading the Python normaliser is held to."""
    cases = json.loads(CASES.read_text(encoding="utf-8"))
    entries = [c for c in cases if "entry" in c]
    spelled = [c for c in cases if "url" in c and "address" in c]
    got = deno_json(
        tmp_path,
        f"""
        import {{ defineIntegration }} from '@ekanos/sdk';
        import {{ egressEntryProblem }} from '{(SDK_DIR / "egress.ts").as_uri()}';
        const entries = {json.dumps([c["entry"] for c in entries])};
        const tool = {{ name: 't', description: 'd', outputExample: {{}}, async run() {{ return {{}}; }} }};
        const defined = entries.map((e) => {{
          try {{ defineIntegration({{ slug: 'x', egress: ['api.x.example', e], tools: [tool] }}); return null; }}
          catch (err) {{ return String(err.message); }}
        }});
        const hosts = {json.dumps([c["url"] for c in spelled], ensure_ascii=False)}.map((u) => new URL(u).hostname);
        console.log(JSON.stringify({{ rule: entries.map((e) => egressEntryProblem(e) === null), defined, hosts }}));
        """,
    )
    assert got["rule"] == [c["valid"] for c in entries]
    for case, why in zip(entries, got["defined"]):
        assert (why is None) == case["valid"], case
        assert case["valid"] or "egress.1" in why, (case, why)  # the SDK names the entry
    want = [c["address"] if "." in c["address"] else f"[{c['address']}]" for c in spelled]
    assert got["hosts"] == want


MOCK = """
import { createMockContext } from '@ekanos/sdk/testing';
const schemas = { account: { 'settings/location': { type: 'object', required: ['latitude'],
  properties: { latitude: { type: 'number', minimum: -90, maximum: 90 }, label: { type: 'string', maxLength: 5 } },
  additionalProperties: false } } };
const err = async (f) => { try { await f(); return null; } catch (e) { return `${e.name}: ${e.message}`; } };
"""


def test_K7_mock_storage_wraps_and_checks_values(tmp_path: Path):
    got = deno_json(
        tmp_path,
        MOCK
        + """
        const ctx = createMockContext({ integration: { slug: 'acme' }, storageSchemas: schemas,
          storage: { account: { 'settings/location': { latitude: 1 } } } });
        const first = await ctx.storage.account.get('settings/location');
        first.data.latitude = 99;  // a copy: the store keeps its own
        const again = await ctx.storage.account.get('settings/location');
        const undeclared = await err(() => ctx.storage.account.set('other', 1));
        const wrong = await err(() => ctx.storage.account.set('settings/location', { latitude: 'x' }));
        const extra = await err(() => ctx.storage.account.set('settings/location', { latitude: 1, x: 1 }));
        const range = await err(() => ctx.storage.account.set('settings/location', { latitude: 91 }));
        const long = await err(() => ctx.storage.account.set('settings/location', { latitude: 1, label: 'toolong' }));
        await ctx.storage.account.set('settings/location', { latitude: 2, label: 'SF' });
        const free = createMockContext({ integration: { slug: 'acme' } });
        await free.storage.account.set('any', [1, 'two']);
        console.log(JSON.stringify({ first, again, undeclared, wrong, extra, range, long,
          after: await ctx.storage.account.get('settings/location'), missing: await ctx.storage.account.get('nope'),
          free: await free.storage.account.get('any'), badKey: await err(() => ctx.storage.account.get('')),
          notJson: await err(() => free.storage.account.set('k', { n: 1n })),
          badFixture: await err(() => createMockContext({ integration: { slug: 'a' }, storageSchemas: schemas,
            storage: { account: { 'settings/location': { label: 'x' } } } })) }));
        """,
    )
    assert set(got["first"]) == {"key", "data", "updatedAt"} and got["first"]["key"] == "settings/location"
    assert got["again"]["data"] == {"latitude": 1} and got["again"]["updatedAt"].endswith("Z")
    assert (
        got["undeclared"].startswith("StorageError: ") and 'key "other" is not declared' in got["undeclared"]
    )
    assert '"settings/location"' in got["wrong"] and "/latitude must be number, got string" in got["wrong"]
    assert 'unexpected property "x"' in got["extra"] and "≤ 90" in got["range"] and "at most 5" in got["long"]
    assert got["after"]["data"] == {"latitude": 2, "label": "SF"} and got["missing"] is None
    assert got["free"]["data"] == [1, "two"] and got["badKey"].startswith("TypeError")
    assert (
        got["notJson"].startswith("TypeError") and 'missing required property "latitude"' in got["badFixture"]
    )


def test_K7_schema_subset_keywords(tmp_path: Path):
    got = deno_json(
        tmp_path,
        """
        import { schemaProblem } from '@ekanos/sdk/testing';
        const s = (schema, value) => schemaProblem(schema, value);
        console.log(JSON.stringify([
          s({ type: 'integer' }, 1.5), s({ type: 'integer' }, 2), s({ type: ['string', 'null'] }, null),
          s({ enum: ['a', 'b'] }, 'c'), s({ const: { a: 1 } }, { a: 1 }), s({ minLength: 2 }, '😀'),
          s({ type: 'array', items: { type: 'number' } }, [1, 'x']), s({ anyOf: [{ type: 'string' }, { minimum: 3 }] }, 1),
          s({ oneOf: [{ type: 'number' }, { minimum: 0 }] }, 5), s({ allOf: [{ maximum: 3 }] }, 4),
          s({ pattern: '^a$', format: 'email' }, 'zzz'), s(false, 1),
        ]));
        """,
    )
    assert got[0] == "/ must be integer, got number" and got[1] is None and got[2] is None
    assert "one of" in got[3] and got[4] is None and "at least 2" in got[5]
    assert got[6] == "/1 must be number, got string" and "anyOf" in got[7] and "2 of oneOf" in got[8]
    assert "≤ 3" in got[9] and got[10] is None and got[11] is not None  # unsupported keywords: ignored


def test_K7_mock_secrets_logger_and_fetch_handlers(tmp_path: Path):
    got = deno_json(
        tmp_path,
        MOCK
        + """
        const seen = [];
        const ctx = createMockContext({ integration: { slug: 'acme' }, egress: ['api.acme.example', '*.cdn.example'],
          secrets: { account: { api_key: 'k1' } },
          fetchHandlers: [
            { match: 'https://api.acme.example/v1/a', respond: () => Response.json({ via: 'prefix' }) },
            { match: /\\/v1\\/b$/, respond: async (req) => Response.json({ via: 'regexp', body: await req.text() }) },
            { match: (url, req) => req.method === 'DELETE', respond: () => new Response(null, { status: 204 }) },
            { match: 'https://x.cdn.example/', respond: () => 'not a response' },
          ] });
        ctx.logger.info({ n: 1 }, 'hello'); ctx.logger.warn('bare'); ctx.logger.debug(); ctx.logger.error({ s: 500 }, 'e');
        const a = await (await ctx.fetch('https://api.acme.example/v1/a?x=1')).json();
        const b = await (await ctx.fetch(new URL('https://api.acme.example/v1/b'), { method: 'POST', body: 'hi' })).json();
        const c = (await ctx.fetch('https://api.acme.example/v1/c', { method: 'DELETE' })).status;
        console.log(JSON.stringify({ key: await ctx.secrets.get('api_key'), none: await ctx.secrets.get('other'),
          logs: ctx.logs, a, b, c,
          nohandler: await err(() => ctx.fetch('https://api.acme.example/v2')),
          notResponse: await err(() => ctx.fetch('https://x.cdn.example/')),
          egress: await err(() => ctx.fetch('https://evil.test/x')),
          badEgress: await err(() => createMockContext({ integration: { slug: 'a' }, egress: ['http://x.example'] })),
          badSecret: await err(() => createMockContext({ integration: { slug: 'a' }, secrets: { account: { k: 1 } } })),
          noSlug: await err(() => createMockContext({})) }));
        """,
    )
    assert got["key"] == "k1" and got["none"] is None
    assert got["logs"] == [
        {"level": "info", "message": "hello", "fields": {"n": 1}},
        {"level": "warn", "message": "bare", "fields": {}},
        {"level": "debug", "message": "", "fields": {}},
        {"level": "error", "message": "e", "fields": {"s": 500}},
    ]
    assert got["a"] == {"via": "prefix"} and got["b"] == {"via": "regexp", "body": "hi"} and got["c"] == 204
    assert got["nohandler"].startswith("FetchError") and "GET https://api.acme.example/v2" in got["nohandler"]
    assert "fetchHandlers[3].respond must return a Response" in got["notResponse"]
    assert got["egress"] == (
        'EgressError: fetch to evil.test is not allowed; egress: ["api.acme.example","*.cdn.example"]'
    )
    assert "egress.0" in got["badEgress"] and "secrets.account" in got["badSecret"] and got["noSlug"]


def test_public_action_error_and_import_map(tmp_path: Path):
    got = deno_json(
        tmp_path,
        """
        import { PublicActionError } from '@ekanos/sdk/integration';
        const e = new PublicActionError('Card declined.', { code: 'declined' });
        console.log(JSON.stringify([e instanceof Error, e.name, e.message, e.code]));
        """,
    )
    assert got == [True, "PublicActionError", "Card declined.", "declined"]
    assert json.loads(IMPORT_MAP.read_text(encoding="utf-8")) == {
        "imports": {
            "@ekanos/sdk": "./index.ts",
            "@ekanos/sdk/testing": "./testing.ts",
            "@ekanos/sdk/integration": "./integration.ts",
            "vitest": "./vitest.ts",
        }
    }


ENTRIES = [
    "api.acme.example", "*.acme.example", "x", "a-b.c-d.example", "*.example", "*.", "API.acme.example",
    "https://api.acme.example", "api.acme.example:443", "user@api.acme.example", "api.acme.example/v1",
    "10.0.0.1", "host.123", "-bad.example", "bad-.example", "a..b", "", " api.acme.example", 5, None,
    "a" * 64 + ".example", "xn--bcher-kva.example",
]  # fmt: skip


def test_K6_egress_entries_are_checked_alike_by_the_sdk_and_python(tmp_path: Path):
    """The entry rule of defineIntegration (egress.ts egressEntryProblem) and the loader's
    check of a description (egress_entry_problem) accept and refuse the same entries."""
    from workbench.platforms.ekanos.loader import egress_entry_problem

    sdk = deno_json(
        tmp_path,
        f"""
        import {{ egressEntryProblem }} from '{(SDK_DIR / "egress.ts").as_uri()}';
        console.log(JSON.stringify({json.dumps(ENTRIES)}.map((e) => egressEntryProblem(e) === null)));
        """,
    )
    assert sdk == [egress_entry_problem(e) is None for e in ENTRIES]
