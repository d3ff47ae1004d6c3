"""The doctor's stateful mode (issue 30 point 3): states built by the gem's own tools.

Hypothesis draws sequences of calls across the gem's tools (each input from its tool's schema)
from each start state and runs them without putting the state back between calls, as a
rule-based state machine would; every call is checked as a single call is, and after each one
the author's invariants run. A finding names the calls that built its state; its pinned case
holds that state as the case's `before`, so its replay needs no sequence.

Invariants live in the gem's `tests/doctor.py`: every function named `invariant_*` taking the
bench, run after each call of a sequence; an AssertionError (or a false return) is a finding.

    # tests/doctor.py
    def invariant_open_notes_have_titles(bench):
        notes = bench.data("notes")
        assert notes.empty or notes["title"].str.len().gt(0).all(), "a note without a title"

The file is the author's own code, run in the workbench's process like the gem's Python tools.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..bench.pipeline import check_input
from .findings import Finding, rule_of
from .guard import OutOfShare
from .inputs import valid_inputs

if TYPE_CHECKING:
    from ..bench.bench import Bench
    from .run import Search

Invariant = Callable[[Any], Any]
MAX_STEPS = 6


def invariants(root: Path) -> list[tuple[str, Invariant]]:
    """The `invariant_*` functions of `root/tests/doctor.py` ([] when there is none)."""
    path = root / "tests" / "doctor.py"
    if not path.is_file() or path.is_symlink():
        return []
    name = f"_gem_workbench_doctor_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return []
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return sorted((k, v) for k, v in vars(module).items() if k.startswith("invariant_") and callable(v))


def broken_invariant(bench: Bench, checks: list[tuple[str, Invariant]]) -> str | None:
    """The first invariant that does not hold on `bench` now, said: None when all hold."""
    for name, check in checks:
        try:
            held = check(bench)
        except AssertionError as exc:
            return f"{name}: {exc}" if str(exc) else f"{name} does not hold"
        except Exception as exc:  # noqa: BLE001 - the author's code failing is a finding too
            return f"{name} raised {type(exc).__name__}: {exc}"
        if held is False:
            return f"{name} returned False"
    return None


class _Step(Exception):
    """A finding in a sequence: its kind, what happened, the start, the steps before and the
    failing call."""

    def __init__(
        self, kind: str, message: str, start: int, steps: list[tuple[str, Any]], call: tuple[str, Any]
    ) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind, self.message, self.start, self.steps, self.call = kind, message, start, steps, call


_KINDS: dict[str, type[_Step]] = {}


def _raise(kind: str, *args: Any) -> None:
    cls = _KINDS.get(kind) or _KINDS.setdefault(kind, type(f"Step_{kind}", (_Step,), {}))
    raise cls(kind, *args)


def search_sequences(
    search: Search, seconds: float, checks: list[tuple[str, Invariant]], names: list[str] | None = None
) -> None:
    """Draw sequences of calls (of the tools `names`, default all) for about `seconds`; record
    their findings on `search`."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed
    from hypothesis import strategies as st

    bench = search.bench
    tools = [
        t
        for t in bench.manifest.tools.values()
        if isinstance(t.input_schema, dict) and (names is None or t.name in names)
    ]
    if not tools or seconds <= 0:
        return
    strategies = {
        t.name: valid_inputs(t.input_schema, lambda v, t=t: check_input(bench, t, v)[1] is None)
        for t in tools
    }
    done_ = [s for s in search.stats.values() if s.examples]
    per_call = sum(s.seconds for s in done_) / max(sum(s.examples for s in done_), 1) or 0.005
    examples = max(5, min(2000, int(seconds / (per_call * (MAX_STEPS + 2) / 2 + 0.0005))))
    # past its time it draws no more, but shrinks what it found (the run's own end stops that)
    end = time.monotonic() + seconds if search.examples is None else math.inf
    found_any: list[str] = []

    @given(
        st.integers(0, len(search.starts) - 1),
        st.lists(st.sampled_from([t.name for t in tools]), min_size=2, max_size=MAX_STEPS),
        st.data(),
    )
    def sequence(start: int, names: list[str], data: Any) -> None:
        if time.monotonic() > end and not found_any:
            search.cut = OutOfShare
            raise OutOfShare
        bench.restore(search.starts[start].snapshot)
        done: list[tuple[str, Any]] = []
        for i, name in enumerate(names):
            value = data.draw(strategies[name])
            spec = bench.manifest.tools[name]
            # each call of a sequence its own ids (the n-th call of it: 100 + n)
            for kind, message in search.check(spec, value, None, valid=True, n=100 + i):
                if (name, kind) not in search.found_kinds:
                    found_any.append(kind)
                    _raise(kind, message, start, done, (name, value))
            broken = broken_invariant(bench, checks) if checks else None
            if broken is not None and (name, "invariant") not in search.found_kinds:
                found_any.append("invariant")
                _raise("invariant", f"after {name}: {broken}", start, done, (name, value))
            done.append((name, value))

    run = with_seed(search.seed + 99)(
        settings(
            max_examples=search.examples or examples,
            deadline=None,
            database=None,
            report_multiple_bugs=True,
            phases=(Phase.generate, Phase.shrink),
            suppress_health_check=list(HealthCheck),
            print_blob=False,
        )(sequence)
    )
    found: list[_Step] = []
    try:
        search.guarded(run)
    except OutOfShare:  # its time spent with nothing found
        return
    except _Step as one:
        found = [one]
    except BaseExceptionGroup as group:
        found = [e for e in group.exceptions if isinstance(e, _Step)]
        rest = [e for e in group.exceptions if not isinstance(e, _Step)]
        if rest:
            raise rest[0] from group
    for step in found:
        name, value = step.call
        if (name, step.kind) in search.found_kinds:
            continue
        search.found_kinds.add((name, step.kind))
        start = search.starts[step.start].name
        built = " → ".join(f"{n}({json.dumps(v, ensure_ascii=False)[:60]})" for n, v in step.steps)
        search.findings.append(
            Finding(
                name,
                step.kind,
                rule_of(step.kind, bench.profile) if step.kind != "invariant" else "-",
                step.message,
                value,
                f"{start}, then {built}" if built else start,
                extra={"start": step.start, "steps": step.steps},
            )
        )
