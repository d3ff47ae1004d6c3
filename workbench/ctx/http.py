"""ctx.http.fetch (N10, SEC4, SEC5): the rules, once, over any transport and for both runners.

- Needs `permissions.http` at the manifest's top level, and on the tool too when the tool
  declares its own `permissions`; otherwise E_PERM_DENIED naming the field.
- The request has the Fetch API's shape: `fetch(url, {method, headers, body, connection})`;
  `body` is a string, or base64 with `bodyEncoding: "base64"` (the JS ctx does this for
  bytes; Python may pass bytes). The reply is plain JSON: {status, statusText, ok, url,
  redirected, headers: [[name, value]], body (base64)} plus `credentialDenied` when set; the JS
  worker and `PythonCtx` build a Response-like object from it.

The credential model (SEC4) is in http_credentials.py, URL normalisation and host/path rules
in http_urls.py, what a tool may send (methods, headers, body) in http_request.py; here are the
permission, the request with its redirects, the log and the reply.

- Every redirect hop (the workbench follows them, at most 20) is checked again; a hop to
  another origin (scheme, host or port) never gets the credential back.
- When injecting, any `Authorization` the tool set (any case) and any header of an injected
  name are dropped, so the request carries the user's value only.
- Nothing is carried between calls: no cookie jar, no kept-alive connection.
- Every hop's request carries the bench's address guard (ctx/http_private.py): the real
  transport resolves the host, refuses it when any address is loopback, private or otherwise
  not public unless `private_hosts=` names it (E_PERM_DENIED naming the address and the
  option), and connects to the address it checked. The connection grants are the ones the
  platform decided with the tool's other grants, so a call keeps the grants it started with.

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
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from .._errors import WorkbenchError
from .http_credentials import Credential, HttpState, credential_reason, grant_reason
from .http_egress import egress_host, egress_problem
from .http_private import FLAG as PRIVATE_FLAG
from .http_private import OPTION as PRIVATE_OPTION
from .http_private import check_option as check_private
from .http_request import request_body, request_headers, request_method, request_options, request_timing
from .http_state import EFFECTS, HTTP_LOG, HTTP_SETUP
from .http_urls import Url, UrlTooLong, check_length, parse_url
from .masking import mask_error
from .spec import CapabilitySpec, Flag, OpenContext, Option, View, checked, file_or, number, path_or, seconds
from .surface import spell_option

if TYPE_CHECKING:
    from ..providers.http import HttpResponse
    from ._session import CallSession

METHODS = ("fetch",)
MAX_REDIRECTS = 20
# what fetch drops on a cross-origin redirect; and what a tool may not add next to a credential
_SENSITIVE = {"authorization", "cookie", "proxy-authorization"}


def _connections(session: CallSession) -> Mapping[str, Any]:
    """The tool's connection grants as its platform decided them (N10, SEC4), once per (gem,
    tool) and copied: an edit of the manifest during a call never reaches its later fetches."""
    conns = session.grants.settings.get("http.connections")
    return conns if isinstance(conns, Mapping) else {}


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
            return WorkbenchError(
                "E_TIMEOUT",
                f"http.fetch {method} {url}: the call ran out of "
                f"time after {self.seconds:.3g} s ({why}; the call's timeout "
                "covers the ctx calls it makes)",
                method="http.fetch",
                url=url,
            )
        return WorkbenchError(
            "E_HTTP",
            f"{method} {url}: no complete answer within "
            f"{self.seconds:g} s ({why}; the timeout covers connecting, "
            "redirects and the whole body)",
            url=url,
            reason="timeout",
            timeout=self.seconds,
        )


class Http:
    """ctx.http for one call."""

    def __init__(self, session: CallSession) -> None:
        self.s = session

    def fetch(self, url: Any, init: Any = None, /, **kwargs: Any) -> dict[str, Any]:
        s = self.s
        s.grants.require("http")  # N10: decided once per tool by the platform profile
        state: HttpState | None = s.http
        if state is None:
            raise WorkbenchError(
                "E_INTERNAL",
                "http.fetch: this call has no HTTP transport "
                "(a session made outside workbench.open gets none)",
            )
        # checked in this order: the first wrong argument is the one named
        opts = request_options(init, kwargs)
        target = self._target(state, url)
        method = request_method(opts.get("method", "GET"))
        headers = request_headers(opts.get("headers"))
        body = request_body(opts.get("body"), opts.get("bodyEncoding"))
        connection = opts.get("connection")
        if connection is not None and not isinstance(connection, str):
            raise WorkbenchError(
                "E_INVALID_ARGUMENT",
                "connection must be a connection name from the manifest's permissions.http.connections",
                field="connection",
            )
        timeout, follow = request_timing(opts, state.timeout)
        # a tool may shorten the bench's http_timeout, never lengthen it (SEC5)
        clock = _Clock(min(timeout, state.timeout), s.remaining("http.fetch"))
        return self._send(state, target, method, headers, body, connection, clock, follow=follow)

    def _target(self, state: HttpState, url: Any) -> Url:
        """The URL a fetch asks for, parsed, within Limits.url_chars and the integration's egress
        hosts (K6) both as written and as it will be sent."""
        if not isinstance(url, str):
            raise WorkbenchError(
                "E_INVALID_ARGUMENT",
                f"fetch: url must be an absolute http(s) URL, got {type(url).__name__}",
                field="url",
            )
        max_chars = self.s.limits.url_chars
        try:
            check_length(url, max_chars)  # SEC5: before anything parses (or masks) it
            egress = self.s.grants.lists.get("egress")
            if egress is not None:  # K6: an integration's fetch reaches its egress hosts only
                egress_check(url, egress, state)
            target = parse_url(url, max_chars)
        except UrlTooLong as exc:
            raise WorkbenchError(
                "E_INVALID_ARGUMENT",
                f"fetch: url {state.mask(url[:max_chars])[:200]!r}…: {exc}",
                field="url",
                limit="url_chars",
                max_chars=max_chars,
            ) from None
        except ValueError as exc:
            raise WorkbenchError(
                "E_INVALID_ARGUMENT",
                f"fetch: url must be an absolute http(s) URL, got {state.mask(url)[:200]!r}: {exc}",
                field="url",
            ) from None
        if egress is not None:  # and the URL as it will be sent: one reading, not two
            egress_check(target.text, egress, state)
        return target

    def _send(
        self,
        state: HttpState,
        url: Url,
        method: str,
        headers: dict[str, str],
        body: bytes,
        connection: str | None,
        clock: _Clock,
        follow: bool = True,
    ) -> dict[str, Any]:
        grant = _connections(self.s).get(connection) if connection else None
        cred: Credential | None = None
        denied: dict[str, str] | None = None
        if connection is not None:
            reason = grant_reason(url, grant)
            if reason is None:
                cred = state.credential(connection)
                reason = credential_reason(url, cred)
            if reason is not None:
                denied, cred = {"reason": reason, "host": url.host}, None
        row = self._log_row(state, url, method, connection, cred, denied)
        t0 = time.perf_counter()
        try:
            current, redirects = url, 0
            while True:
                send_headers = dict(headers)
                if cred is not None:  # every hop is checked again, on its normalised URL
                    why = _credential_dropped(current, url, grant, cred)
                    if why is None:
                        send_headers = _with_credential(send_headers, cred)
                    else:
                        denied = {"reason": why, "host": current.host}
                        row.update(credential="dropped", reason=why)
                        cred = None
                resp = self._exchange(state, clock, method, current, send_headers, body)
                if not follow or redirects >= MAX_REDIRECTS:
                    break
                hop = self._redirect(state, resp, current, method, body, headers)
                if hop is None:
                    break
                current, method, body, headers = hop
                redirects += 1
        except WorkbenchError as exc:
            row["error"] = exc.code
            mask_error(state, exc)
            raise
        finally:
            row["duration_ms"] = round((time.perf_counter() - t0) * 1000, 3)
            state.log.append(row)
        row.update(status=resp.status, redirects=redirects)
        return _reply(resp, current, redirects, denied)

    def _log_row(
        self,
        state: HttpState,
        url: Url,
        method: str,
        connection: str | None,
        cred: Credential | None,
        denied: dict[str, str] | None,
    ) -> dict[str, Any]:
        """The fetch's row of the bench's HTTP log, before its first hop (its status, time,
        redirects and error are filled in as it ends)."""
        return {
            "call_id": self.s.call_id,
            "tool": self.s.tool.name,
            "method": method,
            "url": state.mask(url.text),
            "status": None,
            "duration_ms": None,
            "connection": connection,
            "credential": None if connection is None else ("injected" if cred else "denied"),
            "reason": denied["reason"] if denied else None,
            "redirects": 0,
            "error": None,
        }

    def _exchange(
        self, state: HttpState, clock: _Clock, method: str, url: Url, headers: dict[str, str], body: bytes
    ) -> HttpResponse:
        """One hop: the request sent and its whole answer read, within the fetch's deadline and
        Limits.http_body_bytes."""
        from ..providers.http import HttpRequest, send, too_large

        left = clock.left()
        if left <= 0:
            raise clock.out_of_time(method, url.text)
        max_bytes = self.s.limits.http_body_bytes
        # every hop connects only to a public address its name resolves to, or to a
        # private one the bench's private_hosts= names (ctx/http_private.py)
        guard = state.private.guard(url.host, url.port)
        request = HttpRequest(method, url.text, headers, body, guard=guard)
        try:
            resp: HttpResponse = send(state.transport, request, left, max_bytes)
        except WorkbenchError as exc:
            if exc.details.get("reason") == "timeout":  # say which limit ran out
                raise clock.out_of_time(method, url.text, str(exc.details.get("why", "timeout"))) from None
            raise
        if len(resp.body) > max_bytes:  # a transport that cannot stop early
            raise too_large(request, max_bytes)
        if clock.left() < 0:  # a transport that cannot stop in time
            raise clock.out_of_time(method, url.text)
        return resp

    def _redirect(
        self,
        state: HttpState,
        resp: HttpResponse,
        current: Url,
        method: str,
        body: bytes,
        headers: dict[str, str],
    ) -> tuple[Url, str, bytes, dict[str, str]] | None:
        """Where `resp` redirects to, and the method, body and headers fetch sends there; None
        when it is not a redirect."""
        location = resp.header("location")
        if resp.status not in (301, 302, 303, 307, 308) or not location:
            return None
        try:
            check_length(location, self.s.limits.url_chars)  # before urljoin parses it
            nxt = parse_url(urljoin(current.text, location), self.s.limits.url_chars)
        except ValueError as exc:
            raise WorkbenchError(
                "E_HTTP",
                f"{method} {current.text}: redirected to an invalid URL ({exc})",
                url=current.text,
                reason="bad redirect",
            ) from None
        if nxt.origin != current.origin:  # fetch drops these cross-origin
            headers = {k: v for k, v in headers.items() if k.lower() not in _SENSITIVE}
        if resp.status == 303 or (resp.status in (301, 302) and method == "POST"):
            method, body = "GET", b""
            headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
        egress = self.s.grants.lists.get("egress")
        if egress is not None:  # every hop: a redirect is a request too
            egress_check(nxt.text, egress, state)
        return nxt, method, body, headers


def _credential_dropped(current: Url, first: Url, grant: Any, cred: Credential) -> str | None:
    """Why the credential does not go to this hop (None: it does)."""
    if current.host != first.host:
        return "redirected to another host"
    return (
        grant_reason(current, grant)
        or credential_reason(current, cred)
        or ("redirected to another port" if current.port != first.port else None)
    )


def _with_credential(headers: dict[str, str], cred: Credential) -> dict[str, str]:
    """`headers` with the credential's injected: any Authorization or header of an injected
    name the tool set is dropped, so the request carries the user's value only."""
    names = {k.lower() for k, _ in cred.headers} | {"authorization"}
    sent = {k: v for k, v in headers.items() if k.lower() not in names}
    sent.update(cred.headers)
    return sent


