"""`bench.doctor()` / `gem-workbench doctor GEM` (issue 30): find the bugs an author did not
think of, each finding shrunk and kept as a pinned regression case.

The doctor searches every tool (or one) with inputs from its schema on the gem's fixtures and on
an empty state (run.py), checks every call (findings.py), probes the examples that ran for N5,
determinism and N7, then writes each finding as a case under `tests/calls/doctor/<tool>/`,
which `gem-workbench test` replays: it fails while the finding still occurs and passes once the
tool is fixed. It runs only where every effect stays inside the bench, within `seconds=` of wall
clock, and leaves the bench as it found it (guard.py).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from .._errors import UsageError
from ..gem.near import meant
from .findings import KINDS, Finding
from .guard import HardStop, Kept, OutOfShare, OutOfTime, refuse_real
from .probes import crash, memory, probes
from .report import DoctorReport
from .run import Search, Start, ToolStats
from .seeds import gather
from .sequences import invariants, search_sequences

if TYPE_CHECKING:
    from ..bench.bench import Bench

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
    refuse_real(bench)  # thousands of calls: never where they act outside the bench
    names = list(bench.manifest.tools)
    if tool is not None:
        found = bench.manifest.tool(tool)
        if found is None:
            raise UsageError(
                f"tool={tool!r}: no such tool in gem {bench.manifest.id} (tools: {', '.join(names)})"
                + meant(tool, names)
            )
        names = [found.name]
    loading = time.monotonic()
    _preload(bench)  # (a second or more on a fresh bench: not the search's, said apart in the report)
    t0 = time.monotonic()
    end = t0 + seconds
    checks = invariants(bench.manifest.root)  # tests/doctor.py: the author's, run in-process
    kept = Kept(bench)  # its calls, clock and seed stream; the setup and logs (ctx.state)
    fixtures = bench.snapshot()
    search = Search(bench, starts=[Start("fixtures", fixtures)], seed=seed, deadline=end, examples=examples)
    search.seeds = gather(bench)  # where the search starts: what the gem knows
    stop = search.stop = HardStop(end)
    stopped = False
    try:
        with stop:
            try:
                try:
                    _search(bench, search, names, checks, tool, t0, seconds)
                except OutOfTime:  # its nine tenths are spent: what it found is pinned in the rest
                    stop.heard()
                    stopped = True
                    search.flush()  # what it found and had not shrunk yet: as found
                    if stop.fired:  # a call cut off mid-way (not between calls): a new sandbox
                        _fresh_sandbox(bench)
                search.deadline = end
                if write:
                    for finding in search.findings:
                        if finding.kind != "schema":  # no input to run again
                            p0 = time.monotonic()
                            try:
                                finding.case = _pin(bench, search, finding, seed)
                            finally:
                                stats = search.stats.setdefault(finding.tool, ToolStats())
                                stats.pin_seconds += time.monotonic() - p0
            except OutOfTime:  # the run's end (seconds=): a finding not pinned has no case
                stop.disarm()
                stopped = True
                _fresh_sandbox(bench)
    finally:
        stop.disarm()
        try:
            bench.restore(fixtures)
        finally:
            kept.put_back()
    return DoctorReport(
        bench.manifest.id,
        search.findings,
        search.stats,
        time.monotonic() - loading,
        seed,
        stopped=stopped,
        loading=t0 - loading,
        budget=float(seconds),
        sequence_seconds=search.sequence_seconds,
        longest_call=search.longest_call,
        seeds=len(search.seeds.strings),
    )


def _search(
    bench: Bench,
    search: Search,
    names: list[str],
    checks: list[Any],
    tool: str | None,
    t0: float,
    seconds: float,
) -> None:
    """The run's search: each tool, the probes of what ran, then sequences; its last tenth of
    the time is left for pinning what it found."""
    bench.clock.freeze(bench.clock.time())  # every example at one time: what differs is the tool's
    search.starts.append(Start("empty", _empty(bench)))
    search.deadline = t0 + seconds * 0.9
    share = seconds * 0.6 / len(names)
    for name in names:  # its probes right after its search: a slow tool leaves the others theirs
        search.tool(bench.manifest.tools[name], share)
        if (name, "schema") not in search.found_kinds:
            if search.examples is None:  # a slow tool's probes leave the next tools theirs
                search.probe_end = time.monotonic() + share / 2
            try:
                probes(search, bench.manifest.tools[name])
            except OutOfShare:
                pass  # (what its probes found is recorded as found)
            finally:
                search.probe_end = math.inf
    if tool is None and len(names) > 1 or checks:  # states the gem's own tools build
        left = seconds - (time.monotonic() - t0)
        usable = [n for n in names if (n, "schema") not in search.found_kinds]
        s0 = time.monotonic()
        try:
            search_sequences(search, max(left * 0.8, seconds * 0.1), checks, usable)
        finally:
            search.sequence_seconds += time.monotonic() - s0


def _preload(bench: Bench) -> None:
    """Import what the run imports on first use before its timer is armed: a timer firing in
    the middle of an import leaves the module half made in sys.modules, broken for the rest of
    the process (hypothesis: its first import takes a second). And wait for the sandbox's
    start the bench's opening began: on a busy machine it takes seconds, which would be the
    first tool's share."""
    import importlib

    sandbox = getattr(bench.core.runners.get("deno"), "sandbox", None)
    started = getattr(sandbox, "_warmed", None)
    if callable(started):
        started()

    for name in (
        "pandas",
        "hypothesis",
        "hypothesis.strategies",
        "hypothesis.errors",
        "workbench.bench.crash",
        "workbench.pins.case",
        "workbench.ctx.served",
        "workbench.ctx.statejson",
    ):
        importlib.import_module(name)


