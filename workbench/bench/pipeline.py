"""One call, end to end: the call's id and result, the edit check, the tool and its input, the
CallSession, the runner, a crash or an aborted invocation, the JSON check of the value, secrets
masked (K6, SEC4), the platform's verdict on the value (K2), the result kept in `bench.results`.

Every call goes through here: `Bench.call`, its crash reruns (`bench/crash.py`, N7) and email
triggers (`BenchEmail.arrive`, through `Bench.call`) through `call`, an agent tool's
`ctx.tools.<own tool>(input)` through `nested` (A3–A5), which shares the runner, the trace's
accounting, the JSON check, masking and the verdict. It names no platform: what differs is the
bench's profile (`Profile.judge`, `call_values`, grants) and the session's capabilities.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import time
from collections.abc import Sequence
from stat import S_ISREG
from typing import TYPE_CHECKING, Any

from .._errors import CallInterrupted, WorkbenchError, internal_error
from .._json import to_json
from ..ctx import CallSession, Capabilities, CtxCrash, Invocation
from ..ctx.hooks import asked
from ..ctx.http import state_of as http_state
from ..ctx.limits import deadline_after
from ..ctx.masking import mask_shown
from ..ctx.tools import envelope
from ..runners import RUNNER_FOR, Outcome
from .hints import explain_absent
from .reload import tool_file_error
from .result import NONE, CallResult

if TYPE_CHECKING:
    from ..ctx.hooks import CallHooks
    from ..ctx.http_credentials import HttpState
    from ..gem import ToolSpec
    from ..runners import Runner
    from .bench import Bench
    from .core import CallIdentity


def call(
    bench: Bench,
    name: str,
    input: Any = None,
    *,
    identity: CallIdentity | None = None,
    fresh: bool | None = None,
    options: dict[str, Any] | None = None,
    hooks: Sequence[CallHooks] = (),
) -> CallResult:
    """Call tool `name` of `bench` as the platform would (taking the bench's lock); the result,
    also appended to `bench.results`. identity: what the call repeats of another (its id, the
    idempotencyKey a crash rerun keeps, seeds, clock reads); fresh: a fresh module (None: the
    bench's `reuse`); options: the platform's per-call options ({"as_user", "conversation"});
    hooks: features taking part in this call, after the bench's standing ones (ctx/hooks.py)."""
    core = bench.core
    with core.lock:
        started = bench.clock.time()  # the bench's clock (ctx/clock.py): the id's time of day too
        t0 = time.perf_counter()
        # one read of the randomness for both: the bench's seed's, else its own stream's
        token = token_hex(bench, 19) if bench.seed is not None else core.token()
        second = int(started)
        if second != core.second[0]:  # the call ids' time of day, formatted once a second
            core.second = (second, time.strftime("%Y%m%d-%H%M%S", time.localtime(second)))
        args = {} if input is None else input
        res = CallResult(
            call_id=f"{core.second[1]}-{token[:6]}",
            tool=name,
            input=args,
            started=started,
            idempotency_key=token[6:],
        )
        if identity is not None:  # a pinned call's replay: the ids and draws it had
            res.call_id = identity.call_id or res.call_id
            res.idempotency_key = identity.key or res.idempotency_key
        every = (*core.hooks, *hooks) if hooks else core.hooks
        known = core.asked if not hooks else asked(every)
        session = None
        try:
            session = _steps(
                bench, res, name, args, identity, every, known, fresh=fresh, options=options or {}
            )
        except WorkbenchError:
            raise  # coded already: a sandbox that cannot start says so (E_SANDBOX)
        except Exception as exc:  # SEC7: the workbench's own bug, said in the result, not raised
            res.value, res.error = None, internal_error("bench.call", exc)
        except KeyboardInterrupt:  # Ctrl-C: the call is a row of bench.calls(), then the cell stops
            res.value, res.error = None, interrupted_error(res)
            for hook in every:
                hook.on_call_end(session=session, result=res)
            _keep(bench, res, t0)
            raise CallInterrupted(f"{res.tool}: {res.error.message}", res) from None
        for hook in every:  # every top-level call, also one refused before it ran (no session)
            hook.on_call_end(session=session, result=res)
        _keep(bench, res, t0)
        return res


def _keep(bench: Bench, res: CallResult, t0: float) -> None:
    res.duration_ms = (time.perf_counter() - t0) * 1000
    res.pinner = bench.core.pinner
    bench.results.append(res)


def interrupted_error(res: CallResult) -> WorkbenchError:
    """E_INTERRUPTED for a call Ctrl-C stopped: how far it got, and that its writes stay (the
    call's storage transaction is committed at its end, interrupted or not)."""
    n = res.ctx_calls
    how = f"after {n} ctx call{'s' if n != 1 else ''}" if n else "before its first ctx call"
    kept = "what it wrote before was kept" if n else "it wrote nothing through ctx"
    return WorkbenchError(
        "E_INTERRUPTED",
        f"interrupted (Ctrl-C) {how}, call {res.call_id}; {kept} (bench.calls() lists it)",
        ctx_calls=n,
        call_id=res.call_id,
    )


def token_hex(bench: Bench, nbytes: int) -> str:
    """`nbytes` random bytes as hex: the bench's seeded stream when it has a seed (ids that a
    second bench with the same seed repeats), the system's randomness otherwise."""
    # ids and keys need to be unique, not unpredictable: without a seed they come from the
    # bench's own stream, seeded from the system's randomness (os.urandom cost a call 1 µs)
    rng = bench.core.rng if bench.seed is not None else bench.core.draws
    return f"{rng.getrandbits(nbytes * 8):0{nbytes * 2}x}"


def call_seed(seed: int | None, seq: int | str) -> int | None:
    """The seed of a bench's `seq`th call (CallSession.seed; a nested call: its caller's seed and
    its id): 31 bits of a hash of both, the
    same on every machine and Python (not `hash()`); None when the bench has no seed."""
    if seed is None:
        return None
    digest = hashlib.sha256(f"{seed}:{seq}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _steps(
    bench: Bench,
    res: CallResult,
    name: str,
    args: Any,
    identity: CallIdentity | None,
    hooks: Sequence[CallHooks],
    known: tuple[tuple[CallHooks, ...], bool],
    *,
    fresh: bool | None,
    options: dict[str, Any],
) -> CallSession | None:
    """Reload an edited definition, find the tool, check the input and run it, into `res`; the
    call's session (None: refused before it ran)."""
    if bench.core.edited():  # the gem's definition was edited: load it again
        try:
            bench.reload()
        except WorkbenchError as exc:
            res.error = WorkbenchError(
                exc.code, f"the gem's definition changed and {exc.message}", **exc.details
            )
            return None
    tool = bench.manifest.tool(name)
    if tool is None:
        res.error = WorkbenchError(
            "E_UNKNOWN_TOOL",
            bench.manifest.no_tool(name),
            tool=name,
        )
        return None
    res.tool = tool.name  # called by another of its names (an Ekanos effective name)
    args, res.error = bench.core.check_input(tool, args, bench.profile, bench.limits)
    if res.error is not None:
        return None
    res.error, mtime = _tool_file(bench, tool)
    if res.error is not None:
        return None
    session = _session(bench, tool, res, identity, known, options=options)
    _run(bench, tool, args, res, session, hooks, identity, fresh=fresh, mtime=mtime, options=options)
    return session


def _tool_file(bench: Bench, tool: ToolSpec) -> tuple[WorkbenchError | None, int | None]:
    """The tool file's check (reload.tool_file_error: still a regular file?), made again only
    when one stat says the file is another than the one checked last (a swapped link, a FIFO,
    an edit): resolving and opening it before every call was a third of a call's cost. With
    its mtime, which the runner takes instead of a stat of its own."""
    files = bench.core.files_checked
    known = files.get(tool.name)
    path = known[0] if known is not None else os.fspath(tool.file)
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        st = None
    seen = (st.st_dev, st.st_ino, st.st_mtime_ns) if st is not None and S_ISREG(st.st_mode) else None
    if seen is not None and known is not None and known[1] == seen:
        return None, seen[2]
    error = tool_file_error(bench.manifest, tool)
    files[tool.name] = (path, seen if error is None else None)
    return error, seen[2] if error is None and seen is not None else None


def check_input(bench: Bench, tool: ToolSpec, args: Any) -> tuple[Any, WorkbenchError | None]:
    """The input as `tool` receives it on `bench`, or E_SCHEMA naming the field (N8)."""
    return bench.core.check_input(tool, args, bench.profile, bench.limits)


def _session(
    bench: Bench,
    tool: ToolSpec,
    res: CallResult,
    identity: CallIdentity | None,
    known: tuple[tuple[CallHooks, ...], bool],
    *,
    options: dict[str, Any],
) -> CallSession:
    """The top-level call's session: the bench's providers, grants, allowlists and hooks, its
    clock at the call's start and its seed."""
    core = bench.core
    core.count += 1
    # a hook that keeps the call (a pin) needs its draws repeatable: its ids seed, clock reads
    on_ctx, keeps = known
    mode = bench.clock.mode  # "real", "running" or "frozen"
    start: float | None
    if identity is None:  # (most calls: nothing repeated of another)
        seed = None if bench.seed is None else call_seed(bench.seed, core.count)
        # without a seed, a call that can be pinned still draws its document ids from a seed of
        # its own, kept with it: its replay gives the same ids (Math.random, crypto: the system's)
        ids = core.draws.getrandbits(31) if seed is None and keeps else None
        ticks, frozen, start = None, mode == "frozen", res.started * 1000
    else:
        seed, ids, ticks, frozen, start = _repeated(bench, identity, res, keeps, mode)
    return CallSession(
        invocation=Invocation(),
        clock_ms=start if mode != "real" else None,
        clock_frozen=frozen,
        seed=seed,
        ids_seed=ids,
        ticks=ticks,
        keeps_reads=keeps,
        hooks=on_ctx,
        call_id=res.call_id,
        tool=tool,
        manifest=bench.manifest,
        providers=bench.providers,
        conversation=bench.conversation,
        strict=bench.strict,
        trash=not bench.headless,
        http=http_state(bench.providers),
        idempotency_key=res.idempotency_key,
        deadline=deadline_after(core.sandbox_options.timeout),
        limits=bench.limits,
        profile=bench.profile,
        values=_values(bench, res, options, seed, ids),
        nest=core.nest or _nest(bench),
    )


def _repeated(
    bench: Bench, identity: CallIdentity, res: CallResult, keeps: bool, mode: str
) -> tuple[int | None, int | None, list[float] | None, bool, float | None]:
    """The draws and times of a call that repeats another's `identity` (a pinned call's
    replay, a crash rerun): its seed, ids seed, sandbox clock reads, whether its clock stands,
    and its start in ms."""
    given = identity.given
    seed = identity.seed if "seed" in given else call_seed(bench.seed, bench.core.count)
    ids = identity.ids if "ids" in given else None
    if seed is None and ids is None and keeps:
        ids = bench.core.draws.getrandbits(31)
    # a replay of a call pinned on a running clock: the reads it drew, served again on a
    # clock that runs from the pinned start (the bench's stands there, frozen)
    ticks = identity.ticks if isinstance(identity.ticks, list) else None
    # its start to the bit (the bench's clock holds seconds: ms / 1000 * 1000 may not round-trip)
    pinned = identity.clock_ms
    start = pinned if type(pinned) in (int, float) and mode == "frozen" else res.started * 1000
    return seed, ids, ticks, mode == "frozen" and ticks is None, start


def _values(
    bench: Bench, res: CallResult, options: dict[str, Any], seed: int | None, ids: int | None
) -> dict[str, Any]:
    """The platform's per-call values (A2), given the call's options and drawn token."""
    values = bench.profile.call_values
    if values is None:  # (most platforms: no token to draw)
        return {}
    return values(bench.manifest, {"call_id": res.call_id, **options, **_token(seed, ids)})


def _nest(bench: Bench) -> Any:
    """What runs ctx.tools.<own tool> for the bench's calls (made once per bench)."""
    bench.core.nest = functools.partial(nested, bench)
    return bench.core.nest


def _token(seed: int | None, ids: int | None, salt: str = "token") -> dict[str, str]:
    """{"token": 24 hex digits} drawn from the call's seed (else its id seed) and `salt` for
    the ids the platform hands the call (an agent's toolCallId): a replay given the same seeds
    repeats them. Nothing when the call has neither (the platform draws its own)."""
    root = seed if seed is not None else ids
    if root is None:
        return {}
    return {"token": hashlib.blake2b(f"{root}:{salt}".encode(), digest_size=12).hexdigest()}


def _nested_token(bench: Bench, parent: CallSession, call_id: str) -> str:
    """A nested call's toolCallId digits: from its caller's seeds and its own id (numbered in
    the caller: a replay repeats it), else the bench's randomness."""
    return _token(parent.seed, parent.ids_seed, call_id).get("token") or token_hex(bench, 12)


def _runner(bench: Bench, tool: ToolSpec) -> Runner | None:
    """The bench's runner of the tool's language (made on first use); None: none runs it."""
    kind = RUNNER_FOR.get(tool.language)
    if kind is None:
        return None
    return bench.core.runner(kind, bench.manifest, bench.providers, bench.profile)


def _run(
    bench: Bench,
    tool: ToolSpec,
    args: Any,
    res: CallResult,
    session: CallSession,
    hooks: Sequence[CallHooks],
    identity: CallIdentity | None,
    *,
    fresh: bool | None,
    mtime: int | None,
    options: dict[str, Any],
) -> None:
    caps = Capabilities(session)
    for hook in hooks:
        hook.on_call_start(session=session, result=res)
    # the times the ctx layer reads while it runs, kept for its pin when the clock runs (a
    # frozen one repeats them anyway), and a replay's served again
    served = identity.times if identity is not None and isinstance(identity.times, list) else None
    taped = session.keeps_reads and (served is not None or not bench.clock.frozen)
    if taped:
        bench.clock.tape(served)
    if fresh is None:
        fresh = bench.reuse == "never" or (bench.reuse == "random" and bench.core.rng.random() < 0.5)
    outcome: Outcome | None = None
    caps.begin()  # opened at the tool's first ctx call (E_BUSY then fails the call)
    try:
        runner = _runner(bench, tool)
        if runner is not None:
            outcome = runner.call(tool, args, caps, fresh=fresh, mtime=mtime)
        else:
            res.error = WorkbenchError(
                "E_UNSUPPORTED",
                f"{tool.rel_file}: .wasm tools are not run by this version of the workbench",
                file=tool.rel_file,
            )
    except CtxCrash as exc:  # N7: the simulated crash of call(crash=N)
        outcome = _crashed(bench, tool, exc)
    finally:
        failed = caps.end()
        _record(session, res)
        res.violations = session.violations or NONE
        session.finish(res)  # each capability's part: surfaced files, nested calls, log rows
        times = (bench.clock.untape() or NONE) if taped else None
        res.replay = {
            "seed": session.seed,
            "ids": session.ids_seed,
            "clock_ms": session.clock_ms,
            "frozen": session.clock_frozen,
            "ticks": session.ticks,
            "times": times,
            "options": options,
        }
    if failed is None and session.aborted is not None:  # A5: whatever the tool did after
        failed = session.aborted
    if failed is not None:
        res.logs, res.error = outcome.logs if outcome else "", failed
        res.warnings = [w for w in session.warnings if w.startswith("K6:")]  # a leak, said anyway
    elif outcome is not None:
        res.logs = outcome.logs
        if session.warnings or outcome.warnings:
            res.warnings = [*session.warnings, *outcome.warnings]
        if outcome.error is not None:
            res.error = explain_absent(outcome.error, tool, bench.profile, session.grants)
        else:
            res.value, res.error = _value(bench, outcome)
    _conclude(bench, tool, session.http, res)


def nested(bench: Bench, parent: CallSession, tool: ToolSpec, input: Any) -> Any:
    """ctx.tools.<own tool>(input) (A3): the gem's tool run as a nested invocation — its
    input checked against its schema (an envelope if not), the caller's deadline, limit of
    cross-tool calls and activity log shared. Its failure is raised to the caller (a
    dispatch failure, A4); its result is returned. It is in `bench.calls()` with its parent."""
    t0 = time.perf_counter()
    res = CallResult(
        call_id=f"{parent.call_id}.{len(parent.invocation.calls)}",
        tool=tool.name,
        input=input,
        started=bench.clock.time(),
        idempotency_key=parent.idempotency_key,
        parent=parent.call_id,
    )
    try:
        args, res.error = check_input(bench, tool, {} if input is None else input)
        if res.error is not None:
            return envelope("invalid_input", tool=tool.name, message=res.error.message)
        res.value = _run_nested(bench, parent, tool, args, res)
        return res.value
    except WorkbenchError as exc:
        res.error = exc
        raise
    except KeyboardInterrupt:  # Ctrl-C inside the nested call: its row says so, as its caller's
        res.error = interrupted_error(res)
        raise
    except BaseException as exc:  # the ctx layer makes it E_INTERNAL for the caller: say so here
        res.error = WorkbenchError("E_INTERNAL", f"ctx.tools.{tool.name}: {type(exc).__name__}: {exc}")
        raise
    finally:
        _conclude(bench, tool, parent.http, res)  # the caller's HTTP state: its secrets
        res.duration_ms = (time.perf_counter() - t0) * 1000
        bench.results.append(res)
        parent.of("tools").children.append(res)  # ctx.tools' state: it made this call


def _run_nested(bench: Bench, parent: CallSession, tool: ToolSpec, args: Any, res: CallResult) -> Any:
    runner = _runner(bench, tool)
    if runner is None:
        raise WorkbenchError(
            "E_UNSUPPORTED",
            f"ctx.tools.{tool.name}: the workbench does not run {tool.language} tools",
            tool=tool.name,
        )
    # the caller's session: its invocation (transaction, deadline, budgets), grants' owner and
    # warnings, each capability's state as its `nested()` says (audit log and allowlists
    # shared); its own trace, counters and tool call id
    session = dataclasses.replace(
        parent,
        call_id=res.call_id,
        tool=tool,
        trace=[],
        kept=0,  # what its own trace keeps, counted in its CallResult (the budget is shared)
        ctx_calls=0,
        violations=[],
        values={**parent.values, "toolCallId": f"call_{_nested_token(bench, parent, res.call_id)}"},
        clock_ms=res.started * 1000 if bench.clock.virtual else None,  # the nested call's start
        seed=call_seed(parent.seed, res.call_id),  # its own: the caller's seed and its id
        state=parent.child_state(),  # ctx.audit numbers its rows anew; surfaced files are shared
    )
    session.of("tools").children = res.children = []  # its own nested calls are its result's
    try:
        outcome = runner.call(tool, args, Capabilities(session), fresh=False)
    finally:
        session.ended = True
        _record(session, res)  # bench.results counts it (it was 0: a nested trace was free)
    res.logs = outcome.logs
    if outcome.error is not None:
        raise WorkbenchError(
            outcome.error.code,
            f"ctx.tools.{tool.name}: the tool failed: {outcome.error.message}",
            tool=tool.name,
        )
    value, err = _value(bench, outcome)
    if err is not None:
        raise WorkbenchError(err.code, f"ctx.tools.{tool.name}: {err.message}", tool=tool.name)
    return value


def _crashed(bench: Bench, tool: ToolSpec, exc: CtxCrash) -> Outcome:
    """N7: the crashed run's outcome; a JS tool's sandbox process is killed at that point (the
    rerun is `_crash.crash_call`'s)."""
    # a sandbox is killed with the call in flight; a Python tool's output is on the exception
    runner = _runner(bench, tool)
    logs = (runner.crash() if runner is not None else "") or exc.logs
    return Outcome(
        error=WorkbenchError(
            "E_SANDBOX",
            f"simulated crash after ctx call {exc.after} (N7): the run was aborted "
            "and the call is rerun with the same idempotencyKey",
            capability="crash",
            crashed_after=exc.after,
        ),
        logs=logs,
    )


def _record(session: CallSession, res: CallResult) -> None:
    """What the call's trace listed and kept, into its result (SEC5 counts it per bench)."""
    # (no rows: the results' shared empty list, not one more for the garbage collector to walk)
    res.trace_rows, res.calls_made = session.trace or NONE, session.ctx_calls
    res.trace_chars = session.kept


def _value(bench: Bench, outcome: Outcome) -> tuple[Any, WorkbenchError | None]:
    """The returned value as the caller receives it: JSON within N9's size and the depth bound
    (a Python runner checked it already, where the tool's own code may run)."""
    if outcome.checked:
        return outcome.value, None
    return to_json(
        outcome.value,
        text=outcome.json,
        max_chars=bench.limits.result_chars,
        max_depth=bench.limits.json_depth,
    )


def _conclude(bench: Bench, tool: ToolSpec, http: HttpState | None, res: CallResult) -> None:
    """K6/SEC4: a secret the tool printed or threw is shown masked (`http` holds the secrets the
    bench has seen); K2 and the like: the platform's verdict on a returned value (an expected
    failure, warnings about its shape)."""
    if http is not None and http.has_secrets:  # (the bench has seen none: nothing to mask)
        said = (res.logs, res.error.message if res.error is not None else None)
        res.logs = mask_shown(http, res.logs, res.error)
        for where, before, now in (
            ("the console output", said[0], res.logs),
            ("the error", said[1], res.error.message if res.error is not None else None),
        ):
            if before != now:  # K6: a secret the tool printed or threw, said once
                res.warnings = [*res.warnings, f"K6: a secret's value reached {where} (shown masked as ***)"]
    if res.error is None:
        verdict = bench.profile.judge(bench.manifest, tool, res.value)
        if verdict.expected_failure:
            res.expected_failure = True
        if verdict.warnings:
            res.warnings = [*res.warnings, *verdict.warnings]
