"""`workbench.open`: a gem folder, its platform profile and its providers, as a Bench."""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import GemLoadError, UsageError, WorkbenchError
from .._plugins import on_loaded
from ..ctx import close_backends, desktop_has_trash
from ..ctx.clock import Clock
from ..ctx.stores import StateError, default_state_dir, make_providers, seed_files
from ..runners.deno import SandboxOptions
from ..types import refresh_quietly
from .bench import Bench
from .options import every_option, open_doc, resolve

if TYPE_CHECKING:
    from ..ctx.stores import Providers
    from ..gem import Manifest
    from ..platforms import Limits, Profile


def open(
    path: str | os.PathLike[str],
    *,
    providers: str | dict[str, str] = "mock",
    limits: Limits | None = None,
    **options: Any,
) -> Bench:
    # the docstring is the option table's (_options.open_doc), set below
    from .._check import gem_folder
    from ..bundles.export import is_bundle
    from ..platforms import detect

    if is_bundle(path):  # a repro bundle: its gem unpacked, its state put (bundles/export.py)
        return _open_bundle(Path(path), providers=providers, limits=limits, options=options)

    folder, why = gem_folder(path)  # a folder, or the path of its manifest.json / integration.ts
    if folder is None:
        raise GemLoadError(why, file=str(path))
    path = folder
    profile = detect(path)  # manifest.json's "platform": whose rules, limits and ctx shape
    # every option against the platform's table, before anything is opened or started
    opts = resolve(profile, {"providers": providers, "limits": limits, **options})
    if opts["state"] is not None and not _all_mock(providers):
        raise UsageError(
            f"state={str(opts['state'])!r} starts a MOCK bench: a real folder or database is never "
            "emptied to put a state folder on it (give providers='mock')"
        )
    # ctx.files' folder (Notochord): the options of capabilities the platform lacks are absent
    workspace, state_dir = opts.get("workspace"), opts["state_dir"]
    keep_runs, keep_run_days = opts["keep_runs"], opts["keep_run_days"]
    manifest = profile.load(Path(path))
    refresh_quietly(manifest)  # the editor's .gem-workbench/ types, when stale
    # ctx.resources' source: mock (fixtures/resources/<id>, `resources=`) or real (httpx)
    res_kind = providers if isinstance(providers, str) else dict(providers).get("resources", "mock")
    if isinstance(providers, dict) and "resources" in providers:
        providers = {k: v for k, v in providers.items() if k != "resources"} or "mock"
    if not isinstance(providers, str) and res_kind not in ("mock", "real"):
        raise UsageError(f"providers['resources']={res_kind!r}: use 'mock' or 'real'")
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
    inspector = _inspector(opts["inspect"], manifest)  # open(inspect=): before the sandbox starts
    clock = Clock()  # the bench's (ctx/clock.py): retention at open already follows it
    if opts["clock"] is not None:
        clock.freeze(opts["clock"])
    provs.use_clock(clock.time)
    if (housekeep := getattr(provs.files, "housekeep", None)) is not None:  # real files:
        housekeep(keep_runs=keep_runs, keep_days=keep_run_days)  # dead writers' temps, old runs
    try:
        kinds = {**provs.kind, "resources": res_kind}  # ctx.resources: mock or real (httpx)
        _make_backends(provs, manifest, profile, limits or profile.limits, options=opts, kinds=kinds)
        profile.opened(manifest)  # K4: effective names are claimed by one integration at a time
        bench = Bench(
            manifest,
            provs,
            conversation=opts.get("conversation", True),
            strict=opts["strict"],
            headless=(not desktop_has_trash()) if opts.get("headless") is None else opts["headless"],
            reuse=opts["reuse"],
            sandbox=SandboxOptions(timeout=opts["timeout"], memory_mb=opts["memory_mb"], inspector=inspector),
            limits=limits or profile.limits,
            profile=profile,
            clock=clock,
            seed=opts["seed"],
            pins=opts["pins"],
        )
        seed = Path(workspace) if workspace else manifest.root / "fixtures" / "workspace"
        if provs.kind["files"] == "mock" and seed.is_dir():
            seed_files(provs.files, seed)
        if opts["state"] is not None:  # after the fixtures: the state folder replaces them
            _put_state_dir(bench, Path(opts["state"]))
        if opts.get("account_storage") is not None:
            _seed_account(bench, opts["account_storage"])
        if any(t.language in ("javascript", "typescript") for t in manifest.tools.values()):
            bench.core.runner(
                "deno", bench.manifest, bench.providers, bench.profile
            ).warm()  # the first call finds the sandbox started
        if inspector is not None:
            _inspecting(bench, inspector)
        return bench
    except BaseException as exc:  # e.g. db/schema.sql fails: leave no connection open
        if inspector is not None:
            inspector.close()
        profile.closed(manifest)
        close_backends(provs)
        provs.data_db.close()
        provs.sql_db.close()
        if isinstance(exc, StateError):
            raise _state_error(exc, provs.state_dir) from None
        raise


