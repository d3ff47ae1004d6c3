"""Rerunning a repro bundle's calls (`gem-workbench replay BUNDLE [--call N] [--trust]`).

A bundle of format 2 with a start (start.json: the state and setup its first call found) is
replayed as a sequence: one fresh mock bench of the bundle's gem is given that setup and state,
then every call runs again in order with its id, seeds, clock and clock reads, its ctx calls
that reach outside the bench (a mailbox page, a built-in's answer) and its HTTP exchanges
served back from the bundle; each result is compared with the recorded one, and where a call
differs the replay names what of the bench's setup differs from the bundle's bench's.

Otherwise (format 1, or a bench that lost its first call's state):
A call the bundle holds a pinned case of (the exporting bench's latest) is replayed exactly as
a pinned call is (pins/replay.py): the state it found, its HTTP and mailbox answers served back,
its result, changes and effects compared. A call without one (the bench keeps one state copy,
its latest call's) is rerun in order on one fresh mock bench of the bundle's gem, from the
gem's fixtures, with the call's id, seeds and clock; its result is compared. Nothing is
written outside a temporary folder. A bundle whose Python tools or tests/doctor.py would run in
this process is refused first (E_TRUST, bundles.read.check_trust) unless the caller trusts it.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import UsageError, WorkbenchError

__all__ = ["Rerun", "replay_bundle"]


@dataclass
class Rerun:
    """One call of a bundle run again: `how` ("sequence": from the bundle's start, served its
    answers; "case": replayed from its pinned case, "rerun": from the gem's fixtures, "doctor": a doctor's finding probed again, with no one result),
    its result (None for "doctor"), and what differs from the recorded one."""

    n: int
    tool: str
    how: str
    result: Any
    lines: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def ok(self) -> bool:
        return not self.lines

    def to_json(self) -> dict[str, Any]:
        res = self.result
        err = None if res is None else res.error
        shown: dict[str, Any] | None = (
            None
            if res is None
            else {"ok": True, "value": res.value}
            if err is None
            else {"ok": False, "error": err.to_dict()}
        )
        out = {"call": self.n, "tool": self.tool, "how": self.how, "matches": self.ok, "result": shown}
        out["differences"] = self.lines
        if self.note:
            out["note"] = self.note
        return json.loads(json.dumps(out, ensure_ascii=False, default=str))


def _bad(path: Path, entry: str, why: str) -> WorkbenchError:
    return WorkbenchError("E_BUNDLE", f"{path}: {entry}: {why}", file=str(path), entry=entry)


def replay_bundle(
    path: str | os.PathLike[str], *, call: int | None = None, trust: bool = False
) -> list[Rerun]:
    """Run the bundle's calls again (`call`: only call N, after the case-less calls before it)
    and compare each with its recorded result. A bundle whose Python tools or tests/doctor.py
    would run in this process is refused (E_TRUST) unless `trust`."""
    from .read import check_trust, read_bundle, unpack

    if not isinstance(trust, bool):
        raise UsageError(f"trust={trust!r}: give True or False", option="trust")
    path = Path(path)
    bundle = read_bundle(path)
    records = bundle.meta["calls"]
    if call is not None and not 0 <= call < len(records):
        raise UsageError(f"--call {call}: the bundle has {len(records)} calls (0 to {len(records) - 1})")
    out: list[Rerun] = []
    with tempfile.TemporaryDirectory(prefix="gw-replay-") as tmp:
        gem = unpack(bundle, Path(tmp) / "gem")
        check_trust(path, gem, trust)  # before any call: nothing of the gem is imported yet
        if bundle.start is not None:
            return _replay_sequence(bundle, gem, Path(tmp), call)
        sequence = None  # the bench the case-less calls run on, in order, from the fixtures
        try:
            for n, rec in enumerate(records[: None if call is None else call + 1]):
                wanted = call is None or n == call
                if rec.get("case") is not None:
                    if wanted:
                        out.append(_from_case(bundle, gem, n, rec))
                    continue
                if sequence is None:
                    sequence = _open_sequence(gem, bundle.meta, Path(tmp))
                res = _rerun(sequence, rec)
                if wanted:
                    note = "made with crash=: rerun without it" if rec["call"].get("crash") else ""
                    why = bundle.meta.get("start")
                    if why and not any(r.how == "rerun" for r in out):  # format 2 without a start
                        note = "; ".join(filter(None, [f"rerun from the gem's fixtures: {why}", note]))
                    out.append(Rerun(n, rec["tool"], "rerun", res, _compare(rec, res), note))
        finally:
            if sequence is not None:
                sequence.close()
    return out


def _from_case(bundle: Any, gem: Path, n: int, rec: dict[str, Any]) -> Rerun:
    """Call `n` replayed from its pinned case, as a pinned call is (pins/replay.py)."""
    from ..pins.case import case_path, write_case
    from ..pins.replay import replay_case

    try:
        where = case_path(gem, rec["tool"], f"bundle-{n:04d}")
        text = bundle.cases[rec["case"]].decode("utf-8")
    except (UsageError, UnicodeDecodeError) as exc:
        raise _bad(bundle.path, rec["case"], str(exc)) from None
    return _of_case(n, rec["tool"], replay_case(write_case(where, text)))


def _doctors(bundle: Any, rec: dict[str, Any]) -> bool:
    """Whether the call's case is a doctor's (its finding probed again: no one result)."""
    case = rec.get("case")
    if case is None:
        return False
    try:
        found = json.loads(bundle.cases[case])
    except (KeyError, ValueError, RecursionError):
        return False
    return isinstance(found, dict) and found.get("doctor") is not None


def _of_case(n: int, tool: str, replayed: Any) -> Rerun:
    """The Rerun of a replayed case. A doctor's case has no one result: its finding's probe
    ran again, and the bundle reproduces while the finding still occurs (replay_case says
    the opposite way round: there it is a regression test that fails until the tool is fixed)."""
    from ..doctor.findings import KINDS

    if replayed.result is not None:
        return Rerun(n, tool, "case", replayed.result, replayed.lines)
    doctor = replayed.case.get("doctor")
    kind = doctor.get("kind") if isinstance(doctor, dict) else None
    if kind not in KINDS:  # a case the doctor did not write: its recheck says so, as a difference
        return Rerun(n, tool, "doctor", None, list(replayed.lines) or [f"doctor: kind {kind!r:.40}"])
    if replayed.lines:
        return Rerun(n, tool, "doctor", None, [], "; ".join(replayed.lines)[:2000])
    return Rerun(n, tool, "doctor", None, [f"doctor: the finding {kind} no longer occurs"])


def _replay_sequence(bundle: Any, gem: Path, tmp: Path, call: int | None) -> list[Rerun]:
    """Every call (up to `call`) again on one bench given the bundle's start, each served the
    answers it got from outside; the Reruns of those wanted."""
    from ..ctx.state import dump, put

    path, records = bundle.path, bundle.meta["calls"]
    bench = _open_stand_ins(gem, bundle.meta, tmp, records)
    out: list[Rerun] = []
    try:
        for n, rec in enumerate(records):  # before any call: a record naming no tool of the gem
            if bench.manifest.tool(rec["tool"]) is None:
                raise _bad(
                    path,
                    f"bundle.json: calls.{n}.tool",
                    f"gem {bench.manifest.id!r} does not have tool {rec['tool'][:60]!r}",
                )
        start = bundle.start or {}
        put(
            bench,
            start.get("setup") or {},
            code="E_BUNDLE",
            label=f"{path}: start.json: setup",
            roles=("setup",),
            empty=False,
        )
        put(bench, start.get("state") or {}, code="E_BUNDLE", label=f"{path}: start.json: state")
        # what of this bench's setup differs from the bundle's bench's (start.json edited, a part
        # this bench cannot take): said on the first call, and on each call that differs
        # (a call served its answers may match on a bench set up otherwise)
        setup = setup_lines(bundle.meta.get("setup") or {}, dump(bench, roles=("setup",)))
        for n, rec in enumerate(records[: None if call is None else call + 1]):
            if _doctors(bundle, rec):  # a doctor's finding: its case probes it again
                if call is None or n == call:
                    out.append(_from_case(bundle, gem, n, rec))
                continue
            res, lines = _rerun_served(bench, rec, f"call {n} of the bundle")
            if call is not None and n != call:
                continue
            note = _crash_note(rec["call"])
            if lines or not any(r.how == "sequence" for r in out):
                lines += setup
            out.append(Rerun(n, rec["tool"], "sequence", res, lines, note))
    finally:
        bench.close()
    return out


def _crash_note(call: dict[str, Any]) -> str:
    if call.get("crash_after") is not None:
        return f"the crashed run of call(crash={call['crash_after']}): crashed again there"
    return "the rerun of call(crash=): rerun fresh, with its idempotency key" if call.get("crash") else ""


def _open_stand_ins(gem: Path, meta: dict[str, Any], tmp: Path, records: list[dict[str, Any]]) -> Any:
    """A fresh mock bench of the bundle's gem, its seed; stand-ins for the secrets and
    credentials its calls used (a pinned case's replay gives the same: pins.replay.STAND_IN)."""
    from ..bench import open as _open
    from ..bench.options import table
    from ..ctx.stores import Served
    from ..pins.replay import STAND_IN
    from ..platforms import detect

    secrets: set[str] = set()
    creds: dict[str, Any] = {}
    for rec in records:
        outside = rec.get("outside") or {}
        secrets.update(outside.get("secrets") or [])
        for name, reach in (outside.get("credentials") or {}).items():
            creds.setdefault(name, reach)
    options: dict[str, Any] = {
        "providers": "mock",
        "state_dir": tmp / "sequence",
        "seed": meta["seed"],
        "http": Served([]),
    }
    if creds:
        options["credentials"] = {
            name: {"token": STAND_IN.format(what="credential", name=name), **reach}
            for name, reach in sorted(creds.items())
        }
    if secrets:
        options["secrets"] = {name: STAND_IN.format(what="secret", name=name) for name in sorted(secrets)}
    known = table(detect(gem))  # a platform without http or secrets takes none
    try:
        return _open.open(gem, **{k: v for k, v in options.items() if k in known})
    except UsageError as exc:  # an option made of the bundle's data (a credential's reach)
        raise WorkbenchError(
            "E_BUNDLE", f"the bundle's bench cannot be set up: {exc.message}", file=str(gem)
        ) from None


def _rerun_served(bench: Any, rec: dict[str, Any], where: str) -> tuple[Any, list[str]]:
    """The recorded call made again, served what it got from outside; (result, differences)."""
    from ..ctx.served import Playback
    from ..ctx.standins import serve_http

    outside = rec.get("outside") or {}
    if outside.get("served") is None:  # the bench kept no answers: run against the mocks
        res = _rerun(bench, rec)
        return res, _compare(rec, res)
    served = serve_http(bench.providers, outside.get("http") or [], where=where)
    playback = Playback(outside["served"], where=where)
    res = _rerun(bench, rec, playback=playback)
    lines = _compare(rec, res)
    lines += [f"served: the bundle's call made ctx.{m}; the replay did not" for m in playback.unused()]
    for req in served.unused() if served is not None else []:
        lines.append(f"http: the bundle's call made {req.get('method')} {req.get('url')}; the replay did not")
    return res, lines


def setup_lines(theirs: dict[str, Any], mine: dict[str, Any]) -> list[str]:
    """What of the bench's setup differs from the bundle's bench's, part by part, each a line:
    "setup recipients: the bundle's bench had `*@acme.example`; this one has none"."""
    from ..ctx.state import json_changes

    lines: list[str] = []
    for name in sorted(theirs.keys() | mine.keys()):
        a, b = theirs.get(name), mine.get(name)
        if a == b:
            continue
        if not isinstance(a, dict) or not isinstance(b, dict):
            lines.append(f"setup {name}: the bundle's bench had {_shown(a)}; this one has {_shown(b)}")
            continue
        for row in json_changes(name, name, a, b):
            lines.append(
                f"setup {name}.{row.key}: the bundle's bench had {_shown(row.before)}; "
                f"this one has {_shown(row.after)}"
            )
    return lines[:50]


def _shown(value: Any) -> str:
    """A setup value as a line says it: none, `a`, `a`, `b` (lists), else its JSON, short."""
    if value in (None, [], {}, ""):
        return "none"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(f"`{v[:80]}`" for v in value[:10]) + (" …" if len(value) > 10 else "")
    if isinstance(value, str):
        return f"`{value[:80]}`"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return f"`{text[:120]}{'…' if len(text) > 120 else ''}`"


def _open_sequence(gem: Path, meta: dict[str, Any], tmp: Path) -> Any:
    from ..bench import open as _open

    return _open.open(gem, state_dir=tmp / "sequence", seed=meta["seed"])


def _rerun(bench: Any, rec: dict[str, Any], *, playback: Any = None) -> Any:
    """The recorded call made again on `bench`, at its clock, with its id and seeds (and, with
    `playback`, its clock reads and outside answers served back)."""
    from ..bench import pipeline as _pipeline
    from ..bench.core import CallIdentity
    from ..bench.crash import CrashAt
    from ..ctx.served import Replaying

    c = rec["call"]
    ms = c.get("clock_ms")
    if isinstance(ms, (int, float)) and not isinstance(ms, bool):
        if c.get("frozen"):
            bench.clock.freeze(ms / 1000)
        else:
            bench.clock.set(ms / 1000)
    else:
        bench.clock.real()
    given = rec.get("options")
    opts: dict[str, Any] = given if isinstance(given, dict) else {}
    after = c.get("crash_after") if playback is not None else None
    hooks: list[Any] = []
    if playback is not None:
        hooks.append(Replaying(playback))
    if type(after) is int:  # the crashed run of call(crash=N) crashes again at its point
        hooks.append(CrashAt(after))
    served = {} if playback is None else {"ticks": c.get("ticks"), "times": c.get("times"), "clock_ms": ms}
    return _pipeline.call(
        bench,
        rec["tool"],
        rec.get("input"),
        # its rerun is fresh
        fresh=True if c.get("crash") and playback is not None else None,
        options={"as_user": opts.get("as_user"), "conversation": opts.get("conversation")},
        identity=CallIdentity.of(
            call_id=c.get("call_id"),
            key=str(c.get("idempotency_key") or "") or None,
            seed=c.get("seed"),
            ids=c.get("ids"),
            **served,
        ),
        hooks=hooks,
    )


def _compare(rec: dict[str, Any], res: Any) -> list[str]:
    from ..pins.replay import time_window, value_diff

    want = rec["result"]
    err = res.error
    if bool(want.get("ok")) != (err is None):
        got = f"{err.code}: {err.message}" if err is not None else "ok"
        return [f"result: expected {'ok' if want.get('ok') else 'an error'}, got {got}"]
    if err is not None:
        code = (want.get("error") or {}).get("code")
        return [] if code == err.code else [f"error: expected {code}, got {err.code}: {err.message}"]
    got = json.loads(json.dumps(res.value, default=str))
    return list(value_diff(want.get("value"), got, same=time_window({"call": rec["call"]}, res)))
