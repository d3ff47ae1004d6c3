"""What a replay serves back and repeats of a recorded call, checked as hostile input: a
pinned case's `http`, `served`, `secrets`, `credentials`, `call` and `options` (pins/replay.py),
and a bundle's call's `outside` the same way (bundles/read.py). Each refusal is E_CASE naming
the file and the field; a bundle's reader says it as E_BUNDLE."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

from .._errors import WorkbenchError
from .limits import MAX_TICKS

__all__ = ["LATEST", "check_replayed", "ticks_ok"]


def _bad(path: Path | str, why: str, **details: Any) -> WorkbenchError:
    return WorkbenchError("E_CASE", f"{path}: {why}", file=str(path), **details)


def check_replayed(path: Path, case: dict[str, Any]) -> None:
    """What a replay of the call serves back and repeats, checked as hostile input (a case's,
    a bundle's call): http, served, secrets, credentials, call, options (each of its type)."""
    _check_http(path, case["http"])
    _check_served(path, case["served"])
    if not all(isinstance(n, str) and 0 < len(n) <= 200 for n in case["secrets"]):
        raise _bad(path, "secrets is not a list of secret names", field="secrets")
    for name, reach in case["credentials"].items():
        if (
            not isinstance(reach, dict)
            or not _strings(reach.get("hosts"))
            or not _strings(reach.get("paths", []))
        ):
            raise _bad(
                path, f"credentials.{name[:40]} is not {{hosts, paths?}}", field=f"credentials.{name[:40]}"
            )
    _check_call(path, case["call"])
    for key in ("as_user", "conversation"):
        v = case["options"].get(key)
        if v is not None and not isinstance(v, str):
            raise _bad(path, f"options.{key} is not a text", field=f"options.{key}")


def _check_http(path: Path, http: Any) -> None:
    """A case's `http`: each exchange a {request: {method, url}, response} a replay serves."""
    for i, ex in enumerate(http):
        req = ex.get("request") if isinstance(ex, dict) else None
        resp = ex.get("response") if isinstance(ex, dict) else None
        if (
            not isinstance(req, dict)
            or not isinstance(resp, dict)
            or not isinstance(req.get("url"), str)
            or not isinstance(req.get("method", "GET"), str)
        ):
            raise _bad(
                path, f"http.{i} is not {{request: {{method, url}}, response: {{…}}}}", field=f"http.{i}"
            )
        _check_response(path, f"http.{i}.response", resp)


def _check_served(path: Path, served: Any) -> None:
    """A case's `served`: each ctx answer a replay serves, an error with a code of ours."""
    for i, entry in enumerate(served):
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("method"), str)
            or not isinstance(entry.get("ok", True), bool)
        ):
            raise _bad(path, f"served.{i} is not {{method, ok, result | error}}", field=f"served.{i}")
        err = entry.get("error")
        if entry.get("ok") is False and not (
            isinstance(err, dict)
            and isinstance(err.get("code"), str)
            and _CODE.fullmatch(err["code"])
            and isinstance(err.get("message"), str)
        ):
            raise _bad(
                path,
                f"served.{i}.error is not {{code: E_…, message}} (a code of capitals and '_')",
                field=f"served.{i}.error",
            )


def _check_call(path: Path, call: Any) -> None:
    """A case's `call`: the seeds, clock, ticks and ids a replay repeats."""
    for key in ("seed", "ids"):
        seed = call.get(key)
        if seed is not None and (type(seed) is not int or not 0 <= seed < 2**63):
            raise _bad(path, f"call.{key} is not a whole number", field=f"call.{key}")
    for key, low, high in (
        ("clock_ms", 0, LATEST * 1000),
        ("started", 0, LATEST),
        ("duration_ms", 0, 1e10),
    ):
        v = call.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not low <= v <= high):
            raise _bad(path, f"call.{key} is not a number from {low} to {high:.0f}", field=f"call.{key}")
    if not isinstance(call.get("frozen", False), bool):
        raise _bad(path, "call.frozen is not true or false", field="call.frozen")
    for key, high in (("ticks", 1e10), ("times", LATEST)):
        if not ticks_ok(call.get(key, []), high):
            raise _bad(
                path,
                f"call.{key} is not a list of up to {MAX_TICKS} numbers from 0 to {high:.0f}",
                field=f"call.{key}",
            )
    v = call.get("call_id")
    if v is not None and (not isinstance(v, str) or not _ID.fullmatch(v)):
        raise _bad(
            path, "call.call_id is not letters, digits, '.', '_' and '-' (up to 200)", field="call.call_id"
        )
    v = call.get("idempotency_key")
    if v is not None and (not isinstance(v, str) or len(v) > 1000):
        raise _bad(
            path, "call.idempotency_key is not a text (up to 1,000 characters)", field="call.idempotency_key"
        )


_CODE = re.compile(r"E_[A-Z0-9_]{1,40}")
_ID = re.compile(r"[A-Za-z0-9._-]{1,200}")
LATEST = 253402300799  # 9999-12-31T23:59:59Z: the last instant a clock (and a date) can show
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}")
_HEADER_BAD = re.compile(r"[\x00\r\n]")


def _strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _check_response(path: Path, where: str, resp: dict[str, Any]) -> None:
    """A recorded answer as a live one is: a status a Response can have, [name, value] header
    pairs a server can send, a text or base64 body (its size is checked when it is served)."""
    status = resp.get("status", 200)
    if type(status) is not int or not 200 <= status <= 599:
        raise _bad(
            path,
            f"{where}.status {str(status)[:20]!r} is not a whole number from 200 to 599",
            field=f"{where}.status",
        )
    if not isinstance(resp.get("statusText", ""), str):
        raise _bad(path, f"{where}.statusText is not a text", field=f"{where}.statusText")
    headers = resp.get("headers", [])
    if not isinstance(headers, list):
        raise _bad(path, f"{where}.headers is not a list of [name, value] pairs", field=f"{where}.headers")
    for j, h in enumerate(headers):
        if (
            not isinstance(h, list)
            or len(h) != 2
            or not all(isinstance(x, str) for x in h)
            or not _HEADER_NAME.fullmatch(h[0])
            or _HEADER_BAD.search(h[1])
        ):
            raise _bad(
                path,
                f"{where}.headers.{j} is not a [name, value] pair a server can send",
                field=f"{where}.headers.{j}",
            )
    if "text" in resp and not isinstance(resp["text"], str):
        raise _bad(path, f"{where}.text is not a text", field=f"{where}.text")
    if "base64" in resp:
        try:
            if not isinstance(resp["base64"], str):
                raise ValueError
            base64.b64decode(resp["base64"], validate=True)
        except ValueError:
            raise _bad(path, f"{where}.base64 is not base64", field=f"{where}.base64") from None


def ticks_ok(value: Any, high: float) -> bool:
    """Whether `value` is what a case's `call.ticks` (the sandbox's reads of a running clock, ms
    since the call's start) or `call.times` (the ctx layer's, epoch seconds) may be."""
    return (
        isinstance(value, list)
        and len(value) <= MAX_TICKS
        and all(type(t) in (int, float) and 0 <= t <= high for t in value)
    )