def _reply(resp: HttpResponse, url: Url, redirects: int, denied: dict[str, str] | None) -> dict[str, Any]:
    """What fetch returns (the module docstring's plain JSON)."""
    reply: dict[str, Any] = {
        "status": resp.status,
        "statusText": resp.reason,
        "ok": 200 <= resp.status < 300,
        "url": url.text,
        "redirected": redirects > 0,
        "headers": [[_bytestring(k.lower()), _bytestring(v)] for k, v in resp.headers],
        "body": base64.b64encode(resp.body).decode("ascii"),
    }
    if denied is not None:
        reply["credentialDenied"] = denied
    return reply


def _bytestring(text: str) -> str:
    """A header as fetch gives it, each byte a character (ByteString): the real transport
    already gives them so; a mock handler's value past U+00FF is given as its UTF-8 bytes."""
    if text.isascii() or max(text) <= "\xff":
        return text
    return text.encode("utf-8", "surrogatepass").decode("latin-1")


def egress_check(url: str, egress: tuple[str, ...], state: HttpState) -> None:
    """K6: `url` is https to a host of the integration's `egress` (ctx/http_egress.py), or
    E_PERM_DENIED naming the host and the egress list."""
    why = egress_problem(egress, url)
    if why is not None:
        host, _ = egress_host(url)
        shown = state.mask(url)[:300]
        raise WorkbenchError(
            "E_PERM_DENIED",
            f"fetch {shown}: {why}; an integration reaches only https hosts in its `egress` "
            f"({', '.join(egress) or 'none'}): add the host there in defineIntegration",
            host=host,
            egress=list(egress),
            url=shown,
        )


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

    def arrayBuffer(self) -> builtins.bytes:  # noqa: N802 (the Fetch API's name)
        return self._body

    def text(self) -> str:
        return self._body.decode("utf-8", "replace")

    def json(self) -> Any:
        import json

        return json.loads(self._body)

    def __repr__(self) -> str:
        extra = f" credentialDenied={self.credentialDenied}" if self.credentialDenied else ""
        return f"<Response {self.status} {self.url}{extra}>"


