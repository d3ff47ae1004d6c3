"""bench.doctor / gem-workbench doctor (issue 30): the planted bugs of the project's own gems
are found, the seed examples give only their one true finding, the same seed finds the same,
and each finding is a pinned case that fails until the tool is fixed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import workbench
from workbench import UsageError
from workbench.doctor.inputs import broken, edge_examples
from workbench.testing import replay_case

GEMS = Path(__file__).resolve().parent.parent / "notebooks" / "gems"
# the runs below count examples (the same on a loaded machine); the default seconds= (60) only
# ends a run that hangs, it does not decide what is found


def copy_gem(tmp_path: Path, name: str) -> Path:
    dest = tmp_path / name
    shutil.copytree(GEMS / name, dest, ignore=shutil.ignore_patterns(".gem-workbench", "calls"))
    return dest


def found(report) -> set[tuple[str, str]]:
    return {(f.tool, f.kind) for f in report.findings}


@pytest.mark.deno
def test_the_planted_notochord_bugs_are_found(tmp_path: Path) -> None:
    gem = copy_gem(tmp_path, "buggy")
    with workbench.open(gem) as bench:  # examples=: as many on a loaded machine (seconds= is a hard bound)
        report = bench.doctor(examples=40, seconds=120, seed=1)
    assert found(report) == {
        ("greet", "throw"),
        ("count_reads", "D4"),
        ("next_ticket", "N5"),
        ("banner", "N9"),
    }
    by = {f.kind: f for f in report.findings}
    assert by["throw"].input == {"name": ""}  # shrunk to the empty name
    assert len(by["N9"].input["text"]) <= 11  # the shortest text past 1,048,576 characters
    assert by["N9"].rule == "N9" and by["D4"].rule == "D4" and by["N5"].rule == "N5"
    assert all(f.case is not None and f.case.is_file() for f in report.findings)
    assert report.seconds < 60


@pytest.mark.deno
def test_the_planted_agent_bugs_are_found(tmp_path: Path) -> None:
    gem = copy_gem(tmp_path, "buggy-agent")
    with workbench.open(gem) as bench:
        bench.allow_recipients("*@example.com")
        report = bench.doctor(examples=40, seed=1)
    assert {("notify", "N7"), ("fire_and_forget", "envelope")} <= found(report)
    n7 = next(f for f in report.findings if f.kind == "N7" and f.tool == "notify")
    assert "mail to team@example.com" in n7.message and "2 sent" in n7.message
    assert "a clean run sends 1" in n7.message and n7.extra["crash_after"] == 1


@pytest.mark.deno
def test_an_ekanos_tool_logging_its_key_and_one_of_another_shape_are_found(tmp_path: Path) -> None:
    gem = copy_gem(tmp_path, "buggy-ekanos")
    with workbench.open(gem, secrets={"api_key": "sk_live_Doctor-Secret-1"}) as bench:
        report = bench.doctor(examples=40, seed=1)
    assert found(report) == {("lookup_contact", "secret"), ("recent_deals", "shape")}
    leak = next(f for f in report.findings if f.kind == "secret")
    shape = next(f for f in report.findings if f.kind == "shape")
    assert shape.rule == "K5" and shape.input == {"stage": "lost"} and "outputExample" in shape.message
    assert leak.rule == "K6" and "ctx.logger" in leak.message
    assert "sk_live_Doctor-Secret-1" not in leak.case.read_text()


@pytest.mark.deno
def test_the_seed_examples_give_only_their_true_finding(tmp_path: Path) -> None:
    gem = copy_gem(tmp_path, "seed-examples")
    with workbench.open(gem) as bench:
        report = bench.doctor(examples=40, seed=1)
    assert found(report) == {("add_note", "N7")}  # the seed's notes.insert has no idempotency key
    assert "document notes" in report.findings[0].message


MEMORY_PY = """
seen = []

def handle(input, ctx):
    seen.append(input.get("x"))
    return {"calls": len(seen)}
"""

SAFE_PY = """
def handle(input, ctx):
    return {"double": 2 * input["n"]}
