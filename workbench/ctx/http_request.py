"""What a tool may send through ctx.http.fetch (N10), as Fetch: methods, headers, body.

The methods CONNECT, TRACE and TRACK are refused for every request (E_INVALID_ARGUMENT naming
the method; TRACE would echo the injected credential back). A header name must be an HTTP token
and a value a Latin-1 string without NUL, CR or LF (outer spaces and tabs are trimmed), else
E_INVALID_ARGUMENT naming the header. The Fetch standard's forbidden request headers are DROPPED
silently, as browsers do: Accept-Charset, Accept-Encoding, Access-Control-Request-Headers/-Method,
Connection, Content-Length, Date, DNT, Expect, Host, Keep-Alive, Origin, Referer, Set-Cookie, TE,
Trailer, Transfer-Encoding, Upgrade, Via, every `Proxy-*` and `Sec-*`, and
X-HTTP-Method(-Override)/X-Method-Override naming a refused method; the transport sets Host,
Content-Length and Accept-Encoding itself. `Cookie` is kept (the platform's fetch runs
server-side, where a tool's own cookie is legitimate); like `Authorization` it is dropped on a
redirect to another origin, so it never follows the credential anywhere the credential itself
may not go.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

from .._errors import WorkbenchError

# the Fetch standard's forbidden methods and request headers (see the module docstring)
FORBIDDEN_METHODS = frozenset({"CONNECT", "TRACE", "TRACK"})
FORBIDDEN_HEADERS = frozenset(
    {
        "accept-charset",
        "accept-encoding",
        "access-control-request-headers",
        "access-control-request-method",
        "access-control-request-private-network",
        "connection",
        "content-length",
        "date",
        "dnt",
        "expect",
        "host",
        "keep-alive",
        "origin",
        "referer",
        "set-cookie",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "via",
    }
)
_FORBIDDEN_PREFIXES = ("proxy-", "sec-")
_METHOD_OVERRIDES = frozenset({"x-http-method", "x-http-method-override", "x-method-override"})
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def request_headers(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = [tuple(p) for p in value]
    else:
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"headers must be an object or a list of [name, value] pairs, got {type(value).__name__}",
            field="headers",
        )
    out: dict[str, str] = {}
    for pair in items:
        if len(pair) != 2 or not isinstance(pair[0], str) or not isinstance(pair[1], (str, int, float)):
            raise WorkbenchError(
                "E_INVALID_ARGUMENT", "each header is a name and a string value", field="headers"
            )
        name, value = pair[0], str(pair[1]).strip(" \t\r\n")
        if not _TOKEN.fullmatch(name):
            raise WorkbenchError(
                "E_INVALID_ARGUMENT",
                f"header name {name[:100]!r} is not a valid HTTP header name",
                field="headers",
            )
        if any(c in value for c in "\0\r\n") or not all(ord(c) < 256 for c in value):
            raise WorkbenchError(
                "E_INVALID_ARGUMENT",
                f"header {name!r}: the value must be a Latin-1 string without NUL, CR or LF",
                field="headers",
                header=name,
            )
        low = name.lower()
        if (
            low in FORBIDDEN_HEADERS
            or low.startswith(_FORBIDDEN_PREFIXES)
            or (
                low in _METHOD_OVERRIDES
                and any(m.strip().upper() in FORBIDDEN_METHODS for m in value.split(","))
            )
        ):
            continue  # a forbidden request header: dropped, as browsers do
        out[name] = value
    return out


def request_body(value: Any, encoding: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if not isinstance(value, str):
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"body must be a string (bodyEncoding 'utf8' or 'base64') or bytes, got {type(value).__name__}",
            field="body",
        )
    if encoding == "base64":
        try:
            return base64.b64decode(value, validate=True)
        except ValueError:
            raise WorkbenchError("E_INVALID_ARGUMENT", "body is not valid base64", field="body") from None
    if encoding not in (None, "utf8", "utf-8"):
        raise WorkbenchError(
            "E_INVALID_ARGUMENT", f"bodyEncoding {encoding!r}: use 'utf8' or 'base64'", field="bodyEncoding"
        )
    return value.encode()


#: fetch's init options (Fetch's, less those that mean nothing through ctx: _IGNORED)
OPTIONS = frozenset({"method", "headers", "body", "bodyEncoding", "connection", "timeout", "redirect"})
# Fetch API init options that mean nothing through ctx: accepted and ignored
_IGNORED = frozenset(
    {
        "signal",
        "mode",
        "credentials",
        "cache",
        "integrity",
        "keepalive",
        "priority",
        "referrer",
        "referrerPolicy",
        "window",
        "duplex",
    }
)


def request_options(init: Any, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """fetch's options: `init` (an object or None) and the keyword arguments, without the unset
    and the ignored ones; E_INVALID_ARGUMENT naming an unknown one."""
    if init is None:
        init = {}
    if not isinstance(init, dict):
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            "fetch(url, init): init must be an object "
            f"{{method, headers, body, connection}}, got {type(init).__name__}",
            field="init",
        )
    opts = {k: v for k, v in {**init, **kwargs}.items() if v is not None and k not in _IGNORED}
    unknown = sorted(set(opts) - OPTIONS)
    if unknown:
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"fetch has no option {unknown[0]!r} (options: {', '.join(sorted(OPTIONS))})",
            field=unknown[0],
        )
    return opts


def request_method(method: Any) -> str:
    """The method, upper case; E_INVALID_ARGUMENT for one that is not an HTTP method or is
    forbidden."""
    if not isinstance(method, str) or not method.isascii() or not method.isalpha():
        raise WorkbenchError("E_INVALID_ARGUMENT", f"method {method!r} is not an HTTP method", field="method")
    method = method.upper()
    if method in FORBIDDEN_METHODS:  # TRACE would echo an injected credential back
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"method {method!r} is forbidden, as in fetch (CONNECT, TRACE and TRACK are refused)",
            field="method",
            method=method,
        )
    return method


def request_timing(opts: Mapping[str, Any], default: float) -> tuple[float, bool]:
    """(the timeout in seconds, whether to follow redirects) of fetch's options; the timeout
    defaults to `default` (the bench's http_timeout)."""
    timeout = opts.get("timeout", default)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise WorkbenchError("E_INVALID_ARGUMENT", "timeout is seconds (> 0)", field="timeout")
    redirect = opts.get("redirect", "follow")
    if redirect not in ("follow", "manual"):
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"redirect {redirect!r}: use 'follow' (default) or 'manual'",
            field="redirect",
        )
    return float(timeout), redirect == "follow"
