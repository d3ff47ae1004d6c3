"""What a platform profile is: its limits, schema rules, entry point, ctx shape and grants.

A profile is data read by the one ctx layer and the two runners (Miniflare's plugin table and
named `KVLimits`; pluggy's checked specs). A capability module never learns which platform it
serves beyond what `Limits` and `Grants` tell it; adding a platform is one folder beside
`notochord/` whose `PROFILE` fills these in.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._errors import WorkbenchError
from ..gem.rules import SchemaRules

if TYPE_CHECKING:
    from ..gem import Manifest, ToolSpec

__all__ = [
    "Capability",
    "Declarations",
    "EntryPoint",
    "Grants",
    "Limits",
    "Method",
    "Profile",
    "Scaffold",
    "SchemaRules",
    "Verdict",
    "fill_template",
]

MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """The bounds of one bench's calls (defaults: the Notochord platform + workbench bounds).

    Rule modules read their numbers from here, never from literals, so a test can shrink a
    limit to exercise it cheaply (`workbench.open(..., limits=Limits(file_bytes=10))`) and a
    profile carries its own. The workbench's safety bounds (SEC5) are not stated by the seeds;
    they are chosen well above what a legitimate tool needs (README, "Security model").
    """

    # the platform's own (seed 000)
    file_bytes: int = 20 * MiB  # F12: per ctx.files read or write
    result_chars: int = 1_048_576  # N9: the tool's result as JSON text
    history_bytes: int = 100 * MiB  # F8: a history copy larger than this is not kept
    # the workbench's (SEC5): every ctx call and every result bounded
    sql_result_bytes: int = 16 * MiB  # rows one ctx.storage.sql call may return
    sql_value_bytes: int = 32 * MiB  # SQLITE_LIMIT_LENGTH: one string or blob
    sql_statement_bytes: int = 1 * MiB  # SQLITE_LIMIT_SQL_LENGTH: one statement's text
    schema_seconds: float = 30.0  # db/schema.sql at open (it is the gem's SQL too)
    storage_bytes: int = 1024 * MiB  # each database (the gem's SQL; data + kv + history)
    sqlite_heap_bytes: int = 1024 * MiB  # SQLite's memory, process-wide (hard_heap_limit)
    http_body_bytes: int = 20 * MiB  # one ctx.http.fetch response body
    url_chars: int = 64 * 1024  # one fetch URL (or redirect), as given and as sent percent-encoded
    resource_bytes: int = 2048 * MiB  # one resource download, streamed to disk
    resource_seconds: float = 1800.0  # one download attempt over all its addresses
    log_bytes: int = 1 * MiB  # captured console output per call (head + tail)
    bridge_message_bytes: int = 64 * MiB  # one message between Python and the sandbox
    json_depth: int = 200  # nesting of inputs, results, ctx arguments
    # what a call leaves in the bench's memory (SEC5): per row, per call, and per bench as a
    # ring whose oldest entries go first; a note row or line says what was dropped
    audit_row_chars: int = 1 * MiB  # one ctx.audit row's data as JSON (E_INVALID_ARGUMENT)
    audit_rows: int = 1_000  # ctx.audit rows one call keeps (later ones: counted in a note row)
    audit_bench_chars: int = 64 * MiB  # the bench's activity log (bench.audit())
    log_rows: int = 10_000  # ctx.logger rows one call keeps (their size: log_bytes)
    trace_rows: int = 10_000  # ctx calls one call's trace lists (later ones: counted in a note row)
    trace_chars: int = 16 * MiB  # ctx arguments and results one call's trace keeps, about
    results_bench_chars: int = 256 * MiB  # bench.results: values, logs, traces of the calls
    http_log_chars: int = 16 * MiB  # the bench's HTTP log (bench.http()): one row per fetch
    # the state a call's first file or storage access copies, so the call can be pinned
    # (issue 29, ctx/before.py): over it, that call is not pinnable (files, and each database)
    pin_state_bytes: int = 16 * MiB
    case_bytes: int = 64 * MiB  # one pinned call's case file, read or written
    # a repro bundle (`bench.export`, `workbench.open("x.gemrepro")`) and a state folder
    # (`state=DIR`): the file, and all its entries unpacked; entries; per-entry ratio (a zip bomb)
    bundle_bytes: int = 256 * MiB
    bundle_entries: int = 10_000
    bundle_ratio: int = 200
    # agent custom tools (seed 002)
    tool_calls: int = 50  # A5: cross-tool calls (ctx.tools.<name>) per invocation
    # Ekanos integrations (seed 003; the workbench's reading)
    account_key_chars: int = 200  # a ctx.storage.account key, declared or used


@dataclass(frozen=True)
class EntryPoint:
    """How a runner finds and calls a tool's function.

    js_exports: the module's exports tried in order (the first that is a function is called);
    python: the module-level function of a Python tool; both are called as (input, ctx).
    """

    js_exports: tuple[str, ...] = ("default", "handle")
    python: str = "handle"
    # shown when the tool defines none of them
    js_hint: str = "export default async function (input, ctx) {...}"
    # a plain (non-exported) `function <js_exports[0]>` counts too (agent tools, A1)
    js_plain: bool = False
    # the export is a list under this key whose element named like the tool has `run`,
    # called as run(ctx, input) (Ekanos: `default.tools[i].run`, K1); None: the export is it
    js_member: str | None = None

    @functools.cached_property
    def message(self) -> dict[str, Any]:
        """What the sandbox needs to find the function (carried by each call message)."""
        names = " or ".join(self.js_exports)
        return {
            "exports": list(self.js_exports),
            "missing": f"the tool module has no {names} export function ({self.js_hint})",
            "member": self.js_member,
        }


@dataclass(frozen=True)
class Method:
    """One ctx method: its name, its parameters' names (for errors that name an argument)
    and, when its result is not plain JSON for the tool, the codec both runners apply."""

    name: str
    params: tuple[str, ...] = ()
    # "fetch": the reply becomes a Response-like object; "response": a real Response (JS);
    # "void": fire and forget (the tool gets undefined at once; a failure is only logged)
    codec: Literal["fetch", "response", "void"] | None = None
    secret: bool = False  # its result is a secret: the trace never keeps it (K6 secrets.get)


Kind = Literal["namespace", "collection", "function", "value", "dispatch"]


@dataclass(frozen=True)
class Capability:
    """One row of a profile's ctx shape.

    path: where the tool finds it ("files", "storage.kv", "extract", "idempotencyKey").
    kind: "namespace" (ctx.files.read(...)), "collection" (ctx.data.collection(name).insert:
        the name is the methods' first argument), "function" (ctx.extract(...): its one
        method), "value" (a per-call value: the session attribute `impl`, or its platform
        value "values.<name>"), "dispatch" (ctx.tools.<name>(input): the names are the
        grant's list `grant`, each call is the implementation's `call(name, ...)`).
    impl: the ctx layer's implementation (a key of ctx.IMPLEMENTATIONS) or, for a value, the
        CallSession attribute.
    grant: the `Grants` name that makes it present (None: always). When absent, a JS tool
        finds it undefined; a Python tool finds it missing (AttributeError) or, with
        python_absent="deny", still calls it and gets the grant's E_PERM_DENIED (E1's
        coded error, recorded in the trace).
    """

    path: str
    kind: Kind
    impl: str
    methods: tuple[Method, ...] = ()
    grant: str | None = None
    python_absent: Literal["missing", "deny"] = "missing"
    python_alias: str | None = None  # a snake_case name Python tools may use too (not in dir)
    doc: str = ""

    @property
    def top(self) -> str:
        return self.path.split(".", 1)[0]

    def method_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.methods)


@dataclass(frozen=True)
class Grants:
    """What one (gem, tool) may use, decided once by its profile from the manifest.

    `granted` holds the grant names; `denials` the E_PERM_DENIED message and details of each
    grant that is missing, naming the manifest field to add.
    """

    granted: frozenset[str] = frozenset()
    denials: Mapping[str, tuple[str, Mapping[str, Any]]] = field(default_factory=dict)
    lists: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # e.g. "tools": names
    # what a grant carries beyond yes or no, copied when decided so that an edit of the
    # manifest never reaches a running call (e.g. "http.connections": {name: grant})
    settings: Mapping[str, Any] = field(default_factory=dict)

    def has(self, name: str) -> bool:
        return name in self.granted

    def denial(self, name: str) -> WorkbenchError:
        """The E_PERM_DENIED error of a missing grant (a fresh one: errors are raised)."""
        message, details = self.denials.get(name, (f"this tool has no {name} permission", {}))
        return WorkbenchError("E_PERM_DENIED", message, **dict(details))

    def require(self, name: str) -> None:
        """Raise the grant's E_PERM_DENIED unless it is granted."""
        if name not in self.granted:
            raise self.denial(name)


