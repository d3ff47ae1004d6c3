"""Issue 29 points 3-4, the host side: the bench's virtual clock (`bench.clock`, `clock=`) and
`seed=` — what the ctx layer hands out follows the clock, ids and draws follow the seed, and
the call's timeout stays wall-clock."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import GemBuilder

import workbench
from workbench import WorkbenchError
from workbench.ctx.clock import Clock, parse_duration

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

# the ctx's time as a Python tool sees it: a file's `modified`, and the call's session
STAMP = """
def handle(input, ctx):
    ctx.files.write("workspace:stamp.txt", "x")
    ctx.files.write("run:r.txt", "y")
    s = ctx._caps.session  # what the sandbox reads (issue 29 seam)
    return {"modified": ctx.files.stat("workspace:stamp.txt")["modified"],
            "clock_ms": s.clock_ms, "frozen": s.clock_frozen, "seed": s.seed}
"""
SLEEPER = """
import time
def handle(input, ctx):
    time.sleep(input["s"])
    ctx.files.list("workspace:")  # the first ctx call after the deadline: E_TIMEOUT
    return "late"
"""
AUDIT = """
def handle(input, ctx):
    ctx.audit("seen", {"n": 1})
    return ctx.tools.send_email({"to": "ann@acme.example", "subject": "s", "body_text": "b"})
