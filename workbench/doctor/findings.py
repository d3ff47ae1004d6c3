"""What the doctor reports (issue 30 point 4): the kinds of finding, each with its rule ID, and
the checks one call's result is put through.

A tool's own failure that the platform turns into an answer for the model — a ctx error it let
through (E_NOT_FOUND for a file that is not there), an Ekanos `{ error }` (K2's expected
failure) — is not a finding: the model is told and can explain it. A throw of the tool's own
code (E_TOOL_ERROR), a result the platform refuses, a rule broken that the platform would not
catch, a secret that got out: those are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..bench.bench import Bench
    from ..bench.result import CallResult
    from ..platforms import Profile

#: kind -> (rule ID, what it is); a platform may name the rule otherwise (rule_of)
KINDS: dict[str, tuple[str, str]] = {
    "throw": ("-", "an uncaught throw of the tool's own code"),
    "fault": ("K2", "an Ekanos fault: the tool threw instead of returning { error }"),
    "N9": ("N9", "a result over the platform's limit"),
    "result": ("N9", "a result that is not JSON"),
    "D4": ("D4", "a sideEffect: 'read' tool that writes"),
    "timeout": ("SEC5", "the call ran out of time"),
    "limit": ("SEC5", "the call hit a limit (memory, sizes, cross-tool calls)"),
    "secret": ("K6", "a secret's value in a result, log, file or outbox"),
    "shape": ("K5", "an Ekanos result whose shape differs from outputExample"),
    "envelope": ("A4", "an agent tool returning success after a built-in's error envelope"),
    "N8": ("N8", "an input the schema refuses reached the tool"),
    "N5": ("N5", "the same input and state give another result or state with the module kept"),
    "N7": ("N7", "a rerun after a crash did a side effect again"),
    "nondeterministic": ("-", "the same input, state, seed and clock give another result"),
    "invariant": ("-", "an invariant of tests/doctor.py does not hold"),
    "schema": ("-", "an inputSchema no input can be drawn from (unsatisfiable, or needing huge values)"),
}
_THROWN = {"E_TOOL_ERROR"}
_LIMITS = {"E_LIMIT", "E_OUT_OF_MEMORY", "E_TOO_LARGE"}


@dataclass
class Finding:
    """One finding: the tool, its kind and rule, what happened, the (shrunk) input and the
    state it started from, how to reproduce it, and the pinned case written for it."""

    tool: str
    kind: str
    rule: str
    message: str
    input: Any
    start: str  # "fixtures", "empty", or the calls that built the state
    extra: dict[str, Any] = field(default_factory=dict)  # what a recheck needs (crash_after, …)
    case: Path | None = None

    @property
    def repro(self) -> str:
        """How to reproduce it in a notebook or a script."""
        args = json.dumps(self.input, ensure_ascii=False)
        if len(args) > 200:
            args = args[:199] + "…"
        if self.kind == "N7":
            return f"bench.call({self.tool!r}, {args}, crash={self.extra.get('crash_after', 1)})"
        if self.case is not None:
            return f"gem-workbench test {self.case}"
        return f"bench.call({self.tool!r}, {args})"


def rule_of(kind: str, profile: Profile) -> str:
    """The rule ID of `kind` on `profile`'s platform: its `finding_rules` (a time or call limit
    is A5 on agent tools), else the table's."""
    return profile.finding_rules.get(kind, KINDS[kind][0])


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 200 else line[:199] + "…"


def _secret_in(bench: Bench, value: Any) -> bool:
    from ..ctx.reach import holds_secret

    return holds_secret(bench.providers, value)


def check_call(
    bench: Bench, res: CallResult, *, valid: bool, outbox: list[Any] | None = None
) -> list[tuple[str, str]]:
    """The findings of one call, as (kind, message). `valid`: whether its input was one the
    schema accepts (an invalid one must be refused before the tool runs: N8); `outbox`: what
    it sent out (its effects' arguments: mail, a POST's body), searched for secrets."""
    if not valid:
        if res.error is None or res.error.code != "E_SCHEMA":
            got = "ran and returned" if res.error is None else f"ran and failed with {res.error.code}"
            return [("N8", f"an input its schema refuses {got}: the platform's check did not stop it")]
        return []
    out: list[tuple[str, str]] = []
    err = res.error
    profile = bench.profile
    if err is not None:
        if err.code in _THROWN:
            out.append((profile.throw_kind, _first_line(err.message)))
        elif err.code == "E_RESULT_TOO_LARGE":
            out.append(("N9", _first_line(err.message)))
        elif err.code == "E_RESULT_NOT_JSON":
            out.append(("result", _first_line(err.message)))
        elif err.code == "E_TIMEOUT":
            out.append(("timeout", _first_line(err.message)))
        elif err.code in _LIMITS:
            out.append(("limit", _first_line(err.message)))
    out += [("D4", _first_line(v)) for v in res.violations if v.startswith("D4")][:1]
    leaks = [w for w in res.warnings if w.startswith("K6:")]
    if leaks:
        out.append(("secret", leaks[0][4:].strip()))
    elif err is None and _secret_in(bench, res.value):
        out.append(("secret", "a secret's value is in the result the model reads"))
    elif outbox and _secret_in(bench, outbox):
        out.append(("secret", "a secret's value is in what the tool sent out (mail, a request)"))
    elif _secret_in(bench, [f.text for f in res.files if f.text]):
        out.append(("secret", "a secret's value is in a file the tool wrote"))
    shapes = [w for w in res.warnings if "outputExample" in w]
    if shapes:
        out.append(("shape", _first_line(shapes[0])))
    if err is None and profile.envelopes and not _passes_failure_on(res.value):
        dispatched = tuple(f"{path}." for path in profile.dispatch)  # ctx.tools.<built-in>
        enveloped = [
            r for r in res.trace_rows if str(r.get("method", "")).startswith(dispatched) and r.get("notice")
        ]
        if enveloped:
            row = enveloped[0]
            out.append(
                (
                    "envelope",
                    f"ctx.{row['method']} answered an error ({row['notice']}), the tool returned success",
                )
            )
    return out


def _passes_failure_on(value: Any) -> bool:
    """Whether a result tells the model something failed: an {error} of its own, or one with
    an `ok`/`success` false."""
    if not isinstance(value, dict):
        return False
    return "error" in value or value.get("ok") is False or value.get("success") is False
