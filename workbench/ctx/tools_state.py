"""ctx.tools' parts of the bench state (ctx/parts.py), its effect, and the bench's acts on it.

"outbox" (state): the mail the mock outbox holds (`bench.outbox()`), in diffs as kind "mail",
where "outbox"; a real outbox (SMTP, one the user gave) keeps nothing: its part dumps nothing
and refuses mail put on it. "recipients" (setup): send_email's allowlist
(`bench.allow_recipients`). "faults" (setup): the faults injected and not yet used
(`bench.inject_fault`).

The effect: "tools.send_email", the same mail twice (same to, cc, subject and body) being a
rerun's duplicate.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .._errors import UsageError
from . import state_check as check
from .parts import Change, Effect, Refusal, StateContext, StatePart, keyed_changes
from .tools_schemas import SCHEMAS

if TYPE_CHECKING:
    from .stores import Providers
    from .tools import AgentTools

__all__ = ["FAULTS", "OUTBOX", "RECIPIENTS", "SEND_EMAIL", "allow", "inject", "outbox_rows", "recipients"]

_ROW = ("id", "time", "from", "to", "cc", "subject", "body_text", "body_html")
MODES = ("throw", "envelope")
MAX_FAULTS = 10_000  # faults waiting on one built-in


def _tools(providers: Providers) -> AgentTools:
    tools: AgentTools | None = providers.backends.get("tools")
    if tools is None:
        raise UsageError("this bench has no ctx.tools (agent custom tools have it)")
    return tools


# -- what the bench does to ctx.tools (the Face calls these) ---------------------------------
def allow(providers: Providers, patterns: Iterable[str]) -> None:
    """Let send_email mail these addresses or `*@domain` patterns too (lower case, once each)."""
    tools = _tools(providers)
    tools.recipients = tuple(dict.fromkeys((*tools.recipients, *(p.strip().lower() for p in patterns))))


def recipients(providers: Providers) -> tuple[str, ...]:
    """send_email's allowlist now (none: a bench without ctx.tools)."""
    tools: AgentTools | None = providers.backends.get("tools")
    return tools.recipients if tools is not None else ()


def inject(providers: Providers, builtin: str, mode: str, times: int) -> None:
    """The built-in's next `times` dispatches fail as `mode` says."""
    _tools(providers).faults.setdefault(builtin, []).extend([mode] * times)


def outbox_rows(providers: Providers) -> list[dict[str, Any]]:
    """Copies of what the outbox holds (a real outbox: nothing)."""
    outbox = getattr(providers.backends.get("tools"), "outbox", None)
    rows: list[dict[str, Any]] = getattr(outbox, "rows", list)()
    return rows


# -- the outbox -----------------------------------------------------------------------------
def _kept(cx: StateContext) -> Any:
    """The outbox that keeps what it sent (the mock), or None."""
    outbox = getattr(cx.backend, "outbox", None)
    return outbox if isinstance(getattr(outbox, "sent", None), list) else None


def _outbox_dump(cx: StateContext) -> list[dict[str, Any]]:
    outbox = _kept(cx)
    rows = outbox.rows() if outbox is not None else []
    return [
        {**r, "time": r["time"].isoformat() if isinstance(r["time"], datetime) else r["time"]} for r in rows
    ]


def _outbox_put(cx: StateContext, value: Any, bad: Refusal) -> None:
    from ..providers.outbox import MAX_BODY_CHARS

    rows = check.items(value, bad, "outbox")
    outbox = _kept(cx)
    if outbox is None:
        if rows:
            held = getattr(cx.backend, "outbox", None)
            raise bad("outbox", f"this bench sends through a real outbox ({held!r}), which keeps no mail")
        return
    check.items(rows, bad, "outbox", most=outbox.max_messages)
    check.plain(rows, bad, "outbox", depth=4, chars=cx.limits.pin_state_bytes)
    out = []
    for i, r in enumerate(rows):
        at = f"outbox[{i}]"
        check.obj(r, bad, at, _ROW, required=("id", "time", "from", "to", "subject", "body_text"))
        for key in ("id", "from"):
            check.name(r[key], bad, f"{at}.{key}", most=1000)
        for key in ("to", "cc"):
            for j, a in enumerate(check.items(r.get(key, []), bad, f"{at}.{key}", most=1000)):
                check.name(a, bad, f"{at}.{key}[{j}]")
        check.name(r["subject"], bad, f"{at}.subject", most=1000, empty=True)
        for key in ("body_text", "body_html"):
            if r.get(key) is not None:
                check.text(r[key], bad, f"{at}.{key}", most=MAX_BODY_CHARS)
        try:
            when = datetime.fromisoformat(check.name(r["time"], bad, f"{at}.time", most=40))
        except ValueError:
            raise bad(f"{at}.time", "is not an ISO 8601 time") from None
        when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
        out.append({**{k: None for k in _ROW}, **r, "time": when, "cc": list(r.get("cc", []))})
    outbox.clear()
    outbox.sent.extend(out)


