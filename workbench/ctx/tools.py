"""ctx.tools.<name>(input) (A3–A5): a tool calls the agent's built-in tools as the model would.

Each call is checked against the callee's schema and audited like a model's call. A built-in's
failure is an error envelope `{error, details}` that the call returns (A4: it resolves); a
call that cannot be dispatched — a name the agent has not enabled, a callee that crashed — is
raised (it throws). The 51st cross-tool call of one invocation aborts it (A5): the error names
the limit and the calls made, and every later ctx call of the invocation fails with it.

The gem's own tools are reachable too (the bench runs them as nested invocations that share
the limit of cross-tool calls and the deadline); that is how recursion happens.
"""

from __future__ import annotations

import mimetypes
import os
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from ..gem.rules import SchemaRules
from ..gem.schema import InputValidator, check_input
from .audit import PLATFORM_PREFIX, record
from .spec import Action, CapabilitySpec, Flag, OpenContext, Option, View, file_or, path_or
from .tools_schemas import SCHEMAS
from .tools_state import FAULTS, OUTBOX, RECIPIENTS, SEND_EMAIL

if TYPE_CHECKING:
    from ._session import CallSession


def envelope(error: str, **details: Any) -> dict[str, Any]:
    """A built-in's failure as the platform returns it: {error, details}."""
    return {"error": error, "details": details}


def envelope_notice(method: str, result: Any) -> str | None:
    """The trace's line for a dispatch that returned an error envelope (or a nested tool's
    `{error}`): its error and the message or details the model reads."""
    if not isinstance(result, dict) or not isinstance(result.get("error"), str):
        return None
    details = result.get("details")
    if isinstance(details, dict):
        said = details.get("message") or ", ".join(
            f"{k}={v}" for k, v in details.items() if isinstance(v, (str, int, float, bool))
        )
    else:
        said = "" if details is None else str(details)
    text = f"{result['error']}: {said}" if said else result["error"]
    return text if len(text) <= 500 else text[:499] + "…"


class Tools:
    """ctx.tools for one call."""

    def __init__(self, session: CallSession) -> None:
        self.s = session

    def call(self, name: str, input: Any = None) -> Any:
        s = self.s
        enabled = s.grants.lists.get("tools", ())
        if name not in enabled:
            raise WorkbenchError(
                "E_UNKNOWN_TOOL",
                f"ctx.tools.{name}: no enabled tool of that name (enabled: {', '.join(enabled) or 'none'}; "
                "built-ins are enabled by the manifest's `builtins`)",
                tool=name,
            )
        calls = s.invocation.calls
        calls.append(name)
        if len(calls) > s.limits.tool_calls:
            s.invocation.aborted = self._over_limit()
            raise s.invocation.aborted
        record(s, f"{PLATFORM_PREFIX}{name}", input)  # audited as the model's call of the tool
        callee = s.manifest.tools.get(name)
        if callee is not None and s.nest is not None:  # the gem's own tool: a nested invocation
            return s.nest(s, callee, input)
        if callee is not None:  # a session made outside a bench has no way to run a tool
            raise WorkbenchError(
                "E_DISPATCH", f"ctx.tools.{name}: this call has no bench to run the tool", tool=name
            )
        pending = s.of("tools").faults.get(name)
        if pending:  # bench.inject_fault: this dispatch fails as the platform's connection would
            if pending.pop(0) == "throw":
                raise WorkbenchError(
                    "E_DISPATCH",
                    f"ctx.tools.{name}: the call could not be dispatched (a fault injected with bench.inject_fault)",
                    tool=name,
                    injected=True,
                )
            return envelope("unavailable", tool=name, injected=True)
        # the gem's tools' input check (N8, its null rule included): A3 promises the same
        args, err = check_input(
            _validator(name, s.profile.schema_rules), input, tool=name, max_depth=s.limits.json_depth
        )
        if err is not None:
            return envelope("invalid_input", tool=name, violations=err.details["violations"][:20])
        return BUILTINS[name](s, args)

    def _over_limit(self) -> WorkbenchError:
        s = self.s
        calls = s.invocation.calls
        counts = ", ".join(f"{n} ×{c}" for n, c in Counter(calls).most_common(5))
        return WorkbenchError(
            "E_LIMIT",
            f"the invocation made cross-tool call number {len(calls)} and was aborted (A5: at most "
            f"{s.limits.tool_calls} per invocation, nested calls included; a tool calling itself, "
            f"directly or not, reaches it quickly). Calls: {counts}",
            limit=s.limits.tool_calls,
            chain=list(calls),
        )


_VALIDATORS: dict[tuple[str, SchemaRules], InputValidator] = {}


def _validator(name: str, rules: SchemaRules) -> InputValidator:
    """The built-in's validator under the calling platform's rules (its messages' words)."""
    key = (name, rules)
    if key not in _VALIDATORS:
        _VALIDATORS[key] = InputValidator(SCHEMAS[name], rules)
    return _VALIDATORS[key]


