"""Bench: one open gem on its providers; calls tools and shows state."""

from __future__ import annotations

import builtins
import os
import random
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ._email import BenchEmail
from ._errors import UsageError, WorkbenchError
from ._json import to_json
from ._result import CallResult
from .ctx import CallSession, Capabilities, CtxCrash, desktop_has_trash, prepare
from .ctx import history as _history
from .ctx.limits import DEFAULT, Limits, deadline_after
from .providers import default_state_dir, make_mailbox, make_providers
from .providers.mailmock import MockMailbox
from .runners import RUNNER_FOR, RUNNERS, Runner, Setup
from .runners.deno import Sandbox, SandboxOptions

if TYPE_CHECKING:
    import pandas as pd

    from .gem import Manifest, ToolSpec
    from .inspect.snapshot import Snapshot
    from .platforms import Grants, Profile
    from .providers import Mailbox, Providers


def open(
    path: str | os.PathLike[str],
    *,
    providers: str | dict[str, str] = "mock",
    workspace: str | os.PathLike[str] | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    conversation: bool = True,
    strict: bool = False,
    headless: bool | None = None,
    reuse: Literal["always", "never", "random"] = "always",
    timeout: float = 30.0,
    memory_mb: int = 512,
    mailbox: str | os.PathLike[str] | Mailbox | Mapping[str, str | os.PathLike[str]] | None = None,
    resources: Mapping[str, bytes | str | os.PathLike[str]] | None = None,
    http: Any = "mock",
    credentials: Mapping[str, Mapping[str, Any]] | str | os.PathLike[str] | None = None,
    http_timeout: float = 10.0,
    limits: Limits | None = None,
    keep_runs: int | None = 50,
    keep_run_days: float = 7.0,
) -> Bench:
    """Open the gem folder at `path` on mock or real providers.

    providers: "mock", "real", or per capability, e.g. {"files": "real", "storage": "mock"}.
    workspace: the conversation folder (real files: used in place; mock: copied into memory).
    state_dir: where real SQLite state and run folders live (default: per gem folder,
        `<gem id>-<hash of the folder's path>` under $GEM_WORKBENCH_HOME or
        ~/.local/state/gem-workbench, so a gem copying another's id gets none of its state).
    conversation: False makes every `workspace:` path fail with E_PERM_DENIED (F11).
    strict: platform rules the platform itself does not check (D4) become errors.
    headless: True deletes permanently (the headless build); default: no trash under CI or
        without a display.
    reuse: whether a call reuses the tool's module instance from the previous call (N5):
        "always" (fast; the default), "never", or "random" (flushes out tools that keep state
        in memory, which the platform does not promise to keep).
    timeout, memory_mb: per-call wall clock (seconds) and V8 heap limit of the Deno sandbox.
        The timeout also bounds every ctx call a tool makes, Python tools included: a ctx call
        still running at the deadline is stopped with E_TIMEOUT, none starts after it (SEC5).
    mailbox: what ctx.email reads. Default: the mock, from the gem's fixtures/mailbox.json if
        present, else empty. A path to a `.json` list of messages or a folder of `.eml` files
        (mock, in memory), a Maildir folder or an mbox file (read in place), {account id:
        path}, or a Mailbox object (e.g. an IMAP mailbox). No account is allowed until
        `bench.email.allow(...)` (E2).
    resources: mock ctx.resources files, {id: bytes or path} (default: the gem's
        fixtures/resources/<id>). With providers="real" or {"resources": "real"} they are
        downloaded with httpx from `url`, then each mirror (R1–R5, ctx/resources.py).
    http: what ctx.http.fetch reaches (N10): "mock" (no handlers: every request is E_HTTP),
        a list of mock handlers [{"match": url prefix or predicate, "method"?, "respond"}],
        "real" (httpx), or a transport object. http_timeout: seconds per fetch in total
        (connecting, redirects, the whole body), and never past the call's own timeout (SEC5).
    limits: the bounds of every call (ctx/limits.py: file and result sizes, SQL rows, HTTP
        bodies, captured output…); default: the platform's and the workbench's (SEC5).
    credentials: {connection name: {"headers": {name: value}} (or "token": "…"), "hosts":
        [host or host:port, …], "paths"?: [...]}, or the path of a JSON secrets file of that
        shape; default: env GEM_WORKBENCH_CONN_<NAME>_TOKEN (a Bearer token) with
        GEM_WORKBENCH_CONN_<NAME>_HOSTS (and _PATHS), then the keyring. Injected for
        `connection: name` only where both these hosts/paths and the manifest's grant allow
        (SEC4, ctx/http.py); a {name: {header: value}} without hosts is refused.
    keep_runs, keep_run_days: run folders retention, applied when a bench on real files
        opens: a run folder is deleted once it is neither among the `keep_runs` most recently
        modified nor modified within `keep_run_days` days (default: the last 50 calls, and
        anything from the last 7 days); keep_runs=None keeps them all. The same open removes
        temp files left by a write that was killed (kill -9) before it finished.
    """
    _check_options(
        reuse=reuse, http_timeout=http_timeout, keep_runs=keep_runs, keep_run_days=keep_run_days
    )  # before anything is opened or started
    from .platforms import detect

    profile = detect(path)  # manifest.json's "platform": whose rules, limits and ctx shape
    manifest = profile.load(Path(path))
    # ctx.resources' source: mock (fixtures/resources/<id>, `resources=`) or real (httpx)
    res_kind = providers if isinstance(providers, str) else dict(providers).get("resources", "mock")
    if isinstance(providers, dict) and "resources" in providers:
        providers = {k: v for k, v in providers.items() if k != "resources"} or "mock"
    if not isinstance(providers, str) and res_kind not in ("mock", "real"):
        raise UsageError(f"providers['resources']={res_kind!r}: use 'mock' or 'real'")
    from .ctx.http_credentials import HttpState
    from .providers.http import make_transport

    http_state = HttpState(make_transport(http), credentials, timeout=float(http_timeout))
    mail = make_mailbox(mailbox, gem_root=manifest.root)
    try:
        provs = make_providers(
            manifest.id,
            providers,
            gem_root=manifest.root,
            workspace=Path(workspace) if workspace else None,
            state_dir=Path(state_dir) if state_dir else None,
        )
    except sqlite3.DatabaseError as exc:
        raise _state_error(exc, state_dir or default_state_dir(manifest.id, manifest.root)) from None
    provs.mailbox = mail
    provs.http = http_state  # type: ignore[attr-defined]  # N10: transport, credentials, log
    if (housekeep := getattr(provs.files, "housekeep", None)) is not None:  # real files:
        housekeep(keep_runs=keep_runs, keep_days=keep_run_days)  # dead writers' temps, old runs
    try:
        from .ctx.resources import make_cache
        from .providers.resources import HttpSource, MockSource

        source = MockSource(manifest.root, resources) if res_kind == "mock" else HttpSource()
        provs.resources = make_cache(
            manifest,
            source=source,
            state_dir=provs.state_dir or default_state_dir(manifest.id, manifest.root),
        )
        return Bench(
            manifest,
            provs,
            conversation=conversation,
            strict=strict,
            headless=(not desktop_has_trash()) if headless is None else headless,
            seed=Path(workspace) if workspace else manifest.root / "fixtures" / "workspace",
            reuse=reuse,
            sandbox=SandboxOptions(timeout=timeout, memory_mb=memory_mb),
            limits=limits or profile.limits,
            profile=profile,
        )
    except BaseException as exc:  # e.g. db/schema.sql fails: leave no connection open
        provs.data_db.close()
        provs.sql_db.close()
        if isinstance(exc, sqlite3.DatabaseError):
            raise _state_error(exc, provs.state_dir) from None
        raise


