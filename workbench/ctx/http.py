"""ctx.http.fetch (N10, SEC4, SEC5): the rules, once, over any transport and for both runners.

- Needs `permissions.http` at the manifest's top level, and on the tool too when the tool
  declares its own `permissions`; otherwise E_PERM_DENIED naming the field.
- The request has the Fetch API's shape: `fetch(url, {method, headers, body, connection})`;
  `body` is a string, or base64 with `bodyEncoding: "base64"` (the JS ctx does this for
  bytes; Python may pass bytes). The reply is plain JSON: {status, statusText, ok, url,
  redirected, headers: [[name, value]], body (base64)} plus `credentialDenied` when set; the JS
  worker and `PythonCtx` build a Response-like object from it.

The credential model (SEC4)
---------------------------
A credential belongs to the user, so the user's configuration says where it may go; a gem's
manifest can only narrow that, never widen it.

- Where credentials come from, first match wins, per connection name:
  1. `workbench.open(credentials={name: {"headers": {...} | "token": "…", "hosts": [...],
     "paths": [...]}})`, or the path of a JSON secrets file of that shape;
  2. the environment: `GEM_WORKBENCH_CONN_<NAME>_TOKEN` (sent as `Authorization: Bearer …`)
     with `GEM_WORKBENCH_CONN_<NAME>_HOSTS` (and optionally `_PATHS`), comma-separated;
  3. the keyring (service `gem-workbench`): username `connection:<name>` holds the token,
     `connection:<name>:hosts` / `:paths` the lists (the env variables win for the lists).
  `<NAME>` is the connection name upper-cased, other characters as `_`.
- Where they may go: only to a URL that BOTH the user's entry (`hosts`, `paths`) and the
  tool's grant in the manifest (`permissions.http.connections.<name>`) allow, over https.
  A host is `api.example` (port 443 only), `api.example:8443`, or `*.example` (any
  subdomain, not the apex); names are compared lower-case, IDNA-encoded, without a trailing
  dot. A path entry matches whole segments: `/v1/` allows `/v1/x` (not `/v1`), `/api` allows
  `/api` and `/api/x` but never `/api-evil`. A credential without a user-side host list is
  injected nowhere; a code-given `{name: {header: value}}` (the old shape) is refused at open
  with a UsageError saying to add `hosts`.
- The URL is normalised before it is checked and the normalised URL is what is sent: dot
  segments removed (`/v1/../admin` is `/admin`; `%2e%2e` counts as `..`), `\\` read as `/`
  as browsers do, fragments dropped; URLs with `user:pass@` are refused (as `fetch` does); a
  path is granted only when it matches both as sent and fully percent-decoded (`%2f` is a
  `/` for a server that decodes it).
- Every redirect hop (the workbench follows them, at most 20) is checked again; a hop to
  another origin (scheme, host or port) never gets the credential back.
- When injecting, any `Authorization` the tool set (any case) and any header of an injected
  name are dropped, so the request carries the user's value only.
- Refused injection is not an error: the request goes out without the credential and the
  reply has `credentialDenied: {reason, host}`; reasons: "unknown connection", "not https",
  "host not granted" / "path not granted" (the manifest), "no credentials", "credential has no
  hosts: …" (how to configure it), "host not allowed by the credential" / "path not allowed
  by the credential" (the user's configuration), "redirected to another host" / "... port".
- `..;` counts as `..` for the check: a segment whose part before `;` is `.`/`..` once
  percent-decoded (`/v1/..;/admin`, `/v1/%2e%2e;/admin`) is a dot-segment, as Tomcat, Jetty and
  Spring resolve it, so the path is checked as `/admin` (the URL is sent as given, bare). A
  path with a control character once percent-decoded (`%00`, `%0a`, …) is refused
  (E_INVALID_ARGUMENT; a redirect there is E_HTTP "bad redirect").
- Nothing is carried between calls: no cookie jar, no kept-alive connection.

What a tool may send (as Fetch): the methods CONNECT, TRACE and TRACK are refused for every
request (E_INVALID_ARGUMENT naming the method; TRACE would echo the injected credential back).
A header name must be an HTTP token and a value a Latin-1 string without NUL, CR or LF (outer
spaces and tabs are trimmed), else E_INVALID_ARGUMENT naming the header. The Fetch standard's
forbidden request headers are DROPPED silently, as browsers do: Accept-Charset,
Accept-Encoding, Access-Control-Request-Headers/-Method, Connection, Content-Length, Date, DNT,
Expect, Host, Keep-Alive, Origin, Referer, Set-Cookie, TE, Trailer, Transfer-Encoding, Upgrade,
Via, every `Proxy-*` and `Sec-*`, and X-HTTP-Method(-Override)/X-Method-Override naming a
refused method; the transport sets Host, Content-Length and Accept-Encoding itself. `Cookie` is
kept (the platform's fetch runs server-side, where a tool's own cookie is legitimate); like
`Authorization` it is dropped on a redirect to another origin, so it never follows the
credential anywhere the credential itself may not go.
- Credentials never reach traces, logs, `bench.http()`, reprs or errors: they are masked.

Bounds (SEC5): a fetch has ONE deadline, min(`timeout` option, `http_timeout` of open, the
call's remaining time), over connecting, every redirect and the whole body; running out is
E_HTTP (reason "timeout"), or E_TIMEOUT when the call's own time is what ran out. The body is
streamed and cut at `Limits.http_body_bytes` (20 MiB): E_TOO_LARGE naming the limit. The
limit counts DECODED bytes: the real transport asks for `Accept-Encoding: gzip, deflate`, reads
the raw bytes and inflates each Content-Encoding layer itself in bounded steps (64 KiB of output
at a time, the deadline checked between steps), so a gzip bomb, even gzip inside gzip, stops at
the cap in milliseconds. A coding it does not know (br, zstd, …) leaves the body as received
(headers unchanged, the raw bytes counted against the cap).
"""

