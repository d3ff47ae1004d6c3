"""ctx.http.fetch (N10): the rules, once, over any transport and for both runners.

- Needs `permissions.http` at the manifest's top level, and on the tool too when the tool
  declares its own `permissions`; otherwise E_PERM_DENIED naming the field.
- The request has the Fetch API's shape: `fetch(url, {method, headers, body, connection})`;
  `body` is a string, or base64 with `bodyEncoding: "base64"` (the JS ctx does this for
  bytes; Python may pass bytes). The reply is plain JSON: {status, statusText, ok, url,
  redirected, headers: [[name, value]], body (base64)} plus `credentialDenied` when set; the JS
  worker and `PythonCtx` build a Response-like object from it.
- `connection: "name"` injects that connection's credentials only when the URL is https, its
  host is in the grant's `hosts` and its path starts with one of `paths` (when given).
  Otherwise the request goes out without them and the reply carries
  `credentialDenied: {reason, host}`; reasons: "unknown connection", "not https",
  "host not granted", "path not granted", "no credentials", "redirected to another host".
- Redirects are followed here (at most 20), never with credentials to another host.
- Credentials never reach traces, logs, `bench.http()` or errors: they are masked.
"""

from __future__ import annotations

import base64
import builtins
import os
import re
import time
from typing import TYPE_CHECKING, Any, Mapping
from urllib.parse import urljoin, urlsplit

from ..providers.secrets import from_keyring
from .._errors import WorkbenchError

if TYPE_CHECKING:
    from ..gem import Manifest, ToolSpec
    from ..providers.http import Transport
    from ._session import CallSession

METHODS = ("fetch",)
MAX_REDIRECTS = 20
MASK = "***"
_OPTIONS = {"method", "headers", "body", "bodyEncoding", "connection", "timeout", "redirect"}
# Fetch API init options that mean nothing through ctx: accepted and ignored
_IGNORED = {"signal", "mode", "credentials", "cache", "integrity", "keepalive", "priority",
            "referrer", "referrerPolicy", "window", "duplex"}
_SENSITIVE = {"authorization", "cookie", "proxy-authorization"}


class HttpState:
    """A bench's http: transport, credentials, timeout and the log of every request."""

    def __init__(self, transport: "Transport", credentials: "Mapping[str, Any] | str | os.PathLike[str] | None" = None,
                 timeout: float = 10.0, env: Mapping[str, str] | None = None) -> None:
        self.transport, self.timeout = transport, timeout
        if isinstance(credentials, (str, os.PathLike)):  # a secrets file outside the notebook
            credentials = _secrets_file(credentials)
        self.credentials = {k: dict(v) for k, v in (credentials or {}).items()}
        self.env = os.environ if env is None else env
        self.log: list[dict[str, Any]] = []
        self._secrets: set[str] = set()
        for headers in self.credentials.values():
            self._remember(headers)

    def _remember(self, headers: Mapping[str, str]) -> None:
        for v in headers.values():
            v = str(v)
            if len(v) >= 4:
                self._secrets.add(v)
                if " " in v:  # "Bearer abc…": the token alone too
                    self._secrets.add(v.split(" ", 1)[1])

    def headers_for(self, connection: str) -> dict[str, str] | None:
        """The connection's credential headers: open(credentials=…), then the env, then the
        keyring (service 'gem-workbench', username 'connection:<name>')."""
        if connection in self.credentials:
            return {str(k): str(v) for k, v in self.credentials[connection].items()}
        var = f"GEM_WORKBENCH_CONN_{re.sub(r'[^A-Z0-9]', '_', connection.upper())}_TOKEN"
        token = self.env.get(var) or from_keyring(f"connection:{connection}")
        if not token:
            return None
        headers = {"Authorization": f"Bearer {token}"}
        self._remember(headers)
        return headers

    def mask(self, text: str) -> str:
        for s in sorted(self._secrets, key=len, reverse=True):
            text = text.replace(s, MASK)
        return text


def _secrets_file(path: "str | os.PathLike[str]") -> dict[str, Any]:
    """A JSON file {connection: {header: value}}; errors never quote its content."""
    import json
    from pathlib import Path

    from .._errors import UsageError

    p = Path(path).expanduser()
    try:
        data = json.loads(p.read_text("utf-8"))
    except OSError as exc:
        raise UsageError(f"credentials file {p}: {exc.strerror}") from None
    except ValueError:
        raise UsageError(f"credentials file {p} is not valid JSON") from None
    if not isinstance(data, dict) or not all(
            isinstance(v, dict) and all(isinstance(x, str) for x in v.values()) for v in data.values()):
        raise UsageError(f"credentials file {p}: give {{connection: {{header: value}}}}")
    return data


def _grants_http(perms: Any) -> bool:
    return isinstance(perms, dict) and isinstance(perms.get("http"), dict)