"""


def test_python_tools_too_and_a_clean_tool_has_no_finding(gem, opened) -> None:
    gem.tool("remember", MEMORY_PY, side_effect="read")
    gem.tool(
        "double",
        SAFE_PY,
        schema={
            "type": "object",
            "properties": {"n": {"type": "integer", "maximum": 1000000}},
            "required": ["n"],
        },
        side_effect="read",
    )
    bench = opened(gem)
    report = bench.doctor(examples=20, seed=2)
    assert found(report) == {("remember", "N5")}
    clean = bench.doctor(tool="double", examples=60, seed=2)
    assert clean.ok and clean.frame().empty
    assert clean.summary()[0]["examples"] > 50


@pytest.mark.deno
def test_the_same_seed_finds_the_same(tmp_path: Path) -> None:
    gem = copy_gem(tmp_path, "buggy")
    runs = []
    for _ in range(2):
        with workbench.open(gem) as bench:
            report = bench.doctor(examples=40, seed=5, write=False)
        runs.append(sorted((f.tool, f.kind, json.dumps(f.input), f.start) for f in report.findings))
    assert runs[0] == runs[1] and runs[0]


@pytest.mark.deno
def test_a_finding_is_a_case_that_fails_until_the_tool_is_fixed(tmp_path: Path) -> None:
    gem = copy_gem(tmp_path, "buggy")
    with workbench.open(gem) as bench:
        report = bench.doctor(tool="greet", examples=20, seed=1)
    [finding] = report.findings
    case = json.loads(finding.case.read_text())
    assert case["doctor"]["kind"] == "throw" and case["input"] == {"name": ""}
    out = replay_case(finding.case)
    assert not out.ok and "still occurs" in out.lines[0]
    tool = gem / "tools" / "greet.js"
    tool.write_text(
        tool.read_text().replace("input.name[0].toUpperCase()", "(input.name[0] ?? '').toUpperCase()")
    )
    assert replay_case(finding.case).ok


def test_invariants_of_tests_doctor_py_are_checked_over_sequences(tmp_path: Path) -> None:
    gem = copy_gem(tmp_path, "notes")
    (gem / "tests").mkdir(exist_ok=True)
    (gem / "tests" / "doctor.py").write_text(
        "def invariant_titles_are_unique(bench):\n"
        "    notes = bench.data('notes')\n"
        "    assert notes.empty or not notes.title.duplicated().any(), 'two notes share a title'\n"
    )
    with workbench.open(gem) as bench:
        report = bench.doctor(examples=20, seed=1)
    inv = [f for f in report.findings if f.kind == "invariant"]
    assert [(f.tool, f.kind) for f in inv] == [("add_note", "invariant")]
    assert "two notes share a title" in inv[0].message and "then add_note(" in inv[0].start
    case = json.loads(inv[0].case.read_text())
    assert case["doctor"]["built_by"][0]["tool"] == "add_note"
    assert len(case["before"]["documents"]["notes"]) == 1  # the state the sequence built
    assert not replay_case(inv[0].case).ok


def test_inputs_edges_and_broken_ones() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 5}, "n": {"type": "integer", "minimum": 1}},
        "required": ["name"],
        "additionalProperties": False,
    }
    assert edge_examples(schema) == [{"name": ""}, {"name": "xxxxx", "n": 2**31}]
    value = {"name": "a", "n": 2}
    ways = [broken(schema, value, i) for i in range(6)]
    assert [value] in ways and {"n": 2} in ways and {"name": "a", "n": 2, "__doctor_extra__": 1} in ways
    assert {"name": 12345, "n": 2} in ways and {"name": "a", "n": "7"} in ways


def test_usage_errors(notes) -> None:
    with pytest.raises(UsageError, match="seconds="):
        notes.doctor(seconds=0)
    with pytest.raises(UsageError, match="no such tool"):
        notes.doctor(tool="nope")
    with pytest.raises(UsageError, match="examples="):
        notes.doctor(examples=0)


def test_the_report_as_a_frame_html_json_and_junit(tmp_path: Path, gem, opened) -> None:
    gem.tool("remember", MEMORY_PY, side_effect="read")
    report = opened(gem).doctor(examples=20, seed=1)
    frame = report.frame()
    assert list(frame.columns) == ["tool", "kind", "rule", "input", "start", "message", "repro", "case"]
    assert frame.iloc[0]["kind"] == "N5" and frame.iloc[0]["repro"].startswith("gem-workbench test ")
    html = report._repr_html_()
    assert "<table>" in html and "remember" in html and "N5" in html
    data = report.to_json()
    assert data["ok"] is False and data["findings"][0]["rule"] == "N5"
    xml = report.junit(tmp_path / "doctor.xml").read_text()
    assert 'failures="1"' in xml and 'name="N5"><failure' in xml


def test_the_command_exits_1_on_findings_and_0_without(tmp_path: Path, gem) -> None:
    gem.tool("remember", MEMORY_PY, side_effect="read")
    gem.tool(
        "double",
        SAFE_PY,
        schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        side_effect="read",
    )
    path = gem.write()
    cmd = [sys.executable, "-m", "workbench", "doctor", str(path), "--examples", "20", "--seed", "4"]
    run = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    data = json.loads(run.stdout)
    assert [(f["tool"], f["kind"]) for f in data["findings"]] == [("remember", "N5")]
    assert (path / "tests" / "calls" / "doctor" / "remember" / "N5.json").is_file()
    run = subprocess.run(
        [*cmd, "--tool", "double", "--no-write"], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 finding(s)" in run.stdout
    run = subprocess.run([*cmd, "--tool", "nope"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "error E_USAGE" in run.stderr and "Traceback" not in run.stderr


def test_the_doctor_refuses_real_providers(tmp_path: Path) -> None:
    gem = copy_gem(tmp_path, "notes")
    with workbench.open(
        gem, providers="real", state_dir=tmp_path / "state", workspace=tmp_path / "ws"
    ) as bench:
        with pytest.raises(UsageError, match="mock providers"):
            bench.doctor(seconds=1)
