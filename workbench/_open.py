"""`workbench.open`: a gem folder, its platform profile and its providers, as a Bench."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ._bench import Bench
from ._errors import GemLoadError, UsageError, WorkbenchError
from .ctx import close_backends, desktop_has_trash
from .providers import (
    StateError,
    default_state_dir,
    make_providers,
)
from .runners.deno import SandboxOptions

if TYPE_CHECKING:
    from .gem import Manifest
    from .platforms import Limits, Profile
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
    web_search: Any = "mock",
    outbox: Any = "mock",
    files: str | os.PathLike[str] | None = None,
    keep_runs: int | None = 50,
    keep_run_days: float = 7.0,
    account_storage: Mapping[str, Any] | None = None,
    secrets: Any = None,
    fetch_handlers: list[Mapping[str, Any]] | None = None,
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
    web_search: what agent tools' `ctx.tools.web_search` asks (A3): "mock" (the gem's
        fixtures/web_search.json: [{"query": text or "/regex/", "results": [...]}]), the URL of a
        SearXNG-compatible JSON endpoint, or an object with search(query, count, *, timeout).
    outbox: where agent tools' `ctx.tools.send_email` sends: "mock" (kept, `bench.outbox()`) or
        an Outbox such as providers.outbox.SmtpOutbox(host, port, sender=..., security=...).
        Recipients must be allowed first: `bench.allow_recipients("a@x.example", "*@acme.example")`.
    files: the agent's files, which agent tools' `ctx.tools.surface_file({path})` shows to the
        user (default: the gem's fixtures/files/); paths are confined to this folder.
    credentials: {connection name: {"headers": {name: value}} (or "token": "…"), "hosts":
        [host or host:port, …], "paths"?: [...]}, or the path of a JSON secrets file of that
        shape; default: env GEM_WORKBENCH_CONN_<NAME>_TOKEN (a Bearer token) with
        GEM_WORKBENCH_CONN_<NAME>_HOSTS (and _PATHS), then the keyring. Injected for
        `connection: name` only where both these hosts/paths and the manifest's grant allow
        (SEC4, ctx/http_credentials.py); a {name: {header: value}} without hosts is refused.
    account_storage, secrets, fetch_handlers (Ekanos integrations, K6/K7, as createMockContext
        takes them): records {key: value} stored at open (`ctx.storage.account.get(key)` then
        gives {key, data: value, updatedAt}; checked against the integration's storage
        schemas); secrets {name: value} (also createMockContext's {"account": {…}}), or "local":
        env GEM_WORKBENCH_SECRET_<SLUG>__<NAME>, then the keyring (user "<slug>:<name>");
        default none (the user's secrets are read only for a folder they are asked for: an
        integration names its slug itself); fetch_handlers: mock
        handlers for ctx.fetch, the same as `http=[...]`.
    keep_runs, keep_run_days: run folders retention, applied when a bench on real files
        opens: a run folder is deleted once it is neither among the `keep_runs` most recently
        modified nor modified within `keep_run_days` days (default: the last 50 calls, and
        anything from the last 7 days); keep_runs=None keeps them all. The same open removes
        temp files left by a write that was killed (kill -9) before it finished.
    """
    _check_options(
        reuse=reuse, http_timeout=http_timeout, keep_runs=keep_runs, keep_run_days=keep_run_days
    )  # before anything is opened or started
    from ._check import gem_folder
    from .platforms import detect

    folder, why = gem_folder(path)  # a folder, or the path of its manifest.json / integration.ts
    if folder is None:
        raise GemLoadError(why, file=str(path))
    path = folder
    profile = detect(path)  # manifest.json's "platform": whose rules, limits and ctx shape
    ekanos = profile.name == "ekanos"
    if not ekanos and (account_storage is not None or secrets is not None or fetch_handlers is not None):
        raise UsageError("account_storage=, secrets= and fetch_handlers= are for Ekanos integrations")
    if fetch_handlers is not None:
        if http != "mock":
            raise UsageError("give fetch_handlers= or http=, not both (they are the same transport)")
        http = list(fetch_handlers)
    manifest = profile.load(Path(path))
    # ctx.resources' source: mock (fixtures/resources/<id>, `resources=`) or real (httpx)
    res_kind = providers if isinstance(providers, str) else dict(providers).get("resources", "mock")
    if isinstance(providers, dict) and "resources" in providers:
        providers = {k: v for k, v in providers.items() if k != "resources"} or "mock"
    if not isinstance(providers, str) and res_kind not in ("mock", "real"):
        raise UsageError(f"providers['resources']={res_kind!r}: use 'mock' or 'real'")
    # what the capabilities' backend factories read (CapabilitySpec.backend)
    options = {
        "mailbox": mailbox,
        "resources": resources,
        "http": http,
        "credentials": credentials,
        "http_timeout": http_timeout,
        "web_search": web_search,
        "outbox": outbox,
        "files": files,
        "secrets": secrets,
    }
    try:
        provs = make_providers(
            manifest.id,
            providers,
            gem_root=manifest.root,
            workspace=Path(workspace) if workspace else None,
            state_dir=Path(state_dir) if state_dir else None,
            platform=manifest.platform,
        )
    except StateError as exc:
        raise _state_error(exc, state_dir or default_state_dir(manifest.id, manifest.root)) from None
    if (housekeep := getattr(provs.files, "housekeep", None)) is not None:  # real files:
        housekeep(keep_runs=keep_runs, keep_days=keep_run_days)  # dead writers' temps, old runs
    try:
        kinds = {**provs.kind, "resources": res_kind}  # ctx.resources: mock or real (httpx)
        _make_backends(provs, manifest, profile, limits or profile.limits, options=options, kinds=kinds)
        profile.opened(manifest)  # K4: effective names are claimed by one integration at a time
        bench = Bench(
            manifest,
            provs,
            conversation=conversation,
            strict=strict,
            headless=(not desktop_has_trash()) if headless is None else headless,
            reuse=reuse,
            sandbox=SandboxOptions(timeout=timeout, memory_mb=memory_mb),
            limits=limits or profile.limits,
            profile=profile,
        )
        seed = Path(workspace) if workspace else manifest.root / "fixtures" / "workspace"
        if provs.kind["files"] == "mock" and seed.is_dir():
            _seed_memory(provs.files, seed)
        if account_storage is not None:
            _seed_account(bench, account_storage)
        if any(t.language in ("javascript", "typescript") for t in manifest.tools.values()):
            bench._runner("deno").warm()  # the first call finds the sandbox started
        return bench
    except BaseException as exc:  # e.g. db/schema.sql fails: leave no connection open
        profile.closed(manifest)
        close_backends(provs)
        provs.data_db.close()
        provs.sql_db.close()
        if isinstance(exc, StateError):
            raise _state_error(exc, provs.state_dir) from None
        raise