def permission_error(manifest: "Manifest", tool: "ToolSpec") -> WorkbenchError | None:
    missing = []
    if not _grants_http(manifest.permissions):
        missing.append("/permissions/http")
    if tool.permissions and not _grants_http(tool.permissions):
        index = next((i for i, t in enumerate(manifest.raw.get("tools", ()))
                      if t.get("name") == tool.name), 0)
        missing.append(f"/tools/{index}/permissions/http")
    if not missing:
        return None
    return WorkbenchError("E_PERM_DENIED", f"tool {tool.name!r} has no http permission (N10): "
                          f"manifest.json needs {' and '.join(missing)}", field="permissions.http",
                          missing=missing)


def _connections(manifest: "Manifest", tool: "ToolSpec") -> dict[str, Any]:
    perms = tool.permissions if _grants_http(tool.permissions) and \
        "connections" in tool.permissions["http"] else manifest.permissions
    return dict((perms.get("http") or {}).get("connections") or {})


def _host_ok(host: str, granted: list[str]) -> bool:
    host = host.lower()
    for g in granted:
        g = g.lower()
        if host == g or (g.startswith("*.") and host.endswith(g[1:])):
            return True
    return False


def _deny_reason(url: str, grant: dict[str, Any] | None) -> str | None:
    parts = urlsplit(url)
    if grant is None:
        return "unknown connection"
    if parts.scheme != "https":
        return "not https"
    if not _host_ok(parts.hostname or "", list(grant.get("hosts") or ())):
        return "host not granted"
    paths = grant.get("paths")
    if paths and not any((parts.path or "/").startswith(p) for p in paths):
        return "path not granted"
    return None