def _calculate(session: CallSession, input: dict[str, Any]) -> Any:
    from .calculate import evaluate

    try:
        return {"result": evaluate(input["expression"])}
    except WorkbenchError as exc:
        return envelope("invalid_expression", message=exc.message)


def _web_search(session: CallSession, input: dict[str, Any]) -> Any:
    provider = _tools(session).websearch
    if provider is None:
        raise WorkbenchError(
            "E_INTERNAL", "web_search: this call has no search provider (open the gem with workbench.open)"
        )
    left = session.remaining("tools.web_search")
    try:
        return provider.search(input["query"], input.get("count", 5), timeout=min(left or 10.0, 10.0))
    except WorkbenchError as exc:  # no fixture, an endpoint down: the model would see an envelope
        return envelope("search_failed", code=exc.code, message=exc.message)


def _send_email(session: CallSession, input: dict[str, Any]) -> Any:
    """Checked here, for every outbox (mock, SMTP, one the user gave open()), by the outbox
    module's one rule: a header injection, plain or RFC 2047-encoded, never reaches a provider."""
    from ..providers.outbox import check_message

    outbox = _tools(session).outbox
    if outbox is None:
        raise WorkbenchError(
            "E_INTERNAL", "send_email: this call has no outbox (open the gem with workbench.open)"
        )
    message: dict[str, Any] = {"to": _list(input["to"]), "cc": _list(input.get("cc", []))}
    message.update({k: input[k] for k in ("subject", "body_text", "body_html") if k in input})
    recipients = session.of("tools").recipients
    refused = [a for a in (*message["to"], *message["cc"]) if not allowed(a, recipients)]
    if refused:  # first, as before: the seed's error snippet (to: "...") expects this envelope
        return envelope(
            "recipient_not_allowed",
            recipients=refused,
            allowed=list(recipients),
            hint="bench.allow_recipients('name@host' or '*@domain', ...)",
        )
    try:
        check_message(message)
    except WorkbenchError as exc:
        return envelope("invalid_input", tool="send_email", code=exc.code, message=exc.message, **exc.details)
    rng = session.rng()
    if rng is not None:  # a seeded call (a replay, the doctor): its Message-ID repeats too
        message["message_id"] = (
            f"<{rng.getrandbits(64):016x}.{int(session.providers.now())}@workbench.invalid>"
        )
    try:
        return {"message_id": outbox.send(message)}
    except WorkbenchError as exc:  # the provider's checks, the SMTP server's refusal
        return envelope("send_failed", code=exc.code, message=exc.message)


def _list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def allowed(address: str, patterns: tuple[str, ...]) -> bool:
    """Whether the recipient allowlist (addresses, or `*@domain`) lets mail go to `address`."""
    address = address.strip().lower()
    domain = address.rpartition("@")[2]
    return any(p == address or (p.startswith("*@") and p[2:] == domain) for p in patterns)


def _surface_file(session: CallSession, input: dict[str, Any]) -> Any:
    """Show a file of the agent's files (`open(files=…)`, default the gem's fixtures/files/) to
    the user: confined to that folder, a regular file within limits.file_bytes."""
    root, rel = _tools(session).files, input["path"]
    parts = PurePosixPath(rel).parts
    if root is None or rel.startswith("/") or ".." in parts or "\x00" in rel or "\\" in rel:
        return envelope("invalid_path", path=rel, message="a path inside the agent's files, without '..'")
    base = os.path.realpath(root)
    target = os.path.realpath(os.path.join(base, rel))
    if os.path.commonpath([base, target]) != base:
        return envelope("invalid_path", path=rel, message="the path leads outside the agent's files")
    try:
        info = os.stat(target)
    except OSError:
        return envelope("not_found", path=rel)
    if not stat.S_ISREG(info.st_mode):
        return envelope("not_found", path=rel, message="not a regular file")
    if info.st_size > session.limits.file_bytes:
        return envelope("too_large", path=rel, sizeBytes=info.st_size, limit=session.limits.file_bytes)
    entry = {
        "path": rel,
        "name": os.path.basename(target),
        "mimeType": mimetypes.guess_type(target)[0] or "application/octet-stream",
        "sizeBytes": info.st_size,
        "title": input.get("title"),
    }
    session.of("tools").surfaced.append({**entry, "file": target})
    return {"surfaced": True, **entry}


BUILTINS = {
    "calculate": _calculate,
    "web_search": _web_search,
    "send_email": _send_email,
    "surface_file": _surface_file,
}


