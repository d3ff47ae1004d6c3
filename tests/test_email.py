"""ctx.email (E1–E6) on the mock, Maildir and mbox providers, from Python and JS tools alike."""

from __future__ import annotations

import json
import mailbox
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _mail import FIXTURE, KINDS, MAIL_GEM, encoded, fixture_messages, mailbox_spec, rfc822, write_maildir
from conftest import GemBuilder

import workbench
from workbench.providers.mail import Envelope, Message
from workbench.providers.maillocal import MaildirMailbox, MboxMailbox
from workbench.providers.mailmock import MockMailbox

SEED = Path("/work/shared/seeds/000_941598fb643217d6.reflowed.md")
ENVELOPE_KEYS = {"accountId", "id", "subject", "fromAddr", "toAddrs", "date"}
ALL = sorted(fixture_messages(), key=lambda d: (d["date"], d["accountId"], d["id"]))

PY_OPS = """
from workbench import WorkbenchError

def handle(input, ctx):
    out = []
    for op, *args in input["ops"]:
        try:
            out.append({"ok": getattr(ctx.email, op)(*args)})
        except WorkbenchError as e:
            out.append({"error": e.code, "message": e.message, "field": e.details.get("field")})
    return out
"""

JS_OPS = """
export default async function (input, ctx) {
  const out = []
  for (const [op, ...args] of input.ops) {
    try { out.push({ ok: await ctx.email[op](...args) }) }
    catch (e) { out.push({ error: e.code, message: e.message, field: e.details?.field ?? null }) }
  }
  return out
}
"""

JS_PROBE = (
    "export default async (input, ctx) => ({ type: typeof ctx.email, "
    "keys: ctx.email ? Object.keys(ctx.email) : null })"
)
JS_USES_EMAIL = "export default async (input, ctx) => await ctx.email.listSince({})"
READ = {"email": {"read": True}}


def email_gem(gem: GemBuilder, *, top: Any = READ, shorthand: bool = False) -> GemBuilder:
    gem.tool("py", PY_OPS, permissions=READ)
    gem.tool("js", JS_OPS, ext="js", permissions=READ)
    gem.tool("py_noperm", PY_OPS)
    gem.tool("js_noperm", JS_USES_EMAIL, ext="js")
    gem.tool("js_probe", JS_PROBE, ext="js", permissions=READ)
    gem.tool("js_probe_noperm", JS_PROBE, ext="js")
    if top is not None:
        gem.manifest["permissions"] = top
    if shorthand:
        gem.manifest["email"] = True
    return gem


@pytest.fixture(params=KINDS)
def mail_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[Callable[..., workbench.Bench]]:
    benches: list[workbench.Bench] = []

    def opener(path: Path | GemBuilder, **kw: Any) -> workbench.Bench:
        if isinstance(path, GemBuilder):
            path = path.write()
        kw.setdefault("state_dir", tmp_path / "state")
        kw.setdefault("headless", True)
        b = workbench.open(path, **kw)
        benches.append(b)
        return b

    yield opener
    for b in benches:
        b.close()


@pytest.fixture
def mail(gem: GemBuilder, opened: Callable, tmp_path: Path, mail_kind: str) -> workbench.Bench:
    """The example gem's 30 messages, on `mail_kind`, behind a gem with ops tools."""
    return opened(email_gem(gem), mailbox=mailbox_spec(mail_kind, tmp_path, fixture_messages()))


def run(bench: workbench.Bench, tool: str, *ops: list[Any]) -> list[dict[str, Any]]:
    res = bench.call(tool, {"ops": [list(op) for op in ops]})
    assert res.ok, res.error
    return res.value


def one(bench: workbench.Bench, tool: str, op: str, *args: Any) -> dict[str, Any]:
    return run(bench, tool, [op, *args])[0]


def subjects(page: dict[str, Any]) -> list[str]:
    return [m["subject"] for m in page["messages"]]


# --- E1: permissions -----------------------------------------------------------------------------


