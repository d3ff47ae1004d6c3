"""A state part a capability declares beyond the stores (a plugin's, like the gw_clock ticker)
takes part in pins: the copy a pinned call takes the first time it reaches the part's
capability is in the case's `before`, what the call changed of it in its `changes`, and its
replay puts the copy back (StatePart.reached; default: the whole part)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import workbench
from workbench.cli import main
from workbench.ctx import state as state_model
from workbench.ctx.parts import StatePart
from workbench.pins.replay import replay_case


def _tally() -> StatePart:
    """A "state" part of the kv capability: the greetings counter, on its own."""

    def dump(cx: Any) -> dict[str, str]:
        value = cx.providers.store.kv_get("greetings")
        return {} if value is None else {"greetings": value}

    def put(cx: Any, value: Any, bad: Any) -> None:
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise bad("tally", "is not {greetings: text}")
        for key, text in value.items():
            cx.providers.store.kv_set(key, text)

    return StatePart("tally", dump, put)


@pytest.fixture
def tally(monkeypatch: pytest.MonkeyPatch) -> None:
    real = state_model.parts_of

    def parts_of(profile: Any) -> list[Any]:
        found = real(profile)
        if profile.name != "notochord":
            return found
        from workbench.ctx.registry import capability

        return [*found, (_tally(), capability("kv"))]

    monkeypatch.setattr(state_model, "parts_of", parts_of)


def test_a_declared_part_is_in_a_pinned_case_and_put_back_on_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tally: None
) -> None:
    monkeypatch.setenv("GEM_WORKBENCH_HOME", str(tmp_path / "home"))
    assert main(["new", "greeter", "--platform", "notochord", "--lang", "py", "--dir", str(tmp_path)]) == 0
    gem = tmp_path / "greeter"
    with workbench.open(gem, seed=1, clock="2026-01-01T00:00:00Z") as bench:
        bench.call("hello", {"name": "Ada"})
        res = bench.call("hello", {"name": "Bob"})
        assert res.value["count"] == 2
        path = res.pin("second")
    case = json.loads(path.read_text())
    assert case["before"]["tally"] == {"greetings": "1"}
    assert {"kind": "tally", "where": "tally", "key": "greetings", "change": "changed", "after": "2"} in case[
        "changes"
    ]
    assert replay_case(path).ok
    case["before"]["tally"] = {"greetings": "5"}  # put after kv: the part's copy is what the call finds
    path.write_text(json.dumps(case))
    replayed = replay_case(path)
    assert "value.count: expected 2, got 6" in replayed.lines


def test_what_a_replay_compares_as_effects_comes_from_the_specs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pinned call's replay compares the ctx calls its capabilities declare as effects (and
    those whose answers it serves, and HTTP): declare kv's set an effect, and a set with other
    arguments is a difference; undeclared, it is only a change of state."""
    from workbench.ctx.parts import Effect

    monkeypatch.setenv("GEM_WORKBENCH_HOME", str(tmp_path / "home"))
    assert main(["new", "greeter", "--platform", "notochord", "--lang", "py", "--dir", str(tmp_path)]) == 0
    with workbench.open(tmp_path / "greeter", seed=1, clock="2026-01-01T00:00:00Z") as bench:
        path = bench.call("hello", {"name": "Ada"}).pin("first")
    case = json.loads(path.read_text())
    (kv_set,) = [e for e in case["effects"] if e["method"].endswith("kv.set")]
    kv_set["args"] = ["greetings", "99"]
    path.write_text(json.dumps(case))
    assert not any(line.startswith("effects[") for line in replay_case(path).lines)
    real = state_model.effects_of
    monkeypatch.setattr(
        state_model,
        "effects_of",
        lambda profile: {**real(profile), kv_set["method"]: Effect(kv_set["method"])},
    )
    lines = replay_case(path).lines
    assert any(line.startswith("effects[") and kv_set["method"] in line and "99" in line for line in lines), (
        lines
    )
