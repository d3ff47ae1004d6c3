"""N7 by one definition: a rerun after a crash is judged against one clean call from the same
start — the state it leaves (a second mail, document or row, and a balance moved twice) and
the effects it makes (mail sent, a POST) — by `crash=`, `crash_matrix` and the doctor alike."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import GemBuilder

import workbench

# -- an agent tool that searches, then mails what it found ------------------------------------
MAILER = """
export async function handle(input, ctx) {
  const found = await ctx.tools.web_search({ query: input.topic });
  return await ctx.tools.send_email({ to: input.to, subject: "Report", body_text: JSON.stringify(found) });
}
"""
MAIL_SCHEMA = {
    "type": "object",
    "properties": {"to": {"type": "string"}, "topic": {"type": "string"}},
    "required": ["to", "topic"],
    "additionalProperties": False,
}
REPORT = {"to": "a@acme.example", "topic": "deno"}
TWICE = "mail to a@acme.example 'Report': 2 sent (the crashed run's and the rerun's), a clean run sends 1"


def mailer(gem: GemBuilder, opened: Callable) -> workbench.Bench:
    gem.tool("mailer", MAILER, ext="js", schema=MAIL_SCHEMA)
    bench = opened(gem.as_agent("agent-1", "Mailer").write())
    bench.allow_recipients("*@acme.example")
    return bench


@pytest.mark.deno
def test_crash_after_send_email_reports_the_duplicate_mail(gem: GemBuilder, opened: Callable) -> None:
    bench = mailer(gem, opened)
    res = bench.call("mailer", REPORT, crash=2)
    assert res.ok and res.crash is not None and res.crash.crashed is not None
    assert res.crash.duplicates == [TWICE]
    assert len(bench.results) == 2  # the crashed run and the rerun: the clean run compared is no row
    assert bench.call("mailer", REPORT, crash=1).crash.duplicates == []  # after the search: sent once


@pytest.mark.deno
def test_crash_matrix_is_not_clean_after_send_email(gem: GemBuilder, opened: Callable) -> None:
    bench = mailer(gem, opened)
    m = bench.crash_matrix("mailer", REPORT).set_index("at")
    assert m["clean"].to_dict() == {
        "before the first ctx call": True,
        "after tools.web_search": True,
        "after tools.send_email": False,
    }
    assert m.loc["after tools.send_email", "duplicated"] == TWICE
    assert TWICE in m.loc["after tools.send_email", "vs_clean"]


@pytest.mark.deno
def test_the_doctor_finds_N7_on_the_mailer_drawing_an_allowed_recipient(
    gem: GemBuilder, opened: Callable
) -> None:
    bench = mailer(gem, opened)
    report = bench.doctor(examples=16, seed=1, write=False)
    n7 = [f for f in report.findings if f.kind == "N7"]
    assert [f.tool for f in n7] == ["mailer"], report.findings
    assert "(tools.send_email)" in n7[0].message and "mail to team@acme.example" in n7[0].message
    assert n7[0].input["to"] == "team@acme.example"  # drawn from allow_recipients('*@acme.example')
    assert "a clean run sends 1" in n7[0].message


@pytest.mark.deno
def test_the_mailers_N7_case_replays_until_the_mail_is_sent_once(tmp_path: Path) -> None:
    from workbench.testing import replay_case

    gem = GemBuilder(tmp_path / "gem")
    gem.tool("mailer", MAILER, ext="js", schema=MAIL_SCHEMA)
    root = gem.as_agent("agent-1", "Mailer").write()
    with workbench.open(root) as bench:
        bench.allow_recipients("*@acme.example")
        [n7] = [f for f in bench.doctor(examples=16, seed=1).findings if f.kind == "N7"]
    out = replay_case(n7.case)  # the search's answer served to the clean, crashed and rerun calls
    assert not out.ok and "mail to team@acme.example" in out.lines[0], out.lines
    tool = root / "tools" / "mailer.js"  # a tool that no longer mails has nothing to send twice
    tool.write_text(
        tool.read_text().replace("return await ctx.tools.send_email", "return found; ctx.tools.send_email")
    )
    assert replay_case(n7.case).ok


def test_the_doctor_seeds_addresses_and_hosts_from_what_the_bench_allows(
    gem: GemBuilder, opened: Callable
) -> None:
    from workbench.doctor.seeds import gather, seeded_examples

    gem.tool("mail", "def handle(input, ctx):\n    return ctx.tools.send_email(input)\n", schema=MAIL_SCHEMA)
    bench = opened(gem.as_agent("agent-1", "Mailer").write())
    assert "email" not in gather(bench).formats  # none allowed: nothing to draw from
    bench.allow_recipients("*@acme.example", "bob@beta.example")
    seeds = gather(bench)
    assert seeds.formats["email"] == ["team@acme.example", "bob@beta.example"]
    first = seeded_examples(MAIL_SCHEMA, {"to": "", "topic": ""}, seeds)[0]
    assert first == {"to": "team@acme.example", "topic": ""}  # the plainest input that can mail


@pytest.mark.deno  # (the gem's JS tools start the sandbox at open)
def test_the_doctor_fills_an_account_field_with_an_allowed_account(opened: Callable) -> None:
    from workbench.doctor.seeds import gather, seeded_examples

    bench = opened(Path(__file__).resolve().parent.parent / "notebooks" / "gems" / "mail-digest")
    assert "account" not in gather(bench).formats  # none allowed yet
    bench.email.allow(["work"])
    seeds = gather(bench)
    assert seeds.formats["account"] == ["work"]
    schema = {"type": "object", "properties": {"accountId": {"type": "string"}, "q": {"type": "string"}}}
    assert seeded_examples(schema, {}, seeds)[0] == {"accountId": "work"}


def test_the_doctor_seeds_hosts_from_credentials(gem: GemBuilder, opened: Callable) -> None:
    from workbench.doctor.seeds import gather

    gem.tool("get", "def handle(input, ctx):\n    return ctx.http.fetch(input['url']).status\n")
    gem.manifest["permissions"] = {"http": {"connections": {"acme": {"hosts": ["api.acme.example"]}}}}
    creds = {"acme": {"token": "t0ken-value-1", "hosts": ["api.acme.example", "*.beta.example"]}}
    seeds = gather(opened(gem, credentials=creds))
    assert seeds.formats["hostname"] == ["api.acme.example", "api.beta.example"]
    assert seeds.formats["uri"] == ["https://api.acme.example/", "https://api.beta.example/"]


# -- a payment added to a kv balance: read, add, write -----------------------------------------
PAY = {
    "js": """