def _inspector(mode: Any, manifest: Manifest) -> Any:
    """open(inspect=True | "wait"): the bench's Inspector (debug/inspector.py), when the gem has
    JS/TS tools (a Python tool is debugged in the kernel); None otherwise."""
    if not mode:
        return None
    if not any(t.language in ("javascript", "typescript") for t in manifest.tools.values()):
        print(
            f"inspect={mode!r}: {manifest.id} has no JS/TS tools, so no sandbox to inspect", file=sys.stderr
        )
        return None
    from ..debug.inspector import Inspector

    return Inspector(mode="wait" if mode == "wait" else True, title=manifest.id)


def _inspecting(bench: Bench, inspector: Any) -> None:
    """The bench owns its inspector: closed with it, its hold on calls ("wait"), its addresses
    printed (to stderr: beside a command's output, in a notebook's cell)."""
    from ..debug.inspector import print_addresses

    bench.core.finalizers.append(inspector.close)
    if (hold := inspector.hooks()) is not None:
        bench.core.add_hook(hold)
    print_addresses(inspector)


_written = [0]  # how many times _document ran


def _document() -> None:
    """help(workbench.open) and its signature: the options of the built-ins and of the plugins
    read so far, written again when plugins are read (reading them costs a scan of every
    installed distribution's metadata, which a first `open` of a built-in's gem does not pay)."""
    _written[0] += 1
    mine = _written[0]  # reading one group's plugins may read another's, and write it again
    doc = f"""Open the gem folder at `path` (its platform detected) on mock or real providers,
or a repro bundle (`*.gemrepro`, written by `bench.export`) on mock providers (docs/bundles.md).

Every option is keyword-only and belongs to a capability (ctx/spec.py); a platform takes the
options of the capabilities it has, and an option of another platform is a UsageError naming
the platform that has it. Each option: name: type = default  [the platforms that take it].

{open_doc(loaded_only=True)}
"""
    signature = _signature()
    if _written[0] == mine:  # no later (fuller) writing happened meanwhile
        open.__doc__, open.__signature__ = doc, signature  # type: ignore[attr-defined]


def _signature() -> inspect.Signature:
    """open()'s signature as help() and completion show it: every platform's option, keyword-only
    (mypy reads the real one above: providers, limits, **options)."""
    kw = inspect.Parameter.KEYWORD_ONLY
    return inspect.Signature(
        [
            inspect.Parameter(
                "path", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation="str | os.PathLike[str]"
            ),
            *(
                inspect.Parameter(n, kw, default=o.default, annotation=o.type)
                for n, (o, _) in every_option(loaded_only=True).items()
            ),
        ],
        return_annotation="Bench",
    )


_document()
on_loaded(_document)


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
    from ..ctx import specs_of
    from ..ctx.spec import OpenContext

    opening = OpenContext(
        manifest=manifest,
        profile=profile,
        limits=limits,
        options=options,
        kinds=kinds,
        state_dir=provs.state_dir or default_state_dir(manifest.id, manifest.root),
        backends=provs.backends,
    )
    for spec in specs_of(profile):
        if spec.backend is not None:
            provs.backends[spec.impl] = spec.backend(opening)


def _state_error(exc: StateError, state_dir: Any) -> WorkbenchError:
    return WorkbenchError(
        "E_STATE",
        f"the bench's state database in {state_dir} cannot be "
        f"used: {exc}. Move data.sqlite/sql.sqlite away (the gem starts empty) "
        "or open with another state_dir=",
        path=str(state_dir),
    )


