"""ctx calls from JavaScript, served by the call's Capabilities and answered as JSON."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..._errors import WorkbenchError
from ..._json import deeper_than, utf8

if TYPE_CHECKING:
    from ...ctx import Capabilities


def _error_body(code: str, message: str, **details: Any) -> tuple[bool, bytes]:
    body = {"code": code, "message": message, "details": _jsonable(details)}
    return False, utf8(json.dumps(body, ensure_ascii=False, separators=(",", ":")))


def serve_ctx(caps: Capabilities, method: str, payload: bytes | None, limits: Any) -> tuple[bool, bytes]:
    """One ctx call from JS: (ok, the reply's payload: the value or the error as JSON).

    Never raises for what the tool sent (SEC7): arguments that are not a JSON list, nested
    past limits.json_depth or too big for the bridge are E_INVALID_ARGUMENT / E_TOO_LARGE,
    and so is a value that cannot go back."""
    limit = limits.bridge_message_bytes
    if payload is None:  # the worker checks the size first: only a forged message gets here
        return _error_body(
            "E_TOO_LARGE",
            f"{method}: the arguments are over {limit:,} bytes (limit bridge_message_bytes)",
            method=method,
            limit=limit,
        )
    try:
        args = _ARGS.decode(payload.decode())
        too_deep = deeper_than(args, limits.json_depth + 1)  # + 1: the argument list itself
    except RecursionError:
        too_deep = True
    except ValueError as exc:
        return _error_body(
            "E_INVALID_ARGUMENT", f"{method}: the arguments are not JSON: {exc}", method=method
        )
    if too_deep:
        return _error_body(
            "E_INVALID_ARGUMENT",
            f"{method}: an argument is nested deeper than {limits.json_depth} levels (limit json_depth)",
            method=method,
            limit=limits.json_depth,
        )
    if not isinstance(args, list):
        return _error_body("E_INVALID_ARGUMENT", f"{method}: the arguments are not a list", method=method)
    try:
        value = caps.call(method, *args)
        body = utf8(_VALUE.encode(value))
    except WorkbenchError as exc:
        return _error_body(exc.code, exc.message, **exc.details)
    except (TypeError, ValueError, RecursionError) as exc:
        # what cannot cross the channel is an error here, not a crash there
        return _error_body(
            "E_INTERNAL",
            f"{method}: the value cannot be sent to JavaScript: {type(exc).__name__}: {exc}",
            method=method,
        )
    if len(body) > limit:
        return _error_body(
            "E_TOO_LARGE",
            f"{method}: the result is {len(body):,} bytes as "
            f"JSON; one message to the sandbox holds at most {limit:,} bytes "
            "(limit bridge_message_bytes)",
            method=method,
            size=len(body),
            limit=limit,
        )
    return True, body


def _js_int(text: str) -> int | float:
    """An integer literal from JavaScript: a number is a double there, so one past 2**53 is a
    float here too (12345678901234567890 binds to SQLite as a REAL, as the platform's would)."""
    n = int(text)
    return n if -(2**53) <= n <= 2**53 else float(n)


# made once: json.loads/dumps with options build a decoder/encoder per call
_ARGS = json.JSONDecoder(parse_int=_js_int)  # the worker sends UTF-8 (TextEncoder)
_VALUE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _jsonable(details: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(details, default=str))
