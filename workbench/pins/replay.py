"""Replaying a pinned call (issue 29): a case file of `tests/calls/` run as a test.

The case (written by `res.pin`, pins/case.py) is input written by someone else: it is read within
Limits.case_bytes and the JSON depth bound, must name the gem it sits in, and its state is put
on a fresh bench of MOCK providers (whatever it was pinned on) in a temporary folder, each
entry checked (ctx/statejson.py) — nothing is written outside that bench. The call then runs
with the case's id, seed and clock, its HTTP answers and its mailbox pages and built-ins'
answers served back (ctx/served.py), stand-ins for the credentials and secrets it used, and
its result, its changes and its effects are compared with the case's.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import UsageError, WorkbenchError
from .._json import MAX_JSON_DEPTH, load_file_json
from .._text import terminal_safe
from ..ctx.limits import DEFAULT
from ..ctx.recorded import check_replayed
from ..gem.names import CASE_FOLDERS, case_folder
from .diff import short as _short
from .diff import text_diff, time_window, value_diff

__all__ = ["Replay", "Replayer", "calls_folder_of", "load_case", "replay_case", "text_diff", "value_diff"]

_MAX_LINES = 40  # of a diff report


def _bad(path: Path | str, why: str, **details: Any) -> WorkbenchError:
    return WorkbenchError("E_CASE", f"{path}: {why}", file=str(path), **details)


def calls_folder_of(path: Path) -> Path | None:
    """The gem folder of a case file at <gem>/tests/calls/<tool>/<name>.json (or under one of
    CASE_FOLDERS), or None."""
    parts = path.parts
    if path.suffix != ".json" or len(parts) < 5:
        return None
    if parts[-4:-2] == ("tests", "calls"):
        return path.parents[3]
    if len(parts) >= 6 and parts[-5:-3] == ("tests", "calls") and parts[-3] in CASE_FOLDERS:
        return path.parents[4]
    return None


def load_case(path: Path, *, limit: int = DEFAULT.case_bytes, depth: int = MAX_JSON_DEPTH) -> dict[str, Any]:
    """The case at `path`, checked: a regular file (not a link) within `limit` bytes, JSON no
    deeper than `depth`, the fields a replay reads of the types it reads them as."""
    try:
        # O_NONBLOCK: a FIFO named like a case would block the open until a writer came
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise _bad(path, f"cannot be read ({exc.strerror}; a case is a regular file, not a link)") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _bad(path, "is not a regular file")
        if info.st_size > limit:
            raise _bad(path, f"is {info.st_size:,} bytes, over case_bytes ({limit:,})", limit=limit)
        with os.fdopen(fd, "rb", closefd=False) as f:
            raw = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(raw) > limit:
        raise _bad(path, f"is over case_bytes ({limit:,} bytes)", limit=limit)
    case, why = load_file_json(raw, depth=depth, constants=False)
    if why is not None:
        raise _bad(path, why, limit=depth)
    _check_shape(path, case)
    return case


_SHAPE: dict[str, tuple[type, ...]] = {
    "case": (int,),
    "gem": (str,),
    "tool": (str,),
    "options": (dict,),
    "call": (dict,),
    "before": (dict,),
    "effects": (list,),
    "http": (list,),
    "served": (list,),
    "credentials": (dict,),
    "secrets": (list,),
    "result": (dict,),
    "changes": (list,),
}


def _check_shape(path: Path, case: Any) -> None:
    if not isinstance(case, dict):
        raise _bad(path, "is not a case (a JSON object with case, gem, tool, input, …)")
    for key, types in _SHAPE.items():
        if key not in case:
            raise _bad(path, f"has no {key!r}: is it a case written by res.pin?", field=key)
        if not isinstance(case[key], types) or isinstance(case[key], bool):
            raise _bad(path, f"{key!r} is {type(case[key]).__name__}, not {types[0].__name__}", field=key)
    if case["case"] != 1:
        raise _bad(path, f"case format {case['case']!r}: this workbench reads format 1", field="case")
    check_replayed(path, case)


# -- comparing (pins/diff.py) --------------------------------------------------------------
def _change_key(c: dict[str, Any]) -> tuple[str, str, str]:
    return (str(c.get("kind")), str(c.get("where")), str(c.get("key")))


def _change_lines(
    expected: list[dict[str, Any]], got: list[dict[str, Any]], same: Any = None
) -> Iterator[str]:
    want = {_change_key(c): c for c in expected if isinstance(c, dict)}
    have = {_change_key(c): c for c in got}
    for k in sorted(want.keys() | have.keys()):
        a, b = want.get(k), have.get(k)
        name = f"{k[0]} {k[1]}:{k[2]}" if k[0] != "kv" else f"kv {k[2]!r}"
        if a is None:
            assert b is not None
            yield f"changes: {name} was {b['change']} ({_short(b['after'])}), the pinned call left it alone"
        elif b is None:
            yield f"changes: {name} was not {a.get('change')} (pinned: {_short(a.get('after'))})"
        elif a.get("change") != b["change"]:
            yield f"changes: {name}: expected {a.get('change')}, got {b['change']}"
        else:
            yield from value_diff(
                a.get("after"),
                json.loads(json.dumps(b["after"], default=str)),
                f"changes: {name} after",
                same,
            )


def _effect_lines(
    expected: list[dict[str, Any]], got: list[dict[str, Any]], same: Any = None, *, profile: Any
) -> Iterator[str]:
    from ..ctx.standins import outside_of

    reaches = outside_of(profile)  # what the specs say acts or reads outside the bench

    def outside(effects: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {"method": e.get("method"), "args": e.get("args")}
            for e in effects
            if isinstance(e, dict) and reaches(str(e.get("method", "")))
        ]

    a, b = outside(expected), outside(json.loads(json.dumps(got, default=str)))
    for i in range(max(len(a), len(b))):
        if i >= len(b):
            yield f"effects[{i}]: the pinned call made ctx.{a[i]['method']}({_short(a[i]['args'])[1:-1]}); the replay did not"
        elif i >= len(a):
            yield f"effects[{i}]: the replay made ctx.{b[i]['method']}({_short(b[i]['args'])[1:-1]}), which the pinned call did not"
        elif a[i] != b[i]:
            yield from value_diff(a[i], b[i], f"effects[{i}] ctx.{a[i]['method']}", same)


@dataclass
class Replay:
    """A replayed case: `ok`, the lines of what differs, the case and the replay's result."""

    path: Path
    case: dict[str, Any]
    result: Any
    lines: list[str] = field(default_factory=list)
    updated: bool = False

    @property
    def ok(self) -> bool:
        return not self.lines

    def report(self) -> str:
        """What differs, expected (the pinned call) vs got (the replay), one line each."""
        doctor = self.case.get("doctor")
        head = (
            f"{self.path}: the doctor's finding of {self.case['tool']} still occurs (fix the tool; "
            "the case passes once it no longer does)"
            if isinstance(doctor, dict)
            else f"{self.path}: the pinned call of {self.case['tool']} replayed otherwise"
        )
        shown = self.lines[:_MAX_LINES]
        more = len(self.lines) - len(shown)
        return terminal_safe(  # its lines quote the case's text (a served error's message)
            "\n".join([head, *("  " + line for line in shown), *([f"  … and {more} more"] if more else [])])
        )