def test_E1_tool_without_email_permission_is_denied_naming_the_field(mail: workbench.Bench) -> None:
    mail.email.allow("all")
    out = one(mail, "py_noperm", "listSince", {})
    assert out["error"] == "E_PERM_DENIED"
    assert "/tools/2/permissions/email" in out["message"] and "top level" not in out["message"]
    assert (
        one(mail, "py_noperm", "getMessage", {"accountId": "work", "id": "w01"})["error"] == "E_PERM_DENIED"
    )


@pytest.mark.deno
def test_E1_without_top_level_permission_every_tool_is_denied(gem: GemBuilder, opened: Callable) -> None:
    bench = opened(email_gem(gem, top=None))
    bench.email.allow("all")
    out = one(bench, "py", "listSince")
    assert out["error"] == "E_PERM_DENIED" and "/permissions/email" in out["message"]
    assert "/tools/0/permissions" not in out["message"]
    assert bench.call("js_probe").value == {"type": "undefined", "keys": None}


@pytest.mark.deno
def test_E1_draft_shorthand_email_true_at_top_level(gem: GemBuilder, opened: Callable) -> None:
    bench = opened(email_gem(gem, top=None, shorthand=True), mailbox=FIXTURE)
    bench.email.allow("all")
    assert len(one(bench, "py", "listSince")["ok"]["messages"]) == 20
    assert bench.call("js_probe").value["type"] == "object"


@pytest.mark.deno
def test_E1_js_tool_without_permission_has_no_ctx_email(mail: workbench.Bench) -> None:
    assert mail.call("js_probe_noperm").value == {"type": "undefined", "keys": None}
    res = mail.call("js_noperm")
    assert res.error.code == "E_TOOL_ERROR"
    assert "ctx.email is undefined" in res.error.message
    assert "/tools/3/permissions/email" in res.error.message


def test_E1_denied_call_is_in_the_trace(mail: workbench.Bench) -> None:
    res = mail.call("py_noperm", {"ops": [["listSince"]]})
    assert res.trace[["method", "ok", "error"]].values.tolist() == [
        ["email.listSince", False, "E_PERM_DENIED"]
    ]


# --- E2: allowed accounts ------------------------------------------------------------------------


def test_E2_no_account_is_allowed_at_open(mail: workbench.Bench, lang: str) -> None:
    assert mail.email.allowed == []
    page, work, get = run(
        mail,
        lang,
        ["listSince", {}],
        ["listSince", {"accountId": "work"}],
        ["getMessage", {"accountId": "work", "id": "w01"}],
    )
    assert page["ok"] == {"messages": [], "cursor": 0}
    assert work["error"] == get["error"] == "E_PERM_DENIED"
    assert "'work'" in work["message"] and work["field"] == "accountId"
    [warning] = mail.results[-1].warnings  # the empty page is the user's doing, not the mail's
    assert "covered no account" in warning and "bench.email.allow" in warning
    mail.email.allow("all")
    assert run(mail, lang, ["listSince", {}])[0]["ok"]["messages"] and not mail.results[-1].warnings


def test_E2_allowing_some_accounts(mail: workbench.Bench, lang: str) -> None:
    mail.email.allow(["home"])
    assert mail.email.allowed == ["home"]
    page, denied = run(mail, lang, ["listSince", {"limit": 200}], ["listSince", {"accountId": "work"}])
    assert {m["accountId"] for m in page["ok"]["messages"]} == {"home"}
    assert len(page["ok"]["messages"]) == 11
    assert denied["error"] == "E_PERM_DENIED" and "'work'" in denied["message"]
    mail.email.allow([])
    assert one(mail, lang, "listSince", {"accountId": "home"})["error"] == "E_PERM_DENIED"