@dataclass(frozen=True)
class Verdict:
    """The platform's judgement of a value a tool returned (`Profile.judge`)."""

    expected_failure: bool = False  # a failure the tool reports by returning it (K2's `{error}`)
    warnings: tuple[str, ...] = ()  # about the value, e.g. its shape against an example


SUCCESS = Verdict()  # a plain success, nothing to say: the default verdict


@dataclass(frozen=True)
class Declarations:
    """How `workbench.types` declares a platform's ctx beyond what its capability rows say:
    the ctx's interfaces and Protocols come from the rows; these add the value shapes they
    name and what a gem's `.gem-workbench/` holds (docs/platforms.md)."""

    # the TypeScript interface of the ctx (`export type Ctx = <it>` follows when it differs)
    ctx_type: str = "Ctx"
    # lines declaring the shapes the rows' signatures name (workbench/types/_signatures.py),
    # before the ctx's interfaces; shared ones are in platforms/shapes.py
    ts_shapes: tuple[str, ...] = ()
    py_shapes: tuple[str, ...] = ()
    # the .d.ts body wrapped, e.g. in `declare module` blocks (Ekanos: @ekanos/sdk); None: as is
    ts_modules: Callable[[list[str]], list[str]] | None = None
    # whether .gem-workbench/ gets gem.d.ts (each tool's input typed from the manifest)
    gem_types: bool = True
    # gem.d.ts's `Ctx` lines for this gem (agent: ctx.tools typed by `builtins`); None:
    # `export type Ctx = PlatformCtx;`
    gem_ctx: Callable[[Manifest], list[str]] | None = None
    # the manifest's JSON Schema, copied into .gem-workbench/ for editors; None: no manifest
    manifest_schema: Path | None = None
    # what the generated files' headers name: the file holding the rows (default
    # workbench/platforms/<name>/__init__.py) and the module tools import `Ctx` from (default
    # workbench.types.<name>; a plugin's: where it ships `python -m workbench.types NAME --out`)
    source: str = ""
    py_module: str = ""