def _headers(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = [tuple(p) for p in value]
    else:
        raise WorkbenchError("E_INVALID_ARGUMENT", "headers must be an object or a list of "
                             f"[name, value] pairs, got {type(value).__name__}", field="headers")
    out: dict[str, str] = {}
    for pair in items:
        if len(pair) != 2 or not isinstance(pair[0], str) or not isinstance(pair[1], (str, int, float)):
            raise WorkbenchError("E_INVALID_ARGUMENT", "each header is a name and a string value",
                                 field="headers")
        out[pair[0]] = str(pair[1])
    return out


def _body(value: Any, encoding: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if not isinstance(value, str):
        raise WorkbenchError("E_INVALID_ARGUMENT", "body must be a string (bodyEncoding "
                             f"'utf8' or 'base64') or bytes, got {type(value).__name__}", field="body")
    if encoding == "base64":
        try:
            return base64.b64decode(value, validate=True)
        except ValueError:
            raise WorkbenchError("E_INVALID_ARGUMENT", "body is not valid base64",
                                 field="body") from None
    if encoding not in (None, "utf8", "utf-8"):
        raise WorkbenchError("E_INVALID_ARGUMENT", f"bodyEncoding {encoding!r}: use 'utf8' or "
                             "'base64'", field="bodyEncoding")
    return value.encode()


class Http:
    """ctx.http for one call."""

    def __init__(self, session: "CallSession") -> None:
        self.s = session

    def fetch(self, url: Any, init: Any = None, /, **kwargs: Any) -> dict[str, Any]:
        s = self.s
        denied = permission_error(s.manifest, s.tool)
        if denied is not None:
            raise denied
        state: HttpState | None = getattr(s, "http", None)
        if state is None:
            from ..providers.http import MockTransport

            state = HttpState(MockTransport())
        if init is None:
            init = {}
        if not isinstance(init, dict):
            raise WorkbenchError("E_INVALID_ARGUMENT", "fetch(url, init): init must be an object "
                                 f"{{method, headers, body, connection}}, got {type(init).__name__}",
                                 field="init")
        opts = {k: v for k, v in {**init, **kwargs}.items() if v is not None and k not in _IGNORED}
        unknown = sorted(set(opts) - _OPTIONS)
        if unknown:
            raise WorkbenchError("E_INVALID_ARGUMENT", f"fetch has no option {unknown[0]!r} "
                                 f"(options: {', '.join(sorted(_OPTIONS))})", field=unknown[0])
        if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https") \
                or not urlsplit(url).hostname:
            raise WorkbenchError("E_INVALID_ARGUMENT", f"fetch: url must be an absolute http(s) "
                                 f"URL, got {url!r}", field="url")
        method = opts.get("method", "GET")
        if not isinstance(method, str) or not method.isalpha():
            raise WorkbenchError("E_INVALID_ARGUMENT", f"method {method!r} is not an HTTP method",
                                 field="method")
        method = method.upper()
        headers = _headers(opts.get("headers"))
        body = _body(opts.get("body"), opts.get("bodyEncoding"))
        connection = opts.get("connection")
        if connection is not None and not isinstance(connection, str):
            raise WorkbenchError("E_INVALID_ARGUMENT", "connection must be a connection name "
                                 "from the manifest's permissions.http.connections", field="connection")
        timeout = opts.get("timeout", state.timeout)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise WorkbenchError("E_INVALID_ARGUMENT", "timeout is seconds (> 0)", field="timeout")
        redirect = opts.get("redirect", "follow")
        if redirect not in ("follow", "manual"):
            raise WorkbenchError("E_INVALID_ARGUMENT", f"redirect {redirect!r}: use 'follow' "
                                 "(default) or 'manual'", field="redirect")
        return self._send(state, url, method, headers, body, connection, float(timeout),
                          follow=redirect == "follow")

    def _send(self, state: HttpState, url: str, method: str, headers: dict[str, str], body: bytes,
              connection: str | None, timeout: float, follow: bool = True) -> dict[str, Any]:
        from ..providers.http import HttpRequest

        grant = _connections(self.s.manifest, self.s.tool).get(connection) if connection else None
        creds: dict[str, str] | None = None
        denied: dict[str, str] | None = None
        host0 = (urlsplit(url).hostname or "").lower()
        if connection is not None:
            reason = _deny_reason(url, grant)
            if reason is None:
                creds = state.headers_for(connection)
                if creds is None:
                    reason = "no credentials"
            if reason is not None:
                denied = {"reason": reason, "host": host0}
        row: dict[str, Any] = {"call_id": self.s.call_id, "tool": self.s.tool.name,
                               "method": method, "url": state.mask(url), "status": None,
                               "duration_ms": None, "connection": connection,
                               "credential": None if connection is None else
                               ("injected" if creds else "denied"),
                               "reason": denied["reason"] if denied else None,
                               "redirects": 0, "error": None}
        t0 = time.perf_counter()
        try:
            current, redirects = url, 0
            while True:
                host = (urlsplit(current).hostname or "").lower()
                send_headers = dict(headers)
                if creds:  # each hop is checked again: another host, http or path drops them
                    why = "redirected to another host" if host != host0 else _deny_reason(current, grant)
                    if why is None:
                        send_headers.update(creds)
                    else:
                        denied = {"reason": why, "host": host}
                        row.update(credential="dropped", reason=why)
                        creds = None
                resp = state.transport.send(HttpRequest(method, current, send_headers, body), timeout)
                location = resp.header("location")
                if not follow or resp.status not in (301, 302, 303, 307, 308) or not location \
                        or redirects >= MAX_REDIRECTS:
                    break
                nxt = urljoin(current, location)
                if (urlsplit(nxt).hostname or "").lower() != host:  # fetch drops these cross-origin
                    headers = {k: v for k, v in headers.items() if k.lower() not in _SENSITIVE}
                if resp.status == 303 or (resp.status in (301, 302) and method == "POST"):
                    method, body = "GET", b""
                    headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
                current, redirects = nxt, redirects + 1
        except WorkbenchError as exc:
            row["error"] = exc.code
            exc.message = state.mask(exc.message)
            exc.args = (exc.message,)
            for k, v in list(exc.details.items()):
                if isinstance(v, str):
                    exc.details[k] = state.mask(v)
            raise
        finally:
            row["duration_ms"] = round((time.perf_counter() - t0) * 1000, 3)
            state.log.append(row)
        row.update(status=resp.status, redirects=redirects, url=state.mask(url))
        reply: dict[str, Any] = {
            "status": resp.status, "statusText": resp.reason, "ok": 200 <= resp.status < 300,
            "url": current, "redirected": redirects > 0,
            "headers": [[k.lower(), v] for k, v in resp.headers],
            "body": base64.b64encode(resp.body).decode("ascii")}
        if denied is not None:
            reply["credentialDenied"] = denied
        return reply


class FetchResponse:
    """What a Python tool's `ctx.http.fetch` returns: the Fetch API's Response, synchronous."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.status: int = reply["status"]
        self.statusText: str = reply.get("statusText", "")
        self.ok: bool = reply["ok"]
        self.url: str = reply.get("url", "")
        self.redirected: bool = reply.get("redirected", False)
        self.headers: dict[str, str] = {}
        for k, v in reply.get("headers", ()):
            self.headers[k] = f"{self.headers[k]}, {v}" if k in self.headers else v
        self.credentialDenied: dict[str, str] | None = reply.get("credentialDenied")
        self._body = base64.b64decode(reply.get("body", ""))

    def bytes(self) -> bytes:
        return self._body

    def arrayBuffer(self) -> "builtins.bytes":  # noqa: N802 (the Fetch API's name)
        return self._body

    def text(self) -> str:
        return self._body.decode("utf-8", "replace")

    def json(self) -> Any:
        import json

        return json.loads(self._body)

    def __repr__(self) -> str:
        extra = f" credentialDenied={self.credentialDenied}" if self.credentialDenied else ""
        return f"<Response {self.status} {self.url}{extra}>"