def test_E2_all_accounts_covers_accounts_added_later(gem: GemBuilder, opened: Callable) -> None:
    bench = opened(email_gem(gem), mailbox=FIXTURE)
    bench.email.allow("all")
    bench.email.add({"accountId": "later", "subject": "new account"})
    page = one(bench, "py", "listSince", {"accountId": "later"})["ok"]
    assert subjects(page) == ["new account"]
    bench.email.allow(["work", "home"])  # a list does not cover later accounts
    assert one(bench, "py", "listSince", {"accountId": "later"})["error"] == "E_PERM_DENIED"


def test_E2_allow_rejects_what_is_not_account_ids(mail: workbench.Bench) -> None:
    with pytest.raises(workbench.UsageError, match="allow"):
        mail.email.allow([1, 2])  # type: ignore[list-item]


# --- E3: read-only -------------------------------------------------------------------------------


@pytest.mark.deno
def test_E3_email_is_read_only(mail: workbench.Bench) -> None:
    assert mail.call("js_probe").value == {"type": "object", "keys": ["listSince", "getMessage"]}
    gem_tool = """
def handle(input, ctx):
    try:
        ctx.email.send
    except AttributeError as e:
        return {"methods": dir(ctx.email), "send": str(e)}
"""
    tool = mail.manifest.root / "tools" / "py_noperm.py"
    tool.write_text(gem_tool)
    value = mail.call("py_noperm").value
    assert sorted(value["methods"]) == ["getMessage", "listSince"] and "send" in value["send"]


def test_E3_no_route_sends_moves_or_deletes() -> None:
    from workbench.platforms import profile

    routes = profile("notochord").routes
    assert sorted(m for m in routes if m.startswith("email.")) == ["email.getMessage", "email.listSince"]


# --- E4: listSince -------------------------------------------------------------------------------


def test_E4_pages_oldest_first_envelopes_only_with_cursor(mail: workbench.Bench, lang: str) -> None:
    mail.email.allow("all")
    first = one(mail, lang, "listSince", {})["ok"]
    assert len(first["messages"]) == 20  # default limit
    assert all(set(m) == ENVELOPE_KEYS for m in first["messages"])
    assert subjects(first) == [d["subject"] for d in ALL[:20]]
    keys = [(m["date"], m["accountId"]) for m in first["messages"]]
    assert keys == sorted(keys)
    assert first["cursor"] == first["messages"][-1]["date"] == ALL[19]["date"]
    assert first["messages"][0] | {"id": "?"} == {k: ALL[0][k] for k in ENVELOPE_KEYS} | {"id": "?"}


def test_E4_date_strictly_greater_than_since(mail: workbench.Bench, lang: str) -> None:
    mail.email.allow("all")
    since = ALL[5]["date"]
    page = one(mail, lang, "listSince", {"since": since, "limit": 3})["ok"]
    assert subjects(page) == [d["subject"] for d in ALL[6:9]]
    assert page["cursor"] == ALL[8]["date"]


def test_E4_cursor_is_since_when_nothing_is_newer(mail: workbench.Bench, lang: str) -> None:
    mail.email.allow("all")
    last = ALL[-1]["date"]
    assert one(mail, lang, "listSince", {"since": last})["ok"] == {"messages": [], "cursor": last}
    assert one(mail, lang, "listSince", {"since": last + 0.5})["ok"]["cursor"] == last + 0.5


def test_E4_one_account_and_all_accounts_merged(mail: workbench.Bench, lang: str) -> None:
    mail.email.allow("all")
    home, both = run(
        mail, lang, ["listSince", {"accountId": "home", "limit": 200}], ["listSince", {"limit": 200}]
    )
    assert subjects(home["ok"]) == [d["subject"] for d in ALL if d["accountId"] == "home"]
    assert subjects(both["ok"]) == [d["subject"] for d in ALL]  # by (date, accountId, id)