export default async (input, ctx) => {
  const balance = Number((await ctx.storage.kv.get("balance")) ?? 0);
  await ctx.storage.kv.set("balance", String(balance + input.amount));
  return { balance: balance + input.amount };
};
""",
    "py": """
def handle(input, ctx):
    balance = int(ctx.storage.kv.get("balance") or 0)
    ctx.storage.kv.set("balance", str(balance + input["amount"]))
    return {"balance": balance + input["amount"]}
""",
}
# the new balance is kept under the run's idempotency key first: a rerun writes that same value
PAY_KEYED = {
    "js": """
export default async (input, ctx) => {
  const mark = "paid:" + ctx.idempotencyKey;
  let target = await ctx.storage.kv.get(mark);
  if (target === null) {
    target = String(Number((await ctx.storage.kv.get("balance")) ?? 0) + input.amount);
    await ctx.storage.kv.set(mark, target);
  }
  await ctx.storage.kv.set("balance", target);
  return { balance: Number(target) };
};
""",
    "py": """
def handle(input, ctx):
    mark = "paid:" + ctx.idempotencyKey
    target = ctx.storage.kv.get(mark)
    if target is None:
        target = str(int(ctx.storage.kv.get("balance") or 0) + input["amount"])
        ctx.storage.kv.set(mark, target)
    ctx.storage.kv.set("balance", target)
    return {"balance": int(target)}