def _seed_account(bench: Bench, records: Mapping[str, Any]) -> None:
    """`account_storage={key: value}`: stored as ctx.storage.account.set would (the same checks:
    ctx.account.checked), in one transaction."""
    from ..ctx.account import PREFIX, checked, stored

    if set(records) == {"account"} and isinstance(records["account"], Mapping):
        records = records["account"]  # createMockContext's {account: {…}}, accepted as is
    db, store = bench.providers.data_db, bench.providers.store
    for key, value in records.items():
        try:
            key, data = checked(key, value, bench.manifest, bench.profile, bench.limits)
        except WorkbenchError as exc:
            raise UsageError(f"account_storage: {exc.message}", **exc.details) from None
        store.kv_set(PREFIX + key, stored(data, now=bench.providers.now))
    if db.in_transaction:
        db.commit()


def _all_mock(providers: Any) -> bool:
    return providers == "mock" or (
        isinstance(providers, Mapping) and all(v == "mock" for v in providers.values())
    )


def _put_state_dir(bench: Bench, folder: Path) -> None:
    """`state=DIR`: the state folder's entries put on the fresh mock bench, each checked."""
    from ..bundles.statedir import read_state_dir
    from ..ctx.statejson import put_state

    state = read_state_dir(folder, bench.limits, gem=bench.manifest.id)
    put_state(bench, state, code="E_STATE", label=str(folder))


def _open_bundle(path: Path, *, providers: Any, limits: Limits | None, options: dict[str, Any]) -> Bench:
    """`workbench.open("x.gemrepro")`: the bundle read and checked (bundles/read.py), its gem
    unpacked into a temporary folder the bench owns (removed when it closes), refused when it
    would run host code unless `trust=True` (E_TRUST), opened on mock providers with the
    bundle's seed and clock (options given win), and its state and setup put."""
    import shutil
    import tempfile
    import weakref

    from ..bundles.read import check_trust, read_bundle, unpack
    from ..ctx.state import put
    from ..ctx.statejson import put_state

    if not _all_mock(providers):
        raise UsageError(f"{path}: a bundle opens on mock providers (its state is put on them)")
    if options.get("state") is not None:
        raise UsageError(f"{path}: give a bundle or state=, not both (the bundle has its state)")
    options = dict(options)
    trust = options.pop("trust", False)
    if not isinstance(trust, bool):
        raise UsageError(f"trust={trust!r}: give True or False", option="trust")
    bundle = read_bundle(path, limits)
    meta, clock = bundle.meta, bundle.meta["clock"]
    folder = Path(tempfile.mkdtemp(prefix="gw-bundle-"))
    try:
        gem = unpack(bundle, folder / "gem")
        check_trust(path, gem, trust)  # before the bench exists: nothing of the gem is imported yet
        opts: dict[str, Any] = {"seed": meta["seed"], "state_dir": folder / "state", **options}
        if clock["mode"] == "frozen":
            opts.setdefault("clock", clock["at"])
        bench = open(gem, limits=limits, **opts)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    bench.core.finalizers.append(weakref.finalize(bench, shutil.rmtree, str(folder), True))
    try:
        if (bench.manifest.id, bench.profile.name) != (meta["gem"], meta["platform"]):
            raise WorkbenchError(
                "E_BUNDLE",
                f"{path}: bundle.json: claims gem {meta['gem']!r} on {meta['platform']!r}, but its gem "
                f"files are {bench.manifest.id!r} on {bench.profile.name!r}",
                file=str(path),
                entry="bundle.json",
            )
        put_state(bench, bundle.state, code="E_BUNDLE", label=f"{path}: state.json")
        # how its bench was set up (allowed recipients and accounts, secrets as stand-ins, served
        # answers, faults); the clock and seed are the open's own options above, which the
        # caller may have given otherwise
        setup = {k: v for k, v in (meta.get("setup") or {}).items() if k != "bench"}
        put(bench, setup, code="E_BUNDLE", label=f"{path}: bundle.json: setup", roles=("setup",), empty=False)
        if clock["mode"] == "running" and "clock" not in options:
            bench.clock.set(clock["at"])
    except BaseException:
        bench.close()
        raise
    return bench
