"""ctx.http's parts of the bench state (ctx/parts.py) and its effect.

"http_setup" (setup): what the bench was set up with that a replay needs: the mock's handlers
(`http=[...]`, Ekanos' `fetch_handlers=`; a handler whose match or answer is a Python function
is not JSON and is dumped as `{"match": …, "code": true}`, which a put refuses), the served
answers of a replay (`Served`), each credential's reach (hosts, paths) with a stand-in token,
never its value, and `private_hosts=`. A real transport or a cassette is named, never put: a
put of its setup keeps the bench's own transport (a replay's served answers). A snapshot keeps
the objects themselves (the real credentials included) and a restore puts them back.

"http_log" (log): the bench's log of requests (`bench.http()`).

The effect: "http.fetch" (Notochord) and "fetch" (Ekanos) with a method that changes something
(not GET, HEAD or OPTIONS); a request that carries the run's idempotency key in a header or the
body is deduplicated by the receiver, so its second one is no duplicate.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .._errors import UsageError
from . import state_check as check
from .parts import Effect, Refusal, StateContext, StatePart
from .state_logs import ring_part

if TYPE_CHECKING:
    from .http_credentials import HttpState

__all__ = ["EFFECTS", "HTTP_LOG", "HTTP_SETUP"]

STAND_IN = "replayed-credential-{name}"  # a credential's token wherever the setup is written
SAFE = ("GET", "HEAD", "OPTIONS")
KINDS = ("mock", "served", "cassette", "real")  # a transport's kind; the last two are never put
_HANDLER = ("match", "method", "respond", "code")
_SETUP = ("transport", "handlers", "served", "credentials", "private_hosts")


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _setup_dump(cx: StateContext) -> dict[str, Any]:
    state: HttpState | None = cx.backend
    if state is None:
        return {}
    t: Any = state.transport
    kind = getattr(t, "kind", "real")
    out: dict[str, Any] = {"transport": kind}
    if kind == "mock":
        out["handlers"] = [
            {"match": h.match, "method": h.method, "respond": h.respond}
            if isinstance(h.match, str) and _jsonable(h.respond)
            else {"match": h.describe(), "method": h.method, "code": True}
            for h in t.handlers
        ]
    if kind == "served":
        out["served"] = list(t.exchanges)
    out["credentials"] = {
        name: {
            "token": STAND_IN.format(name=name),
            "hosts": [str(h) for h in c.hosts],
            **({"paths": list(c.paths)} if c.paths else {}),
        }
        for name, c in sorted(state.credentials.items())
    }
    out["private_hosts"] = [str(e) for e in state.private.entries]
    return out


def _setup_put(cx: StateContext, value: Any, bad: Refusal) -> None:
    from ..providers.httpcassette import Served
    from ..providers.httpmock import MockHandler, MockTransport
    from .http_credentials import credential_from
    from .http_private import PrivateHosts

    state: HttpState | None = cx.backend
    check.obj(value, bad, "http_setup", _SETUP)
    check.plain(value, bad, "http_setup", depth=cx.limits.json_depth, chars=cx.limits.pin_state_bytes)
    kind = value.get("transport", "mock")
    if not isinstance(kind, str) or kind not in KINDS:
        raise bad("http_setup.transport", f"is not one of {', '.join(KINDS)}")
    handlers = []
    for i, h in enumerate(check.items(value.get("handlers", []), bad, "http_setup.handlers", most=10_000)):
        at = f"http_setup.handlers[{i}]"
        check.obj(h, bad, at, _HANDLER, required=("match",))
        if h.get("code"):
            raise bad(at, "was a Python function, which a bench's setup cannot hold")
        check.name(h["match"], bad, f"{at}.match", most=8192)
        if h.get("method") is not None:
            check.name(h["method"], bad, f"{at}.method", most=20)
        handlers.append(MockHandler(h["match"], h.get("respond"), h.get("method")))
    served = check.items(value.get("served", []), bad, "http_setup.served")
    for i, ex in enumerate(served):
        check.obj(
            ex, bad, f"http_setup.served[{i}]", ("request", "response"), required=("request", "response")
        )
    credentials = {}
    for name, entry in check.items(
        value.get("credentials", {}), bad, "http_setup.credentials", dict, most=1000
    ).items():
        check.name(name, bad, "http_setup.credentials", most=200)
        try:
            credentials[name] = credential_from(name, entry, "the bench's setup")
        except UsageError as exc:
            raise bad(f"http_setup.credentials.{name[:40]}", exc.message) from None
    entries = check.items(value.get("private_hosts", []), bad, "http_setup.private_hosts", most=1000)
    try:
        private = PrivateHosts(entries)
    except UsageError as exc:
        raise bad("http_setup.private_hosts", exc.message) from None
    if state is None:
        return
    old: Any = state.transport
    transport: Any = old  # a real transport or a cassette: the bench's own stays (a replay's answers)
    if kind == "served":
        transport = Served(list(served), where="the bench's setup")
        transport.mask = getattr(old, "mask", None)
    elif kind == "mock":
        transport = MockTransport(option=getattr(old, "option", "http"), hint=getattr(old, "hint", ""))
        transport.handlers = handlers
    state.transport, state.private = transport, private
    state.credentials.clear()
    state.credentials.update(credentials)
    for c in credentials.values():  # stand-ins, masked as any credential is
        for _, v in c.headers:
            state.remember_secret(v)


def _setup_snapshot(cx: StateContext) -> Any:
    state: HttpState | None = cx.backend
    if state is None:
        return None
    t: Any = state.transport
    handlers = list(t.handlers) if isinstance(getattr(t, "handlers", None), list) else None
    used = set(t.used) if isinstance(getattr(t, "used", None), set) else None
    return {"dump": _setup_dump(cx), "objects": (t, handlers, used, dict(state.credentials), state.private)}


def _setup_restore(cx: StateContext, snap: Any) -> None:
    state: HttpState | None = cx.backend
    if state is None or snap is None:
        return
    t, handlers, used, credentials, private = snap["objects"]
    if handlers is not None:
        t.handlers[:] = handlers
    if used is not None:
        t.used = set(used)
    state.transport, state.private = t, private
    state.credentials.clear()
    state.credentials.update(credentials)


def _setup_diff(before: Any, after: Any) -> Any:
    from .parts import json_changes

    return json_changes(
        "http_setup", "http_setup", (before or {}).get("dump", {}), (after or {}).get("dump", {})
    )


HTTP_SETUP = StatePart(
    "http_setup",
    dump=_setup_dump,
    put=_setup_put,
    role="setup",
    snapshot=_setup_snapshot,
    restore=_setup_restore,
    diff=_setup_diff,
)

HTTP_LOG = ring_part("http_log", lambda state: state.log)


# -- its effect ---------------------------------------------------------------------------------
def _request(args: list[Any]) -> tuple[str, dict[str, Any]]:
    """(method, init) of a fetch's arguments: (url, init?) or a Request-like object."""
    first = args[0] if args else None
    init = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
    if isinstance(first, dict):
        init = first
    method = init.get("method") or "GET"
    return (method.upper() if isinstance(method, str) else "GET"), init


def _acts(args: list[Any]) -> bool:
    return _request(args)[0] not in SAFE


def _deduped(args: list[Any], key: str) -> bool:
    _, init = _request(args)
    headers = init.get("headers") or {}
    values = headers.values() if isinstance(headers, dict) else (h[1] for h in headers if len(h) == 2)
    body = init.get("body")
    return any(key in str(v) for v in values) or (isinstance(body, str) and key in body)


def _same(a: list[Any], b: list[Any]) -> bool:
    return (
        _request(a)[0] == _request(b)[0]
        and (a[:1] == b[:1])
        and _request(a)[1].get("body") == _request(b)[1].get("body")
    )


def _said(args: list[Any]) -> str:
    """A request as N7 says it: "POST https://api.x.example/v1/charges"."""
    first = args[0] if args else None
    url = first.get("url") if isinstance(first, dict) else first
    return f"{_request(args)[0]} {str(url)[:200]}"


#: Notochord's ctx.http.fetch and Ekanos' ctx.fetch
EFFECTS = tuple(
    Effect(m, acts=_acts, same=_same, deduped=_deduped, describe=_said) for m in ("http.fetch", "fetch")
)