def _make_backends(
    provs: Providers,
    manifest: Manifest,
    profile: Profile,
    limits: Limits,
    *,
    options: Mapping[str, Any],
    kinds: Mapping[str, str],
) -> None:
    """Each capability of the platform with a backend factory makes its backend, after the
    shared stores, in registry order (`providers.backends[impl]`; `Bench.close` closes them)."""
    from .ctx import SPECS
    from .ctx.spec import OpenContext, specs_for

    opening = OpenContext(
        manifest=manifest,
        profile=profile,
        limits=limits,
        options=options,
        kinds=kinds,
        state_dir=provs.state_dir or default_state_dir(manifest.id, manifest.root),
        backends=provs.backends,
    )
    for spec in specs_for(profile, SPECS.values()):
        if spec.backend is not None:
            provs.backends[spec.impl] = spec.backend(opening)


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


def _state_error(exc: StateError, state_dir: Any) -> WorkbenchError:
    return WorkbenchError(
        "E_STATE",
        f"the bench's state database in {state_dir} cannot be "
        f"used: {exc}. Move data.sqlite/sql.sqlite away (the gem starts empty) "
        "or open with another state_dir=",
        path=str(state_dir),
    )


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


def _seed_account(bench: Bench, records: Mapping[str, Any]) -> None:
    """`account_storage={key: value}`: stored as ctx.storage.account.set would (the same checks:
    ctx.account.checked), in one transaction."""
    from .ctx.account import PREFIX, checked, stored

    if set(records) == {"account"} and isinstance(records["account"], Mapping):
        records = records["account"]  # createMockContext's {account: {…}}, accepted as is
    db, store = bench.providers.data_db, bench.providers.store
    for key, value in records.items():
        try:
            key, data = checked(key, value, bench.manifest, bench.profile, bench.limits)
        except WorkbenchError as exc:
            raise UsageError(f"account_storage: {exc.message}", **exc.details) from None
        store.kv_set(PREFIX + key, stored(data))
    if db.in_transaction:
        db.commit()