def test_E4_limit_over_200_is_capped_at_200(
    gem: GemBuilder, opened: Callable, tmp_path: Path, mail_kind: str, lang: str
) -> None:
    base = 1_709_539_200_000
    msgs = [
        {
            "accountId": "bulk",
            "id": f"b{i:03d}",
            "subject": f"s{i:03d}",
            "fromAddr": "a@x.example",
            "toAddrs": ["b@x.example"],
            "date": base + i * 1000,
            "body": "",
            "attachments": [],
        }
        for i in range(250)
    ]
    bench = opened(email_gem(gem), mailbox=mailbox_spec(mail_kind, tmp_path, msgs))
    bench.email.allow("all")
    big, exact, small = run(
        bench,
        lang,
        ["listSince", {"limit": 1000}],
        ["listSince", {"limit": 200}],
        ["listSince", {"limit": 1}],
    )
    assert len(big["ok"]["messages"]) == len(exact["ok"]["messages"]) == 200
    assert big["ok"]["cursor"] == base + 199_000
    assert subjects(small["ok"]) == ["s000"]


@pytest.mark.parametrize(
    "opts, field",
    [
        ({"since": "0"}, "since"),
        ({"since": True}, "since"),
        ({"since": [1]}, "since"),
        ({"limit": 0}, "limit"),
        ({"limit": -5}, "limit"),
        ({"limit": 2.5}, "limit"),
        ({"limit": "20"}, "limit"),
        ({"limit": True}, "limit"),
        ({"accountId": 7}, "accountId"),
        ({"acountId": "work"}, "acountId"),
        ("work", "options"),
    ],
)
def test_E4_bad_arguments_name_the_field(
    gem: GemBuilder, opened: Callable, lang: str, opts: Any, field: str
) -> None:
    bench = opened(email_gem(gem), mailbox=FIXTURE)
    bench.email.allow("all")
    out = one(bench, lang, "listSince", opts)
    assert out["error"] == "E_INVALID_ARGUMENT" and out["field"] == field
    assert field in out["message"]


def test_E4_null_options_are_absent(gem: GemBuilder, opened: Callable, lang: str) -> None:
    bench = opened(email_gem(gem), mailbox=FIXTURE)
    bench.email.allow("all")
    page = one(bench, lang, "listSince", {"accountId": None, "since": None, "limit": None})["ok"]
    assert len(page["messages"]) == 20


def test_E4_python_keywords_equal_the_options_object(gem: GemBuilder, opened: Callable) -> None:
    gem.tool(
        "kw",
        """
def handle(input, ctx):
    return ctx.email.listSince(since=input["since"], limit=2) == ctx.email.listSince(
        {"since": input["since"], "limit": 2})
""",
        permissions=READ,
    )
    bench = opened(email_gem(gem), mailbox=FIXTURE)
    bench.email.allow("all")
    assert bench.call("kw", {"since": ALL[3]["date"]}).value is True


@pytest.mark.deno
def test_E4_equal_timestamps_lose_messages_across_a_page_boundary(
    gem: GemBuilder, opened: Callable, tmp_path: Path, mail_kind: str
) -> None:
    """The seed's own pattern (cursor = latest date, then date > cursor) skips the messages that
    share the boundary's timestamp but did not fit on the page. The workbench reproduces it."""
    (gem.root / "tools").mkdir(parents=True)
    (gem.root / "tools" / "digest.js").write_text((MAIL_GEM / "tools" / "digest.js").read_text())
    gem.manifest["tools"].append({"name": "digest", "file": "tools/digest.js", "permissions": READ})
    gem.manifest["permissions"] = READ
    bench = opened(gem, mailbox=mailbox_spec(mail_kind, tmp_path, fixture_messages()))
    bench.email.allow("all")
    processed: list[str] = []
    counts = []
    for _ in range(4):
        res = bench.call("digest")
        assert res.ok, res.error
        counts.append(res.value["processed"])
        for args in res.trace[res.trace.method == "email.getMessage"].args:
            processed.append(_subject(bench, **json.loads(args)))
    assert counts == [20, 8, 0, 0]
    boundary = ALL[19]["date"]
    tied = [d["subject"] for d in ALL if d["date"] == boundary]
    assert len(tied) == 4
    lost = [d["subject"] for d in ALL if d["subject"] not in processed]
    assert lost == tied[2:] == [d["subject"] for d in ALL[20:22]]
    assert bench.kv().set_index("key")["value"]["cursor"] == str(ALL[-1]["date"])