@dataclass
class AgentTools:
    """ctx.tools' backend: the built-ins' providers and what the bench keeps between calls."""

    websearch: Any = None  # web_search's WebSearch (providers/websearch.py)
    outbox: Any = None  # send_email's Outbox: MockOutbox (bench.outbox()), SmtpOutbox, …
    files: Path | None = None  # the folder surface_file shows files of
    recipients: tuple[str, ...] = ()  # send_email's allowlist (bench.allow_recipients), lower case
    faults: dict[str, list[str]] = field(default_factory=dict)  # bench.inject_fault: per built-in


@dataclass(slots=True)
class ToolsCall:
    """ctx.tools' state in one invocation."""

    recipients: tuple[str, ...]  # the allowlist as the call found it
    faults: dict[str, list[str]]  # the bench's: a dispatch uses up its fault
    surfaced: list[dict[str, Any]] = field(default_factory=list)  # surface_file's files, this call
    children: list[Any] = field(default_factory=list)  # the CallResults of its nested ctx.tools calls

    def nested(self) -> ToolsCall:
        """A nested invocation's: its files are surfaced in its caller's result; its own nested
        calls are its result's children (set by the bench's nesting)."""
        return ToolsCall(self.recipients, self.faults, self.surfaced)

    def into(self, res: Any) -> None:
        res.surfaced, res.children = self.surfaced, self.children


def _backend(opening: OpenContext) -> AgentTools:
    from ..providers import make_outbox, make_websearch

    options, root = opening.options, opening.manifest.root
    files = options.get("files")
    return AgentTools(
        websearch=make_websearch(options.get("web_search", "mock"), gem_root=root),
        outbox=make_outbox(options.get("outbox", "mock")),
        files=Path(files) if files is not None else root / "fixtures" / "files",
    )


def _fixtures(root: Path) -> object:
    """The mock web search of fixtures/web_search.json, as an open without web_search= reads it."""
    from ..providers import make_websearch

    return make_websearch("mock", gem_root=root)


def _real_effects(tools: AgentTools) -> tuple[str, ...]:
    """The built-ins' options whose providers reach outside: any but the mocks (an object
    given for them is taken as real)."""
    given = (("outbox", tools.outbox), ("web_search", tools.websearch))
    return tuple(f"{name}=" for name, p in given if p is not None and getattr(p, "kind", "real") != "mock")


_NONE = AgentTools()  # a session made outside a bench: no providers, nothing allowed


def _tools(session: CallSession) -> AgentTools:
    tools: AgentTools = session.providers.backends.get("tools") or _NONE
    return tools


def _call_state(session: CallSession) -> ToolsCall:
    tools = _tools(session)
    return ToolsCall(tools.recipients, tools.faults)


#: ctx.tools (web_search, send_email, surface_file, other tools) as a unit (A3-A6)
SPEC = CapabilitySpec(
    impl="tools",
    real_effects=_real_effects,
    title="ctx.tools",
    implementation=Tools,
    backend=_backend,
    fixtures=_fixtures,
    call_state=_call_state,
    notice=envelope_notice,
    # a built-in's answer (a search engine's, the mail server's) is served back on a replay; the
    # gem's own tools run again, as part of the code under test (ctx/served.py)
    replayed=lambda method: method.partition(".")[2] in BUILTINS,
    state=(OUTBOX, RECIPIENTS, FAULTS),
    effects=(SEND_EMAIL,),
    options=(
        Option(
            "web_search",
            "what ctx.tools.web_search asks: 'mock' (fixtures/web_search.json), a SearXNG-compatible "
            "URL, or an object with search(query, count, *, timeout)",
            default="mock",
            type="Any",
            flags=(
                Flag(
                    "--web-search",
                    metavar="URL|FILE",
                    help="a SearXNG URL, or a JSON file of fixtures",
                    parse=file_or("mock"),
                ),
            ),
        ),
        Option(
            "outbox",
            "where ctx.tools.send_email sends: 'mock' (kept, bench.outbox()) or an Outbox (e.g. SmtpOutbox)",
            default="mock",
            type="Any",
            more="recipients must be allowed first: bench.allow_recipients('a@x.example', '*@acme.example')",
        ),
        Option(
            "files",
            "the folder ctx.tools.surface_file shows files of; paths are confined to it",
            type="str | os.PathLike[str] | None",
            default_doc="the gem's fixtures/files/",
            flags=(Flag("--files", metavar="DIR", help="the agent's files", parse=path_or()),),
        ),
    ),
    views=(
        View("outbox", "the mail send_email sent"),
        View(
            "allow_recipients", "allow send_email to mail these addresses or *@domain patterns", table=False
        ),
        View("inject_fault", "make a built-in fail on its next calls", table=False),
    ),
    actions=(
        Action(
            "--allow-recipient",
            "ADDR",
            "allow send_email to mail ADDR or *@domain (repeatable)",
            lambda bench, addrs: bench.allow_recipients(*addrs),
            python="bench.allow_recipients({})",
            python_values="'name@host' or '*@domain', ...",
        ),
    ),
)