STAND_IN = "replayed-{what}-{name}"  # a credential's or secret's value in a replay (never the real one)


def _at(case: dict[str, Any]) -> float | None:
    """The time the replay's clock stands at: the pinned call's start (its virtual or real)."""
    call = case["call"]
    for key, scale in (("clock_ms", 1000), ("started", 1)):
        value = call.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value / scale
    return None


class Replayer:
    """Replays cases, keeping one warm bench per gem (and per set of stand-ins) across them:
    its state is reset to empty before each case and its sandbox stays started, so a hundred
    cases of one gem cost a hundred calls, not a hundred benches. Close it (or use `with`)."""

    def __init__(self) -> None:
        self._benches: dict[tuple[str, str], tuple[Any, Any, Any]] = {}  # key -> bench, empty, tmp

    def __enter__(self) -> Replayer:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close every bench it opened and remove their folders."""
        benches, self._benches = self._benches, {}
        for bench, _, tmp in benches.values():
            try:
                bench.close()
            finally:
                tmp.cleanup()

    def _bench(self, gem: Path, case: dict[str, Any]) -> Any:
        """The warm bench for `case`'s gem and stand-ins, its state emptied."""
        from ..bench import open as _open
        from ..bench.options import table
        from ..ctx.stores import Served
        from ..platforms import detect

        options: dict[str, Any] = {"providers": "mock"}
        if case["credentials"]:
            options["credentials"] = {
                name: {"token": STAND_IN.format(what="credential", name=name), **reach}
                for name, reach in sorted(case["credentials"].items())
            }
        if case["secrets"]:
            options["secrets"] = {
                name: STAND_IN.format(what="secret", name=name) for name in sorted(case["secrets"])
            }
        key = (str(gem.resolve()), json.dumps(options, sort_keys=True))
        found = self._benches.get(key)
        if found is None:
            tmp = tempfile.TemporaryDirectory(prefix="gw-pin-")
            try:
                empty = Path(tmp.name) / "workspace"
                empty.mkdir()
                options.update(state_dir=Path(tmp.name) / "state", workspace=empty, seed=0, http=Served([]))
                known = table(detect(gem))  # a platform without files, http or secrets takes none
                bench = _open.open(gem, **{k: v for k, v in options.items() if k in known})
            except UsageError as exc:  # an option made of the case's data (a credential's reach)
                tmp.cleanup()
                raise _bad(gem, f"the pinned case's call cannot be set up: {exc.message}") from None
            except BaseException:
                tmp.cleanup()
                raise
            from ..ctx.statejson import put_state

            put_state(bench, {}, code="E_CASE", label="(empty)")  # no fixtures
            found = self._benches[key] = (bench, bench.snapshot(), tmp)
        bench, empty_state, _ = found
        # the empty state and the setup it was opened with: a doctor's recheck allowed
        # recipients, which are not the next case's
        bench.restore(empty_state)
        return bench

    def replay(self, path: Path, *, update: bool = False) -> Replay:
        """Replay the case at `path` on a mock bench of its gem; with `update`, a case that
        replays otherwise is written again from the replay (as syrupy's --snapshot-update)."""
        from ..bench import pipeline as _pipeline
        from ..bench.core import CallIdentity
        from ..ctx.served import Playback, Replaying
        from ..ctx.standins import serve_http
        from ..ctx.statejson import put_state
        from ..ctx.stores import Served
        from .case import build_case, case_text, write_case

        path = Path(path)
        gem = calls_folder_of(path.absolute())
        if gem is None:
            raise _bad(path, "is not at <gem>/tests/calls/<tool>/<name>.json")
        case = load_case(path)
        # the folder the pin wrote (case_folder), or the tool's own name (a case made by hand)
        if path.parent.name not in (case_folder(case["tool"]), case["tool"]):
            raise _bad(
                path,
                f"is a case of tool {case['tool'][:60]!r} in the folder of {path.parent.name!r}",
                field="tool",
            )
        bench = self._bench(gem, case)
        if case["gem"] != bench.manifest.id:
            raise _bad(
                path, f"claims gem {case['gem']!r}, but it is in gem {bench.manifest.id!r}", field="gem"
            )
        if case.get("platform") not in (None, bench.profile.name):
            raise _bad(
                path,
                f"was pinned on {case['platform']!r}, this gem is {bench.profile.name!r}",
                field="platform",
            )
        if bench.manifest.tool(case["tool"]) is None:
            raise _bad(
                path,
                f"is a case of tool {case['tool']!r}, which gem {bench.manifest.id!r} does not have "
                f"(tools: {', '.join(bench.manifest.tools)}): was it renamed or removed?",
                field="tool",
            )
        # (emptied already: the bench was put back to its empty snapshot)
        put_state(bench, case["before"], code="E_CASE", label=f"{path}: before", empty=False)
        at = _at(case)
        if at is None:
            bench.clock.real()
        else:
            bench.clock.freeze(at)
        served = serve_http(bench.providers, case["http"], where=f"the pinned case {path.name}")
        if served is None:  # a platform without HTTP: nothing is served, nothing left unused
            served = Served([])
        if isinstance(case.get("doctor"), dict):  # a doctor's finding: does it still occur?
            from ..doctor import recheck

            served.reuse = True  # a recheck calls the tool more than once
            return Replay(path, case, None, recheck(bench, case))
        playback = Playback(case["served"], where=f"the pinned case {path.name}")
        opts = case["options"]
        call = case["call"]
        res = _pipeline.call(
            bench,
            case["tool"],
            case.get("input"),
            # the module stays warm across a gem's cases, as the platform may keep it (N5): a
            # tool relying on memory between calls fails its replays (a fresh import per case
            # cost a JS replay 28 ms instead of 1)
            fresh=None,
            options={k: opts[k] for k in ("as_user", "conversation") if k in opts},
            identity=CallIdentity.of(
                call_id=call.get("call_id"),
                key=str(call.get("idempotency_key") or "") or None,
                seed=call.get("seed"),
                ids=call.get("ids"),
                ticks=call.get("ticks"),
                times=call.get("times"),
                clock_ms=call.get("clock_ms"),
            ),
            hooks=(Replaying(playback),),
        )
        out = Replay(path, case, res, _compare(bench, case, res, playback, served))
        if update and out.lines:
            write_case(path, case_text(bench, build_case(bench, res)))
            out.updated = True
        return out


