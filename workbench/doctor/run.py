"""The doctor's search (issue 30 points 2-6): for each tool, inputs from its schema on each start
state, every call checked; then probes of the examples that ran — N5 (the module kept or not),
determinism (the same seed and clock twice) and N7 (a rerun after a crash at each ctx point, or
at a seeded sample of them past CRASH_POINTS). A tool's search stops at its share of the time.

Hypothesis drives the search: each kind of finding is raised as its own exception type, so
with `report_multiple_bugs` every kind is shrunk on its own to its smallest input. The state
is put back between examples from a snapshot (no bench is reopened) and the sandbox stays
warm. Every call of an example has the same seed, ids and frozen clock, so what differs
between two runs of it is the tool's doing.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..bench.core import CallIdentity
from ..bench.pipeline import check_input
from .findings import KINDS, Finding, check_call, rule_of
from .guard import HardStop, OutOfShare, OutOfTime
from .inputs import broken, edge_examples, valid_inputs
from .schemas import problem
from .seeds import Seeds, seeded_examples

if TYPE_CHECKING:
    from ..bench.bench import Bench
    from ..bench.result import CallResult
    from ..ctx.hooks import CallHooks
    from ..gem import ToolSpec


class FoundIt(Exception):
    """Raised in the search for one finding; a subclass per kind keeps kinds apart."""

    def __init__(self, kind: str, message: str, start: int, input: Any) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind, self.message, self.start, self.input = kind, message, start, input


_CLASSES = {kind: type(f"Found_{kind}", (FoundIt,), {}) for kind in KINDS}
BATCH = 24  # inputs one hypothesis example may run
#: what hypothesis or the strategies raise on a schema they cannot draw from (Unsatisfiable,
#: InvalidArgument, a TypeError of a bound of the wrong type, …): one "schema" finding
_DRAW_ERRORS = (TypeError, ValueError, OverflowError, RecursionError, MemoryError)


@dataclass
class ToolStats:
    """What the search did for one tool."""

    examples: int = 0
    invalid: int = 0
    seconds: float = 0.0
    ran: list[tuple[int, Any]] = field(default_factory=list)  # (start, input) of calls that returned
    crash: tuple[int, int] | None = None  # N7: crash points tried, of the ctx calls a run made
    busiest: tuple[int, Any, int] | None = None  # (start, input, ctx calls) of the run doing most
    acted: tuple[int, Any] | None = None  # (start, input) of the first run that acted outside (mail sent)
    probe_seconds: float = 0.0  # N5, determinism and N7 probes of what ran
    pin_seconds: float = 0.0  # writing its findings as cases


@dataclass
class Start:
    name: str
    snapshot: Any


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


class Search:
    """One doctor run over a bench: its start states, budget, seed and what it found."""

    def __init__(
        self, bench: Bench, *, starts: list[Start], seed: int, deadline: float, examples: int | None
    ) -> None:
        self.bench, self.starts, self.seed = bench, starts, seed
        self.deadline, self.examples = deadline, examples
        self.findings: list[Finding] = []
        self.stats: dict[str, ToolStats] = {}
        self.found_kinds: set[tuple[str, str]] = set()  # (tool, kind) found already
        self.served: list[dict[str, Any]] | None = None  # a recheck's recorded answers (ctx/served.py)
        self._n = 0
        # kinds found in a round not yet shrunk: recorded as they are if its time runs out
        self._pending: dict[tuple[str, str], FoundIt] = {}
        self._tool_start, self._tool_end = 0.0, math.inf  # the current tool's share (examples=: none)
        self.cut: type[BaseException] | None = None  # what cut the running hypothesis run off
        self.stop: HardStop | None = None  # the run's timer, which may interrupt a call
        self.seeds = Seeds()  # what the gem knows: where the search starts (seeds.py)
        self.sequence_seconds = 0.0  # of the run's sequences (sequences.py)
        self.probe_end = math.inf  # the current tool's probes stop here (probes.py)
        self.longest_call = 0.0  # seconds of its longest call: how far past its end a run may go

    def tick(self) -> None:
        """OutOfTime once the run's time is up, OutOfShare once the probes' share of the current
        tool is: checked before every call."""
        now = time.monotonic()
        if now >= self.deadline:
            self.cut = OutOfTime
            raise OutOfTime
        if now >= self.probe_end:
            raise OutOfShare

    def guarded(self, run: Any) -> None:
        """`run()`, a hypothesis run; cut off by the time (OutOfTime, OutOfShare) even where
        hypothesis turned the cut into its own error (a replay that stopped early is "flaky")."""
        self.cut = None
        try:
            run()
        except BaseException:
            cut, self.cut = self.cut, None
            if cut is not None:
                raise cut from None
            raise

    # -- one call -------------------------------------------------------------------------
    def call(
        self, tool: ToolSpec, input: Any, start: int | None, *, fresh: bool | None = None, n: int = 0
    ) -> CallResult:
        """Call `tool` with `input` on start state `start` (put back first; None: on the state
        as it is), with the example's seed, ids and call id: two calls of one example differ
        only by the tool's doing."""
        from ..bench import pipeline as _pipeline

        self.tick()
        bench = self.bench
        if start is not None:
            bench.restore(self.starts[start].snapshot)
        identity, hooks = self.identity(tool, n)
        c0 = time.monotonic()
        res = _pipeline.call(bench, tool.name, input, identity=identity, fresh=fresh, hooks=hooks)
        self.longest_call = max(self.longest_call, time.monotonic() - c0)
        self.cut_off()
        return res

    def identity(self, tool: ToolSpec, n: int) -> tuple[CallIdentity, tuple[CallHooks, ...]]:
        """(the call id, idempotency key, ids and seeds; the hooks serving its outside answers)
        of the `n`th call of an example of `tool`: every run of it has the same, a crashed one
        too (its rerun: the key, its own ids)."""
        s = int.from_bytes(hashlib.sha256(f"{self.seed}:{tool.name}:{n}".encode()).digest()[:4], "big") >> 1
        ident = CallIdentity.of(call_id=f"doctor-{s:08x}", key=f"{s:032x}", seed=s, ids=s)
        return ident, self.served_hooks()

    def cut_off(self) -> None:
        """OutOfTime when the run's end interrupted the call that just returned: a Python tool's
        runner turns any exception of its code into an error, the interrupt too, which is not
        the tool's failure."""
        if self.stop is not None and self.stop.fired:
            self.cut = OutOfTime
            raise OutOfTime

    def served_hooks(self) -> tuple[CallHooks, ...]:
        """A recheck's hook answering the case's outside calls, each once per run (none: a
        search's calls reach the mocks)."""
        if self.served is None:
            return ()
        from ..ctx.served import Playback, Replaying
        from ..ctx.state import effects_of

        # (what acts outside the bench is done again, into the mocks: N7 compares the acts)
        live = frozenset(effects_of(self.bench.profile))
        return (Replaying(Playback(self.served, where="the doctor's case", live=live)),)

    def check(
        self,
        tool: ToolSpec,
        input: Any,
        start: int | None,
        *,
        valid: bool,
        envelopes: bool = False,
        n: int = 0,
    ) -> list[tuple[str, str]]:
        """Call once and check it; `envelopes`: every enabled built-in answers with an error
        envelope this time (agent tools: does the tool look at what it got? A4)."""
        from ..ctx.rerun import acts
        from ..ctx.state import restore, take

        setup = take(self.bench, roles=("setup",)) if envelopes else None
        if envelopes:
            self._envelopes(tool)
        try:
            res = self.call(tool, input, start, n=n)
        finally:
            if setup is not None:  # the faults it did not use: gone, the setup put back as it was
                restore(self.bench, setup)
        outbox = [args for _, args in acts(self.bench.profile, [res])]  # what it sent out
        stats = self.stats.setdefault(tool.name, ToolStats())  # a sequence calls tools not searched (tool=)
        stats.examples += 1
        if res.error is None and valid and start is not None:
            if len(stats.ran) < 50:
                stats.ran.append((start, input))
            if outbox and stats.acted is None:  # N7 crashes a run that sent something too
                stats.acted = (start, input)
            calls = len(res.trace_rows)  # N7 crashes the run that does most, not only the smallest
            if calls and (stats.busiest is None or calls > stats.busiest[2]):
                stats.busiest = (start, input, calls)
        return check_call(self.bench, res, valid=valid, outbox=outbox)

    def _envelopes(self, tool: ToolSpec) -> None:
        """Make each built-in `tool` may dispatch to answer its next calls with an error
        envelope (bench.inject_fault): does the tool look at what it got? (A4)"""
        bench = self.bench
        grants = bench.profile.grants(bench.manifest, tool)
        for path in bench.profile.dispatch:
            for builtin in grants.lists.get(path, ()):
                if builtin not in bench.manifest.tools:
                    bench.inject_fault(builtin, times=3, mode="envelope")

    # -- the search of one tool -----------------------------------------------------------
    def tool(self, tool: ToolSpec, share: float) -> None:
        """Search `tool` for `share` seconds (or `examples` examples)."""
        from hypothesis import example as hexample
        from hypothesis import given
        from hypothesis import strategies as st

        bench = self.bench
        stats = self.stats.setdefault(tool.name, ToolStats())
        t0 = time.monotonic()
        schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
        found = problem(tool.input_schema)
        if found is not None:
            self.unusable(tool, *found)
            return

        def accepts(value: Any) -> bool:
            return check_input(bench, tool, value)[1] is None

        # a batch of inputs per hypothesis example: its engine's own cost (draws, mutations,
        # bookkeeping: about 1 ms an example) is shared by the batch; a finding shrinks the batch
        # to the one input that gives it, and that input to its smallest
        one = st.tuples(
            valid_inputs(schema, accepts, tuple(self.seeds.strings), self.seeds.formats), st.integers(0, 15)
        )  # how 0-1: broken (N8)
        strategy = st.tuples(st.integers(0, len(self.starts) - 1), st.lists(one, min_size=1, max_size=BATCH))

        budget = max(share, 0.05)
        if self.examples is None:  # examples=: as many as asked, whatever the share (same seed, same)
            self._tool_start, self._tool_end = t0, t0 + budget

        def example(drawn: tuple[int, list[tuple[Any, int]]]) -> None:
            start, batch = drawn
            for value, how in batch:
                self._past_share(tool)  # (a batch of slow calls must not outlast the share)
                valid = how > 1
                if not valid:
                    value = broken(schema, value, how)
                    stats.invalid += 1
                envelopes = how in (2, 3) and bench.profile.envelopes
                for kind, message in self.check(tool, value, start, valid=valid, envelopes=envelopes):
                    if (tool.name, kind) not in self.found_kinds:  # (a kind found in an earlier round: done)
                        exc = _CLASSES[kind](kind, message, start, value)  # its first new kind
                        self._pending.setdefault((tool.name, kind), exc)
                        raise exc

        test = given(strategy)(example)
        plain = edge_examples(schema)
        # tried first (hypothesis runs the last one added first): the plainest and largest inputs
        # on each start state, then the pinned ones, then the plainest with a field set to what
        # the gem knows, on the fixtures (seeds.py)
        first: list[tuple[Any, int | None]] = [(v, None) for v in self.seeds.pinned.get(tool.name, [])]
        first += [(v, 0) for v in seeded_examples(schema, plain[0] if plain else None, self.seeds)]
        for value, only in [*reversed(first), *((v, None) for v in plain)]:
            if accepts(value):
                for start in range(len(self.starts)) if only is None else [only]:
                    test = hexample((start, [(value, 15)]))(test)
        n = max(1, self.examples // 8) if self.examples else 20  # (a batch holds about 8)
        try:  # (its time is its own even when the run's end cuts it off)
            for round_ in range(20):  # rounds of fresh draws while its share of the time lasts
                r0 = time.monotonic()
                try:
                    self._round(
                        tool,
                        test if round_ == 0 else given(strategy)(example),
                        n,
                        self.seed + round_,
                        round_ == 0,
                    )
                except OutOfShare:  # what it found and had not shrunk yet: as it was found
                    self.flush()
                    break
                left = budget - (time.monotonic() - t0)
                if self.examples is not None and stats.examples >= self.examples or left < budget * 0.1:
                    break
                per_draw = (time.monotonic() - r0) / max(n, 1)
                n = max(5, min(1000, int(left / max(per_draw, 1e-5))))
                if self.examples is not None:
                    n = max(1, (self.examples - stats.examples) // 8)
        finally:
            stats.seconds += time.monotonic() - t0
            self._tool_end = math.inf

    def _past_share(self, tool: ToolSpec) -> None:
        """OutOfShare once the tool's share of the time is spent; a kind found and being shrunk
        gets twice the share more (a shrunk input is what the author reads)."""
        now = time.monotonic()
        if now > self._tool_end:
            pending = any(t == tool.name for t, _ in self._pending)
            if not pending or self._shrunk_enough():
                self.cut = OutOfShare
                raise OutOfShare

    def _shrunk_enough(self) -> bool:
        """Whether shrinking what a tool's search found has had its time (twice its share)."""
        return time.monotonic() > self._tool_end + 2 * (self._tool_end - self._tool_start)

    def flush(self) -> None:
        """Record the kinds found but not yet shrunk, with the input they were found with."""
        pending, self._pending = self._pending, {}
        for (name, _), exc in sorted(pending.items()):
            spec = self.bench.manifest.tools[name]
            self.add_finding(spec, exc.kind, exc.start, exc.input, exc.message)

    def _round(self, tool: ToolSpec, test: Any, n: int, seed: int, explicit: bool) -> None:
        """One hypothesis run of `n` examples; its findings, each kind shrunk, recorded."""
        from hypothesis import HealthCheck, Phase, settings
        from hypothesis import seed as with_seed

        phases = (
            (Phase.explicit, Phase.generate, Phase.shrink) if explicit else (Phase.generate, Phase.shrink)
        )
        run = with_seed(seed)(
            settings(
                max_examples=n,
                deadline=None,
                database=None,
                derandomize=False,
                report_multiple_bugs=True,
                phases=phases,
                suppress_health_check=list(HealthCheck),
                print_blob=False,
            )(test)
        )
        try:
            self.guarded(run)
        except _DRAW_ERRORS as exc:  # the search's own: the schema, not the tool
            self.unusable(tool, "inputSchema", f"{type(exc).__name__}: {str(exc)[:300]}")
        except FoundIt as exc:
            self._found(tool, [exc])
        except BaseExceptionGroup as group:  # several kinds, each shrunk on its own
            self._found(tool, [e for e in group.exceptions if isinstance(e, FoundIt)])
            rest = [e for e in group.exceptions if not isinstance(e, FoundIt)]
            if rest:  # the workbench's own failure: not a finding
                raise rest[0] from group
        except Exception as exc:
            from hypothesis.errors import HypothesisException

            if not isinstance(exc, HypothesisException):
                raise
            from hypothesis.errors import Unsatisfiable

            said = (
                "no input drawn from it passed its own check: it may accept no value"
                if isinstance(exc, Unsatisfiable)
                else f"{type(exc).__name__}: {str(exc)[:300]}"
            )
            self.unusable(tool, "inputSchema", said)
        self.flush()  # (those shrunk above are seen already: only a kind it lost comes in)

    def unusable(self, tool: ToolSpec, keyword: str, what: str) -> None:
        """The one "schema" finding of a tool whose schema no input is drawn from."""
        if (tool.name, "schema") in self.found_kinds:
            return
        self.found_kinds.add((tool.name, "schema"))
        self.findings.append(
            Finding(
                tool.name,
                "schema",
                rule_of("schema", self.bench.profile),
                f"E_SCHEMA: the doctor draws no input from its inputSchema ({keyword}): {what}",
                None,
                "-",
                extra={"keyword": keyword},
            )
        )

    def _trim(self, tool: ToolSpec, exc: FoundIt) -> Any:
        """`exc`'s input with each long string cut to the shortest prefix that still gives the
        same kind of finding (a binary search: hypothesis does not shorten a string drawn
        from the edges)."""
        value = exc.input
        if not isinstance(value, dict):
            return value
        valid = exc.kind != "N8"
        for key, text in list(value.items()):
            if not isinstance(text, str) or len(text) < 2:
                continue
            lo, hi = 0, len(text)  # hi: a length that still finds it
            while lo < hi and not self._shrunk_enough():
                mid = (lo + hi) // 2
                trial = {**value, key: text[:mid]}
                if check_input(self.bench, tool, trial)[1] is None and any(
                    k == exc.kind for k, _ in self.check(tool, trial, exc.start, valid=valid)
                ):
                    hi = mid
                else:
                    lo = mid + 1
            value = {**value, key: text[:hi]}
        return value

    def _found(self, tool: ToolSpec, found: list[FoundIt]) -> None:
        for exc in sorted(found, key=lambda e: e.kind):
            if (tool.name, exc.kind) in self.found_kinds:
                continue
            self.found_kinds.add((tool.name, exc.kind))
            if exc.kind not in ("N8",):
                trimmed = self._trim(tool, exc)
                if trimmed != exc.input:  # said again of the input it reports (N9's size, …)
                    again = dict(self.check(tool, trimmed, exc.start, valid=True))
                    exc.input, exc.message = trimmed, again.get(exc.kind, exc.message)
            self.findings.append(
                Finding(
                    tool.name,
                    exc.kind,
                    rule_of(exc.kind, self.bench.profile),
                    exc.message,
                    exc.input,
                    self.starts[exc.start].name,
                    extra={"start": exc.start},
                )
            )

    def add_finding(
        self, tool: ToolSpec, kind: str, start: int, input: Any, message: str, **extra: Any
    ) -> None:
        """A finding of `kind` for `tool` (the first of each pair only), its case kept to pin."""
        if (tool.name, kind) in self.found_kinds:
            return
        self.found_kinds.add((tool.name, kind))
        self.findings.append(
            Finding(
                tool.name,
                kind,
                rule_of(kind, self.bench.profile),
                message,
                input,
                self.starts[start].name,
                extra={"start": start, **extra},
            )
        )