def _subject(bench: workbench.Bench, accountId: str, id: str) -> str:
    df = bench.mailbox()
    return df[(df.accountId == accountId) & (df.id == id)].subject.iloc[0]


PAGES = """
def handle(input, ctx):
    return [ctx.email.listSince({"since": input["base"] + k * 5_000_000})["messages"]
            for k in range(input["pages"])]
"""


def test_E4_pages_of_a_large_mailbox(gem: GemBuilder, opened: Callable) -> None:
    """Correct pages anywhere in a large mailbox (its speed is measured in tests/bench/)."""
    base = 1_700_000_000_000
    box = MockMailbox(
        Message(Envelope("big", f"m{i:07d}", "s", "a@x", ("b@x",), base + (i // 3) * 1000), "")
        for i in range(200_000)
    )
    gem.tool("pages", PAGES, permissions=READ)
    bench = opened(email_gem(gem), mailbox=box)
    bench.email.allow("all")
    pages = bench.call("pages", {"base": base, "pages": 12}).value
    for k, page in enumerate(pages):
        since = base + k * 5_000_000
        dates = [m["date"] for m in page]
        assert len(page) == 20 and dates == sorted(dates) and dates[0] == since + 1000
        assert [m["id"] for m in page] == [
            f"m{i:07d}" for i in range(3 * (since - base) // 1000 + 3, 3 * (since - base) // 1000 + 23)
        ]


# --- E5: getMessage ------------------------------------------------------------------------------


def test_E5_get_message_body_and_attachment_metadata(mail: workbench.Bench, lang: str) -> None:
    mail.email.allow("all")
    page = one(mail, lang, "listSince", {"accountId": "work", "limit": 10})["ok"]
    invoice = next(m for m in page["messages"] if m["subject"] == "Invoice 2024-031")
    full = one(mail, lang, "getMessage", {"accountId": "work", "id": invoice["id"]})["ok"]
    expected = next(d for d in ALL if d["subject"] == "Invoice 2024-031")
    assert full == {**expected, "id": invoice["id"]}
    assert set(full) == ENVELOPE_KEYS | {"body", "attachments"}
    assert full["attachments"] == [
        {"filename": "invoice-2024-031.pdf", "mimeType": "application/pdf", "sizeBytes": 48213}
    ]


def test_E5_every_provider_gives_the_same_messages(gem: GemBuilder, opened: Callable, tmp_path: Path) -> None:
    results = []
    for kind in KINDS:
        bench = opened(
            email_gem(gem) if kind == "mock" else gem,
            mailbox=mailbox_spec(kind, tmp_path / kind, fixture_messages()),
        )
        bench.email.allow("all")
        page = one(bench, "py", "listSince", {"limit": 200})["ok"]["messages"]
        fulls = run(
            bench, "py", *[["getMessage", {"accountId": m["accountId"], "id": m["id"]}] for m in page]
        )
        results.append([{**f["ok"], "id": None} for f in fulls])
    assert results[0] == results[1] == results[2]
    assert results[0] == [{**d, "id": None} for d in ALL]


def test_E5_unknown_message_or_missing_id(mail: workbench.Bench, lang: str) -> None:
    mail.email.allow("all")
    nope, no_id, no_account = run(
        mail,
        lang,
        ["getMessage", {"accountId": "work", "id": "nope"}],
        ["getMessage", {"accountId": "work"}],
        ["getMessage", {"id": "w01"}],
    )
    assert nope["error"] == "E_NOT_FOUND" and "'nope'" in nope["message"]
    assert (no_id["error"], no_id["field"]) == ("E_INVALID_ARGUMENT", "id")
    assert (no_account["error"], no_account["field"]) == ("E_INVALID_ARGUMENT", "accountId")


def test_E5_allowed_but_absent_account_has_no_messages(gem: GemBuilder, opened: Callable) -> None:
    bench = opened(email_gem(gem), mailbox=FIXTURE)
    bench.email.allow(["ghost"])
    assert one(bench, "py", "listSince", {"accountId": "ghost"})["ok"] == {"messages": [], "cursor": 0}
    assert one(bench, "py", "getMessage", {"accountId": "ghost", "id": "1"})["error"] == "E_NOT_FOUND"


HUGE = {
    "accountId": "big",
    "id": "huge",
    "subject": "huge",
    "fromAddr": "a@x.example",
    "toAddrs": ["b@x.example"],
    "date": 1_709_539_200_000,
    "body": "see attached",
    "attachments": [
        {"filename": "disk.img", "mimeType": "application/octet-stream", "sizeBytes": 30 * 2**20}
    ],
}


@pytest.mark.deno
def test_E5_huge_attachment_is_metadata_only(
    gem: GemBuilder, opened: Callable, tmp_path: Path, mail_kind: str
) -> None:
    """30 MB of base64 in the file: only its metadata comes back, and the result stays small."""
    if mail_kind == "mock":  # the mock from real mail: a folder of .eml files
        folder = tmp_path / "eml" / "big"
        folder.mkdir(parents=True)
        (folder / "huge.eml").write_bytes(encoded(HUGE))
        spec: Any = tmp_path / "eml"
    else:
        spec = mailbox_spec(mail_kind, tmp_path, [HUGE])
    bench = opened(email_gem(gem), mailbox=spec)
    bench.email.allow("all")
    lang = "js" if mail_kind == "mbox" else "py"  # parsing is the same; one JS crossing suffices
    page = one(bench, lang, "listSince", {})["ok"]
    res = bench.call(lang, {"ops": [["getMessage", {"accountId": "big", "id": page["messages"][0]["id"]}]]})
    full = res.value[0]["ok"]
    assert full["attachments"] == HUGE["attachments"]
    assert full["body"] == "see attached"
    assert len(json.dumps(res.value)) < 1000


# --- E6: email.onNewMessage ----------------------------------------------------------------------


def test_E6_arrival_calls_trigger_tools_with_the_envelope_only(opened: Callable) -> None:
    bench = opened(MAIL_GEM)
    bench.email.allow("all")
    results = bench.email.arrive(
        [
            {
                "accountId": "home",
                "subject": "Tickets",
                "fromAddr": "tom@friends.example",
                "toAddrs": ["me@home.example"],
                "body": "two seats, row 5",
                "attachments": [{"filename": "t.pdf", "mimeType": "application/pdf", "sizeBytes": 10}],
            }
        ]
    )
    assert len(results) == 1 and results[0].ok, results[0].error
    res = results[0]
    assert res.tool == "ingest" and set(res.input) == ENVELOPE_KEYS
    assert res.input["subject"] == "Tickets" and res.input["date"] == ALL[-1]["date"] + 1000
    assert res.value == {"subject": "Tickets", "words": 4, "attachments": ["t.pdf"]}
    calls = bench.calls()
    assert calls.tool.tolist() == ["ingest"]
    assert res.trace.method.tolist() == ["email.getMessage", "storage.kv.set"]


def test_E6_no_event_for_accounts_that_are_not_allowed(opened: Callable) -> None:
    bench = opened(MAIL_GEM)
    bench.email.allow(["work"])
    assert bench.email.arrive({"accountId": "home", "subject": "hidden"}) == []
    assert [r.input["subject"] for r in bench.email.arrive({"accountId": "work", "subject": "seen"})] == [
        "seen"
    ]
    assert bench.email.triggers() == ["ingest"]


def test_E6_arrival_is_mock_only(gem: GemBuilder, opened: Callable, tmp_path: Path) -> None:
    bench = opened(email_gem(gem), mailbox=mailbox_spec("maildir", tmp_path, fixture_messages()[:2]))
    with pytest.raises(workbench.UsageError, match="mock mailbox"):
        bench.email.arrive({"accountId": "work", "subject": "x"})


# --- the seed's example, unmodified ------------------------------------------------------------


def test_seed_email_example_is_the_digest_tool_unmodified() -> None:
    text = SEED.read_text("utf-8") if SEED.exists() else None
    if text is None:
        pytest.skip("the seed is not in this checkout")
    seed = re.search(
        r"```js\n\s*(export default async function \(input, ctx\) \{ // Where.*?)\n```", text, re.S
    ).group(1)
    tool = (MAIL_GEM / "tools" / "digest.js").read_text("utf-8")
    assert " ".join(tool.split()) == " ".join(seed.split())


@pytest.mark.deno
def test_seed_email_example_runs_and_keeps_its_cursor(opened: Callable) -> None:
    bench = opened(MAIL_GEM)
    assert bench.call("digest").value == {"processed": 0}  # nothing allowed yet
    bench.email.allow("all")
    assert bench.call("digest").value == {"processed": 20}
    bench.email.arrive({"accountId": "work", "subject": "late"})
    assert bench.call("digest").value == {"processed": 9}  # 8 left + 1 new; 2 tied were skipped
    methods = bench.calls().tool.tolist()
    assert methods == ["digest", "digest", "ingest", "digest"]


# --- bench.email and bench.mailbox() ------------------------------------------------------------


def test_mock_clock_dates_undated_mail(opened: Callable) -> None:
    bench = opened(MAIL_GEM)
    clock = bench.email.clock
    assert clock.now() == ALL[-1]["date"]
    a, b = bench.email.add([{"accountId": "work", "subject": "a"}, {"accountId": "work", "subject": "b"}])
    assert (a["date"], b["date"]) == (ALL[-1]["date"] + 1000, ALL[-1]["date"] + 2000)
    assert a["id"] != b["id"]
    clock.advance(60_000)
    c, d = bench.email.add(
        [
            {"accountId": "home", "subject": "c", "date": clock.now()},
            {"accountId": "home", "subject": "d", "date": clock.now()},
        ]
    )
    assert c["date"] == d["date"] == b["date"] + 60_000
    clock.set(2_000_000_000_000)
    assert bench.email.add({"accountId": "home", "id": "x1", "subject": "e"})[0]["date"] == 2_000_000_001_000
    assert (
        bench.email.add({"accountId": "home", "subject": "f", "date": "2040-01-01T00:00:00Z"})[0]["date"]
        == 2_208_988_800_000
        == clock.now()
    )


@pytest.mark.parametrize(
    "msg, match",
    [
        ({"subject": "no account"}, "accountId: required"),
        ({"accountId": "work", "id": "w01"}, "already has"),
        ({"accountId": "work", "colour": "red"}, "colour: unknown field"),
        ({"accountId": "work", "date": "yesterday"}, "date"),
        ({"accountId": "work", "toAddrs": "x@y"}, "toAddrs"),
        ({"accountId": "work", "attachments": [{"filename": "a", "content": "..."}]}, "attachments"),
    ],
)
def test_add_rejects_bad_messages_naming_the_field(opened: Callable, msg: dict, match: str) -> None:
    bench = opened(MAIL_GEM)
    before = len(bench.mailbox())
    with pytest.raises(workbench.UsageError, match=match):
        bench.email.add([{"accountId": "home", "subject": "ok"}, msg])
    assert len(bench.mailbox()) == before  # all or nothing


def test_bench_mailbox_frame(opened: Callable) -> None:
    df = opened(MAIL_GEM).mailbox()
    assert df.columns.tolist() == ["accountId", "id", "subject", "fromAddr", "toAddrs", "date", "date_ms"]
    assert df.subject.tolist() == [d["subject"] for d in ALL]
    assert str(df.date.dtype) == "datetime64[ns]" and df.date_ms.tolist() == [d["date"] for d in ALL]
    assert df.date.iloc[0].isoformat() == "2024-03-04T08:00:00"


# --- open(mailbox=...) ---------------------------------------------------------------------------


def test_open_mailbox_kinds(gem: GemBuilder, opened: Callable, tmp_path: Path) -> None:
    gem = email_gem(gem)
    msgs = fixture_messages()
    assert isinstance(opened(gem).email.mailbox, MockMailbox)  # no fixtures: empty mock
    assert len(opened(gem).mailbox()) == 0
    assert isinstance(opened(gem, mailbox=FIXTURE).email.mailbox, MockMailbox)
    maildirs = write_maildir(tmp_path / "md", msgs)
    assert opened(gem, mailbox=maildirs).email.accounts == ["home", "work"]
    one_dir = opened(gem, mailbox=maildirs / "work")
    assert isinstance(one_dir.email.mailbox, MaildirMailbox) and one_dir.email.accounts == ["work"]
    mboxes = mailbox_spec("mbox", tmp_path, msgs)
    single = opened(gem, mailbox=mboxes["home"])
    assert isinstance(single.email.mailbox, MboxMailbox) and single.email.accounts == ["home"]
    mixed = opened(gem, mailbox={"a": maildirs / "work", "b": mboxes["home"]})
    assert mixed.email.accounts == ["a", "b"] and len(mixed.mailbox()) == 30
    box = MockMailbox()
    assert opened(gem, mailbox=box).email.mailbox is box


def test_open_mailbox_errors(gem: GemBuilder, opened: Callable, tmp_path: Path) -> None:
    gem = email_gem(gem)
    with pytest.raises(workbench.UsageError, match="does not exist"):
        opened(gem, mailbox=tmp_path / "nope")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(workbench.UsageError, match="not an mbox"):
        opened(gem, mailbox=tmp_path / "notes.txt")
    (tmp_path / "bad.json").write_text('[{"accountId": "a", "date": -4}]')
    with pytest.raises(workbench.UsageError, match=r"/0/date"):
        opened(gem, mailbox=tmp_path / "bad.json")
    with pytest.raises(workbench.UsageError, match="mailbox="):
        opened(gem, mailbox=42)
    (gem.root / "fixtures").mkdir()
    (gem.root / "fixtures" / "mailbox.json").write_text('{"not": "a list"}')
    with pytest.raises(workbench.GemLoadError, match="mailbox.json"):
        opened(gem)


def test_maildir_sees_mail_delivered_after_open(gem: GemBuilder, opened: Callable, tmp_path: Path) -> None:
    root = write_maildir(tmp_path / "md", fixture_messages()[:3])
    bench = opened(email_gem(gem), mailbox=root)
    bench.email.allow("all")
    assert len(one(bench, "py", "listSince", {})["ok"]["messages"]) == 3
    md = mailbox.Maildir(root / "work")
    key = md.add(rfc822({"subject": "fresh", "date": 1_800_000_000_000}))
    page = one(bench, "py", "listSince", {"since": 1_799_999_999_999})["ok"]
    assert [(m["id"], m["subject"]) for m in page["messages"]] == [(key, "fresh")]
    md.remove(key)
    assert one(bench, "py", "getMessage", {"accountId": "work", "id": key})["error"] == "E_NOT_FOUND"


def test_mbox_sees_mail_appended_after_open(gem: GemBuilder, opened: Callable, tmp_path: Path) -> None:
    paths = mailbox_spec("mbox", tmp_path, fixture_messages()[:2])
    bench = opened(email_gem(gem), mailbox=paths)
    bench.email.allow("all")
    box = mailbox.mbox(paths["work"])
    try:
        box.add(rfc822({"subject": "appended", "date": 1_800_000_000_000}))
        box.flush()
    finally:
        box.close()
    page = one(bench, "py", "listSince", {"since": 1_799_999_999_999})["ok"]
    assert subjects(page) == ["appended"]
    full = one(bench, "py", "getMessage", {"accountId": "work", "id": page["messages"][0]["id"]})
    assert full["ok"]["subject"] == "appended"
