"""Bench: one open gem on its providers; calls tools and shows state (made by `workbench.open`,
in bench/open.py)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._errors import UsageError
from ..ctx import close_backends, prepare
from ..ctx.clock import Clock
from ..ctx.hooks import CallHooks
from ..ctx.limits import DEFAULT, Limits
from ..ctx.resources import SPEC as RESOURCES
from ..ctx.spec import backend_of
from ..ctx.tools_state import allow, inject
from ..runners.deno import Sandbox, SandboxOptions
from . import pipeline
from .core import CallCore, CallIdentity
from .mail import BenchEmail
from .result import CallResult, results_ring
from .views import Views, add_plugin_views, gated, platform_views

if TYPE_CHECKING:
    import pandas as pd

    from ..ctx.stores import Providers
    from ..gem import Manifest
    from ..mcp.serving import Serving
    from ..platforms import Profile


class Bench(Views):
    """A gem opened on providers. Create it with `workbench.open(...)`."""

    def __init__(
        self,
        manifest: Manifest,
        providers: Providers,
        *,
        conversation: bool,
        strict: bool,
        headless: bool,
        reuse: str = "always",
        sandbox: SandboxOptions | None = None,
        limits: Limits = DEFAULT,
        profile: Profile | None = None,
        clock: Clock | None = None,
        seed: int | None = None,
        pins: bool = True,
    ) -> None:
        from ..platforms.notochord import PROFILE

        self.profile = profile or PROFILE  # the platform whose rules this bench applies
        self.view_fns = platform_views(self.profile)  # what it lists and answers (bench/views.py)
        add_plugin_views(type(self))  # the plugins' views, as descriptors (bench/views.py)
        self.manifest = manifest
        self.providers = providers
        self.conversation = conversation
        self.strict = strict
        self.headless = headless
        self.results = results_ring(limits.results_bench_chars)  # SEC5: the oldest calls go first
        self.closed = False
        self.reuse = reuse
        self.seed = seed
        # what its calls share (bench/core.py): the lock, the seed's stream, runners, definition
        self.core = CallCore(manifest, seed=seed, sandbox=sandbox)
        # pins=: each call copies the state it finds (ctx/before.py); the latest call's is kept
        self.pins = pins
        self.clock = clock or Clock()  # the time the ctx layer hands out (ctx/clock.py)
        self.limits = limits
        prepare(providers, manifest, limits)
        providers.use_clock(self.clock.time)  # the backends prepare made read it too
        if pins:
            from ..pins.pinning import Pinning

            self.core.add_hook(Pinning(self))
        self.core.pinner = self._pin
        # the `bench.debug` session in progress (workbench/debug): it holds the bench's lock
        # while paused, so other calls are refused rather than left waiting for a cell
        self.debugging: Any = None
        self.email_box = BenchEmail(self)  # bench.email: allowed accounts, mock mail, new-mail events
        resources = backend_of(providers, RESOURCES)
        if resources is not None:  # R2: "required": true starts downloading now
            resources.start_required()

    @property
    def timeout(self) -> float:
        """Per-call seconds (open(timeout=)): set when the bench opens."""
        return self.core.sandbox_options.timeout

    @property
    def inspector(self) -> Any:
        """open(inspect=)'s Inspector (its port, devtools_url, paused): None without it."""
        return self.core.sandbox_options.inspector

    @property
    def provider_kinds(self) -> dict[str, str]:
        """{"files" | "storage": "mock" | "real"} for the provider kinds this platform's
        capabilities sit on (`providers.kind` has every kind: an agent bench uses neither)."""
        from ..ctx.registry import provider_kinds

        return provider_kinds(self.profile, self.providers.kind)

    def __repr__(self) -> str:
        kinds = "".join(f"{k}={v}, " for k, v in self.provider_kinds.items())
        return (
            f"<Bench {' '.join(filter(None, (self.manifest.id, self.manifest.version)))}: {len(self.manifest.tools)} "
            f"tools, {kinds}{len(self.results)} calls>"
        )

    def _repr_html_(self) -> str:
        from .._present import presenter

        return presenter("bench_html")(self)

    def form(self, tool: str) -> Any:
        """An ipywidgets form generated from the tool's inputSchema; runs the tool on submit."""
        from .._present import presenter

        return presenter("form")(self, tool)

    def __enter__(self) -> Bench:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop the sandbox and close the databases (real state stays on disk); a call running
        in another thread finishes first; a paused `bench.debug` call is aborted."""
        if self.debugging is not None:
            self.debugging.end()
        with self.core.lock:
            self.core.close()
            self.providers.data_db.close()
            self.providers.sql_db.close()
            if not self.closed:
                self.profile.closed(self.manifest)
            if not self.closed:
                close_backends(self.providers)  # each capability's own (its HTTP transport)
            self.closed = True
            for done in self.core.finalizers:
                done()

    # -- calling tools ----------------------------------------------------------------------
    def call(
        self,
        name: str,
        input: Any = None,
        *,
        crash: int | Literal["random"] | None = None,
        as_user: str | None = None,
        conversation: str | None = None,
        identity: CallIdentity | None = None,
        fresh: bool | None = None,
        hooks: Sequence[CallHooks] = (),
    ) -> CallResult:
        """Call a tool as the platform would; errors come back in the result, never raised.

        Only misuse of the bench itself raises (UsageError: it is closed).
        crash (N7): N or "random" aborts the run after the tool's N-th ctx call (the sandbox is
            killed; a Python tool gets a BaseException from ctx), then reruns the call once
            with the same ctx.idempotencyKey. The result is the rerun's; `res.crash` has the
            crashed run, each run's state diff and the side effects the rerun duplicated.

        as_user, conversation (agent tools, A2): ctx.powerUserId (None: the agent's owner
            calls) and ctx.conversationId (None: not in a chat session).

        identity, fresh, hooks (for tools built on the workbench, docs/architecture.md): what
            the call repeats of another (`CallIdentity`: its id, idempotencyKey, seeds, clock
            reads), a fresh module (None: the bench's `reuse`), and `CallHooks` taking part in
            this call after the bench's own (ctx/hooks.py).

        Safe to share between threads: calls on one bench run one at a time (each is one
        storage transaction and one conversation with the gem's single sandbox, N3).
        """
        options = None  # (the platform's per-call options: most calls give none)
        if as_user is not None or conversation is not None:
            options = {"as_user": as_user, "conversation": conversation}
            for what, value in (("as_user", as_user), ("conversation", conversation)):
                if value is not None and (not isinstance(value, str) or not value or len(value) > 200):
                    raise UsageError(
                        f"{what}={value!r}: give an id (a string of 1 to 200 characters) or None"
                    )
        self._undebugged("bench.call")
        with self.core.lock:
            self.check_open()
            self.email_box.deliver()  # mail scheduled with at= whose time came, and its triggers
            if crash is not None:
                from .crash import crash_call

                return crash_call(self, name, input, crash)
            return pipeline.call(
                self,
                name,
                input,
                identity=identity,
                fresh=fresh,
                hooks=hooks,
                options=options,
            )

    def debug(self, tool: str, input: Any = None, *, break_at: Any = (), **call_options: Any) -> Any:
        """Run the call in the background, paused before each ctx call `break_at` names
        ("ctx.files.read", "files.read", "ctx.fetch", "ctx.tools.send_email", "ctx.files.*",
        "ctx.*") and at each TS/JS line it names ("tools/t.ts:12": through the bench's V8
        inspector); returns a DebugSession once it paused or ended, which the next cells drive:
        `.where`, `.args`, `.cont()`, `.answer(value)`, `.fail("E_NOT_FOUND", "…")`, `.abort()`,
        at a line `.locals`, `.eval(expr)`, `.next()`, `.step()`; `.result` (docs/debugging.md). `call_options` as `call`'s (not crash=). Time
        paused does not count against the timeout; other calls wait for no cell: E_USAGE."""
        from ..debug import start

        return start(self, tool, input, break_at=break_at, **call_options)

    def _undebugged(self, what: str) -> None:
        """E_USAGE naming the `bench.debug` session that holds the bench's lock while paused:
        `what` would wait for it, and it waits for a cell that cannot run (a deadlock)."""
        if self.debugging is not None:
            self.debugging.refuse(what)

    def crash_matrix(self, name: str, input: Any = None) -> pd.DataFrame:
        """N7: crash the tool at every point (0..its ctx calls in a clean run), rerun it with
        the same idempotencyKey, one row per point; the bench's state is restored after."""
        self._undebugged("bench.crash_matrix")
        with self.core.lock:
            self.check_open()
            from .crash import crash_matrix

            return crash_matrix(self, name, input)

    def reload(self) -> None:
        """Load the gem's definition again (manifest.json, an integration's module), checked as
        `workbench.open` checks it; done before a call when it was edited. GemLoadError
        (file and pointer) when it no longer loads: the bench keeps the last good one."""
        self._undebugged("bench.reload")
        from .reload import reload

        with self.core.lock:
            self.check_open()
            reload(self)

    @gated
    def inject_fault(
        self, builtin: str, *, times: int = 1, mode: Literal["throw", "envelope"] = "throw"
    ) -> None:
        """Make the next `times` dispatches of an agent built-in fail: "throw" as when the
        platform's connection fails (the call throws E_DISPATCH, A4), or "envelope" (it
        resolves with {error: "unavailable"}) — to test a tool's resilience."""
        from ..ctx.tools import SCHEMAS

        if builtin not in SCHEMAS:
            raise UsageError(f"inject_fault({builtin!r}): the built-ins are {', '.join(SCHEMAS)}")
        if (
            mode not in ("throw", "envelope")
            or isinstance(times, bool)
            or not isinstance(times, int)
            or times < 1
        ):
            raise UsageError(
                f"inject_fault(mode={mode!r}, times={times!r}): mode 'throw' or 'envelope', times >= 1"
            )
        inject(self.providers, builtin, mode, times)

    def doctor(
        self,
        *,
        tool: str | None = None,
        seconds: float = 60.0,
        examples: int | None = None,
        seed: int = 0,
        write: bool = True,
    ) -> Any:
        """Search the tools for the bugs an author did not think of (issue 30, docs/doctor.md):
        inputs from each schema on the fixtures and an empty state, N5, N7 and secret probes;
        each finding shrunk and, with `write`, pinned under tests/calls/doctor/. Returns a
        DoctorReport (`.frame()`, `.ok`, shown as a summary in a notebook)."""
        from ..doctor import doctor

        self.check_open()
        return doctor(self, tool=tool, seconds=seconds, examples=examples, seed=seed, write=write)

    def serve_mcp(self, *, port: int = 0, show: bool | None = None) -> Serving:
        """Serve this bench's tools over MCP (streamable HTTP on 127.0.0.1:`port`, 0: a free
        one) in the background; returns a `Serving` with its `url` and `token` (docs/mcp.md).
        Clients' calls are this bench's calls, shown in this cell as they arrive (`show`; None:
        in a notebook); `stop_serving()` or `close()` ends it."""
        from ..mcp.serving import serve

        return serve(self, port=port, show=show)

    def stop_serving(self) -> bool:
        """Stop serving this bench over MCP; whether it was served."""
        from ..mcp.serving import stop_serving

        return stop_serving(self)

    def replay_conversation(
        self, source: Any, *, save: str | None = None, names: dict[str, str] | None = None
    ) -> Any:
        """Run a recorded conversation's tool calls in order on this bench and compare each
        result with the recorded one (docs/conversations.md): `source` is a path, a JSON text,
        a list of OpenAI Chat / Responses or Anthropic messages, or a dict holding them; `names`
        maps a name the model saw to a tool; `save` keeps it as tests/conversations/NAME.json.
        Returns a ConversationReplay (`.rows`, `.ok`, `.lines()`)."""
        from ..conversations.replay import replay_conversation

        self.check_open()
        return replay_conversation(self, source, save=save, names=names)

    def _pin(self, res: CallResult, name: str) -> Any:
        from ..pins.case import pin

        self._undebugged("pin")
        self.check_open()
        return pin(self, res, name)

    def export(self, path: str | os.PathLike[str], *, calls: Iterable[Any] | None = None) -> Path:
        """Write a repro bundle (*.gemrepro): the state, the calls (None: every top-level call
        kept; or CallResults / indexes of `results`), the gem's files; secrets masked.
        `workbench.open(path)` opens it; `gem-workbench replay path` reruns its calls."""
        self._undebugged("bench.export")
        from ..bundles.export import export

        return export(self, path, calls=calls)

    def export_state(self, folder: str | os.PathLike[str]) -> Path:
        """Write the state as a folder (state.json + workspace/ as real files) that
        `workbench.open(gem, state=folder)` starts from; an earlier one there is replaced."""
        self._undebugged("bench.export_state")
        from ..bundles.statedir import export_state

        return export_state(self, folder)

    @property
    def sandbox(self) -> Sandbox:
        """This gem's Deno sandbox (N3: one process per gem, started on first use)."""
        from ..runners.deno import DenoRunner

        runner = self.core.runner("deno", self.manifest, self.providers, self.profile)
        assert isinstance(runner, DenoRunner)
        return runner.sandbox

    @gated
    def allow_recipients(self, *patterns: str) -> None:
        """Let agent tools' send_email mail these addresses (or `*@domain`); none until then,
        as the platform's recipient checks refuse them (`recipient_not_allowed`)."""
        for p in patterns:
            if not isinstance(p, str) or "@" not in p or len(p) > 254 or any(c in p for c in "\r\n,"):
                raise UsageError(
                    f"allow_recipients({p!r}): give addresses like 'a@x.example' or '*@x.example'"
                )
        allow(self.providers, patterns)
