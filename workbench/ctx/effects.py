"""The effects ctx.tools and ctx.http declare (ctx/parts.py `Effect`): mail sent, and an HTTP
request with a method that changes something. A crash rerun that makes one again where a clean
call makes it once is N7 (ctx/rerun.py); a request carrying the run's idempotency key is one
its receiver can drop."""

from __future__ import annotations

import json
from typing import Any

from .parts import Effect

__all__ = ["HTTP_EFFECTS", "MAIL", "mail_said", "request_said"]

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


def _mail(args: list[Any]) -> dict[str, Any]:
    """send_email's message: the last argument (ctx.tools dispatches (name, message))."""
    return args[-1] if args and isinstance(args[-1], dict) else {}


def mail_said(args: list[Any]) -> str:
    """A mail as N7 says it: "mail to a@x.example 'Report'"."""
    mail = _mail(args)
    to = mail.get("to")
    to = ", ".join(str(t) for t in to) if isinstance(to, list) else str(to)
    return f"mail to {to[:120]} {str(mail.get('subject', ''))[:80]!r}"


#: ctx.tools.send_email (agent)
MAIL = Effect("tools.send_email", describe=mail_said)


def _init(args: list[Any]) -> dict[str, Any]:
    return args[1] if len(args) > 1 and isinstance(args[1], dict) else {}


def _method(args: list[Any]) -> str:
    first = args[0] if args else None
    method = _init(args).get("method") or (first.get("method") if isinstance(first, dict) else None)
    return str(method or "GET").upper()


def _url(args: list[Any]) -> str:
    first = args[0] if args else None
    url = first.get("url") if isinstance(first, dict) else first
    return str(url)[:200]


def _changes(args: list[Any]) -> bool:
    return _method(args) not in _SAFE_METHODS


def _keyed(args: list[Any], key: str) -> bool:
    """Whether the request carries the run's idempotency key, in a header or its body."""
    first = args[0] if args else None
    init = _init(args) or (first if isinstance(first, dict) else {})
    try:
        said = json.dumps([init.get("headers"), init.get("body")], default=str)
    except (TypeError, ValueError, RecursionError):
        return False
    return bool(key) and key in said


def request_said(args: list[Any]) -> str:
    """A request as N7 says it: "POST https://api.x.example/v1/charges"."""
    return f"{_method(args)} {_url(args)}"


def _request(method: str) -> Effect:
    return Effect(method, acts=_changes, deduped=_keyed, describe=request_said)


#: ctx.http.fetch (Notochord) and ctx.fetch (Ekanos) with a side-effecting method
HTTP_EFFECTS = (_request("http.fetch"), _request("fetch"))