from __future__ import annotations

import base64
import builtins
import ipaddress
import json
import os
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping
from urllib.parse import quote, unquote, urljoin, urlsplit

from .._errors import UsageError, WorkbenchError
from ..providers.secrets import from_keyring

if TYPE_CHECKING:
    from ..gem import Manifest, ToolSpec
    from ..providers.http import HttpResponse, Transport
    from ._session import CallSession

METHODS = ("fetch",)
MAX_REDIRECTS = 20
MASK = "***"
_OPTIONS = {"method", "headers", "body", "bodyEncoding", "connection", "timeout", "redirect"}
# Fetch API init options that mean nothing through ctx: accepted and ignored
_IGNORED = {"signal", "mode", "credentials", "cache", "integrity", "keepalive", "priority",
            "referrer", "referrerPolicy", "window", "duplex"}
# what fetch drops on a cross-origin redirect; and what a tool may not add next to a credential
_SENSITIVE = {"authorization", "cookie", "proxy-authorization"}
_DEFAULT_PORT = {"http": 80, "https": 443}
# the Fetch standard's forbidden methods and request headers (see the module docstring)
FORBIDDEN_METHODS = frozenset({"CONNECT", "TRACE", "TRACK"})
FORBIDDEN_HEADERS = frozenset({
    "accept-charset", "accept-encoding", "access-control-request-headers",
    "access-control-request-method", "access-control-request-private-network", "connection",
    "content-length", "date", "dnt", "expect", "host", "keep-alive", "origin", "referer",
    "set-cookie", "te", "trailer", "transfer-encoding", "upgrade", "via"})
_FORBIDDEN_PREFIXES = ("proxy-", "sec-")
_METHOD_OVERRIDES = frozenset({"x-http-method", "x-http-method-override", "x-method-override"})
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_ENTRY_KEYS = {"headers", "token", "hosts", "paths"}


# -- URLs: one normal form, checked and sent ---------------------------------------------------
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DOT, _DOTDOT = {".", "%2e"}, {"..", ".%2e", "%2e.", "%2e%2e"}
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"
_QUERY_SAFE = _PATH_SAFE + "?"


def normal_host(host: str) -> str:
    """`host` lower-case, IDNA-encoded, without a trailing dot; ValueError when not a host."""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:  # an IPv6 literal (urlsplit strips its brackets)
        return str(ipaddress.IPv6Address(host.split("%")[0]))
    if not host.isascii():
        try:
            import idna

            host = idna.encode(host, uts46=True).decode("ascii")
        except (ImportError, ValueError, UnicodeError):
            raise ValueError(f"{host!r} is not a valid international host name") from None
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    if not host or len(host) > 253 or not all(_LABEL.fullmatch(x) for x in host.split(".")):
        raise ValueError(f"{host!r} is not a host name")
    return host


