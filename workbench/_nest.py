"""ctx.tools.<own tool>(input) for agent tools (A3–A5): the gem's tool run as a nested
invocation of the calling one. The ctx layer runs no tool: it calls this through the session's
`nest` hook, which the bench sets."""

from __future__ import annotations

import dataclasses
import secrets
import time
from typing import TYPE_CHECKING, Any

from ._errors import WorkbenchError
from ._json import to_json
from ._result import CallResult
from .ctx import Capabilities
from .ctx.tools import envelope
from .runners import RUNNER_FOR

if TYPE_CHECKING:
    from ._bench import Bench
    from .ctx import CallSession
    from .gem import ToolSpec


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
        started=time.time(),
        idempotency_key=parent.idempotency_key,
        parent=parent.call_id,
    )
    try:
        args, res.error = bench._check_input(tool, {} if input is None else input)
        if res.error is not None:
            return envelope("invalid_input", tool=tool.name, message=res.error.message)
        res.value = _run(bench, parent, tool, args, res)
        return res.value
    except WorkbenchError as exc:
        res.error = exc
        raise
    except BaseException as exc:  # the ctx layer makes it E_INTERNAL for the caller: say so here
        res.error = WorkbenchError("E_INTERNAL", f"ctx.tools.{tool.name}: {type(exc).__name__}: {exc}")
        raise
    finally:
        res.duration_ms = (time.perf_counter() - t0) * 1000
        bench.results.append(res)
        parent.of("tools").children.append(res)


def _run(bench: Bench, parent: CallSession, tool: ToolSpec, args: Any, res: CallResult) -> Any:
    kind = RUNNER_FOR.get(tool.language)
    if kind is None:
        raise WorkbenchError(
            "E_UNSUPPORTED",
            f"ctx.tools.{tool.name}: the workbench does not run {tool.language} tools",
            tool=tool.name,
        )
    session = dataclasses.replace(
        parent,
        call_id=res.call_id,
        tool=tool,
        trace=[],
        kept=0,  # what its own trace keeps, counted in its CallResult (the budget is shared)
        ctx_calls=0,
        violations=[],
        values={**parent.values, "toolCallId": f"call_{secrets.token_hex(12)}"},
        state=parent.child_state(),  # ctx.audit numbers its rows anew; surfaced files are shared
    )
    session.of("tools").children = res.children  # its own nested calls are its result's
    try:
        outcome = bench._runner(kind).call(tool, args, Capabilities(session), fresh=False)
    finally:
        session.ended = True
        res.trace_rows, res.calls_made = session.trace, session.ctx_calls
        res.trace_chars = session.kept  # bench.results counts it (it was 0: a nested trace was free)
    res.logs = outcome.logs
    if outcome.error is not None:
        raise WorkbenchError(
            outcome.error.code,
            f"ctx.tools.{tool.name}: the tool failed: {outcome.error.message}",
            tool=tool.name,
        )
    if outcome.checked:
        return outcome.value
    value, err = to_json(
        outcome.value,
        text=outcome.json,
        max_chars=bench.limits.result_chars,
        max_depth=bench.limits.json_depth,
    )
    if err is not None:
        raise WorkbenchError(err.code, f"ctx.tools.{tool.name}: {err.message}", tool=tool.name)
    return value