def _fresh_sandbox(bench: Bench) -> None:
    """Stop the bench's sandbox (a call cut off at the run's end left it mid-conversation); the
    next call starts another. The Python runner keeps its modules (nothing was cut off there
    that a later call could see half-done: the state is put back)."""
    runners = bench.core.runners
    for kind in [k for k in runners if k != "python"]:
        runners.pop(kind).stop()


def _empty(bench: Bench) -> Any:
    """A snapshot of the bench with every part of its state empty (files, storage, mail…);
    its setup (allowed recipients and accounts, secrets, served answers) stays."""
    from ..ctx import state

    state.empty(bench)
    return bench.snapshot()


def _pin(bench: Bench, search: Search, finding: Finding, seed: int) -> Any:
    """Write `finding` as a case, tests/calls/doctor/<tool>/<kind>.json: its example run again
    on its start state, and what a recheck needs."""
    from ..pins.case import build_case, case_path, case_text, pin_root, write_case

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
    from ..ctx import state

    case["doctor"] = {
        # send_email's allowlist (agent): the bench's setup part, put back on a recheck
        "recipients": state.dump(bench, roles=("setup",)).get("recipients", []),
        "kind": finding.kind,
        "rule": finding.rule,
        "message": finding.message,
        "start": finding.start,
        "seed": seed,
        **{k: v for k, v in finding.extra.items() if k not in ("start", "steps")},
        "built_by": [{"tool": n, "input": v} for n, v in steps],
    }
    path = case_path(pin_root(bench), finding.tool, finding.kind, under="doctor")  # (a test run's: its own)
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
    recipients = doctor_.get("recipients")
    if isinstance(recipients, list) and recipients:  # the setup part, where the bench has it
        from ..ctx import state

        state.put(
            bench,
            {"recipients": recipients},
            code="E_CASE",
            label="the doctor's case",
            roles=("setup",),
            empty=False,
        )
    # the start is taken after the setup is put: each call puts the start back, setup included
    search = Search(bench, starts=[Start("case", bench.snapshot())], seed=seed, deadline=math.inf, examples=1)
    search.stats[spec.name] = ToolStats()
    search.served = case.get("served") if isinstance(case.get("served"), list) else []
    input = case.get("input")
    if kind in ("N5", "nondeterministic"):
        memory(search, spec, 0, input)
    elif kind == "N7":  # the point it was found at first, then a sample: never hundreds of reruns
        at = doctor_.get("crash_after")
        crash(search, spec, 0, input, first=at if isinstance(at, int) and not isinstance(at, bool) else None)
    elif kind == "schema":
        from .schemas import problem

        found = problem(spec.input_schema)
        if found is not None:
            search.unusable(spec, *found)
    elif kind == "invariant":
        from .sequences import broken_invariant, invariants

        search.call(spec, input, 0)
        broken = broken_invariant(bench, invariants(bench.manifest.root))
        if broken is not None:
            search.add_finding(spec, "invariant", 0, input, f"after {spec.name}: {broken}")
    else:
        for k, message in search.check(spec, input, 0, valid=kind != "N8", envelopes=kind == "envelope"):
            search.add_finding(spec, k, 0, input, message)
    return [
        f"the doctor's finding {f.kind} ({f.rule}) still occurs: {f.message}"
        for f in search.findings
        if f.kind == kind
    ]