""",
}
AMOUNT = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "minimum": 1, "maximum": 1000}},
    "required": ["amount"],
    "additionalProperties": False,
}
LANGS = [pytest.param("js", marks=pytest.mark.deno), "py"]


def payments(gem: GemBuilder, opened: Callable, lang: str) -> workbench.Bench:
    gem.tool("pay", PAY[lang], ext=lang, schema=AMOUNT, side_effect="write")
    gem.tool("pay_keyed", PAY_KEYED[lang], ext=lang, schema=AMOUNT, side_effect="write")
    bench = opened(gem)
    bench.call("pay", {"amount": 100}).raise_for_error()  # a balance of 100 to start from
    return bench


@pytest.mark.parametrize("lang", LANGS)
def test_a_balance_moved_twice_by_a_rerun_is_N7(lang: str, gem: GemBuilder, opened: Callable) -> None:
    bench = payments(gem, opened, lang)
    res = bench.call("pay", {"amount": 100}, crash=2)  # after the write, before the tool saw it
    assert res.crash.duplicates == [
        "kv balance: 300 after the crashed run and the rerun, 200 after a clean run (moved twice: +100 each)"
    ]
    assert bench.kv().set_index("key")["value"]["balance"] == "300"  # the bench holds what it did


@pytest.mark.parametrize("lang", LANGS)
def test_crash_matrix_flags_the_balance_and_not_the_keyed_payment(
    lang: str, gem: GemBuilder, opened: Callable
) -> None:
    bench = payments(gem, opened, lang)
    m = bench.crash_matrix("pay", {"amount": 5})
    assert m["clean"].tolist() == [True, True, False]
    assert "moved twice: +5 each" in m["duplicated"].iloc[2]
    keyed = bench.crash_matrix("pay_keyed", {"amount": 5})
    assert len(keyed) == 5 and keyed["clean"].all(), keyed.to_dict("records")
    assert bench.kv().set_index("key")["value"]["balance"] == "100"  # state put back


@pytest.mark.deno
def test_the_doctor_reports_the_balance_moved_twice_and_not_the_keyed_payment(
    gem: GemBuilder, opened: Callable
) -> None:
    bench = payments(gem, opened, "js")
    report = bench.doctor(examples=16, seed=1, write=False)
    n7 = [f for f in report.findings if f.kind == "N7"]
    assert [f.tool for f in n7] == ["pay"], report.findings
    assert re.search(r"kv balance: .* after a clean run \(moved twice: \+\d+ each\)", n7[0].message), n7[
        0
    ].message


# -- a POST: repeated, or carrying the idempotency key its receiver dedupes by --------------------
POST = """
export default async (input, ctx) => {
  const headers = input.keyed ? { "Idempotency-Key": ctx.idempotencyKey } : {};
  const r = await ctx.http.fetch("https://api.acme.example/v1/charges", { method: "POST", headers, body: "{}" });
  await ctx.storage.kv.set("charged", "yes");
  return { status: r.status };
};
"""


@pytest.mark.deno
def test_a_repeated_post_is_N7_unless_it_carries_the_idempotency_key(
    gem: GemBuilder, opened: Callable
) -> None:
    schema = {"type": "object", "properties": {"keyed": {"type": "boolean"}}, "additionalProperties": False}
    gem.tool("charge", POST, ext="js", schema=schema, side_effect="write")
    gem.manifest["permissions"] = {"http": {"connections": {"acme": {"hosts": ["api.acme.example"]}}}}
    bench = opened(gem, http=[{"match": "https://api.acme.example/", "respond": {"status": 201, "json": {}}}])
    plain = bench.call("charge", {"keyed": False}, crash=1)
    assert plain.crash.duplicates == [
        "POST https://api.acme.example/v1/charges: 2 sent (the crashed run's and the rerun's), a clean run sends 1"
    ]
    assert bench.call("charge", {"keyed": True}, crash=1).crash.duplicates == []


# -- platform behaviour is profile data --------------------------------------------------------
ROOT = Path(__file__).resolve().parent.parent / "workbench"
FEATURES = [
    *sorted((ROOT / "doctor").glob("*.py")),
    ROOT / "pins/case.py",
    *sorted(ROOT.glob("_bundle*.py")),
    ROOT / "bench/crash.py",
    ROOT / "pins/replay.py",
]
COMPARISON = re.compile(
    r"""profile\.name\b\s*[!=]=|[!=]=\s*\S*profile\.name\b|platform\s*[!=]=\s*["']|["'](?:notochord|agent|ekanos)["']\s*[!=]="""
)
ALLOWED = {
    # a case pinned on another platform is refused: its recorded platform compared to the bench's
    ("pins/replay.py", 'if case.get("platform") not in (None, bench.profile.name):'),
    # whether the platform is a built-in one or a plugin's (which may run Python of its own)
    ("bundles/read.py", "if profile.name not in KNOWN or _has_python_file(root):"),
}


def test_no_feature_compares_platform_names() -> None:
    found = [
        (path.name, line.strip())
        for path in FEATURES
        for line in path.read_text(encoding="utf-8").splitlines()
        if COMPARISON.search(line) or re.search(r"profile\.name\s+(?:not\s+)?in\b", line)
    ]
    assert [f for f in found if f not in ALLOWED] == []


def test_the_doctors_platform_behaviour_is_read_from_the_profile() -> None:
    from workbench.doctor.findings import rule_of
    from workbench.platforms import profile

    agent, ekanos, noto = profile("agent"), profile("ekanos"), profile("notochord")
    assert [rule_of("timeout", p) for p in (agent, ekanos, noto)] == ["A5", "SEC5", "SEC5"]
    assert [rule_of("secret", p) for p in (agent, ekanos, noto)] == ["SEC4", "K6", "SEC4"]
    assert [p.throw_kind for p in (agent, ekanos, noto)] == ["throw", "fault", "throw"]
    assert [p.envelopes for p in (agent, ekanos, noto)] == [True, False, False]


def test_a_plugin_platform_gets_the_doctors_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from workbench.doctor.findings import rule_of

    monkeypatch.syspath_prepend(str(Path(__file__).parent / "plugins" / "gw_fourth"))
    try:
        from gw_fourth import PROFILE  # a plugin's profile that says nothing of the doctor

        assert [rule_of(k, PROFILE) for k in ("timeout", "secret", "throw")] == ["SEC5", "SEC4", "-"]
        assert (PROFILE.throw_kind, PROFILE.envelopes, PROFILE.side_effects) == ("throw", False, False)
    finally:
        sys.modules.pop("gw_fourth", None)