def _check_options(*, reuse: Any, http_timeout: Any, keep_runs: Any, keep_run_days: Any) -> None:
    if reuse not in ("always", "never", "random"):
        raise UsageError(f"reuse={reuse!r}: use 'always', 'never' or 'random'")
    if isinstance(http_timeout, bool) or not isinstance(http_timeout, (int, float)) or http_timeout <= 0:
        raise UsageError(f"http_timeout={http_timeout!r}: give seconds (> 0)")
    if keep_runs is not None and (
        isinstance(keep_runs, bool) or not isinstance(keep_runs, int) or keep_runs < 0
    ):
        raise UsageError(f"keep_runs={keep_runs!r}: give a number of run folders (>= 0) or None")
    if (
        isinstance(keep_run_days, bool)
        or not isinstance(keep_run_days, (int, float))
        or not keep_run_days >= 0
    ):
        raise UsageError(f"keep_run_days={keep_run_days!r}: give days (>= 0)")


def _state_error(exc: sqlite3.DatabaseError, state_dir: Any) -> WorkbenchError:
    return WorkbenchError(
        "E_STATE",
        f"the bench's state database in {state_dir} cannot be "
        f"used: {exc}. Move data.sqlite/sql.sqlite away (the gem starts empty) "
        "or open with another state_dir=",
        path=str(state_dir),
    )