def state_of(providers: Any) -> HttpState | None:
    """ctx.http's backend of the bench of `providers` (None: its platform has no ctx.http)."""
    state: HttpState | None = providers.backends.get(SPEC.impl)
    return state


def _backend(opening: OpenContext) -> HttpState:
    """ctx.http's backend: the bench's transport, credentials and log (N10)."""
    from ..providers.http import make_transport

    options = opening.options
    # a mock's "no handler matches" names the platform's own option (Ekanos: fetch_handlers=)
    own = [o.name for o in SPEC.options if o.same_as == "http" and o.name in opening.profile.open_options]
    option = own[0] if own else "http"
    hint = spell_option(option, "[{'match': url_prefix, 'respond': …}]", among=(SPEC,))
    return HttpState(
        make_transport(options.get("http", "mock"), option=option, hint=hint),
        options.get("credentials"),
        timeout=float(options.get("http_timeout", 10.0)),
        log_chars=opening.limits.http_log_chars,
        private_hosts=options.get(PRIVATE_OPTION),
    )


def _notice(method: str, result: Any) -> str | None:
    """The trace's line for a fetch that was answered but not as hoped: a status >= 400, a
    credential that was not sent (N10 credentialDenied)."""
    if not isinstance(result, dict):
        return None
    said = []
    status = result.get("status")
    if isinstance(status, int) and status >= 400:
        from http import HTTPStatus

        try:  # a mock's answer has no statusText: the status's standard phrase
            phrase = result.get("statusText") or HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        said.append(f"HTTP {status} {phrase}".rstrip())
    denied = result.get("credentialDenied")
    if isinstance(denied, dict):
        said.append(f"credential not sent to {denied.get('host')}: {denied.get('reason')}")
    return "; ".join(said) or None


