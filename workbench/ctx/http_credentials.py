"""The user's credentials for ctx.http.fetch (SEC4): where they come from, where they may go.

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
  tool's grant in the manifest (`permissions.http.connections.<name>`) allow, over https
  (host and path rules: http_urls.py). A credential without a user-side host list is
  injected nowhere; a code-given `{name: {header: value}}` (the old shape) is refused at open
  with a UsageError saying to add `hosts`.
- Refused injection is not an error: the request goes out without the credential and the
  reply has `credentialDenied: {reason, host}`; reasons: "unknown connection", "not https",
  "host not granted" / "path not granted" (the manifest), "no credentials", "credential has no
  hosts: …" (how to configure it), "host not allowed by the credential" / "path not allowed
  by the credential" (the user's configuration), "redirected to another host" / "... port".
- Credentials never reach traces, logs, `bench.http()`, reprs or errors: they are masked, in
  their encoded forms too (ctx/masking.py).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._errors import UsageError
from ..platforms.base import Limits
from ..providers.secrets import from_keyring
from .http_private import PrivateHosts
from .http_urls import HostRule, Url, hosts_allowed, path_allowed, path_rule
from .kept import ROW_CHARS, Ring
from .masking import SecretMask

if TYPE_CHECKING:
    from ..providers.http import Transport

_ENTRY_KEYS = {"headers", "token", "hosts", "paths"}


# -- the user's credentials ----------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class Credential:
    """One connection's credential as the user configured it: what to send, and where to."""

    connection: str
    headers: tuple[tuple[str, str], ...]
    hosts: tuple[HostRule, ...]
    paths: tuple[str, ...] | None
    source: str  # "credentials=", "secrets file", "environment", "keyring"
    problem: str | None = None  # why it has no usable hosts (a credentialDenied reason)

    def __repr__(self) -> str:  # never the header values
        names = ", ".join(k for k, _ in self.headers)
        return (
            f"<Credential {self.connection} ({self.source}): {names} -> "
            f"{', '.join(map(str, self.hosts)) or 'nowhere'}"
            f"{' ' + ', '.join(self.paths) if self.paths else ''}>"
        )


def env_name(connection: str, what: str) -> str:
    return f"GEM_WORKBENCH_CONN_{re.sub(r'[^A-Z0-9]', '_', connection.upper())}_{what}"


def _split_list(text: str) -> list[str]:
    return [x for x in re.split(r"[\s,]+", text) if x]


def _entry(name: Any, value: Any, where: str, source: str) -> Credential:
    """A `credentials=` / secrets-file entry; UsageError naming what to add (never values)."""
    if not isinstance(name, str) or not isinstance(value, Mapping):
        raise UsageError(
            f"{where}: give {{connection: {{'headers': {{name: value}}, 'hosts': "
            "[host, ...], 'paths': [...]}}"
        )
    shape = (
        f"{where}[{name!r}] = {{'headers': {{'Authorization': 'Bearer …'}} (or 'token': "
        "'…'), 'hosts': ['api.example.com'], 'paths': ['/v1/'] (optional)}"
    )
    if "headers" not in value and "token" not in value:
        raise UsageError(
            f"{where}[{name!r}] does not say where the credential may be sent: "
            f"give {shape}. The gem's manifest cannot choose the hosts of your "
            "credentials (SEC4)",
            connection=name,
        )
    unknown = sorted(set(value) - _ENTRY_KEYS)
    if unknown or ("headers" in value) == ("token" in value):
        raise UsageError(
            f"{where}[{name!r}]: {'unknown key ' + repr(unknown[0]) if unknown else 'give headers or token, not both'}; "
            f"the shape is {shape}",
            connection=name,
        )
    headers: tuple[tuple[str, str], ...]
    if "token" in value:
        if not isinstance(value["token"], str) or not value["token"]:
            raise UsageError(f"{where}[{name!r}]['token'] must be a non-empty string", connection=name)
        headers = (("Authorization", f"Bearer {value['token']}"),)
    else:
        h = value["headers"]
        if (
            not isinstance(h, Mapping)
            or not h
            or not all(
                isinstance(k, str) and re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", k) and isinstance(v, str)
                for k, v in h.items()
            )
        ):
            raise UsageError(
                f"{where}[{name!r}]['headers'] must be {{header name: string value}}", connection=name
            )
        headers = tuple((k, v) for k, v in h.items())
    hosts = value.get("hosts")
    if not isinstance(hosts, (list, tuple)) or not hosts:
        raise UsageError(
            f"{where}[{name!r}]['hosts'] must list at least one host the credential "
            f"may be sent to, e.g. ['api.example.com'] (port 443) or "
            f"['api.example.com:8443']",
            connection=name,
        )
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
                path_rule(p)
            paths = tuple(paths)
    except ValueError as exc:
        raise UsageError(f"{where}[{name!r}]['paths']: {exc}", connection=name) from None
    return Credential(name, headers, rules, paths, source)


def credential_from(name: Any, value: Any, source: str) -> Credential:
    """One connection's credential from a {headers | token, hosts, paths?} entry (a bench's
    setup put back); UsageError naming what is wrong, never a value."""
    return _entry(name, value, "credentials", source)