def replay_case(path: Path, *, update: bool = False) -> Replay:
    """Replay the case at `path` on a fresh mock bench of its gem (a `Replayer` of its own)."""
    with Replayer() as replayer:
        return replayer.replay(path, update=update)


def _compare(bench: Any, case: dict[str, Any], res: Any, playback: Any, served: Any) -> list[str]:
    from ..ctx.statejson import changes
    from .case import _effects
    from .pinning import pinning_of

    want = case["result"]
    err = res.error
    same = time_window(case, res)
    if err is not None and err.code == "E_SCHEMA" and want.get("ok"):
        return [f"the tool's inputSchema no longer accepts the pinned input: {err.message}"]
    lines: list[str] = []
    if bool(want.get("ok")) != (err is None):
        lines.append(
            f"result: expected {'ok' if want.get('ok') else 'an error'}, got "
            + (f"{err.code}: {err.message}" if err is not None else f"ok {_short(res.value)}")
        )
    elif err is not None:
        code = (want.get("error") or {}).get("code")
        if code != err.code:
            lines.append(f"error: expected {code}, got {err.code}: {err.message}")
    else:
        got = json.loads(json.dumps(res.value, default=str))
        lines += list(value_diff(want.get("value"), got, same=same))
    pinning = pinning_of(bench)
    kept = pinning.copy_of(res.call_id) if pinning is not None else None
    if kept is not None:
        lines += list(_change_lines(case["changes"], changes(kept), same))
    lines += list(_effect_lines(case["effects"], _effects(res.trace_rows), same, profile=bench.profile))
    lines += [f"served: the pinned call made ctx.{m}; the replay did not" for m in playback.unused()]
    for req in served.unused():
        lines.append(f"http: the pinned call made {req.get('method')} {req.get('url')}; the replay did not")
    return lines