def _explain_absent(err: WorkbenchError, tool: ToolSpec, profile: Profile, grants: Grants) -> WorkbenchError:
    """A JS tool's TypeError on a ctx capability it has no grant for (it is undefined, as on
    the platform, e.g. E1's ctx.email): say why, naming the manifest field to add. Only when
    the error is about one of its methods and the tool's source uses that capability: a
    `x.path` on some other undefined value is not R1's."""
    if err.code != "E_TOOL_ERROR" or tool.language == "python" or "undefined" not in err.message:
        return err
    source: str | None = None
    for cap in profile.capabilities:
        if cap.grant is None or grants.has(cap.grant):
            continue
        if any(f"'{m}'" in err.message for m in cap.method_names()):
            if source is None:
                source = _source(tool)
            name = cap.path.rsplit(".", 1)[-1]
            if not re.search(rf"\.\s*{re.escape(name)}\b|\b{re.escape(name)}\s*[,}}:]", source):
                continue
            hint = grants.denial(cap.grant)
            return WorkbenchError(
                err.code,
                f"{err.message} — ctx.{cap.path} is undefined: {hint.message}",
                **err.details,
                missing=hint.details.get("missing", []),
            )
    return err


def _source(tool: ToolSpec, limit: int = 1 << 20) -> str:
    """The tool's source text (its first MiB; '' if it cannot be read now)."""
    try:
        with builtins.open(tool.file, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def _seed_memory(store: Any, folder: Path) -> None:
    """Copy a folder into the mock conversation folder: regular files only (a FIFO would block
    the copy, and the gem could not see it anyway; links are not followed)."""
    from .providers.folder import read_regular

    for dirpath, dirs, files in os.walk(folder):
        for name in dirs:
            store.mkdir("workspace", (Path(dirpath) / name).relative_to(folder).as_posix())
        for name in files:
            p = Path(dirpath) / name
            try:
                data = read_regular(p)
            except OSError:  # not a regular file, a link, or gone meanwhile
                continue
            store.write("workspace", p.relative_to(folder).as_posix(), data)


class Bench:
    """A gem opened on providers. Create it with `workbench.open(...)`."""

    def __init__(
        self,
        manifest: Manifest,
        providers: Providers,
        *,
        conversation: bool,
        strict: bool,
        headless: bool,
        seed: Path | None = None,
        reuse: str = "always",
        sandbox: SandboxOptions | None = None,
        limits: Limits = DEFAULT,
        profile: Profile | None = None,
    ) -> None:
        from .platforms.notochord import PROFILE

        self.profile = profile or PROFILE  # the platform whose rules this bench applies
        self.manifest = manifest
        self.providers = providers
        self.conversation = conversation
        self.strict = strict
        self.headless = headless
        self.results: list[CallResult] = []
        self.closed = False
        self._validators: dict[str, Any] = {}
        self.reuse = reuse
        self._rng = random.Random()
        self._sandbox_options = sandbox or SandboxOptions()
        self._runners: dict[str, Runner] = {}  # this bench's own: modules, sandbox (N3, N5)
        # one call at a time: a call is one storage transaction and one sandbox conversation
        self._lock = threading.RLock()
        self.limits = limits
        prepare(providers, manifest, limits)
        if providers.kind["files"] == "mock" and seed is not None and seed.is_dir():
            _seed_memory(providers.files, seed)
        if providers.mailbox is None:
            providers.mailbox = MockMailbox()
        self.email = BenchEmail(self)  # allowed accounts, mock mail, new-mail events
        if providers.resources is not None:  # R2: "required": true starts downloading now
            providers.resources.start_required()

    def __repr__(self) -> str:
        kinds = ", ".join(f"{k}={v}" for k, v in self.providers.kind.items())
        return (
            f"<Bench {self.manifest.id} {self.manifest.version}: {len(self.manifest.tools)} "
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
            transport: Any = getattr(getattr(self.providers, "http", None), "transport", None)
            if hasattr(transport, "close"):
                transport.close()
            self.closed = True

    def _check_open(self) -> None:
        if self.closed:
            raise UsageError(
                f"the bench of {self.manifest.id} is closed; open it again with workbench.open(...)"
            )

    # -- calling tools ----------------------------------------------------------------------
    def _validator(self, tool: ToolSpec) -> Any:
        if tool.name not in self._validators:
            from .gem.schema import InputValidator

            self._validators[tool.name] = InputValidator(tool.input_schema, self.profile.schema_rules)
        return self._validators[tool.name]

    def _check_input(self, tool: ToolSpec, args: Any) -> tuple[Any, WorkbenchError | None]:
        """The input as the tool receives it, or E_SCHEMA naming the field (N8): any value,
        however deep, cyclic or costly to check, is a coded error, never an exception (SEC7)."""
        from .gem.schema import check_input

        return check_input(self._validator(tool), args, tool=tool.name, max_depth=self.limits.json_depth)

    def call(
        self, name: str, input: Any = None, *, crash: int | Literal["random"] | None = None
    ) -> CallResult:
        """Call a tool as the platform would; errors come back in the result, never raised.

        Only misuse of the bench itself raises (UsageError: it is closed).
        crash (N7): N or "random" aborts the run after the tool's N-th ctx call (the sandbox is
            killed; a Python tool gets a BaseException from ctx), then reruns the call once
            with the same ctx.idempotencyKey. The result is the rerun's; `res.crash` has the
            crashed run, each run's state diff and the side effects the rerun duplicated.

        Safe to share between threads: calls on one bench run one at a time (each is one
        storage transaction and one conversation with the gem's single sandbox, N3).
        """
        with self._lock:
            self._check_open()
            if crash is not None:
                from ._crash import crash_call

                return crash_call(self, name, input, crash)
            return self._call(name, input)

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
    ) -> CallResult:
        with self._lock:  # also for the email triggers and the replay driver, which call here
            return self._call_locked(name, input, key=key, crash_after=crash_after, fresh=fresh)

    def _call_locked(
        self, name: str, input: Any, *, key: str | None, crash_after: int | None, fresh: bool | None
    ) -> CallResult:
        started = time.time()
        t0 = time.perf_counter()
        call_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
        args = {} if input is None else input
        res = CallResult(
            call_id=call_id,
            tool=name,
            input=args,
            started=started,
            idempotency_key=key or secrets.token_hex(16),
        )
        tool = self.manifest.tools.get(name)
        if tool is None:
            res.error = WorkbenchError(
                "E_UNKNOWN_TOOL",
                f"no tool {name!r} in gem {self.manifest.id} (tools: {', '.join(self.manifest.tools)})",
                tool=name,
            )
        else:
            args, res.error = self._check_input(tool, args)
            if res.error is None:
                self._run(tool, args, res, crash_after=crash_after, fresh=fresh)
        res.duration_ms = (time.perf_counter() - t0) * 1000
        self.results.append(res)
        return res

    def _run(
        self,
        tool: ToolSpec,
        args: Any,
        res: CallResult,
        *,
        crash_after: int | None = None,
        fresh: bool | None = None,
    ) -> None:
        session = CallSession(
            call_id=res.call_id,
            tool=tool,
            manifest=self.manifest,
            providers=self.providers,
            conversation=self.conversation,
            strict=self.strict,
            trash=not self.headless,
            email_grant=self.email.grant,
            http=getattr(self.providers, "http", None),
            idempotency_key=res.idempotency_key,
            crash_after=crash_after,
            deadline=deadline_after(self._sandbox_options.timeout),
            limits=self.limits,
            profile=self.profile,
        )
        caps = Capabilities(session)
        if fresh is None:
            fresh = self.reuse == "never" or (self.reuse == "random" and self._rng.random() < 0.5)
        try:
            caps.begin()
        except WorkbenchError as exc:  # E_BUSY: another process kept the state folder
            res.error = exc
            return
        try:
            if tool.language in RUNNER_FOR:
                outcome = self._runner(RUNNER_FOR[tool.language]).call(tool, args, caps, fresh=fresh)
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
            res.trace_rows = session.trace
            res.violations = session.violations
        if failed is not None:
            res.logs, res.error = outcome.logs if outcome else "", failed
            return
        if outcome is not None:
            res.logs = outcome.logs
            if outcome.error is not None:
                res.error = _explain_absent(outcome.error, tool, self.profile, session.grants)
            elif outcome.checked:
                res.value = outcome.value
            else:
                res.value, res.error = to_json(
                    outcome.value,
                    text=outcome.json,
                    max_chars=self.limits.result_chars,
                    max_depth=self.limits.json_depth,
                )

    def _runner(self, kind: str) -> Runner:
        """This bench's runner of `kind` (RUNNER_FOR[language]), made on first use."""
        with self._lock:  # bench.sandbox from another thread must not make a second one (N3)
            return self._runners.get(kind) or self._new_runner(kind)

    def _new_runner(self, kind: str) -> Runner:
        if kind not in self._runners:
            base = self.providers.state_dir or default_state_dir(self.manifest.id, self.manifest.root)
            readable = (self.providers.resources.root,) if self.providers.resources else ()
            self._runners[kind] = RUNNERS[kind](
                Setup(
                    gem_root=self.manifest.root,
                    state_dir=base,
                    options=self._sandbox_options,
                    readable=readable,
                )
            )
        return self._runners[kind]

    @property
    def sandbox(self) -> Sandbox:
        """This gem's Deno sandbox (N3: one process per gem, started on first use)."""
        from .runners.deno import DenoRunner

        runner = self._runner("deno")
        assert isinstance(runner, DenoRunner)
        return runner.sandbox

    # -- file history -----------------------------------------------------------------------
    def history(self, path: str | None = None) -> pd.DataFrame:
        """Saved versions of conversation-folder files (overwrites, deletes, restores)."""
        import pandas as pd

        from .providers.datastore import VERSION_COLUMNS

        self._check_open()
        rows = self.providers.store.history_versions(path.removeprefix("workspace:") if path else None)
        df = pd.DataFrame(rows, columns=VERSION_COLUMNS)
        df["saved_at"] = pd.to_datetime(df["saved_at"], unit="ms")
        df["kept"] = df["kept"].astype(bool)
        return df

    def restore_file(self, path: str, version: int | None = None) -> int:
        """Roll one conversation file back to a saved version (default: the latest)."""
        self._check_open()
        return _history.restore(
            self.providers.store, self.providers.files, path, version, limit=self.limits.history_bytes
        )

    # -- inspection -------------------------------------------------------------------------
    def tools(self) -> pd.DataFrame:
        from .inspect import frames

        return frames.tools(self.manifest)

    def files(self) -> pd.DataFrame:
        """Files of the conversation folder and every run folder: area, path, type, size, modified."""
        from .inspect import frames

        return frames.files(self.providers.files)

    def data(self, collection: str) -> pd.DataFrame:
        """A collection's documents: `id` then one column per top-level field."""
        from .inspect import frames

        if collection not in self.manifest.collections:
            raise UsageError(
                f"collection {collection!r} is not declared in manifest.json "
                f"(declared: {', '.join(self.manifest.collections) or 'none'})"
            )
        self._check_open()
        return frames.collection(self.providers.store, collection)

    def kv(self) -> pd.DataFrame:
        from .inspect import frames

        self._check_open()
        return frames.kv(self.providers.store)

    def sql(self, query: str, params: Any = ()) -> pd.DataFrame:
        """Run a query on the gem's private database (ctx.storage.sql)."""
        from .inspect import frames

        return frames.query(self.providers.sql_db, query, params)

    def mailbox(self) -> pd.DataFrame:
        """Every message's envelope, all accounts (allowed or not), ordered by (date, accountId,
        id): accountId, id, subject, fromAddr, toAddrs, date (datetime, UTC), date_ms."""
        from .inspect import frames

        return frames.mailbox(self.email.envelopes())

    def http(self) -> pd.DataFrame:
        """Every ctx.http.fetch request (N10): call_id, tool, method, url, status, duration_ms,
        connection, credential ("injected", "denied", "dropped"), reason, redirects, error.
        Credentials never appear here."""
        import pandas as pd

        cols = [
            "call_id",
            "tool",
            "method",
            "url",
            "status",
            "duration_ms",
            "connection",
            "credential",
            "reason",
            "redirects",
            "error",
        ]
        state = getattr(self.providers, "http", None)
        return pd.DataFrame(list(state.log) if state else [], columns=cols)

    def calls(self) -> pd.DataFrame:
        from .inspect import frames

        return frames.calls(self.results)

    def snapshot(self) -> Snapshot:
        """Capture files and storage, to diff against or restore later."""
        from .inspect.snapshot import take

        self._check_open()
        return take(self.providers)

    def diff(self, snap: Snapshot) -> pd.DataFrame:
        """What changed since `snap`: one row per file, document, key or SQL row."""
        from .inspect.snapshot import diff

        self._check_open()
        return diff(snap, self.providers)

    def restore(self, snap: Snapshot) -> None:
        """Put files and storage back exactly as they were at `snap`."""
        from .inspect.snapshot import restore

        self._check_open()
        restore(snap, self.providers)
