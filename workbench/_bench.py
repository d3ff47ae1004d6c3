"""Bench: one open gem on its providers; calls tools and shows state (made by `workbench.open`,
in _open.py)."""

from __future__ import annotations

import dataclasses
import os
import random
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from . import _pipeline as pipeline
from ._email import BenchEmail
from ._errors import UsageError, WorkbenchError
from ._reload import definition_files, stamp
from ._result import CallResult, results_ring
from ._views import Views, gated, platform_views
from .ctx import CallSession, close_backends, prepare
from .ctx.before import Before
from .ctx.clock import Clock
from .ctx.limits import DEFAULT, Limits
from .ctx.resources import SPEC as RESOURCES
from .ctx.spec import backend_of
from .ctx.stores import default_state_dir
from .ctx.tools_state import allow, inject
from .gem.schema import check_input
from .runners import RUNNERS, Runner, Setup
from .runners.deno import Sandbox, SandboxOptions

if TYPE_CHECKING:
    import pandas as pd

    from .ctx.stores import Providers
    from .gem import Manifest, ToolSpec
    from .platforms import Profile


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
        from .platforms.notochord import PROFILE

        self.profile = profile or PROFILE  # the platform whose rules this bench applies
        self._views = platform_views(self.profile)  # what it lists and answers (_views.py)
        self.manifest = manifest
        self.providers = providers
        self.conversation = conversation
        self.strict = strict
        self.headless = headless
        self.results = results_ring(limits.results_bench_chars)  # SEC5: the oldest calls go first
        self.closed = False
        self._finalizers: list[Any] = []  # weakref.finalize of what it owns (a bundle's folder)
        self._validators: dict[str, Any] = {}
        self.reuse = reuse
        # seed=: one stream for every id and draw the bench makes (call ids, idempotency keys,
        # reuse='random', crash points, each call's seed); None: the system's randomness, as before
        self.seed = seed
        self._rng = random.Random(seed)
        self._calls = 0  # top-level calls made: the sequence each call's seed is derived from
        # pins=: each call copies the state it finds (ctx/before.py); the latest call's is kept
        self.pins = pins
        self._before: tuple[str, Before] | None = None
        self.clock = clock or Clock()  # the time the ctx layer hands out (ctx/clock.py)
        self._sandbox_options = sandbox or SandboxOptions()
        self._runners: dict[str, Runner] = {}  # this bench's own: modules, sandbox (N3, N5)
        # one call at a time: a call is one storage transaction and one sandbox conversation
        self._lock = threading.RLock()
        self._second: tuple[int, str] = (0, "")  # a second and its text in call ids
        self.limits = limits
        prepare(providers, manifest, limits)
        providers.use_clock(self.clock.time)  # the backends prepare made read it too
        # the definition as loaded: an edit is reloaded before the next call (_reload.py)
        self._definition = definition_files(manifest)
        self._stamp = stamp(self._definition)
        self._email = BenchEmail(self)  # bench.email: allowed accounts, mock mail, new-mail events
        resources = backend_of(providers, RESOURCES)
        if resources is not None:  # R2: "required": true starts downloading now
            resources.start_required()

    @property
    def timeout(self) -> float:
        """Per-call seconds (open(timeout=)): set when the bench opens."""
        return self._sandbox_options.timeout

    @property
    def provider_kinds(self) -> dict[str, str]:
        """{"files" | "storage": "mock" | "real"} for the provider kinds this platform's
        capabilities sit on (`providers.kind` has every kind: an agent bench uses neither)."""
        from .ctx.registry import provider_kinds

        return provider_kinds(self.profile, self.providers.kind)

    def __repr__(self) -> str:
        kinds = "".join(f"{k}={v}, " for k, v in self.provider_kinds.items())
        return (
            f"<Bench {' '.join(filter(None, (self.manifest.id, self.manifest.version)))}: {len(self.manifest.tools)} "
            f"tools, {kinds}{len(self.results)} calls>"
        )

    def _repr_html_(self) -> str:
        from ._present import presenter

        return presenter("bench_html")(self)

    def form(self, tool: str) -> Any:
        """An ipywidgets form generated from the tool's inputSchema; runs the tool on submit."""
        from ._present import presenter

        return presenter("form")(self, tool)

    def __enter__(self) -> Bench:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop the sandbox and close the databases (real state stays on disk); a call running
        in another thread finishes first."""
        with self._lock:
            for runner in self._runners.values():
                runner.stop()
            self._keep_before(None)
            self.providers.data_db.close()
            self.providers.sql_db.close()
            if not self.closed:
                self.profile.closed(self.manifest)
            if not self.closed:
                close_backends(self.providers)  # each capability's own (its HTTP transport)
            self.closed = True
            for done in self._finalizers:
                done()

    def _keep_before(self, kept: tuple[str, Before] | None) -> None:
        """Keep the state copy of the latest call (`kept`: its call id and copy), dropping the last."""
        if self._before is not None:
            self._before[1].close()
        self._before = kept

    # -- calling tools ----------------------------------------------------------------------
    def _validator(self, tool: ToolSpec) -> Any:
        if tool.name not in self._validators:
            from .gem.schema import InputValidator

            self._validators[tool.name] = InputValidator(tool.input_schema, self.profile.schema_rules)
        return self._validators[tool.name]

    def _check_input(self, tool: ToolSpec, args: Any) -> tuple[Any, WorkbenchError | None]:
        """The input as the tool receives it, or E_SCHEMA naming the field (N8): any value,
        however deep, cyclic or costly to check, is a coded error, never an exception (SEC7)."""
        return check_input(self._validator(tool), args, tool=tool.name, max_depth=self.limits.json_depth)

    def call(
        self,
        name: str,
        input: Any = None,
        *,
        crash: int | Literal["random"] | None = None,
        as_user: str | None = None,
        conversation: str | None = None,
    ) -> CallResult:
        """Call a tool as the platform would; errors come back in the result, never raised.

        Only misuse of the bench itself raises (UsageError: it is closed).
        crash (N7): N or "random" aborts the run after the tool's N-th ctx call (the sandbox is
            killed; a Python tool gets a BaseException from ctx), then reruns the call once
            with the same ctx.idempotencyKey. The result is the rerun's; `res.crash` has the
            crashed run, each run's state diff and the side effects the rerun duplicated.

        as_user, conversation (agent tools, A2): ctx.powerUserId (None: the agent's owner
            calls) and ctx.conversationId (None: not in a chat session).

        Safe to share between threads: calls on one bench run one at a time (each is one
        storage transaction and one conversation with the gem's single sandbox, N3).
        """
        for what, value in (("as_user", as_user), ("conversation", conversation)):
            if value is not None and (not isinstance(value, str) or not value or len(value) > 200):
                raise UsageError(f"{what}={value!r}: give an id (a string of 1 to 200 characters) or None")
        with self._lock:
            self._check_open()
            self._email.deliver()  # mail scheduled with at= whose time came, and its triggers
            if crash is not None:
                from ._crash import crash_call

                return crash_call(self, name, input, crash)
            return pipeline.call(
                self, name, input, options={"as_user": as_user, "conversation": conversation}
            )

    def crash_matrix(self, name: str, input: Any = None) -> pd.DataFrame:
        """N7: crash the tool at every point (0..its ctx calls in a clean run), rerun it with
        the same idempotencyKey, one row per point; the bench's state is restored after."""
        with self._lock:
            self._check_open()
            from ._crash import crash_matrix

            return crash_matrix(self, name, input)

    def reload(self) -> None:
        """Load the gem's definition again (manifest.json, an integration's module), checked as
        `workbench.open` checks it; done before a call when it was edited. GemLoadError
        (file and pointer) when it no longer loads: the bench keeps the last good one."""
        from ._reload import reload

        with self._lock:
            self._check_open()
            reload(self)

    @gated
    def inject_fault(
        self, builtin: str, *, times: int = 1, mode: Literal["throw", "envelope"] = "throw"
    ) -> None:
        """Make the next `times` dispatches of an agent built-in fail: "throw" as when the
        platform's connection fails (the call throws E_DISPATCH, A4), or "envelope" (it
        resolves with {error: "unavailable"}) — to test a tool's resilience."""
        from .ctx.tools import SCHEMAS

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
        from ._doctor import doctor

        self._check_open()
        return doctor(self, tool=tool, seconds=seconds, examples=examples, seed=seed, write=write)

    def _pin(self, res: CallResult, name: str) -> Any:
        from ._pins import pin

        self._check_open()
        return pin(self, res, name)

    def export(self, path: str | os.PathLike[str], *, calls: Iterable[Any] | None = None) -> Path:
        """Write a repro bundle (*.gemrepro): the state, the calls (None: every top-level call
        kept; or CallResults / indexes of `results`), the gem's files; secrets masked.
        `workbench.open(path)` opens it; `gem-workbench replay path` reruns its calls."""
        from ._bundle import export

        return export(self, path, calls=calls)

    def export_state(self, folder: str | os.PathLike[str]) -> Path:
        """Write the state as a folder (state.json + workspace/ as real files) that
        `workbench.open(gem, state=folder)` starts from; an earlier one there is replaced."""
        from ._statedir import export_state

        return export_state(self, folder)

    def _nested(self, parent: CallSession, tool: ToolSpec, input: Any) -> Any:
        """ctx.tools.<own tool>(input) (agent tools): see _pipeline.nested."""
        return pipeline.nested(self, parent, tool, input)

    def _runner(self, kind: str) -> Runner:
        """This bench's runner of `kind` (RUNNER_FOR[language]), made on first use."""
        with self._lock:  # bench.sandbox from another thread must not make a second one (N3)
            if kind not in self._runners:
                base = self.providers.state_dir or default_state_dir(self.manifest.id, self.manifest.root)
                cache = backend_of(self.providers, RESOURCES)
                readable = (cache.root,) if cache is not None else ()
                options = self._sandbox_options
                if self.profile.import_map is not None:  # the platform's SDK (Ekanos)
                    options = dataclasses.replace(options, import_map=self.profile.import_map)
                setup = Setup(
                    self.manifest.root, base, options=options, readable=(*readable, *self.profile.sdk_dirs)
                )
                self._runners[kind] = RUNNERS[kind](setup)
            return self._runners[kind]

    @property
    def sandbox(self) -> Sandbox:
        """This gem's Deno sandbox (N3: one process per gem, started on first use)."""
        from .runners.deno import DenoRunner

        runner = self._runner("deno")
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
