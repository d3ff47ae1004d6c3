"""`bench.doctor()` / `gem-workbench doctor GEM` (issue 30): find the bugs an author did not
think of, each finding shrunk and kept as a pinned regression case.

The doctor searches every tool (or one) with inputs from its schema on the gem's fixtures and on
an empty state (run.py), checks every call (findings.py), probes the examples that ran for N5,
determinism and N7, then writes each finding as a case under `tests/calls/doctor/<tool>/`,
which `gem-workbench test` replays: it fails while the finding still occurs and passes once the
tool is fixed. The bench's state and clock are as they were when it returns.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from .._errors import UsageError
from .findings import KINDS, Finding
from .report import DoctorReport
from .run import Search, Start, ToolStats
from .sequences import invariants, search_sequences

if TYPE_CHECKING:
    from .._bench import Bench

__all__ = ["DoctorReport", "Finding", "doctor", "recheck"]


def doctor(
    bench: Bench,
    *,
    tool: str | None = None,
    seconds: float = 60.0,
    examples: int | None = None,
    seed: int = 0,
    write: bool = True,
) -> DoctorReport:
    """Search the bench's tools for findings (see the module); returns the report."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= 86_400:
        raise UsageError(f"seconds={seconds!r}: give a number of seconds (0 < s <= 86400)")
    if examples is not None and (isinstance(examples, bool) or not isinstance(examples, int) or examples < 1):
        raise UsageError(
            f"examples={examples!r}: give a whole number >= 1, or None (as many as the time allows)"
        )
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise UsageError(f"seed={seed!r}: give a whole number")
    real = sorted(k for k, v in bench.provider_kinds.items() if v == "real")
    if real:  # thousands of calls, the state put back between them: never on the user's own
        raise UsageError(
            f"the doctor puts the state back thousands of times: open the gem on mock providers "
            f"(its {', '.join(real)} on real providers would be overwritten); give fixtures instead"
        )
    names = list(bench.manifest.tools)
    if tool is not None:
        found = bench.manifest.tool(tool)
        if found is None:
            raise UsageError(
                f"tool={tool!r}: no such tool in gem {bench.manifest.id} (tools: {', '.join(names)})"
            )
        names = [found.name]
    t0 = time.monotonic()
    checks = invariants(bench.manifest.root)  # tests/doctor.py: the author's, run in-process
    clock = bench.clock
    was = (clock.mode, clock.time())
    fixtures = bench.snapshot()
    try:
        clock.freeze(clock.time())  # every example at one time: what differs is the tool's doing
        starts = [Start("fixtures", fixtures), Start("empty", _empty(bench))]
        search = Search(bench, starts=starts, seed=seed, deadline=t0 + seconds, examples=examples)
        share = seconds * 0.7 / len(names)
        for name in names:
            spec = bench.manifest.tools[name]
            search.tool(spec, share)
        for name in names:
            search.probes(bench.manifest.tools[name])
        if tool is None and len(names) > 1 or checks:  # states the gem's own tools build
            left = seconds - (time.monotonic() - t0)
            search_sequences(search, max(left * 0.8, seconds * 0.1), checks, names)
        if write:
            for finding in search.findings:
                finding.case = _pin(bench, search, finding, seed)
    finally:
        bench.restore(fixtures)
        if was[0] == "real":
            clock.real()
        elif was[0] == "frozen":
            clock.freeze(was[1])
        else:
            clock.set(was[1])
    return DoctorReport(bench.manifest.id, search.findings, search.stats, time.monotonic() - t0, seed)


def _empty(bench: Bench) -> Any:
    """A snapshot of the bench with nothing in its files and storage."""
    from ..ctx.statejson import put_state

    put_state(bench.providers, bench.limits, {}, code="E_USAGE", label="(empty)")
    return bench.snapshot()


def _pin(bench: Bench, search: Search, finding: Finding, seed: int) -> Any:
    """Write `finding` as a case, tests/calls/doctor/<tool>/<kind>.json: its example run again
    on its start state, and what a recheck needs."""
    from .._pins import build_case, case_path, case_text, write_case

    if not bench.pins:
        return None
    spec = bench.manifest.tools[finding.tool]
    start = finding.extra.get("start", 0)
    steps = finding.extra.get("steps") or []
    if steps:  # a state built by a sequence: built again, then the call (its case holds the state)
        bench.restore(search.starts[start].snapshot)
        for i, (name, value) in enumerate(steps):
            search.call(bench.manifest.tools[name], value, None, n=100 + i)
        res = search.call(spec, finding.input, None, n=100 + len(steps))
    else:
        res = search.call(spec, finding.input, start)
    case = build_case(bench, res)
    tools = bench.providers.backends.get("tools")
    case["doctor"] = {
        "recipients": list(getattr(tools, "recipients", ())),  # send_email's allowlist (agent)
        "kind": finding.kind,
        "rule": finding.rule,
        "message": finding.message,
        "start": finding.start,
        "seed": seed,
        **{k: v for k, v in finding.extra.items() if k not in ("start", "steps")},
        "built_by": [{"tool": n, "input": v} for n, v in steps],
    }
    path = case_path(bench.manifest.root, finding.tool, finding.kind, under="doctor")
    return write_case(path, case_text(bench, case))


def recheck(bench: Bench, case: dict[str, Any]) -> list[str]:
    """Whether a doctor case's finding still occurs on `bench`, whose state is the case's:
    a line saying so, or [] once the tool is fixed."""
    doctor_ = case.get("doctor")
    kind = doctor_.get("kind") if isinstance(doctor_, dict) else None
    spec = bench.manifest.tool(str(case.get("tool")))
    if kind not in KINDS or spec is None:
        return [f"doctor: kind {kind!r} or tool {case.get('tool')!r} is not one this workbench checks"]
    assert isinstance(doctor_, dict)
    seed = doctor_["seed"] if isinstance(doctor_.get("seed"), int) else 0
    search = Search(bench, starts=[Start("case", bench.snapshot())], seed=seed, deadline=math.inf, examples=1)
    search.stats[spec.name] = ToolStats()
    search.served = case.get("served") if isinstance(case.get("served"), list) else []
    recipients = doctor_.get("recipients")
    if isinstance(recipients, list) and recipients and "tools" in bench.providers.backends:
        bench.allow_recipients(*[r for r in recipients if isinstance(r, str)][:100])
    input = case.get("input")
    if kind in ("N5", "nondeterministic"):
        search._memory(spec, 0, input)
    elif kind == "N7":
        search._crash(spec, 0, input)
    elif kind == "invariant":
        from .sequences import broken_invariant, invariants

        search.call(spec, input, 0)
        broken = broken_invariant(bench, invariants(bench.manifest.root))
        if broken is not None:
            search._add(spec, "invariant", 0, input, f"after {spec.name}: {broken}")
    else:
        for k, message in search.check(spec, input, 0, valid=kind != "N8", envelopes=kind == "envelope"):
            search._add(spec, k, 0, input, message)
    return [
        f"the doctor's finding {f.kind} ({f.rule}) still occurs: {f.message}"
        for f in search.findings
        if f.kind == kind
    ]