"""


def _notes(gem: GemBuilder) -> GemBuilder:
    return gem.tool("stamp", STAMP).tool("sleep", SLEEPER)


# -- the Clock itself ---------------------------------------------------------------------------
def test_freeze_advance_set_real() -> None:
    c = Clock()
    assert c.mode == "real" and not c.virtual and abs(c.time() - time.time()) < 1
    c.freeze(T0)
    assert c.frozen and c.now() == T0 and c.now().tzinfo is not None
    time.sleep(0.02)
    assert c.time() == T0.timestamp()  # time does not pass
    c.advance("3d")
    assert c.now() == T0 + timedelta(days=3)
    c.advance("2h30m").advance(15)
    assert c.now() == T0 + timedelta(days=3, hours=2, minutes=30, seconds=15)
    c.set("2026-02-01T00:00:00Z")
    assert c.frozen and c.now() == datetime(2026, 2, 1, tzinfo=UTC)  # set keeps it frozen
    assert "frozen" in repr(c) and "2026-02-01T00:00:00.000Z" in repr(c)
    c.real()
    assert c.mode == "real" and abs(c.time() - time.time()) < 1 and "real" in repr(c)
    c.set(T0.timestamp())  # a running clock: jumps there, and time passes on from it
    assert c.mode == "running" and c.virtual and not c.frozen
    first = c.time()
    time.sleep(0.02)
    assert T0.timestamp() <= first < c.time() < T0.timestamp() + 5
    c.real().advance("1d")  # a real clock moved on runs a day ahead
    assert c.mode == "running" and abs(c.time() - time.time() - 86400) < 1
    c.freeze()  # default: where it is now
    assert c.frozen and abs(c.time() - time.time() - 86400) < 1


def test_durations() -> None:
    assert parse_duration("1w2d3h4m5s") == 7 * 86400 + 2 * 86400 + 3 * 3600 + 4 * 60 + 5
    assert parse_duration("250ms") == 0.25 and parse_duration("-1h") == -3600 and parse_duration(90) == 90


@pytest.mark.parametrize("bad", ["3 days", "", "d", "3x", "1h-", True, None, float("nan"), [1]])
def test_a_bad_duration_is_E_USAGE_naming_it(bad: Any) -> None:
    with pytest.raises(WorkbenchError) as err:
        Clock().advance(bad)
    assert err.value.code == "E_USAGE" and repr(bad) in err.value.message


def test_the_clock_stays_within_the_years_it_can_show() -> None:
    c = Clock().freeze(T0)
    with pytest.raises(WorkbenchError, match="'999999w'") as err:
        c.advance("999999w")
    assert err.value.code == "E_USAGE" and c.now() == T0  # unmoved
    with pytest.raises(WorkbenchError, match="'-3000w'"):
        c.advance("-3000w")
    with pytest.raises(WorkbenchError, match="1969"):
        c.set(datetime(1969, 7, 20, tzinfo=UTC))


@pytest.mark.parametrize(
    "bad",
    ["9" * 60_000, "1" * 60_000 + "s", "2026-01-05" + " " * 60_000, 10**20_000, -(10**400)],
    ids=["digits", "digits-unit", "spaces", "big-int", "big-negative-int"],
)
def test_a_huge_duration_or_date_is_E_USAGE_naming_the_limit(bad: Any) -> None:
    """A 20,000-digit duration took 8 s (the parts' pattern is quadratic in digits with no unit)
    and a huge int was an uncoded OverflowError: each is E_USAGE at once, its message cut."""
    c = Clock().freeze(T0)
    for use in (c.advance, c.set, c.freeze):
        if use.__name__ != "advance" and not isinstance(bad, str):
            continue  # (an int date out of range has its own message, tested above)
        t0 = time.monotonic()
        with pytest.raises(WorkbenchError) as err:
            use(bad)
        assert err.value.code == "E_USAGE" and len(err.value.message) < 500, err.value.message
        assert time.monotonic() - t0 < 5  # (the pattern took minutes on 60,000 digits)
        if isinstance(bad, str):
            assert "at most 100 characters" in err.value.message and err.value.details["limit"] == 100
    assert c.now() == T0  # unmoved


@pytest.mark.parametrize("bad", ["tomorrow", "2026-13-01", "", 1e15, -1, True, None, [2026]])
def test_a_bad_date_is_E_USAGE_naming_it(bad: Any) -> None:
    for use in (Clock().set, Clock().freeze) if bad is not None else (Clock().set,):
        with pytest.raises(WorkbenchError) as err:
            use(bad)
        assert err.value.code == "E_USAGE" and repr(bad) in err.value.message


def test_open_clock_option_checks_and_freezes(gem: GemBuilder, opened: Callable) -> None:
    bench = opened(_notes(gem), clock="2026-01-05T09:00:00Z")
    assert bench.clock.frozen and bench.clock.now() == T0
    with pytest.raises(WorkbenchError) as err:
        opened(gem.root, clock="someday")
    assert err.value.code == "E_USAGE" and "'someday'" in err.value.message
    with pytest.raises(WorkbenchError) as err:
        opened(gem.root, seed="7")
    assert err.value.code == "E_USAGE" and "seed='7'" in err.value.message


# -- what the ctx hands out ------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["mock", "real"])
def test_a_python_tools_ctx_sees_the_virtual_time(gem: GemBuilder, opened: Callable, kind: str) -> None:
    bench = opened(_notes(gem), providers=kind)
    bench.clock.freeze(T0)
    res = bench.call("stamp")
    assert res.ok, res.error
    assert res.value["clock_ms"] == T0.timestamp() * 1000 and res.value["frozen"] is True
    assert res.started == T0.timestamp()
    assert res.call_id.startswith(time.strftime("%Y%m%d-%H%M%S", time.localtime(T0.timestamp())))
    if kind == "mock":  # the mock store stamps `modified` by the clock; real files: the disk's
        assert res.value["modified"] == T0.timestamp() * 1000
        assert bench.files()["modified"].max().to_pydatetime().replace(tzinfo=UTC) == T0
    bench.clock.advance("1d")
    res = bench.call("stamp")
    assert res.value["clock_ms"] == (T0.timestamp() + 86400) * 1000
    bench.clock.real()
    res = bench.call("stamp")
    assert res.value["clock_ms"] is None and res.value["frozen"] is False
    assert abs(res.started - time.time()) < 60


def test_audit_rows_and_outbox_time_follow_the_clock(gem: GemBuilder, opened: Callable) -> None:
    bench = opened(gem.tool("mail", AUDIT).as_agent("agent-1", "A"))
    bench.allow_recipients("*@acme.example")
    bench.clock.freeze(T0).advance("2h")
    res = bench.call("mail")
    assert res.ok and res.value["message_id"], res.error
    audit = bench.audit()
    assert len(audit) >= 2 and {t.timestamp() for t in audit["time"]} == {T0.timestamp() + 7200}
    sent = bench.providers.backends["tools"].outbox.sent
    assert [m["time"] for m in sent] == [T0 + timedelta(hours=2)]


@pytest.mark.deno
def test_ekanos_updated_at_follows_the_clock(opened: Callable) -> None:
    from test_ekanos import ACME, LOCATION

    bench = opened(
        ACME, account_storage={"settings/location": LOCATION}, secrets={"api_key": "sk_x"}, clock=T0
    )
    assert bench.account_storage()["updatedAt"].tolist() == ["2026-01-05T09:00:00.000Z"]


def test_run_folder_retention_follows_the_clock(gem: GemBuilder, opened: Callable, tmp_path: Path) -> None:
    bench = opened(_notes(gem), providers="real", keep_runs=0, keep_run_days=7)
    first = bench.call("stamp")
    runs = tmp_path / "state" / "runs"
    assert first.ok and (runs / first.call_id).is_dir()
    second = bench.call("stamp")  # a new run folder prunes: the first is a second old, kept
    assert (runs / first.call_id).is_dir() and (runs / second.call_id).is_dir()
    bench.clock.advance("40d")
    third = bench.call("stamp")  # 40 virtual days on: older than keep_run_days, pruned
    assert third.ok and not (runs / first.call_id).exists() and (runs / third.call_id).is_dir()
    # at open too: a bench opened 40 days on prunes what is older than 7 days
    (runs / "old-run").mkdir()
    now = time.time()
    os.utime(runs / "old-run", (now, now))
    bench.close()
    opened(gem.root, providers="real", keep_runs=0, clock=now + 40 * 86400)
    assert not (runs / "old-run").exists()


def test_the_timeout_stays_wall_clock(gem: GemBuilder, opened: Callable) -> None:
    bench = opened(_notes(gem), timeout=0.3)
    bench.clock.freeze(T0)
    t0 = time.monotonic()
    res = bench.call("sleep", {"s": 0.6})
    assert res.error is not None and res.error.code == "E_TIMEOUT", res
    assert time.monotonic() - t0 < 5 and bench.clock.time() == T0.timestamp()


# -- seed= -------------------------------------------------------------------------------------------
def _run(opened: Callable, root: Path, **kw: Any) -> list[tuple[Any, ...]]:
    bench = opened(root, **kw)
    out = []
    for _ in range(3):
        res = bench.call("stamp")
        assert res.ok, res.error
        out.append((res.call_id, res.idempotency_key, res.started, res.value["seed"]))
    crashed = bench.call("stamp", crash=1)
    out.append((crashed.idempotency_key,))
    bench.close()
    return out


def test_the_same_seed_repeats_ids_keys_run_folders_and_seeds(
    gem: GemBuilder, opened: Callable, tmp_path: Path
) -> None:
    root = _notes(gem).write()
    a = _run(opened, root, seed=7, clock=T0, providers="real", state_dir=tmp_path / "a")
    b = _run(opened, root, seed=7, clock=T0, providers="real", state_dir=tmp_path / "b")
    assert a == b
    assert sorted(os.listdir(tmp_path / "a" / "runs")) == sorted(os.listdir(tmp_path / "b" / "runs"))
    assert {r[0] for r in a[:3]} <= set(os.listdir(tmp_path / "a" / "runs"))  # named by the ids
    seeds = [r[3] for r in a[:3]]
    assert all(isinstance(s, int) and 0 <= s < 2**31 for s in seeds) and len(set(seeds)) == 3
    assert len({r[0] for r in a[:3]}) == 3 and len({r[1] for r in a[:3]}) == 3
    c = _run(opened, root, seed=8, clock=T0, state_dir=tmp_path / "c")
    assert [r[:2] for r in c[:3]] != [r[:2] for r in a[:3]] and [r[3] for r in c[:3]] != seeds
    assert c[3] != a[3]


def test_no_seed_draws_from_the_system(gem: GemBuilder, opened: Callable, tmp_path: Path) -> None:
    root = _notes(gem).write()
    a = _run(opened, root, clock=T0, state_dir=tmp_path / "a")
    b = _run(opened, root, clock=T0, state_dir=tmp_path / "b")
    assert [r[3] for r in a[:3]] == [None] * 3
    keys = [{r[1] for r in x[:3]} | {x[3][0]} for x in (a, b)]
    assert not {r[0] for r in a[:3]} & {r[0] for r in b[:3]} and not keys[0] & keys[1]
    assert workbench.open.__doc__ is not None and "seed: int | None = None" in workbench.open.__doc__


def test_the_flags_give_seed_and_clock(gem: GemBuilder) -> None:
    from workbench.bench.options import FlagParser, add_flags, gem_profile, taken

    root = _notes(gem).write()
    parser = FlagParser()
    add_flags(parser)
    ns = parser.parse_args(["--seed", "7", "--clock", "2026-01-05T09:00:00Z"])
    options, _ = taken(ns, gem_profile(root))
    assert options == {"seed": 7, "clock": "2026-01-05T09:00:00Z"}
    with workbench.open(root, **options) as bench:
        assert bench.seed == 7 and bench.clock.now() == T0
    with pytest.raises(WorkbenchError, match="'seven' is not a whole number"):
        taken(parser.parse_args(["--seed", "seven"]), gem_profile(root))
