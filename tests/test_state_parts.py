"""The parts of bench state the capabilities declare beyond the stores (ctx/*_state.py, the
bench's own): each is in snapshot, diff and restore; its dump put on a fresh bench dumps the
same; a hostile put is one coded error naming the field with nothing written; a real provider's
part (an SMTP outbox, a Maildir) dumps nothing and refuses what would be put on it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _mail import fixture_messages, mailbox_spec
from conftest import GemBuilder
from test_agent_outbox import smtpd  # noqa: F401  (a fixture: aiosmtpd on 127.0.0.1)

import workbench
from workbench import WorkbenchError
from workbench.ctx import state
from workbench.ctx.parts import Refusal

MAIL = """
def handle(input, ctx):
    return ctx.tools.send_email({"to": input["to"], "subject": "report", "body_text": "hello"})
"""
LIST = """
def handle(input, ctx):
    return ctx.email.listSince({"since": 0, "limit": 200})
"""
FETCH = """
def handle(input, ctx):
    return ctx.http.fetch("https://api.acme.example/v1/items", {"method": "POST"}).status
"""
SETUP = ("state", "setup")
HTTP = {"http": {"connections": {"acme": {"hosts": ["api.acme.example"], "paths": ["/v1/"]}}}}
ACME = Path(__file__).resolve().parent.parent / "notebooks" / "gems" / "acme-payments"


def put(bench: workbench.Bench, data: dict[str, Any], roles: tuple[str, ...] = SETUP) -> None:
    state.put(bench, data, code="E_STATE", label="state.json", roles=roles, empty=False)


@pytest.fixture
def agent(gem: GemBuilder, opened: Callable) -> Callable[..., workbench.Bench]:
    gem.tool("mail", MAIL)
    gem.as_agent("agent-1", "Mailer").write()

    def make(**kw: Any) -> workbench.Bench:
        return opened(gem.root, **kw)

    return make


@pytest.fixture
def notes(gem: GemBuilder, opened: Callable, tmp_path: Path) -> Callable[..., workbench.Bench]:
    gem.tool("list", LIST, permissions={"email": {"read": True}})
    gem.tool("post", FETCH, permissions=HTTP)
    gem.manifest["permissions"] = {"email": {"read": True}, **HTTP}
    gem.write()

    def make(**kw: Any) -> workbench.Bench:
        kw.setdefault("mailbox", mailbox_spec("mock", tmp_path / "mail", fixture_messages()[:3]))
        return opened(gem.root, **kw)

    return make


# -- ctx.tools: the outbox, the recipients, the faults; ctx.audit's log --------------------------
def test_outbox_recipients_faults_and_audit_are_in_snapshot_diff_and_restore(agent: Callable) -> None:
    bench = agent()
    snap = bench.snapshot()
    bench.allow_recipients("*@acme.example")
    bench.inject_fault("web_search", mode="throw", times=2)
    assert bench.call("mail", {"to": "ann@acme.example"}).ok
    rows = bench.diff(snap)
    seen = {(r.kind, r.where, r.change) for r in rows.itertuples()}
    assert ("mail", "outbox", "sent") in seen
    assert ("recipient", "recipients", "added") in seen and ("fault", "faults", "added") in seen
    assert len(bench.audit()) == 1 and len(bench.outbox()) == 1
    bench.restore(snap)
    assert bench.diff(snap).empty
    assert len(bench.outbox()) == 0 and len(bench.audit()) == 0
    assert bench.call("mail", {"to": "ann@acme.example"}).value["error"] == "recipient_not_allowed"


def test_agent_state_and_setup_dumped_then_put_on_a_fresh_bench_dump_the_same(agent: Callable) -> None:
    bench = agent(seed=7, clock="2026-01-05T09:00:00Z")
    bench.allow_recipients("*@acme.example", "bob@b.example")
    bench.inject_fault("web_search", mode="envelope")
    bench.call("mail", {"to": "ann@acme.example"})
    data = json.loads(json.dumps(state.dump(bench, roles=SETUP)))
    assert data["outbox"][0]["to"] == ["ann@acme.example"] and data["recipients"] == [
        "*@acme.example",
        "bob@b.example",
    ]
    fresh = agent(seed=7)
    put(fresh, data)
    assert state.dump(fresh, roles=SETUP) == data
    assert fresh.clock.frozen  # the bench part: its clock as the dumped one's


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"recipients": "*@acme.example"}, "recipients"),
        ({"recipients": ["ann@acme.example", "eve\r\nBcc: x@y.example"]}, "recipients[1]"),
        ({"recipients": ["a@b.example"] * 10_001}, "recipients"),
        ({"recipients": ["no-at-sign"]}, "recipients[0]"),
        ({"faults": {"web_search": ["explode"]}}, "faults.web_search[0]"),
        ({"faults": {"rm_rf": ["throw"]}}, "faults.rm_rf"),
        (
            {
                "outbox": [
                    {
                        "id": "<1@x>",
                        "time": "now",
                        "from": "a@b.example",
                        "to": ["c@d.example"],
                        "subject": "",
                        "body_text": "",
                    }
                ]
            },
            "outbox[0].time",
        ),
        ({"outbox": [{"id": "<1@x>", "bcc": ["c@d.example"]}]}, "outbox[0].bcc"),
        (
            {
                "outbox": [
                    {
                        "id": "<1@x>",
                        "time": "2026-01-01T00:00:00",
                        "from": "a@b.example",
                        "to": ["c@d.example"],
                        "subject": "s\x00",
                        "body_text": "",
                    }
                ]
            },
            "outbox[0].subject",
        ),
        ({"outbox": [[[[[[[[]]]]]]]]}, "outbox[0][0][0][0][0]"),
        ({"bench": {"seed": 8}}, "bench.seed"),
        ({"bench": {"clock": {"mode": "frozen", "at": "tomorrow"}}}, "bench.clock.at"),
        ({"bench": {"strict": "yes"}}, "bench.strict"),
        ({"bench": {"colour": "red"}}, "bench.colour"),
        ({"audit": [{"event": "forged"}]}, "audit"),
    ],
)
def test_a_hostile_put_of_agent_parts_is_one_coded_error_naming_the_field(
    agent: Callable, data: dict[str, Any], field: str
) -> None:
    bench = agent(seed=7)
    bench.allow_recipients("ann@acme.example")
    before = state.dump(bench, roles=(*SETUP, "log"))
    with pytest.raises(WorkbenchError) as err:
        put(bench, data, roles=(*SETUP, "log"))
    assert err.value.code == "E_STATE" and err.value.details["field"] == field, err.value.message
    assert state.dump(bench, roles=(*SETUP, "log")) == before  # nothing half-written


def test_a_real_outbox_dumps_nothing_and_refuses_mail_put_on_it(agent: Callable, smtpd: Callable) -> None:
    from workbench.providers.outbox import SmtpOutbox

    recorder, port = smtpd()
    bench = agent(outbox=SmtpOutbox("127.0.0.1", port, sender="agent@acme.example", security="none"))
    bench.allow_recipients("*@acme.example")
    snap = bench.snapshot()
    assert bench.call("mail", {"to": "ann@acme.example"}).value.get("message_id")
    assert len(recorder.received) == 1
    assert state.dump(bench)["outbox"] == [] and bench.diff(snap).query("kind == 'mail'").empty
    fresh = agent()
    sent = state.dump(fresh)
    sent["outbox"] = state.dump(fresh)["outbox"]
    with pytest.raises(WorkbenchError) as err:
        put(bench, {"outbox": [{"id": "<1@x>"}]}, roles=("state",))
    assert err.value.details["field"] == "outbox" and "real outbox" in err.value.message
    put(bench, {"outbox": []}, roles=("state",))  # nothing to put: nothing refused


# -- ctx.email: the mailbox and its setup ---------------------------------------------------------
def test_mailbox_and_email_setup_are_in_snapshot_diff_and_restore(notes: Callable) -> None:
    bench = notes(clock="2026-01-05T09:00:00Z")
    snap = bench.snapshot()
    bench.email.allow("all")
    bench.email.add(
        {"accountId": "work", "subject": "added", "fromAddr": "a@b.example", "date": 1_700_000_000_000}
    )
    bench.email.arrive({"accountId": "work", "subject": "later"}, at="2026-01-06T09:00:00Z")
    rows = bench.diff(snap)
    seen = {(r.kind, r.change) for r in rows.itertuples()}
    assert ("mail", "added") in seen
    assert {"allowed", "pending"} <= set(rows.query("kind == 'email_setup'")["key"])
    assert len(bench.call("list", {}).value["messages"]) == 4
    bench.restore(snap)
    assert bench.diff(snap).empty
    assert bench.email.allowed == [] and len(bench.mailbox()) == 3
    bench.clock.advance("2d")  # the scheduled mail went with the restore
    assert len(bench.mailbox()) == 3
    bench.email.add({"accountId": "work", "subject": "again", "date": 1_700_000_000_001})
    bench.restore(snap)  # a restore after a restore, mail added between: put back again
    bench.restore(snap)
    assert len(bench.mailbox()) == 3 and bench.diff(snap).query("kind == 'mail'").empty


def test_mailbox_and_email_setup_dumped_then_put_on_a_fresh_bench_dump_the_same(
    notes: Callable, tmp_path: Path
) -> None:
    bench = notes(clock="2026-01-05T09:00:00Z")
    bench.email.allow(["work"])
    bench.email.arrive(
        {"accountId": "work", "subject": "later", "body": "line\n\tindented"}, at="2026-01-06T09:00:00Z"
    )
    data = json.loads(json.dumps(state.dump(bench, roles=SETUP)))
    assert len(data["mailbox"]) == 3 and data["email_setup"]["pending"][0]["message"]["subject"] == "later"
    fresh = notes(mailbox=mailbox_spec("mock", tmp_path / "empty", []))
    put(fresh, data)
    assert state.dump(fresh, roles=SETUP) == data
    fresh.clock.advance("2d")
    assert len(fresh.mailbox()) == 4  # the scheduled mail arrives on the fresh bench too


def test_a_state_folder_carries_the_mock_mailbox(notes: Callable, tmp_path: Path) -> None:
    bench = notes()
    bench.email.add({"accountId": "work", "subject": "kept", "date": 1_700_000_000_000})
    folder = bench.export_state(tmp_path / "mail-state")
    assert len(notes(state=folder).mailbox()) == 4


def test_a_state_folder_carries_the_mock_outbox(agent: Callable, tmp_path: Path) -> None:
    sender = agent()
    sender.allow_recipients("*@acme.example")
    sender.call("mail", {"to": "ann@acme.example"})
    assert len(agent(state=sender.export_state(tmp_path / "agent-state")).outbox()) == 1


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"mailbox": {"work": []}}, "mailbox"),
        ({"mailbox": [{"accountId": "work", "id": "m1", "date": "yesterday"}]}, "mailbox/0/date"),
        ({"mailbox": [{"accountId": "wo\x07rk", "id": "m1"}]}, "mailbox[0].accountId"),
        ({"mailbox": [{"accountId": "work", "id": "m1", "cc": ["x@y.example"]}]}, "mailbox[0].cc"),
        ({"mailbox": [{"accountId": "work", "id": "m1", "body": "x" * (17 * 2**20)}]}, "mailbox"),
        ({"email_setup": {"allowed": [7]}}, "email_setup.allowed[0]"),
        ({"email_setup": {"allowed": "some"}}, "email_setup.allowed"),
        ({"email_setup": {"pending": [{"at": -5, "message": {}}]}}, "email_setup.pending[0].at"),
        (
            {"email_setup": {"pending": [{"at": 5, "message": {"date": 1}}]}},
            "email_setup.pending[0].message.date",
        ),
        ({"email_setup": {"owner": "me"}}, "email_setup.owner"),
        ({"email_setup": {"fired": [{"x": 1}]}}, "email_setup.fired[0].x"),
    ],
)
def test_a_hostile_put_of_mail_parts_is_one_coded_error_naming_the_field(
    notes: Callable, data: dict[str, Any], field: str
) -> None:
    bench = notes()
    bench.email.allow(["work"])
    before = state.dump(bench, roles=SETUP)
    with pytest.raises(WorkbenchError) as err:
        put(bench, data)
    assert err.value.code == "E_STATE" and err.value.details["field"] == field, err.value.message
    assert state.dump(bench, roles=SETUP) == before


def test_a_real_mailbox_dumps_nothing_and_refuses_mail_put_on_it(notes: Callable, tmp_path: Path) -> None:
    bench = notes(mailbox=mailbox_spec("maildir", tmp_path / "md", fixture_messages()[:3]))
    bench.email.allow("all")
    snap = bench.snapshot()
    assert state.dump(bench)["mailbox"] == []
    with pytest.raises(WorkbenchError) as err:
        put(bench, {"mailbox": fixture_messages()[:1]}, roles=("state",))
    assert err.value.details["field"] == "mailbox" and "real mailbox" in err.value.message
    state.empty(bench)  # nothing of the user's mail is emptied
    bench.restore(snap)
    assert len(bench.call("list", {}).value["messages"]) == 3


# -- ctx.http: its setup and its log; the bench part ----------------------------------------------
HANDLER = {
    "match": "https://api.acme.example/",
    "method": "POST",
    "respond": {"status": 201, "json": {"ok": True}},
}
CREDENTIALS = {"acme": {"token": "sk_live_REAL", "hosts": ["api.acme.example"], "paths": ["/v1/"]}}


def test_http_setup_and_log_are_in_snapshot_diff_restore_and_dump_no_credential(notes: Callable) -> None:
    bench = notes(http=[HANDLER], credentials=CREDENTIALS, private_hosts=["localhost"])
    snap = bench.snapshot()
    data = state.dump(bench, roles=SETUP)
    assert data["http_setup"]["handlers"] == [HANDLER]
    assert data["http_setup"]["credentials"]["acme"]["token"] == "replayed-credential-acme"
    assert data["http_setup"]["private_hosts"] == ["localhost"]
    assert "sk_live_REAL" not in json.dumps(data)
    assert bench.call("post", {}).value == 201 and len(bench.http()) == 1
    bench.providers.backends["http"].transport.add({"match": "https://other.example/", "respond": "x"})
    assert "http_setup" in set(bench.diff(snap)["kind"])
    bench.restore(snap)
    assert bench.diff(snap).empty and len(bench.http()) == 0
    fresh = notes()
    put(fresh, json.loads(json.dumps(data)))
    assert state.dump(fresh, roles=SETUP)["http_setup"] == data["http_setup"]
    assert fresh.call("post", {}).value == 201


def test_a_real_transports_setup_is_named_and_a_put_of_it_keeps_the_benchs_own(notes: Callable) -> None:
    data = state.dump(notes(http="real", credentials=CREDENTIALS), roles=SETUP)["http_setup"]
    assert data["transport"] == "real" and "handlers" not in data
    fresh = notes(http=[HANDLER])
    put(fresh, {"http_setup": data})
    assert fresh.call("post", {}).value == 201  # its own mock answers still
    assert state.dump(fresh, roles=SETUP)["http_setup"]["credentials"] == data["credentials"]
    with pytest.raises(WorkbenchError) as err:
        put(fresh, {"http_setup": {**data, "transport": "carrier pigeon"}})
    assert err.value.details["field"] == "http_setup.transport"


def test_an_http_handler_that_is_a_function_is_dumped_as_code_and_refused_on_a_put(notes: Callable) -> None:
    bench = notes(http=[{"match": "https://api.acme.example/", "respond": lambda request: {"status": 204}}])
    data = state.dump(bench, roles=SETUP)
    assert data["http_setup"]["handlers"][0]["code"] is True
    with pytest.raises(WorkbenchError) as err:
        put(notes(), data)
    assert err.value.details["field"] == "http_setup.handlers[0]"


def test_restore_keeps_the_bench_clock_and_a_put_sets_it(agent: Callable) -> None:
    bench = agent(clock="2026-01-05T09:00:00Z")
    snap = bench.snapshot()
    bench.clock.advance("1h")
    bench.strict = True
    assert set(bench.diff(snap)["key"]) == {"clock_at", "strict"}
    bench.restore(snap)
    assert bench.clock.now().hour == 10 and bench.strict is False  # the user's time stays
    fresh = agent()
    put(fresh, {"bench": state.dump(bench, roles=SETUP)["bench"]})
    assert fresh.clock.frozen and fresh.clock.now().hour == 10


# -- Ekanos: secrets as stand-ins -----------------------------------------------------------------
@pytest.mark.deno
def test_secrets_dump_stand_ins_and_a_restore_keeps_the_real_values(opened: Callable) -> None:
    bench = opened(ACME, secrets={"api_key": "sk_test_51Habc"}, account_storage={})
    snap = bench.snapshot()
    data = state.dump(bench, roles=SETUP)
    assert data["secrets"] == {"api_key": "replayed-secret-api_key"}
    assert "sk_test_51Habc" not in json.dumps(data, default=str)
    put(bench, {"secrets": data["secrets"]})
    assert bench.providers.backends["secrets"].get("api_key") == "replayed-secret-api_key"
    bench.restore(snap)
    assert bench.providers.backends["secrets"].get("api_key") == "sk_test_51Habc"
    with pytest.raises(WorkbenchError) as err:
        put(bench, {"secrets": {"api_key": "a\x00b"}})
    assert err.value.details["field"] == "secrets.api_key"
    assert bench.providers.backends["secrets"].get("api_key") == "sk_test_51Habc"


# -- the effects -----------------------------------------------------------------------------------
def test_the_capabilities_declare_their_effects_and_how_a_duplicate_is_recognised() -> None:
    from workbench.platforms import profile

    mail = state.effects_of(profile("agent"))["tools.send_email"]
    a = [{"to": "ann@acme.example", "subject": "s", "body_text": "b"}]
    assert (
        mail.same is not None and mail.same(a, [dict(a[0])]) and not mail.same(a, [{**a[0], "subject": "t"}])
    )
    for platform, method in (("notochord", "http.fetch"), ("ekanos", "fetch")):
        fetch = state.effects_of(profile(platform))[method]
        assert fetch.acts(["https://x.example", {"method": "POST"}]) and not fetch.acts(["https://x.example"])
        assert not fetch.acts(["https://x.example", {"method": "head"}])
        assert fetch.deduped is not None
        assert fetch.deduped(
            ["https://x.example", {"method": "POST", "headers": {"Idempotency-Key": "k1"}}], "k1"
        )
        assert not fetch.deduped(["https://x.example", {"method": "POST", "body": "{}"}], "k1")


def test_a_refusal_names_the_input_and_the_field() -> None:
    err = Refusal("E_STATE", "state.json")("recipients[0]", "holds a control character")
    assert err.code == "E_STATE" and err.details["field"] == "recipients[0]"


# -- the doctor: a case's recipients are the bench's setup part ------------------------------------
def test_a_doctor_cases_recipients_are_put_as_the_setup_part_and_checked_as_hostile(agent: Callable) -> None:
    from workbench.doctor import recheck

    bench = agent()
    case = {"tool": "mail", "input": {}, "doctor": {"kind": "schema", "recipients": ["*@acme.example"]}}
    assert recheck(bench, case) == []
    assert state.dump(bench, roles=("setup",))["recipients"] == ["*@acme.example"]
    hostile = {
        **case,
        "doctor": {"kind": "schema", "recipients": ["ann@acme.example", "x\r\nBcc: eve@evil.example"]},
    }
    with pytest.raises(WorkbenchError) as err:
        recheck(agent(), hostile)
    assert err.value.code == "E_CASE" and err.value.details["field"] == "recipients[1]"


@pytest.mark.imap
def test_an_imap_mailbox_dumps_nothing_refuses_mail_and_a_restore_leaves_it(notes: Callable) -> None:
    import ssl
    from email.message import EmailMessage

    from _dovecot import PASSWORD, USER, add_messages, running_dovecot

    from workbench.providers.imap import ImapMailbox

    def inbox(maildir: Path) -> None:
        m = EmailMessage()
        m["Subject"], m["From"], m["To"] = "on the server", "ann@example.com", "b@x.org"
        m.set_content("hello\n")
        add_messages(maildir, [(m.as_bytes(), 1_700_000_000)])

    with (
        running_dovecot(inbox) as server,
        ImapMailbox(
            "127.0.0.1",
            server.imaps_port,
            user=USER,
            password=PASSWORD,
            ssl=True,
            ssl_context=ssl._create_unverified_context(),
        ) as box,
    ):
        bench = notes(mailbox=box)
        bench.email.allow("all")
        snap = bench.snapshot()
        assert state.dump(bench)["mailbox"] == []
        with pytest.raises(WorkbenchError) as err:
            put(bench, {"mailbox": fixture_messages()[:1]}, roles=("state",))
        assert err.value.details["field"] == "mailbox" and "real mailbox" in err.value.message
        bench.restore(snap)
        assert [m["subject"] for m in bench.call("list", {}).value["messages"]] == ["on the server"]
        bench.close()