def _secrets_file(path: str | os.PathLike[str]) -> dict[str, Any]:
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
        raise UsageError(
            f"credentials file {p}: give {{connection: {{'headers': {{…}}, "
            "'hosts': [...], 'paths': [...]}}}}"
        )
    return data


def _row_chars(row: dict[str, Any]) -> int:
    """What one HTTP log row costs the bench: its strings (the URL is the tool's, any length)."""
    return ROW_CHARS + sum(len(v) for v in row.values() if isinstance(v, str))


class HttpState:
    """A bench's http: transport, the user's credentials, timeout and the log of every request."""

    def __init__(
        self,
        transport: Transport,
        credentials: Mapping[str, Any] | str | os.PathLike[str] | None = None,
        timeout: float = 10.0,
        env: Mapping[str, str] | None = None,
        log_chars: int = Limits.http_log_chars,
        private_hosts: Iterable[Any] | None = None,
    ) -> None:
        self.transport, self.timeout = transport, timeout
        # the private hosts real requests may reach (ctx/http_private.py); none unless named
        self.private = PrivateHosts(private_hosts)
        where, source = "credentials", "credentials="
        if isinstance(credentials, (str, os.PathLike)):  # a secrets file outside the notebook
            where, source = f"credentials file {os.fspath(credentials)}", "secrets file"
            credentials = _secrets_file(credentials)
        if credentials is not None and not isinstance(credentials, Mapping):
            raise UsageError(
                "credentials: give {connection: {'headers': {…}, 'hosts': [...]}} "
                "or the path of a JSON secrets file of that shape"
            )
        self.env = os.environ if env is None else env
        # SEC5: a row per fetch (and per redirect hop's URL), the oldest dropped past log_chars
        self.log: Ring[dict[str, Any]] = Ring(log_chars, _row_chars, "http_log_chars")
        self._secrets = SecretMask()
        self.credentials: dict[str, Credential] = {}
        for name, value in (credentials or {}).items():
            cred = _entry(name, value, where, source)
            self.credentials[name] = cred
            self._remember(cred.headers)

    def __repr__(self) -> str:
        return (
            f"<HttpState {getattr(self.transport, 'kind', type(self.transport).__name__)}, "
            f"timeout {self.timeout:g} s, credentials for {sorted(self.credentials)}>"
        )

    def remember_secret(self, value: str) -> None:
        """A secret (ctx.secrets.get's, or one the bench's store holds, K6): masked from now on,
        as credentials, in every form masking.py knows (JSON, percent-encoded, base64, hex)."""
        self._secrets.add(value)

    def _remember(self, headers: Iterable[tuple[str, str]]) -> None:
        for _, v in headers:
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
        how = (
            f"credential has no hosts: set {hosts_var} (e.g. api.example.com, or "
            f"api.example.com:8443), or the keyring entry connection:{connection}:hosts"
        )
        try:
            rules = tuple(HostRule.parse(h) for h in _split_list(hosts))
            plist = tuple(_split_list(paths)) or None
            for p in plist or ():
                path_rule(p)
        except ValueError as exc:
            return Credential(
                connection,
                headers,
                (),
                None,
                source,
                problem=f"credential hosts/paths are invalid ({hosts_var}, {paths_var}): {exc}",
            )
        return Credential(connection, headers, rules, plist, source, problem=None if rules else how)

    def headers_for(self, connection: str) -> dict[str, str] | None:
        """The credential's headers (whatever its hosts), for inspection in tests."""
        cred = self.credential(connection)
        return dict(cred.headers) if cred is not None else None

    @property
    def has_secrets(self) -> bool:
        return bool(self._secrets)

    def mask_value(self, value: Any) -> Any:
        """A JSON value with every secret in its strings masked (None if it is not JSON)."""
        if not self._secrets or value is None:
            return value
        try:
            return json.loads(self.mask(json.dumps(value, ensure_ascii=False)))
        except (TypeError, ValueError, RecursionError):
            return None

    def mask(self, text: str) -> str:
        return self._secrets.mask(text)


# -- where a credential may go: what both the manifest's grant and the user's entry allow --------
def grant_reason(url: Url, grant: Any) -> str | None:
    """Why the manifest's grant does not cover `url` (None: it does)."""
    if not isinstance(grant, dict):
        return "unknown connection"
    if url.scheme != "https":
        return "not https"
    hosts = grant.get("hosts")
    if not isinstance(hosts, list) or not hosts_allowed(url, hosts):
        return "host not granted"
    paths = grant.get("paths")
    if paths is not None and (not isinstance(paths, list) or not path_allowed(url, paths)):
        return "path not granted"
    return None


def credential_reason(url: Url, cred: Credential | None) -> str | None:
    """Why the user's credential may not go to `url` (None: it may)."""
    if cred is None:
        return "no credentials"
    if not cred.hosts:
        return cred.problem or "credential has no hosts"
    if not hosts_allowed(url, cred.hosts):
        return "host not allowed by the credential"
    if cred.paths is not None and not path_allowed(url, cred.paths):
        return "path not allowed by the credential"
    return None
