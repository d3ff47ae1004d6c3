"""Rerunning a repro bundle's calls (`gem-workbench replay BUNDLE [--call N] [--trust]`).

A call the bundle holds a pinned case of (the exporting bench's latest) is replayed exactly as
a pinned call is (_pinreplay.py): the state it found, its HTTP and mailbox answers served back,
its result, changes and effects compared. A call without one (the bench keeps one state copy,
its latest call's) is rerun in order on one fresh mock bench of the bundle's gem, from the
gem's fixtures, with the call's id, seeds and clock; its result is compared. Nothing is
written outside a temporary folder. A bundle whose Python tools or tests/doctor.py would run in
this process is refused first (E_TRUST, _bundleread.check_trust) unless the caller trusts it.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import UsageError, WorkbenchError

__all__ = ["Rerun", "replay_bundle"]


@dataclass
class Rerun:
    """One call of a bundle run again: `how` ("case": replayed from its pinned case, "rerun":
    from the gem's fixtures, "doctor": a doctor's finding probed again, with no one result),
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
    from ._bundleread import check_trust, read_bundle, unpack
    from ._pinreplay import replay_case
    from ._pins import case_path, write_case

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
        sequence = None  # the bench the case-less calls run on, in order, from the fixtures
        try:
            for n, rec in enumerate(records[: None if call is None else call + 1]):
                wanted = call is None or n == call
                if rec.get("case") is not None:
                    if not wanted:
                        continue
                    try:
                        where = case_path(gem, rec["tool"], f"bundle-{n:04d}")
                        text = bundle.cases[rec["case"]].decode("utf-8")
                    except (UsageError, UnicodeDecodeError) as exc:
                        raise _bad(path, rec["case"], str(exc)) from None
                    replayed = replay_case(write_case(where, text))
                    out.append(_of_case(n, rec["tool"], replayed))
                    continue
                if sequence is None:
                    sequence = _open_sequence(gem, bundle.meta, Path(tmp))
                res = _rerun(sequence, rec)
                if wanted:
                    note = "made with crash=: rerun without it" if rec["call"].get("crash") else ""
                    out.append(Rerun(n, rec["tool"], "rerun", res, _compare(rec, res), note))
        finally:
            if sequence is not None:
                sequence.close()
    return out


def _of_case(n: int, tool: str, replayed: Any) -> Rerun:
    """The Rerun of a replayed case. A doctor's case has no one result: its finding's probe
    ran again, and the bundle reproduces while the finding still occurs (replay_case says
    the opposite way round: there it is a regression test that fails until the tool is fixed)."""
    from ._doctor.findings import KINDS

    if replayed.result is not None:
        return Rerun(n, tool, "case", replayed.result, replayed.lines)
    doctor = replayed.case.get("doctor")
    kind = doctor.get("kind") if isinstance(doctor, dict) else None
    if kind not in KINDS:  # a case the doctor did not write: its recheck says so, as a difference
        return Rerun(n, tool, "doctor", None, list(replayed.lines) or [f"doctor: kind {kind!r:.40}"])
    if replayed.lines:
        return Rerun(n, tool, "doctor", None, [], "; ".join(replayed.lines)[:2000])
    return Rerun(n, tool, "doctor", None, [f"doctor: the finding {kind} no longer occurs"])


def _open_sequence(gem: Path, meta: dict[str, Any], tmp: Path) -> Any:
    from . import _open

    return _open.open(gem, state_dir=tmp / "sequence", seed=meta["seed"])


def _rerun(bench: Any, rec: dict[str, Any]) -> Any:
    """The recorded call made again on `bench`, at its clock, with its id and seeds."""
    from . import _pipeline

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
    with bench._lock:
        return _pipeline.call(
            bench,
            rec["tool"],
            rec.get("input"),
            key=str(c.get("idempotency_key") or "") or None,
            options={"as_user": opts.get("as_user"), "conversation": opts.get("conversation")},
            identity={"call_id": c.get("call_id"), "seed": c.get("seed"), "ids": c.get("ids")},
        )


def _compare(rec: dict[str, Any], res: Any) -> list[str]:
    from ._pinreplay import time_window, value_diff

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