def _remove_dots(path: str, matrix: bool = False) -> str:
    """RFC 3986 dot-segment removal, `%2e` read as `.` as the URL standard does; with `matrix`,
    a segment whose part before `;` is a dot-segment counts as one (`..;x` is `..`, as Java
    servers read path parameters)."""
    parts = path.split("/")[1:]
    out: list[str] = []
    for i, seg in enumerate(parts):
        low = seg.lower()
        if matrix:
            low = low.split(";", 1)[0]
        if low in _DOTDOT or low in _DOT:
            if low in _DOTDOT and out:
                out.pop()
            if i == len(parts) - 1:
                out.append("")  # "/a/b/.." is "/a/"
        else:
            out.append(seg)
    return "/" + "/".join(out)


@dataclass(frozen=True)
class Url:
    """A normalised http(s) URL: what the checks see is what goes on the wire."""

    scheme: str
    host: str
    port: int
    path: str
    query: str

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)

    @property
    def text(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if _DEFAULT_PORT[self.scheme] == self.port else f":{self.port}"
        return f"{self.scheme}://{host}{port}{self.path}" + (f"?{self.query}" if self.query else "")

    def segments(self) -> list[list[str]]:
        """The path as segments twice: as sent (each segment decoded on its own), and fully
        percent-decoded first (`\\` and a decoded `/` split too, dots resolved again), for
        servers that decode before routing."""
        decoded = self.path
        for _ in range(4):  # "%252e" is "%2e" once decoded, "." twice
            again = unquote(decoded)
            if again == decoded:
                break
            decoded = again
        decoded = _remove_dots(decoded.replace("\\", "/"), matrix=True)
        return [[unquote(s) for s in self.path.split("/")[1:]], decoded.split("/")[1:]]


def parse_url(text: str) -> Url:
    """Normalise an absolute http(s) URL; ValueError saying what is wrong."""
    text = text.strip(" ")
    if _CONTROL.search(text):
        raise ValueError("it contains a control character")
    cut = min((i for i in (text.find("?"), text.find("#")) if i >= 0), default=len(text))
    text = text[:cut].replace("\\", "/") + text[cut:]  # a browser reads "\" as "/" there
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORT:
        raise ValueError("it is not an http(s) URL")
    if "@" in parts.netloc:
        raise ValueError("it has user:password@ (fetch refuses credentials in URLs)")
    if not parts.hostname or "%" in parts.netloc:
        raise ValueError("it has no valid host")
    host = normal_host(parts.hostname)
    port = parts.port or _DEFAULT_PORT[scheme]  # ValueError when not a port
    path = _remove_dots(quote(parts.path or "/", safe=_PATH_SAFE))
    decoded = path
    for _ in range(4):  # as Url.segments decodes it
        decoded = unquote(decoded)
        if _CONTROL.search(decoded):
            raise ValueError("its path contains a control character once percent-decoded "
                             "(%00-%1f, %7f)")
    return Url(scheme, host, port, path, quote(parts.query, safe=_QUERY_SAFE))


# -- host and path rules (the user's credential entry and the manifest's grant) ----------------
@dataclass(frozen=True)
class HostRule:
    """`api.example` (port 443), `api.example:8443`, `*.example` (subdomains only)."""

    host: str
    port: int
    wildcard: bool = False

    @classmethod
    def parse(cls, text: Any) -> "HostRule":
        if not isinstance(text, str) or not text or any(c in text for c in "/?#@\\ "):
            raise ValueError(f"{text!r} is not a host (give host or host:port)")
        parts = urlsplit("//" + text)
        wild = (parts.hostname or "").startswith("*.")
        try:
            host = normal_host((parts.hostname or "")[2:] if wild else parts.hostname or "")
            port = parts.port or 443
        except ValueError:
            raise ValueError(f"{text!r} is not a host (give host or host:port)") from None
        return cls(host, port, wild)

    def allows(self, url: Url) -> bool:
        if url.port != self.port:
            return False
        return url.host.endswith("." + self.host) if self.wildcard else url.host == self.host

    def __str__(self) -> str:
        host = ("*." if self.wildcard else "") + (f"[{self.host}]" if ":" in self.host else self.host)
        return host if self.port == 443 else f"{host}:{self.port}"


def _path_rule(text: Any) -> tuple[list[str], bool]:
    if not isinstance(text, str) or not text.startswith("/"):
        raise ValueError(f"{text!r} is not a path (it starts with '/')")
    segs = Url("https", "x", 443, _remove_dots(unquote(text)), "").path.split("/")[1:]
    return (segs[:-1], True) if segs[-1] == "" else (segs, False)


def _path_allowed(url: Url, rules: Iterable[str]) -> bool:
    """Whether one rule matches whole segments of the path, as sent AND decoded."""
    compiled = []
    for text in rules:
        try:
            compiled.append(_path_rule(text))
        except ValueError:
            continue  # a broken rule grants nothing
    for segs in url.segments():
        if not any(segs[:len(prefix)] == prefix and (not folder or len(segs) > len(prefix))
                   for prefix, folder in compiled):
            return False
    return True


def _hosts_allowed(url: Url, rules: Iterable[Any]) -> bool:
    for r in rules:
        try:
            rule = r if isinstance(r, HostRule) else HostRule.parse(r)
        except ValueError:
            continue  # a broken rule grants nothing
        if rule.allows(url):
            return True
    return False


# -- the user's credentials ----------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class Credential:
    """One connection's credential as the user configured it: what to send, and where to."""

    connection: str
    headers: tuple[tuple[str, str], ...]
    hosts: tuple[HostRule, ...]
    paths: tuple[str, ...] | None
    source: str               # "credentials=", "secrets file", "environment", "keyring"
    problem: str | None = None  # why it has no usable hosts (a credentialDenied reason)

    def __repr__(self) -> str:  # never the header values
        names = ", ".join(k for k, _ in self.headers)
        return (f"<Credential {self.connection} ({self.source}): {names} -> "
                f"{', '.join(map(str, self.hosts)) or 'nowhere'}"
                f"{' ' + ', '.join(self.paths) if self.paths else ''}>")


def env_name(connection: str, what: str) -> str:
    return f"GEM_WORKBENCH_CONN_{re.sub(r'[^A-Z0-9]', '_', connection.upper())}_{what}"


def _split_list(text: str) -> list[str]:
    return [x for x in re.split(r"[\s,]+", text) if x]


def _entry(name: Any, value: Any, where: str, source: str) -> Credential:
    """A `credentials=` / secrets-file entry; UsageError naming what to add (never values)."""
    if not isinstance(name, str) or not isinstance(value, Mapping):
        raise UsageError(f"{where}: give {{connection: {{'headers': {{name: value}}, 'hosts': "
                         "[host, ...], 'paths': [...]}}")
    shape = (f"{where}[{name!r}] = {{'headers': {{'Authorization': 'Bearer …'}} (or 'token': "
             "'…'), 'hosts': ['api.example.com'], 'paths': ['/v1/'] (optional)}")
    if "headers" not in value and "token" not in value:
        raise UsageError(f"{where}[{name!r}] does not say where the credential may be sent: "
                         f"give {shape}. The gem's manifest cannot choose the hosts of your "
                         "credentials (SEC4)", connection=name)
    unknown = sorted(set(value) - _ENTRY_KEYS)
    if unknown or ("headers" in value) == ("token" in value):
        raise UsageError(f"{where}[{name!r}]: {'unknown key ' + repr(unknown[0]) if unknown else 'give headers or token, not both'}; "
                         f"the shape is {shape}", connection=name)
    headers: tuple[tuple[str, str], ...]
    if "token" in value:
        if not isinstance(value["token"], str) or not value["token"]:
            raise UsageError(f"{where}[{name!r}]['token'] must be a non-empty string", connection=name)
        headers = (("Authorization", f"Bearer {value['token']}"),)
    else:
        h = value["headers"]
        if not isinstance(h, Mapping) or not h or not all(
                isinstance(k, str) and re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", k)
                and isinstance(v, str) for k, v in h.items()):
            raise UsageError(f"{where}[{name!r}]['headers'] must be {{header name: string value}}",
                             connection=name)
        headers = tuple((k, v) for k, v in h.items())
    hosts = value.get("hosts")
    if not isinstance(hosts, (list, tuple)) or not hosts:
        raise UsageError(f"{where}[{name!r}]['hosts'] must list at least one host the credential "
                         f"may be sent to, e.g. ['api.example.com'] (port 443) or "
                         f"['api.example.com:8443']", connection=name)
    try:
        rules = tuple(HostRule.parse(h) for h in hosts)
    except ValueError as exc:
        raise UsageError(f"{where}[{name!r}]['hosts']: {exc}", connection=name) from None
    paths = value.get("paths")
    try:
        if paths is not None:
            if not isinstance(paths, (list, tuple)) or not paths:
                raise ValueError("give a non-empty list (or leave it out: every path)")
            for p in paths:
                _path_rule(p)
            paths = tuple(paths)
    except ValueError as exc:
        raise UsageError(f"{where}[{name!r}]['paths']: {exc}", connection=name) from None
    return Credential(name, headers, rules, paths, source)


def _secrets_file(path: "str | os.PathLike[str]") -> dict[str, Any]:
    """A JSON file {connection: {headers | token, hosts, paths?}}; errors never quote its content."""
    from pathlib import Path

    p = Path(path).expanduser()
    try:
        data = json.loads(p.read_text("utf-8"))
    except OSError as exc:
        raise UsageError(f"credentials file {p}: {exc.strerror}") from None
    except ValueError:
        raise UsageError(f"credentials file {p} is not valid JSON") from None
    if not isinstance(data, dict):
        raise UsageError(f"credentials file {p}: give {{connection: {{'headers': {{…}}, "
                         "'hosts': [...], 'paths': [...]}}}}")
    return data


class HttpState:
    """A bench's http: transport, the user's credentials, timeout and the log of every request."""

    def __init__(self, transport: "Transport", credentials: "Mapping[str, Any] | str | os.PathLike[str] | None" = None,
                 timeout: float = 10.0, env: Mapping[str, str] | None = None) -> None:
        self.transport, self.timeout = transport, timeout
        where, source = "credentials", "credentials="
        if isinstance(credentials, (str, os.PathLike)):  # a secrets file outside the notebook
            where, source = f"credentials file {os.fspath(credentials)}", "secrets file"
            credentials = _secrets_file(credentials)
        if credentials is not None and not isinstance(credentials, Mapping):
            raise UsageError("credentials: give {connection: {'headers': {…}, 'hosts': [...]}} "
                             "or the path of a JSON secrets file of that shape")
        self.env = os.environ if env is None else env
        self.log: list[dict[str, Any]] = []
        self._secrets: set[str] = set()
        self.credentials: dict[str, Credential] = {}
        for name, value in (credentials or {}).items():
            cred = _entry(name, value, where, source)
            self.credentials[name] = cred
            self._remember(cred.headers)

    def __repr__(self) -> str:
        return (f"<HttpState {getattr(self.transport, 'kind', type(self.transport).__name__)}, "
                f"timeout {self.timeout:g} s, credentials for {sorted(self.credentials)}>")

    def _remember(self, headers: Iterable[tuple[str, str]]) -> None:
        for _, v in headers:
            if len(v) >= 4:
                self._secrets.add(v)
                if " " in v:  # "Bearer abc…": the token alone too
                    self._secrets.add(v.split(" ", 1)[1])

    def credential(self, connection: str) -> Credential | None:
        """The user's credential for `connection`: open(credentials=…), then the environment,
        then the keyring; None when there is none."""
        if connection in self.credentials:
            return self.credentials[connection]
        token, source = self.env.get(env_name(connection, "TOKEN")), "environment"
        if not token:
            token, source = from_keyring(f"connection:{connection}"), "keyring"
        if not token:
            return None
        headers = (("Authorization", f"Bearer {token}"),)
        self._remember(headers)
        hosts_var, paths_var = env_name(connection, "HOSTS"), env_name(connection, "PATHS")
        hosts = self.env.get(hosts_var) or from_keyring(f"connection:{connection}:hosts") or ""
        paths = self.env.get(paths_var) or from_keyring(f"connection:{connection}:paths") or ""
        how = (f"credential has no hosts: set {hosts_var} (e.g. api.example.com, or "
               f"api.example.com:8443), or the keyring entry connection:{connection}:hosts")
        try:
            rules = tuple(HostRule.parse(h) for h in _split_list(hosts))
            plist = tuple(_split_list(paths)) or None
            for p in plist or ():
                _path_rule(p)
        except ValueError as exc:
            return Credential(connection, headers, (), None, source,
                              problem=f"credential hosts/paths are invalid ({hosts_var}, "
                                      f"{paths_var}): {exc}")
        return Credential(connection, headers, rules, plist, source,
                          problem=None if rules else how)

    def headers_for(self, connection: str) -> dict[str, str] | None:
        """The credential's headers (whatever its hosts), for inspection in tests."""
        cred = self.credential(connection)
        return dict(cred.headers) if cred is not None else None

    def mask(self, text: str) -> str:
        for s in sorted(self._secrets, key=len, reverse=True):
            text = text.replace(s, MASK)
        return text


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
    conns = (perms.get("http") or {}).get("connections") or {}
    return dict(conns) if isinstance(conns, dict) else {}


def _grant_reason(url: Url, grant: Any) -> str | None:
    """Why the manifest's grant does not cover `url` (None: it does)."""
    if not isinstance(grant, dict):
        return "unknown connection"
    if url.scheme != "https":
        return "not https"
    hosts = grant.get("hosts")
    if not isinstance(hosts, list) or not _hosts_allowed(url, hosts):
        return "host not granted"
    paths = grant.get("paths")
    if paths is not None and (not isinstance(paths, list) or not _path_allowed(url, paths)):
        return "path not granted"
    return None


def _credential_reason(url: Url, cred: Credential | None) -> str | None:
    """Why the user's credential may not go to `url` (None: it may)."""
    if cred is None:
        return "no credentials"
    if not cred.hosts:
        return cred.problem or "credential has no hosts"
    if not _hosts_allowed(url, cred.hosts):
        return "host not allowed by the credential"
    if cred.paths is not None and not _path_allowed(url, cred.paths):
        return "path not allowed by the credential"
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
        name, value = pair[0], str(pair[1]).strip(" \t\r\n")
        if not _TOKEN.fullmatch(name):
            raise WorkbenchError("E_INVALID_ARGUMENT", f"header name {name[:100]!r} is not a valid "
                                 "HTTP header name", field="headers")
        if any(c in value for c in "\0\r\n") or not all(ord(c) < 256 for c in value):
            raise WorkbenchError("E_INVALID_ARGUMENT", f"header {name!r}: the value must be a "
                                 "Latin-1 string without NUL, CR or LF", field="headers", header=name)
        low = name.lower()
        if low in FORBIDDEN_HEADERS or low.startswith(_FORBIDDEN_PREFIXES) or (
                low in _METHOD_OVERRIDES and any(m.strip().upper() in FORBIDDEN_METHODS
                                                 for m in value.split(","))):
            continue  # a forbidden request header: dropped, as browsers do
        out[name] = value
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


class _Clock:
    """One fetch's deadline: min(timeout, the call's remaining time), over every hop."""

    def __init__(self, timeout: float, call_left: float | None) -> None:
        self.by_call = call_left is not None and call_left < timeout
        self.seconds = min(timeout, call_left) if call_left is not None else timeout
        self.deadline = time.monotonic() + self.seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def out_of_time(self, method: str, url: str, why: str = "total deadline") -> WorkbenchError:
        if self.by_call:
            return WorkbenchError("E_TIMEOUT", f"http.fetch {method} {url}: the call ran out of "
                                  f"time after {self.seconds:.3g} s ({why}; the call's timeout "
                                  "covers the ctx calls it makes)", method="http.fetch", url=url)
        return WorkbenchError("E_HTTP", f"{method} {url}: no complete answer within "
                              f"{self.seconds:g} s ({why}; the timeout covers connecting, "
                              "redirects and the whole body)", url=url, reason="timeout",
                              timeout=self.seconds)


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
        if not isinstance(url, str):
            raise WorkbenchError("E_INVALID_ARGUMENT", f"fetch: url must be an absolute http(s) "
                                 f"URL, got {type(url).__name__}", field="url")
        try:
            target = parse_url(url)
        except ValueError as exc:
            raise WorkbenchError("E_INVALID_ARGUMENT", f"fetch: url must be an absolute http(s) "
                                 f"URL, got {state.mask(url)[:200]!r}: {exc}", field="url") from None
        method = opts.get("method", "GET")
        if not isinstance(method, str) or not method.isascii() or not method.isalpha():
            raise WorkbenchError("E_INVALID_ARGUMENT", f"method {method!r} is not an HTTP method",
                                 field="method")
        method = method.upper()
        if method in FORBIDDEN_METHODS:  # TRACE would echo an injected credential back
            raise WorkbenchError("E_INVALID_ARGUMENT", f"method {method!r} is forbidden, as in "
                                 "fetch (CONNECT, TRACE and TRACK are refused)", field="method",
                                 method=method)
        headers = _headers(opts.get("headers"))
        body = _body(opts.get("body"), opts.get("bodyEncoding"))
        connection = opts.get("connection")
        if connection is not None and not isinstance(connection, str):
            raise WorkbenchError("E_INVALID_ARGUMENT", "connection must be a connection name "
                                 "from the manifest's permissions.http.connections", field="connection")
        timeout = opts.get("timeout", state.timeout)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise WorkbenchError("E_INVALID_ARGUMENT", "timeout is seconds (> 0)", field="timeout")
        redirect = opts.get("redirect", "follow")
        if redirect not in ("follow", "manual"):
            raise WorkbenchError("E_INVALID_ARGUMENT", f"redirect {redirect!r}: use 'follow' "
                                 "(default) or 'manual'", field="redirect")
        # a tool may shorten the bench's http_timeout, never lengthen it (SEC5)
        clock = _Clock(min(float(timeout), state.timeout), s.remaining("http.fetch"))
        return self._send(state, target, method, headers, body, connection, clock,
                          follow=redirect == "follow")

    def _send(self, state: HttpState, url: Url, method: str, headers: dict[str, str], body: bytes,
              connection: str | None, clock: _Clock, follow: bool = True) -> dict[str, Any]:
        from ..providers.http import HttpRequest, send, too_large

        grant = _connections(self.s.manifest, self.s.tool).get(connection) if connection else None
        cred: Credential | None = None
        denied: dict[str, str] | None = None
        if connection is not None:
            reason = _grant_reason(url, grant)
            if reason is None:
                cred = state.credential(connection)
                reason = _credential_reason(url, cred)
            if reason is not None:
                denied, cred = {"reason": reason, "host": url.host}, None
        first = url
        max_bytes = self.s.limits.http_body_bytes
        row: dict[str, Any] = {"call_id": self.s.call_id, "tool": self.s.tool.name,
                               "method": method, "url": state.mask(url.text), "status": None,
                               "duration_ms": None, "connection": connection,
                               "credential": None if connection is None else
                               ("injected" if cred else "denied"),
                               "reason": denied["reason"] if denied else None,
                               "redirects": 0, "error": None}
        t0 = time.perf_counter()
        try:
            current, redirects = url, 0
            while True:
                send_headers = dict(headers)
                if cred is not None:  # every hop is checked again, on its normalised URL
                    why = ("redirected to another host" if current.host != first.host
                           else _grant_reason(current, grant) or _credential_reason(current, cred)
                           or ("redirected to another port" if current.port != first.port else None))
                    if why is None:
                        names = {k.lower() for k, _ in cred.headers} | {"authorization"}
                        send_headers = {k: v for k, v in send_headers.items() if k.lower() not in names}
                        send_headers.update(cred.headers)
                    else:
                        denied = {"reason": why, "host": current.host}
                        row.update(credential="dropped", reason=why)
                        cred = None
                left = clock.left()
                if left <= 0:
                    raise clock.out_of_time(method, current.text)
                request = HttpRequest(method, current.text, send_headers, body)
                try:
                    resp: HttpResponse = send(state.transport, request, left, max_bytes)
                except WorkbenchError as exc:
                    if exc.details.get("reason") == "timeout":  # say which limit ran out
                        raise clock.out_of_time(method, current.text,
                                                str(exc.details.get("why", "timeout"))) from None
                    raise
                if len(resp.body) > max_bytes:  # a transport that cannot stop early
                    raise too_large(request, max_bytes)
                if clock.left() < 0:  # a transport that cannot stop in time
                    raise clock.out_of_time(method, current.text)
                location = resp.header("location")
                if not follow or resp.status not in (301, 302, 303, 307, 308) or not location \
                        or redirects >= MAX_REDIRECTS:
                    break
                try:
                    nxt = parse_url(urljoin(current.text, location))
                except ValueError as exc:
                    raise WorkbenchError("E_HTTP", f"{method} {current.text}: redirected to an "
                                         f"invalid URL ({exc})", url=current.text,
                                         reason="bad redirect") from None
                if nxt.origin != current.origin:  # fetch drops these cross-origin
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
        row.update(status=resp.status, redirects=redirects)
        reply: dict[str, Any] = {
            "status": resp.status, "statusText": resp.reason, "ok": 200 <= resp.status < 300,
            "url": current.text, "redirected": redirects > 0,
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