def _close(state: HttpState) -> None:
    transport: Any = state.transport
    if hasattr(transport, "close"):
        transport.close()


def _real_effects(state: HttpState) -> tuple[str, ...]:
    """`http=` when its transport sends requests out (real, or an object given: taken as real);
    mock handlers, a cassette and served answers stay inside."""
    kind = getattr(state.transport, "kind", "real")
    return () if kind in ("mock", "cassette", "served") else ("http='real'" if kind == "real" else "http=",)


#: ctx.http / ctx.fetch as a unit (N10, SEC4)
SPEC = CapabilitySpec(
    impl="http",
    real_effects=_real_effects,
    title="ctx.http",
    implementation=Http,
    backend=_backend,
    close=_close,
    notice=_notice,
    state=(HTTP_SETUP, HTTP_LOG),
    effects=EFFECTS,
    options=(
        Option(
            "http",
            "what ctx.http.fetch reaches: 'mock' (no handlers: every request is E_HTTP), a list "
            "of mock handlers [{match, method?, respond}], 'real' (httpx), or a transport",
            default="mock",
            type="Any",
            flags=(
                Flag(
                    "--http",
                    metavar="real|FILE",
                    help="'real', or a JSON file of mock handlers",
                    parse=file_or("mock", "real"),
                ),
            ),
        ),
        Option(
            "fetch_handlers",
            "mock handlers for ctx.fetch [{match, method?, respond}], as createMockContext takes them",
            type="list[Mapping[str, Any]] | None",
            flags=(
                Flag(
                    "--fetch-fixtures", how="json", metavar="FILE", help="a JSON file of mock fetch handlers"
                ),
            ),
            opt_in=True,
            same_as="http",
            more="the same transport as http=[...]: give one of them",
        ),
        Option(
            "credentials",
            "{connection: {headers | token, hosts, paths?}} or a JSON secrets file of that shape (SEC4)",
            type="Mapping[str, Mapping[str, Any]] | str | os.PathLike[str] | None",
            default_doc="env GEM_WORKBENCH_CONN_<NAME>_TOKEN/_HOSTS/_PATHS, then the keyring",
            more="injected for `connection: name` only where both these hosts/paths and the manifest's "
            "grant allow (ctx/http_credentials.py); a {name: {header: value}} without hosts is refused",
            flags=(
                Flag(
                    "--credentials",
                    metavar="FILE",
                    help="a JSON file of connection credentials",
                    parse=path_or(),
                ),
            ),
        ),
        Option(
            "http_timeout",
            "seconds per fetch in total, never past the call's own timeout (SEC5)",
            default=10.0,
            type="float",
            check=checked(seconds, "http_timeout={value!r}: give seconds (> 0)"),
            more="connecting, redirects and the whole body",
            flags=(
                Flag(
                    "--http-timeout",
                    metavar="S",
                    help="seconds per fetch",
                    parse=number(float, what="seconds"),
                ),
            ),
        ),
        Option(
            PRIVATE_OPTION,
            "the private hosts real HTTP may reach, for local testing: 'host' or 'host:port' "
            "entries, e.g. ['localhost', '127.0.0.1:8080', '[::1]:8080']",
            type="list[str] | None",
            default=None,
            default_doc="none: every non-public address is refused",
            check=check_private,
            more="every address a request's host resolves to (every redirect hop, every spelling of "
            "an address, real ctx.resources downloads too) is checked; a name entry lets that name "
            "reach the private addresses it resolves to, an address entry that address; no wildcards "
            "(ctx/http_private.py)",
            flags=(
                Flag(
                    PRIVATE_FLAG,
                    how="append",
                    metavar="HOST[:PORT]",
                    help="a private host real HTTP may reach (repeatable)",
                ),
            ),
        ),
    ),
    views=(View("http", "the call's HTTP exchanges"),),
)
