"""Header injection through send_email (A3, SEC7; issue #25): line breaks hidden in RFC 2047
encoded words (Q and B, CRLF, LF or CR alone, one forging From or Reply-To, one ending the
headers), in other line-breaking characters (NUL, VT, FF, NEL, U+2028, U+2029), and in
addresses. Sent by a Python tool and by a JS tool in the Deno sandbox, to a real SMTP server
(aiosmtpd on 127.0.0.1) and to the mock outbox: each is an `invalid_input` envelope naming the
field, and nothing is delivered. The outboxes refuse the same on their own, and the policy that
writes the message refuses a broken header even past the checks."""

from __future__ import annotations

import base64
from collections.abc import Callable
from email.message import EmailMessage
from typing import Any

import pytest
from conftest import GemBuilder
from test_agent import agent_gem
from test_agent_outbox import SENDER, smtpd  # noqa: F401  (a fixture: aiosmtpd on 127.0.0.1)

from workbench import WorkbenchError
from workbench.providers.outbox import MockOutbox, SmtpOutbox


def b64(text: str, charset: str = "utf-8") -> str:
    return f"=?{charset}?b?{base64.b64encode(text.encode(charset)).decode()}?="


# (message fields, the field named, reason): every header the tool controls is to, cc, subject
ATTACKS: list[tuple[dict[str, Any], str, str | None]] = [
    ({"subject": "=?utf-8?q?hi=0D=0AX-Injected:_1?="}, "subject", "header_injection"),
    ({"subject": b64("hi\r\nX-Injected: 1")}, "subject", "header_injection"),
    ({"subject": "=?utf-8?q?hi=0AX-Injected:_1?="}, "subject", "header_injection"),  # LF only
    ({"subject": b64("hi\nX-Injected: 1")}, "subject", "header_injection"),
    ({"subject": "=?utf-8?q?hi=0DX-Injected:_1?="}, "subject", "header_injection"),  # CR only
    ({"subject": "=?UTF-8?Q?hi=0D=0AFrom:_boss@acme.example?="}, "subject", "header_injection"),
    ({"subject": b64("hi\r\nReply-To: eve@evil.example")}, "subject", "header_injection"),
    ({"subject": "=?utf-8?q?hi=0D=0A=0D=0A<a_href=3Dx>phish</a>?="}, "subject", "header_injection"),
    ({"subject": b64("hi\r\n\r\nA forged body")}, "subject", "header_injection"),
    ({"subject": "Re=?utf-8?q?=0D=0ABcc:_eve@evil.example?=:x"}, "subject", "header_injection"),
    ({"subject": "ok =?iso-8859-1?q?=0D=0ABcc:_eve@evil.example?="}, "subject", "header_injection"),
    ({"subject": "=?utf-8?q?a=00b?="}, "subject", "header_injection"),  # NUL
    ({"subject": "=?utf-8?q?a=E2=80=A8Bcc:_eve@evil.example?="}, "subject", "header_injection"),
    ({"subject": "=?utf-8?q?a=E2=80=A9b?="}, "subject", "header_injection"),  # U+2029
    ({"subject": "=?utf-8?q?a=C2=85Bcc:_eve@evil.example?="}, "subject", "header_injection"),  # NEL
    ({"subject": b64("a\x0bb")}, "subject", "header_injection"),  # VT
    ({"subject": "a\u2028Bcc: eve@evil.example"}, "subject", "header_injection"),
    ({"subject": "a\x85Bcc: eve@evil.example"}, "subject", "header_injection"),
    ({"subject": "a\x0cb"}, "subject", "header_injection"),  # FF
    ({"subject": "a\x00b"}, "subject", "header_injection"),
    ({"subject": "=?utf-8?q?bell=07?="}, "subject", None),  # a control character, decoded
    # a word whose text is a word: written on the wire as the inner word, which a reader decodes
    ({"subject": b64("=?utf-8?q?hi=0D=0ABcc:_eve@evil.example?=")}, "subject", "header_injection"),
    ({"subject": "=?utf-8?q?=3D=3Futf-8=3Fb=3FaGkNCkJjYzogZXZl=3F=3D?="}, "subject", "header_injection"),
    ({"subject": "Re: " + b64(b64(b64("x\r\nBcc: eve@evil.example")))}, "subject", "header_injection"),
    ({"subject": "=?utf-8?q?a?=" + b64("=?utf-8?q?=0A?=")}, "subject", "header_injection"),
    ({"to": ["=?utf-8?q?x=0D=0ABcc:_eve=40evil.example?=@acme.example"]}, "to/0", "header_injection"),
    ({"cc": ["=?utf-8?q?x=0ABcc:_eve?=@acme.example"]}, "cc/0", "header_injection"),
    ({"cc": ["bob@acme.example", "=?utf-8?q?ann?=@acme.example"]}, "cc/1", None),  # RFC 2047 §5
]
IDS = [f"{field}-{i}" for i, (_, field, _r) in enumerate(ATTACKS)]
NOTE = {"to": ["ann@acme.example"], "subject": "Re: sources", "body_text": "Hi."}
GOOD = {**NOTE, "subject": "Grüße =?utf-8?q?Gr=C3=BC=C3=9Fe?= — ok"}  # an encoded word that is fine

PY = """
def handle(input, ctx):
    return [ctx.tools.send_email(m) for m in input["messages"]]
"""
JS = """
export async function handle(input, ctx) {
  const out = [];
  for (const m of input.messages) out.push(await ctx.tools.send_email(m));
  return out;
}
"""