@dataclass(frozen=True)
class Scaffold:
    """What `gem-workbench new --platform <name>` writes for this platform. The scaffold adds
    the notebook that opens the gem and makes the first call, `.gem-workbench/` and, unless
    `own_test` is given, a pytest test of that call (docs/platforms.md)."""

    # {relative path: text} of the gem's own files (manifest or entry file, the tool,
    # fixtures) from {"name", "title", "tool", "ext"} (ext: the tool's language, ts/js/py)
    files: Callable[[Mapping[str, str]], dict[str, str]]
    # the first call's input, and what the notebook and the test assert on its `res`
    call: Mapping[str, Any]
    asserts: tuple[str, ...]
    # the notebook's last cell: what the call left behind (a bench view)
    state: str = "bench.kv()"
    # the languages a tool can be written in, and why one is missing (said on --lang)
    langs: tuple[str, ...] = ("ts", "js", "py")
    langs_note: str = ""
    # the gem's own test (written by `files`) as next steps name it, `{tool}` filled in;
    # "": the scaffold writes tests/test_<gem>_<tool>.py
    own_test: str = ""


def fill_template(path: Path, values: Mapping[str, str]) -> str:
    """The text of the template at `path` with each `{{key}}` replaced by its value."""
    text = path.read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text


@dataclass(frozen=True, eq=False)
class Profile:
    """One platform: how its gems load, what their tools' ctx holds and within which bounds."""

    name: str
    title: str
    limits: Limits
    schema_rules: SchemaRules
    entry: EntryPoint
    capabilities: tuple[Capability, ...]
    load: Callable[[Path], Manifest]  # raises GemLoadError (file, JSON pointer)
    lint: Callable[[Path], list[dict[str, str]]]  # every problem, [] when loadable
    grants_for: Callable[[Manifest, ToolSpec], Grants]
    # the platform's per-call values (A2: agentId, toolCallId, ...) from the manifest and the
    # call's options ({"call_id", "as_user", "conversation"})
    # (None: none; a call then draws no token for them)
    call_values: Callable[[Manifest, Mapping[str, Any]], dict[str, Any]] | None = None
    # what other platforms' ctx has and this one has not, with why ({"files": "..."}): a tool
    # written for another platform is told, not left with "undefined"
    foreign: Mapping[str, str] = field(default_factory=dict)
    # checks a value a tool stores under a declared schema: (manifest, scope, key, value,
    # max_depth), raising a coded error (K6 storage.account.set); None: nothing declared
    check_stored: Callable[[Manifest, str, str, Any, int], None] | None = None
    # the verdict on a value a tool returned (Ekanos: a returned `{error}` is an expected
    # failure, K2; a success's shape is compared with outputExample); called by the call pipeline
    judge: Callable[[Manifest, ToolSpec, Any], Verdict] = lambda m, t, v: SUCCESS
    # the sandbox's import map and the folders its Worker may read besides the gem (the SDK)
    import_map: Path | None = None
    sdk_dirs: tuple[Path, ...] = ()
    # a bench of this platform opens and closes (Ekanos: effective names claimed, K4)
    # open() options this platform takes under its own name (ctx/spec.py Option.opt_in): Ekanos'
    # fetch_handlers=, createMockContext's name for http=
    open_options: tuple[str, ...] = ()
    opened: Callable[[Manifest], None] = lambda m: None
    closed: Callable[[Manifest], None] = lambda m: None
    # plugins (docs/platforms.md): a folder with no manifest.json is this platform's when true
    # (Ekanos: integration.ts/.js); None: only a manifest's `platform` names it
    detects: Callable[[Path], bool] | None = None
    # how workbench.types declares its ctx, and what `gem-workbench new` writes (None: the
    # platform cannot be scaffolded)
    declarations: Declarations = field(default_factory=Declarations)
    # a tool is offered to the assistant under an effective name (K4: Ekanos), which
    # `bench.tools()` shows beside its own
    effective_names: bool = False
    # its tools declare `sideEffect` (Notochord: read or write, D4); a platform whose format
    # has no such field gets no sideEffect column or badge (its ToolSpec says "write")
    side_effects: bool = False
    scaffold: Scaffold | None = None
    # how the doctor judges its calls (docs/doctor.md): the rule a kind of finding is named by
    # where the platform names it otherwise than the doctor's table (a time limit is A5 on
    # agent tools; a leaked secret SEC4, except where the platform has its own rule, Ekanos' K6)
    finding_rules: Mapping[str, str] = field(default_factory=lambda: {"secret": "SEC4"})
    # what an uncaught throw of a tool's code is: "throw", or "fault" where the platform wants
    # an expected failure returned instead (Ekanos' `{ error }`, K2)
    throw_kind: Literal["throw", "fault"] = "throw"
    # whether its built-ins answer a failure with an error envelope the tool must look at
    # (agent tools, A4): the doctor then makes them answer one and checks the tool noticed
    envelopes: bool = False
    # the shape a tool's result is declared to have, for a client told it (Ekanos'
    # `outputExample`: the MCP server's outputSchema); None: no platform declares one
    output_example: Callable[[Manifest, ToolSpec], Any] | None = None
    # a returned value split into what the model is given and what only the user is shown
    # (agent tools' `_llm`, `_render`, `_interactive`); None: the model is given all of it
    model_view: Callable[[Any], tuple[Any, dict[str, Any]]] | None = None

    def grants(self, manifest: Manifest, tool: ToolSpec) -> Grants:
        """The tool's grants, decided once per (profile, gem, tool): cached on the manifest,
        which holds its tools (a tool object is never shared between manifests)."""
        cache: dict[tuple[str, int], tuple[ToolSpec, Grants]] = manifest.__dict__.setdefault("_grants", {})
        key = (self.name, id(tool))
        if key not in cache or cache[key][0] is not tool:
            cache[key] = (tool, self.grants_for(manifest, tool))
        return cache[key][1]

    @functools.cached_property
    def routes(self) -> dict[str, tuple[str, str]]:
        """ "files.read" -> ("files", "read"): which implementation and method serve a name."""
        out: dict[str, tuple[str, str]] = {}
        for cap in self.capabilities:
            if cap.kind == "function":
                out[cap.path] = (cap.impl, cap.methods[0].name)
            elif cap.kind in ("namespace", "collection"):
                out.update({f"{cap.path}.{m.name}": (cap.impl, m.name) for m in cap.methods})
        return out

    @functools.cached_property
    def params(self) -> dict[str, tuple[str, ...]]:
        """ "files.write" -> ("path", "content", "options"): each method's parameter names, for
        errors that describe a call in the tool's terms."""
        out: dict[str, tuple[str, ...]] = {}
        for cap in self.capabilities:
            if cap.kind == "function":
                out[cap.path] = cap.methods[0].params
            elif cap.kind in ("namespace", "collection"):
                bound = ("collection",) if cap.kind == "collection" else ()
                out.update({f"{cap.path}.{m.name}": m.params[len(bound) :] if bound else m.params
                            for m in cap.methods})  # fmt: skip
        return out

    @functools.cached_property
    def secret_methods(self) -> frozenset[str]:
        """The ctx methods whose results are secrets (never kept in the trace)."""
        return frozenset(f"{c.path}.{m.name}" for c in self.capabilities for m in c.methods if m.secret)

    @functools.cached_property
    def dispatch(self) -> dict[str, str]:
        """{"tools": impl}: paths whose methods are names the grants list (ctx.tools.<name>)."""
        return {cap.path: cap.impl for cap in self.capabilities if cap.kind == "dispatch"}

    def present(self, grants: Grants) -> tuple[Capability, ...]:
        """The rows a tool with `grants` sees (a dispatch row with the names it may call)."""
        out = []
        for c in self.capabilities:
            if c.grant is not None and not grants.has(c.grant):
                continue
            if c.kind == "dispatch":
                names = grants.lists.get(c.grant or c.path, ())
                c = dataclasses.replace(c, methods=tuple(Method(n, ("input",)) for n in names))
            out.append(c)
        return tuple(out)

    def js_shape(self, grants: Grants) -> str:
        """The ctx shape of a tool with `grants` as JSON text for the sandbox (values are
        filled per call; a dispatch row is a namespace of the names it may call); cached: a
        tool's grants do not change while its gem is open."""
        key = (grants.granted, tuple(sorted(grants.lists.items())))
        cache: dict[Any, str] = self.__dict__.setdefault("_shapes", {})
        if key not in cache:
            cache[key] = json.dumps(
                [
                    {
                        "path": c.path,
                        "kind": "namespace" if c.kind == "dispatch" else c.kind,
                        "methods": [
                            {"name": m.name, "params": list(m.params), "codec": m.codec} for m in c.methods
                        ],
                    }
                    for c in self.present(grants)
                ],
                separators=(",", ":"),
            )
        return cache[key]

    def values(self, grants: Grants, session: Any) -> dict[str, Any]:
        """The per-call values ({"idempotencyKey": ...}) a tool with `grants` sees."""
        return {
            c.path: session.value(c.impl)
            for c in self.capabilities
            if c.kind == "value" and (c.grant is None or grants.has(c.grant))
        }

    @functools.cached_property
    def tops(self) -> dict[str, list[Capability]]:
        """{top-level ctx name (or a Python alias): its rows}, for the Python ctx."""
        out: dict[str, list[Capability]] = {}
        for cap in self.capabilities:
            out.setdefault(cap.top, []).append(cap)
            if cap.python_alias:
                out[cap.python_alias] = [cap]
        return out
