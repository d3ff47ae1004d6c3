"""A repro bundle of a fresh bench replays: the three new-user gems of the issue, each made with
`gem-workbench new` and set up as its docs say (a Notochord TS gem with a mail cursor over
scheduled mail, an agent tool that searches and mails allowed recipients, an Ekanos integration
with secrets, account storage and fetch handlers), exported, then `gem-workbench replay` exits 0;
a bundle whose setup was edited names the difference and exits 1; a format-1 bundle replays as
it did. Hostile format-2 fields: tests/test_sec_bundles.py."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

import workbench
from workbench.bundles.replay import replay_bundle
from workbench.cli import main
from workbench.ctx import state as state_model

pytestmark = pytest.mark.deno


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEM_WORKBENCH_HOME", str(tmp_path / "home"))


def _new(tmp_path: Path, name: str, platform: str) -> Path:
    assert main(["new", name, "--platform", platform, "--lang", "ts", "--dir", str(tmp_path)]) == 0
    return tmp_path / name


def _replay(path: Path, capsys: Any) -> tuple[int, list[dict[str, Any]], str]:
    capsys.readouterr()
    code = main(["replay", str(path)])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines() if line.startswith("{")], err


# -- the Notochord gem: a mail cursor in kv over mail scheduled at virtual times ----------------
DIGEST = """
export default async function (input: Record<string, never>, ctx: any) {
  const cursor = Number((await ctx.storage.kv.get("cursor")) ?? "0");
  const page = await ctx.email.listSince({ since: cursor, limit: 50 });
  await ctx.storage.kv.set("cursor", String(page.cursor ?? cursor));
  return { processed: page.messages.length, subjects: page.messages.map((m: any) => m.subject) };
}
"""


def _mail_gem(tmp_path: Path) -> Path:
    gem = _new(tmp_path, "mail-cursor", "notochord")
    manifest = json.loads((gem / "manifest.json").read_text())
    manifest["permissions"] = {"email": {"read": True}}
    manifest["tools"].append(
        {
            "name": "digest",
            "file": "tools/digest.ts",
            "description": "The mail since the cursor kept in kv.",
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
            "permissions": {"email": {"read": True}},
            "sideEffect": "write",
        }
    )
    (gem / "manifest.json").write_text(json.dumps(manifest, indent=2))
    (gem / "tools" / "digest.ts").write_text(DIGEST)
    return gem


def test_notochord_mail_cursor_bundle_replays_all_8_calls(tmp_path: Path, capsys: Any) -> None:
    gem = _mail_gem(tmp_path)
    with workbench.open(gem, clock="2026-01-05T08:00:00Z", seed=3) as bench:
        bench.email.allow("all")
        bench.email.arrive([{"accountId": "work", "subject": s} for s in "abc"], at="2d")
        bench.email.arrive({"accountId": "work", "subject": "d"}, at="4d")
        got = []
        for _ in range(8):
            bench.clock.advance("1d")
            got.append(bench.call("digest").value["processed"])
        assert got == [0, 3, 0, 1, 0, 0, 0, 0]  # each mail read once, on its day
        path = bench.export(tmp_path / "mail.gemrepro")
    code, lines, err = _replay(path, capsys)
    assert code == 0, err
    assert [(r["call"], r["matches"], r["how"]) for r in lines] == [(n, True, "sequence") for n in range(8)]
    assert [r["result"]["value"]["processed"] for r in lines] == got


# -- the agent tool: web_search, then send_email to an allowed recipient ------------------------
BRIEF = """
export async function handle(input: { to: string }, ctx: any) {
  const found = await ctx.tools.web_search({ query: "gem workbench" });
  if ("error" in found) return { error: found.error };
  const sent = await ctx.tools.send_email({ to: input.to, subject: "brief", body_text: JSON.stringify(found) });
  if ("error" in sent) return { error: sent.error };
  return { sent: sent.message_id, found: found.length };
}
"""


def _agent_gem(tmp_path: Path) -> Path:
    gem = _new(tmp_path, "mailer", "agent")
    manifest = json.loads((gem / "manifest.json").read_text())
    manifest["builtins"] = ["calculate", "web_search", "send_email"]
    manifest["tools"].append(
        {
            "name": "brief",
            "file": "tools/brief.ts",
            "description": "Search, then mail what was found.",
            "parameters": {
                "type": "object",
                "properties": {"to": {"type": "string"}},
                "required": ["to"],
                "additionalProperties": False,
            },
        }
    )
    (gem / "manifest.json").write_text(json.dumps(manifest, indent=2))
    (gem / "tools" / "brief.ts").write_text(BRIEF)
    return gem


def _agent_bundle(tmp_path: Path) -> Path:
    with workbench.open(_agent_gem(tmp_path), seed=5) as bench:
        bench.allow_recipients("*@acme.example")
        results = [bench.call("brief", {"to": to}) for to in ("ada@acme.example", "eve@other.example")]
        assert results[0].ok and "sent" in results[0].value, results[0]
        assert results[1].value == {"error": "recipient_not_allowed"}
        assert len(bench.outbox()) == 1
        return bench.export(tmp_path / "agent.gemrepro")


def test_agent_search_and_mail_bundle_replays_with_allowed_recipients(tmp_path: Path, capsys: Any) -> None:
    code, lines, err = _replay(_agent_bundle(tmp_path), capsys)
    assert code == 0, err
    assert [r["matches"] for r in lines] == [True, True]
    assert "sent" in lines[0]["result"]["value"]  # not recipient_not_allowed


# -- the Ekanos integration: secrets, account storage, fetch handlers ---------------------------
FORECAST = """
import { defineIntegration } from '@ekanos/sdk';
export const storage = { account: {
  settings: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  seen: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false },
} };
export default defineIntegration({
  slug: 'weather',
  egress: ['api.weather.example'],
  storage,
  tools: [{
    name: 'forecast',
    description: 'The forecast for the account city.',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    outputExample: { city: 'Paris', temp: 20, seen: 1 },
    async run(ctx, args: {}) {
      const saved = await ctx.storage.account.get<{ city: string }>('settings');
      const seen = await ctx.storage.account.get<{ n: number }>('seen');
      const key = await ctx.secrets.get('api_key');
      const r = await ctx.fetch(`https://api.weather.example/v1?city=${saved?.data.city}`,
        { headers: { authorization: `Bearer ${key}` } });
      const body = await r.json();
      const count = (seen?.data.n ?? 0) + 1;
      await ctx.storage.account.set('seen', { n: count });
      return { city: saved?.data.city, temp: body.temp, seen: count };
    },
  }],
});
"""
SECRET = "sk_live_abcdef123456"


def test_ekanos_secrets_storage_fetch_bundle_replays(tmp_path: Path, capsys: Any) -> None:
    gem = _new(tmp_path, "weather", "ekanos")
    (gem / "integration.ts").write_text(FORECAST)
    handlers = [{"match": "https://api.weather.example/", "respond": {"status": 200, "json": {"temp": 21}}}]
    with workbench.open(
        gem,
        seed=9,
        secrets={"api_key": SECRET},
        account_storage={"settings": {"city": "Paris"}},
        fetch_handlers=handlers,
    ) as bench:
        values = [bench.call("forecast", {}).value for _ in range(3)]
        assert [v["seen"] for v in values] == [1, 2, 3] and values[0]["temp"] == 21
        path = bench.export(tmp_path / "weather.gemrepro")
    assert SECRET.encode() not in path.read_bytes()
    with zipfile.ZipFile(path) as z:
        assert all(SECRET.encode() not in z.read(n) for n in z.namelist())
    code, lines, err = _replay(path, capsys)
    assert code == 0, err
    assert [r["result"]["value"] for r in lines] == values


def test_an_opened_bundle_is_set_up_as_its_bench_was(tmp_path: Path) -> None:
    with workbench.open(_agent_bundle(tmp_path)) as bench:
        res = bench.call("brief", {"to": "ada@acme.example"})
        assert res.ok and "sent" in res.value, res  # the bundle's allowed recipients, not none
        assert state_model.dump(bench, roles=("setup",))["recipients"] == ["*@acme.example"]


# -- a bundle whose setup was edited --------------------------------------------------------------
def _rewrite(path: Path, name: str, edit: Any) -> None:
    """Rewrite entry `name` of the bundle at `path` with `edit(value)`, its sha256 made again."""
    with zipfile.ZipFile(path) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    entries[name] = json.dumps(edit(json.loads(entries[name]))).encode()
    meta = json.loads(entries["bundle.json"])
    for e in meta["entries"]:
        if e["name"] in entries:
            e["sha256"] = hashlib.sha256(entries[e["name"]]).hexdigest()
            e["size"] = len(entries[e["name"]])
    entries["bundle.json"] = json.dumps(meta).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for n, d in entries.items():
            z.writestr(n, d)
    path.write_bytes(buf.getvalue())


def test_a_bundle_whose_setup_was_edited_names_the_difference(tmp_path: Path, capsys: Any) -> None:
    path = _agent_bundle(tmp_path)
    meta = json.loads(zipfile.ZipFile(path).read("bundle.json"))
    assert meta["setup"]["recipients"] == ["*@acme.example"]
    code, _, err = _replay(path, capsys)
    assert code == 0, err

    def none_allowed(start: dict[str, Any]) -> dict[str, Any]:
        start["setup"]["recipients"] = []
        return start

    _rewrite(path, "start.json", none_allowed)
    code, lines, err = _replay(path, capsys)
    assert code == 1
    assert lines[0]["differences"] == [
        "setup recipients: the bundle's bench had `*@acme.example`; this one has none"
    ]
    assert "setup recipients: the bundle's bench had `*@acme.example`; this one has none" in err


def test_a_setup_part_this_bench_lacks_is_refused_naming_it(tmp_path: Path, capsys: Any) -> None:
    path = _agent_bundle(tmp_path)

    def unknown(start: dict[str, Any]) -> dict[str, Any]:
        start["setup"]["wormhole"] = {"to": "elsewhere"}
        return start

    _rewrite(path, "start.json", unknown)
    capsys.readouterr()
    code = main(["replay", str(path)])
    err = capsys.readouterr().err
    print(err)
    assert code == 1 and "E_BUNDLE" in err and "start.json: setup: wormhole" in err


# -- format 1, and a bench that kept no start -----------------------------------------------------
def test_a_format_1_bundle_replays_as_it_did(tmp_path: Path, capsys: Any) -> None:
    gem = _new(tmp_path, "greeter", "notochord")
    with workbench.open(gem, seed=1, clock="2026-01-01T00:00:00Z") as bench:
        for name in ("Ada", "Bob"):
            bench.call("hello", {"name": name})
        path = bench.export(tmp_path / "g.gemrepro")
    with zipfile.ZipFile(path) as z:
        entries = {n: z.read(n) for n in z.namelist() if n != "start.json"}
    meta = json.loads(entries["bundle.json"])
    meta["bundle"] = 1
    for key in ("setup", "start"):
        meta.pop(key, None)
    for rec in meta["calls"]:
        rec.pop("outside")
    meta["entries"] = [e for e in meta["entries"] if e["name"] != "start.json"]
    entries["bundle.json"] = json.dumps(meta).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for n, d in entries.items():
            z.writestr(n, d)
    old = tmp_path / "old.gemrepro"
    old.write_bytes(buf.getvalue())
    code, lines, err = _replay(old, capsys)
    assert code == 0, err
    assert [r["how"] for r in lines] == ["rerun", "case"]


def test_a_bench_opened_without_pins_says_why_its_bundle_has_no_start(tmp_path: Path) -> None:
    gem = _new(tmp_path, "greeter", "notochord")
    with workbench.open(gem, seed=1, pins=False) as bench:
        bench.call("hello", {"name": "Ada"})
        path = bench.export(tmp_path / "g.gemrepro")
    with zipfile.ZipFile(path) as z:
        assert "start.json" not in z.namelist()
        meta = json.loads(z.read("bundle.json"))
    assert "pins=False" in meta["start"]
    assert meta["calls"][0]["outside"]["served"] is None
    (rerun,) = replay_bundle(path)
    assert rerun.how == "rerun" and rerun.ok
    assert rerun.note == "rerun from the gem's fixtures: " + meta["start"]


# -- no feature of pins or bundles reaches a capability's backend by its name -----------------
PIN_AND_BUNDLE_MODULES = (
    "pins/case.py",
    "pins/replay.py",
    "bundles/export.py",
    "bundles/read.py",
    "bundles/replay.py",
    "bundles/statedir.py",
)


def test_pins_and_bundles_reach_no_backend_by_its_name() -> None:
    """The secret mask, the credentials' reach, the secrets set, served HTTP and the allowed
    recipients come from narrow functions in ctx/ (ctx/standins.py), not `backends["…"]`."""
    root = Path(workbench.__file__).parent
    found = [
        f"{name}:{n}"
        for name in PIN_AND_BUNDLE_MODULES
        for n, line in enumerate((root / name).read_text().splitlines(), 1)
        if "backends[" in line or "backends.get(" in line
    ]
    assert found == []


def test_the_answers_a_call_keeps_count_in_the_results_ring(tmp_path: Path) -> None:
    """Each call keeps the answers a bundle's replay serves back (not only the latest's): they
    count toward Limits.results_bench_chars, so the ring drops old calls with their answers."""
    from workbench.bench.result import kept_chars

    with workbench.open(_agent_gem(tmp_path), seed=5) as bench:
        bench.allow_recipients("*@acme.example")
        first = bench.call("brief", {"to": "ada@acme.example"})
        bench.call("brief", {"to": "bob@acme.example"})
        served = first.replay["served"]
        assert [e["method"] for e in served.entries] == ["tools.web_search", "tools.send_email"]
        assert served.chars > 100
        answers = served.chars
        served.chars = 0
        without = kept_chars(first)
        served.chars = answers
        assert kept_chars(first) == without + answers


def test_a_crashed_run_and_its_rerun_replay_as_they_ran(tmp_path: Path, capsys: Any) -> None:
    """call(crash=2) keeps two calls: the crashed run (E_SANDBOX after ctx call 2) crashes again
    at its point on the replay, and its rerun runs fresh with the same idempotency key."""
    with workbench.open(_agent_gem(tmp_path), seed=5) as bench:
        bench.allow_recipients("*@acme.example")
        bench.call("brief", {"to": "ada@acme.example"})
        rerun = bench.call("brief", {"to": "bob@acme.example"}, crash=2)
        assert rerun.crash is not None and rerun.crash.crashed is not None
        bench.call("brief", {"to": "cy@acme.example"})
        path = bench.export(tmp_path / "crash.gemrepro")
    code, lines, err = _replay(path, capsys)
    assert code == 0, err
    assert [r["matches"] for r in lines] == [True] * 4
    assert lines[1]["result"]["error"]["code"] == "E_SANDBOX"
    assert lines[1]["note"] == "the crashed run of call(crash=2): crashed again there"


def test_exported_calls_that_skip_one_have_no_start(tmp_path: Path) -> None:
    """A replay from the start makes every call in order: calls that skip one of the bench's
    are exported without start.json (rerun from the fixtures), `start` saying why."""
    gem = _new(tmp_path, "greeter", "notochord")
    with workbench.open(gem, seed=1) as bench:
        first, second, third = (bench.call("hello", {"name": n}) for n in ("Ada", "Bob", "Cy"))
        whole = bench.export(tmp_path / "whole.gemrepro", calls=[first, second])
        skipping = bench.export(tmp_path / "skip.gemrepro", calls=[first, third])
    assert "start.json" in zipfile.ZipFile(whole).namelist()
    assert "start.json" not in zipfile.ZipFile(skipping).namelist()
    meta = json.loads(zipfile.ZipFile(skipping).read("bundle.json"))
    assert meta["start"].startswith(f"the exported calls skip call {second.call_id}")


def test_a_bench_on_real_providers_copies_nothing_at_its_first_call(tmp_path: Path) -> None:
    """The start is a copy of the whole state: a real folder or database is never read whole
    for it (its bundle says why it has no start.json)."""
    gem = _new(tmp_path, "greeter", "notochord")
    with workbench.open(gem, seed=1, providers="real", state_dir=tmp_path / "real") as bench:
        assert bench.call("hello", {"name": "Ada"}).ok
        path = bench.export(tmp_path / "real.gemrepro")
    with zipfile.ZipFile(path) as z:
        assert "start.json" not in z.namelist()
        assert "are real: a replay starts from mocks" in json.loads(z.read("bundle.json"))["start"]


def test_pins_and_bundles_name_no_ctx_method() -> None:
    """Which ctx calls are HTTP exchanges, effects or served answers comes from the specs
    (ctx/standins.py http_exchange, outside_of): no method name in the pins' and bundles' code."""
    import re

    root = Path(workbench.__file__).parent
    named = re.compile(r"""["'](?:http\.fetch|fetch|tools\.\w+|email\.\w+)["']|_HTTP_METHODS|_EFFECTS\b""")
    found = [
        f"{name}:{n}: {line.strip()}"
        for name in PIN_AND_BUNDLE_MODULES
        for n, line in enumerate((root / name).read_text().splitlines(), 1)
        if named.search(line)
    ]
    assert found == []