def _outbox_snapshot(cx: StateContext) -> list[dict[str, Any]] | None:
    outbox = _kept(cx)
    return list(outbox.sent) if outbox is not None else None  # rows are never changed once sent


def _outbox_restore(cx: StateContext, snap: list[dict[str, Any]] | None) -> None:
    outbox = _kept(cx)
    if outbox is not None and snap is not None:
        outbox.clear()
        outbox.sent.extend(snap)


def _outbox_diff(before: Any, after: Any) -> Iterator[Change]:
    def shown(rows: Any) -> dict[str, Any]:
        return {r["id"]: {k: r.get(k) for k in ("to", "cc", "subject")} for r in rows or ()}

    return keyed_changes(
        "mail",
        "outbox",
        shown(before),
        shown(after),
        {"added": "sent", "changed": "changed", "deleted": "deleted"},
    )


OUTBOX = StatePart(
    "outbox",
    dump=_outbox_dump,
    put=_outbox_put,
    snapshot=_outbox_snapshot,
    restore=_outbox_restore,
    diff=_outbox_diff,
    blank=list,
    kind="mail",
)


# -- how the user set ctx.tools up --------------------------------------------------------
def _recipients_put(cx: StateContext, value: Any, bad: Refusal) -> None:
    patterns = check.items(value, bad, "recipients", most=10_000)
    for i, p in enumerate(patterns):
        check.name(p, bad, f"recipients[{i}]", most=254)
        if "@" not in p or "," in p:
            raise bad(f"recipients[{i}]", "is not an address or a *@domain pattern")
    if cx.backend is not None:
        cx.backend.recipients = tuple(dict.fromkeys(p.strip().lower() for p in patterns))


def _recipients_diff(before: Any, after: Any) -> Iterator[Change]:
    return keyed_changes(
        "recipient", "recipients", dict.fromkeys(before or (), True), dict.fromkeys(after or (), True)
    )


RECIPIENTS = StatePart(
    "recipients",
    dump=lambda cx: list(getattr(cx.backend, "recipients", ())),
    put=_recipients_put,
    role="setup",
    diff=_recipients_diff,
    blank=list,
    kind="recipient",
)


def _faults_put(cx: StateContext, value: Any, bad: Refusal) -> None:
    faults = check.items(value, bad, "faults", dict, most=len(SCHEMAS))
    for name, modes in faults.items():
        if name not in SCHEMAS:
            raise bad(f"faults.{str(name)[:40]}", f"is not a built-in ({', '.join(SCHEMAS)})")
        for i, m in enumerate(check.items(modes, bad, f"faults.{name}", most=MAX_FAULTS)):
            if m not in MODES:
                raise bad(f"faults.{name}[{i}]", "is not 'throw' or 'envelope'")
    if cx.backend is not None:
        cx.backend.faults.clear()  # the object calls hold (ToolsCall.faults): kept
        cx.backend.faults.update({k: list(v) for k, v in faults.items() if v})


FAULTS = StatePart(
    "faults",
    dump=lambda cx: {k: list(v) for k, v in getattr(cx.backend, "faults", {}).items() if v},
    put=_faults_put,
    role="setup",
    kind="fault",
)


# -- its effect ------------------------------------------------------------------------------
def _mail(args: list[Any]) -> tuple[Any, ...]:
    message = next((a for a in args if isinstance(a, dict)), {})
    return tuple(message.get(k) for k in ("to", "cc", "subject", "body_text", "body_html"))


def _mail_said(args: list[Any]) -> str:
    """A mail as N7 says it: "mail to a@x.example 'Report'"."""
    to, _, subject, _, _ = _mail(args)
    shown = ", ".join(str(t) for t in to) if isinstance(to, list) else str(to)
    return f"mail to {shown[:120]} {str(subject or '')[:80]!r}"


SEND_EMAIL = Effect("tools.send_email", same=lambda a, b: _mail(a) == _mail(b), describe=_mail_said)
