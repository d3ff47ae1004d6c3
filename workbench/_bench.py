"""Bench: one open gem on its providers; calls tools and shows state (made by `workbench.open`,
in _open.py)."""

from __future__ import annotations

import dataclasses
import random
import secrets
import threading
import time
from typing import TYPE_CHECKING, Any, Literal

from ._email import BenchEmail
from ._errors import UsageError, WorkbenchError, internal_error
from ._hints import explain_absent
from ._json import to_json
from ._reload import definition_files, stamp, tool_file_error
from ._result import CallResult, results_ring
from ._views import Views, gated, platform_views
from .ctx import CallSession, Capabilities, CtxCrash, close_backends, prepare
from .ctx.limits import DEFAULT, Limits, deadline_after
from .gem.schema import check_input
from .providers import default_state_dir
from .runners import RUNNER_FOR, RUNNERS, Runner, Setup
from .runners.deno import Sandbox, SandboxOptions

if TYPE_CHECKING:
    import pandas as pd

    from .ctx.tools import AgentTools
    from .gem import Manifest, ToolSpec
    from .platforms import Profile
    from .providers import Providers


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
        self._validators: dict[str, Any] = {}
        self.reuse = reuse
        self._rng = random.Random()
        self._sandbox_options = sandbox or SandboxOptions()
        self._runners: dict[str, Runner] = {}  # this bench's own: modules, sandbox (N3, N5)
        # one call at a time: a call is one storage transaction and one sandbox conversation
        self._lock = threading.RLock()
        self._second: tuple[int, str] = (0, "")  # a second and its text in call ids
        self.limits = limits
        prepare(providers, manifest, limits)
        # the definition as loaded: an edit is reloaded before the next call (_reload.py)
        self._definition = definition_files(manifest)
        self._stamp = stamp(self._definition)
        self._email = BenchEmail(self)  # bench.email: allowed accounts, mock mail, new-mail events
        resources = providers.backends.get("resources")
        if resources is not None:  # R2: "required": true starts downloading now
            resources.start_required()

    def __repr__(self) -> str:
        kinds = ", ".join(f"{k}={v}" for k, v in self.providers.kind.items())
        return (
            f"<Bench {' '.join(filter(None, (self.manifest.id, self.manifest.version)))}: {len(self.manifest.tools)} "
            f"tools, {kinds}, {len(self.results)} calls>"
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
            self.providers.data_db.close()
            self.providers.sql_db.close()
            if not self.closed:
                self.profile.closed(self.manifest)
            if not self.closed:
                close_backends(self.providers)  # each capability's own (its HTTP transport)
            self.closed = True

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
            if crash is not None:
                from ._crash import crash_call

                return crash_call(self, name, input, crash)
            return self._call(name, input, options={"as_user": as_user, "conversation": conversation})

    def crash_matrix(self, name: str, input: Any = None) -> pd.DataFrame:
        """N7: crash the tool at every point (0..its ctx calls in a clean run), rerun it with
        the same idempotencyKey, one row per point; the bench's state is restored after."""
        with self._lock:
            self._check_open()
            from ._crash import crash_matrix

            return crash_matrix(self, name, input)

    def _call(
        self,
        name: str,
        input: Any = None,
        *,
        key: str | None = None,
        crash_after: int | None = None,
        fresh: bool | None = None,
        options: dict[str, Any] | None = None,
    ) -> CallResult:
        with self._lock:  # also for the email triggers and the replay driver, which call here
            return self._call_locked(
                name, input, key=key, crash_after=crash_after, fresh=fresh, options=options or {}
            )

    def _call_locked(
        self,
        name: str,
        input: Any,
        *,
        key: str | None,
        crash_after: int | None,
        fresh: bool | None,
        options: dict[str, Any],
    ) -> CallResult:
        started = time.time()
        t0 = time.perf_counter()
        token = secrets.token_hex(19)  # one read of the system's randomness for both
        second = int(started)
        if second != self._second[0]:  # the call ids' time of day, formatted once a second
            self._second = (second, time.strftime("%Y%m%d-%H%M%S", time.localtime(second)))
        call_id = f"{self._second[1]}-{token[:6]}"
        args = {} if input is None else input
        res = CallResult(
            call_id=call_id,
            tool=name,
            input=args,
            started=started,
            idempotency_key=key or token[6:],
        )
        try:
            self._steps(res, name, args, crash_after=crash_after, fresh=fresh, options=options)
        except WorkbenchError:
            raise  # coded already: a sandbox that cannot start says so (E_SANDBOX)
        except Exception as exc:  # SEC7: the workbench's own bug, said in the result, not raised
            res.value, res.error = None, internal_error("bench.call", exc)
        res.duration_ms = (time.perf_counter() - t0) * 1000
        self.results.append(res)
        return res

    def _steps(
        self,
        res: CallResult,
        name: str,
        args: Any,
        *,
        crash_after: int | None,
        fresh: bool | None,
        options: dict[str, Any],
    ) -> None:
        """Reload an edited definition, find the tool, check the input and run it, into `res`."""
        if stamp(self._definition) != self._stamp:  # the gem's definition was edited: load it again
            try:
                self.reload()
            except WorkbenchError as exc:
                res.error = WorkbenchError(
                    exc.code, f"the gem's definition changed and {exc.message}", **exc.details
                )
                return
        tool = self.manifest.tool(name)
        if tool is None:
            res.error = WorkbenchError(
                "E_UNKNOWN_TOOL",
                f"no tool {name!r} in gem {self.manifest.id} (tools: {', '.join(self.manifest.tools)})",
                tool=name,
            )
        else:
            res.tool = tool.name  # called by another of its names (an Ekanos effective name)
            args, res.error = self._check_input(tool, args)
            res.error = res.error or tool_file_error(self.manifest, tool)
            if res.error is None:
                self._run(tool, args, res, crash_after=crash_after, fresh=fresh, options=options)

    def _run(
        self,
        tool: ToolSpec,
        args: Any,
        res: CallResult,
        *,
        crash_after: int | None = None,
        fresh: bool | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        session = CallSession(
            call_id=res.call_id,
            tool=tool,
            manifest=self.manifest,
            providers=self.providers,
            conversation=self.conversation,
            strict=self.strict,
            trash=not self.headless,
            http=self.providers.backends.get("http"),
            idempotency_key=res.idempotency_key,
            crash_after=crash_after,
            deadline=deadline_after(self._sandbox_options.timeout),
            limits=self.limits,
            profile=self.profile,
            values=self.profile.call_values(self.manifest, {"call_id": res.call_id, **(options or {})}),
            nest=self._nested,
        )
        caps = Capabilities(session)
        if fresh is None:
            fresh = self.reuse == "never" or (self.reuse == "random" and self._rng.random() < 0.5)
        caps.begin()  # opened at the tool's first ctx call (E_BUSY then fails the call)
        try:
            if tool.language in RUNNER_FOR:
                kind = RUNNER_FOR[tool.language]
                runner = self._runners.get(kind) or self._runner(kind)
                outcome = runner.call(tool, args, caps, fresh=fresh)
            else:
                outcome = None
                res.error = WorkbenchError(
                    "E_UNSUPPORTED",
                    f"{tool.rel_file}: .wasm tools are not run by this version of the workbench",
                    file=tool.rel_file,
                )
        except CtxCrash as exc:  # N7: the simulated crash of call(crash=N)
            from ._crash import crashed_outcome

            outcome = crashed_outcome(self, tool, exc)
        finally:
            failed = caps.end()
            res.trace_rows, res.calls_made = session.trace, session.ctx_calls
            res.trace_chars = session.kept
            res.violations = session.violations
            session.finish(res)  # each capability's part: surfaced files, nested calls, log rows
        if failed is None and session.aborted is not None:  # A5: whatever the tool did after
            failed = session.aborted
        if failed is not None:
            res.logs, res.error = outcome.logs if outcome else "", failed
            return
        if outcome is not None:
            res.logs, res.warnings = outcome.logs, [*session.warnings, *outcome.warnings]
            if outcome.error is not None:
                res.error = explain_absent(outcome.error, tool, self.profile, session.grants)
            elif outcome.checked:
                res.value = outcome.value
            else:
                res.value, res.error = to_json(
                    outcome.value,
                    text=outcome.json,
                    max_chars=self.limits.result_chars,
                    max_depth=self.limits.json_depth,
                )
        http = session.http
        if http is not None and http.has_secrets:  # K6: a secret the tool printed or threw
            res.logs = http.mask(res.logs)
            if res.error is not None:
                res.error.message = http.mask(res.error.message)
                res.error.args = (res.error.message,)
                for k, v in res.error.details.items():  # the stack repeats the message
                    if isinstance(v, str):
                        res.error.details[k] = http.mask(v)
        if res.error is None:
            self._judge(tool, res)

    def _judge(self, tool: ToolSpec, res: CallResult) -> None:
        """K2: a returned `{error}` is an expected failure where the platform says so; a
        success is compared with what the model was told (outputExample)."""
        value = res.value
        if self.profile.error_envelope and isinstance(value, dict) and "error" in value:
            res.expected_failure = True
        else:
            res.warnings += self.profile.result_warnings(self.manifest, tool, value)

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
        tools: AgentTools = self.providers.backends["tools"]
        tools.faults.setdefault(builtin, []).extend([mode] * times)

    def _nested(self, parent: CallSession, tool: ToolSpec, input: Any) -> Any:
        """ctx.tools.<own tool>(input) (agent tools): see _nest.py."""
        from ._nest import nested

        return nested(self, parent, tool, input)

    def _runner(self, kind: str) -> Runner:
        """This bench's runner of `kind` (RUNNER_FOR[language]), made on first use."""
        with self._lock:  # bench.sandbox from another thread must not make a second one (N3)
            if kind not in self._runners:
                base = self.providers.state_dir or default_state_dir(self.manifest.id, self.manifest.root)
                cache = self.providers.backends.get("resources")
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
        tools: AgentTools = self.providers.backends["tools"]
        tools.recipients = tuple(dict.fromkeys((*tools.recipients, *(p.strip().lower() for p in patterns))))