def _assert_refused(results: list[Any]) -> None:
    assert len(results) == len(ATTACKS) + 1
    for got, (change, field, reason) in zip(results, ATTACKS, strict=False):
        assert got.get("error") == "invalid_input", (change, got)  # not sent
        details = got["details"]
        assert details["code"] == "E_INVALID_ARGUMENT" and details["field"] == field, (change, got)
        assert details.get("reason") == reason and f"`{field}`" in details["message"], (change, got)
    assert results[-1]["message_id"].startswith("<")  # the harmless encoded word goes out


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_A3_SEC7_encoded_header_injection_never_reaches_the_smtp_server(
    lang: str,
    gem: GemBuilder,
    opened: Callable,
    smtpd: Callable,  # noqa: F811
) -> None:
    recorder, port = smtpd()
    outbox = SmtpOutbox("127.0.0.1", port, sender=SENDER, security="none", timeout=10)
    bench = opened(agent_gem(gem, mail=(PY if lang == "py" else JS, lang)), outbox=outbox)
    bench.allow_recipients("*@acme.example")
    messages = [{**NOTE, **change} for change, _f, _r in ATTACKS] + [GOOD]
    _assert_refused(bench.call("mail", {"messages": messages}).raise_for_error().value)
    assert len(recorder.received) == 1  # the good one only
    got = recorder.message()
    assert got["Subject"] == "Grüße Grüße — ok" and "X-Injected" not in got and "Bcc" not in got


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_A3_SEC7_encoded_header_injection_never_reaches_the_mock_outbox(
    lang: str, gem: GemBuilder, opened: Callable
) -> None:
    bench = opened(agent_gem(gem, mail=(PY if lang == "py" else JS, lang)))
    bench.allow_recipients("*@acme.example")
    messages = [{**NOTE, **change} for change, _f, _r in ATTACKS] + [GOOD]
    _assert_refused(bench.call("mail", {"messages": messages}).raise_for_error().value)
    assert bench.outbox()["subject"].tolist() == ["Grüße Grüße — ok"]


class _Recording:
    """An Outbox of the user's own that checks nothing: the ctx layer must have checked."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> str:
        self.sent.append(message)
        return "<x@y>"


def test_A3_SEC7_the_ctx_layer_checks_before_any_outbox(gem: GemBuilder, opened: Callable) -> None:
    outbox = _Recording()
    bench = opened(agent_gem(gem, mail=(PY, "py")), outbox=outbox)
    bench.allow_recipients("*@acme.example")
    messages = [{**NOTE, **change} for change, _f, _r in ATTACKS] + [GOOD]
    _assert_refused(bench.call("mail", {"messages": messages}).raise_for_error().value)
    assert [m["subject"] for m in outbox.sent] == [GOOD["subject"]]


@pytest.mark.parametrize("change, field, reason", ATTACKS, ids=IDS)
@pytest.mark.parametrize("which", ["mock", "smtp"])
def test_SEC7_both_outboxes_refuse_encoded_injection_on_their_own(
    smtpd: Callable,  # noqa: F811
    which: str,
    change: dict[str, Any],
    field: str,
    reason: str | None,
) -> None:
    recorder, port = smtpd()
    outbox = (
        MockOutbox(sender=SENDER)
        if which == "mock"
        else SmtpOutbox("127.0.0.1", port, security="none", sender=SENDER, timeout=10)
    )
    with pytest.raises(WorkbenchError) as info:
        outbox.send({**NOTE, **change})
    assert info.value.code == "E_INVALID_ARGUMENT" and info.value.details["field"] == field
    assert info.value.details.get("reason") == reason
    assert recorder.received == [] and getattr(outbox, "sent", []) == []


@pytest.mark.parametrize(
    "name, value",
    [
        ("Subject", "=?utf-8?q?hi=0D=0AX-Injected:_1?="),
        ("Subject", b64("hi\n\nbody")),
        ("Subject", "a\u2028b"),
        ("To", "=?utf-8?q?a=0D=0AX:_1?= <a@acme.example>"),
    ],
)
def test_SEC7_the_writing_policy_refuses_a_header_that_breaks_its_line(name: str, value: str) -> None:
    """The second net: a message built past check_message still cannot be written broken."""
    from workbench.providers import outheaders  # here: the other tests run on a tree without it

    msg = EmailMessage(policy=outheaders.POLICY)
    with pytest.raises((ValueError, TypeError)):  # at set time, or HeaderInjection when written
        msg[name] = value
        msg.set_content("x")
        msg.as_bytes()


def test_SEC7_the_writing_policy_writes_long_and_folded_headers() -> None:
    from workbench.providers import outheaders

    msg = EmailMessage(policy=outheaders.POLICY)
    msg["Subject"] = "a" + " " * 900 + "b " + "Grüße " * 100
    msg["To"] = ", ".join(f"user{i}@acme.example" for i in range(50))
    msg.set_content("x")
    data = msg.as_bytes()
    assert data.count(b"\r\n ") > 10  # folded, and written


def test_SEC7_a_header_the_writer_would_break_is_refused_as_header_injection() -> None:
    """HeaderInjection is what the policy raises for a folded header with a bare line break."""
    from workbench.providers import outheaders

    with pytest.raises(outheaders.HeaderInjection, match="Subject"):
        outheaders.POLICY.fold_binary("Subject", "x\r\nX-Injected: 1")
    with pytest.raises(outheaders.HeaderInjection):
        outheaders.POLICY.fold("X-Note", "x\r\n\r\nbody")
