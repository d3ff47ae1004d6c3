"""Pinned calls from the command line: `call --pin`, and `test GEM [--update-pins]` replaying
a gem's tests/calls/ next to its notebooks, run as subprocesses like a user would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLE_GEM


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # the module, not the installed script: PYTHONPATH (a worktree) is kept for the subprocess
    env = {**os.environ, "GEM_WORKBENCH_HOME": str(cwd / "home")}
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=240,
    )


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    dest = tmp_path / "notes"
    shutil.copytree(EXAMPLE_GEM, dest)
    return dest


def test_call_pin_prints_the_path_on_stderr_and_the_result_on_stdout(copy, tmp_path):
    out = cli(
        "call", str(copy), "add_note", "--input", '{"title": "buy milk"}', "--pin", "first", cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert set(json.loads(out.stdout)) == {"id"}
    assert f"pinned: {Path('notes/tests/calls/add_note/first.json')}" in out.stderr.splitlines()
    case = json.loads((copy / "tests/calls/add_note/first.json").read_text())
    assert case["input"] == {"title": "buy milk"} and case["result"]["value"] == json.loads(out.stdout)


def test_call_pin_with_a_bad_name_calls_nothing(copy, tmp_path):
    out = cli("call", str(copy), "add_note", "--input", '{"title": "x"}', "--pin", "../up", cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("gem-workbench call: error: pin name '../up'")
    assert not (copy / "tests").exists() and not (tmp_path / "up.json").exists()


def test_call_pin_that_cannot_be_written_keeps_the_result_and_exits_1(copy, tmp_path):
    elsewhere = copy / "elsewhere"  # inside the gem: a link out of it would be refused at open
    elsewhere.mkdir()
    (copy / "tests" / "calls").mkdir(parents=True)
    (copy / "tests" / "calls" / "add_note").symlink_to(elsewhere)
    out = cli("call", str(copy), "add_note", "--input", '{"title": "x"}', "--pin", "first", cwd=tmp_path)
    assert out.returncode == 1 and set(json.loads(out.stdout)) == {"id"}, out.stderr
    assert "error E_PATH: not pinned: " in out.stderr and list(elsewhere.iterdir()) == []


def test_test_gem_replays_its_pins_and_update_pins_rewrites_them(copy, tmp_path):
    case = copy / "tests/calls/add_note/first.json"
    assert (
        cli(
            "call", str(copy), "add_note", "--input", '{"title": "x"}', "--pin", "first", cwd=tmp_path
        ).returncode
        == 0
    )
    out = cli("test", str(copy), cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "tests/calls/add_note/first.json ." in out.stdout and "1 passed" in out.stdout

    tool = copy / "tools" / "add_note.py"
    tool.write_text(tool.read_text().replace('"status": "open"', '"status": "new"'))
    out = cli("test", str(copy), cwd=tmp_path)
    assert out.returncode == 1 and "1 failed" in out.stdout
    assert 'after.status: expected "open", got "new"' in out.stdout, out.stdout[-3000:]

    before = case.read_text()
    out = cli("test", str(copy), "--update-pins", cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-3000:]
    assert f"updated {case}" in out.stdout and "1 pinned call updated" in out.stdout
    assert case.read_text() != before and '"status": "new"' in case.read_text()

    out = cli("test", str(copy), cwd=tmp_path)
    assert out.returncode == 0 and "1 passed" in out.stdout and "updated" not in out.stdout


def test_a_test_run_never_rewrites_the_cases_it_replays(copy, tmp_path):
    """A notebook run by `test` that pins (`%tool … --pin`, `res.pin`) writes into the run's
    own folder, not the gem's tests/calls/: the regression still fails, and the pins are listed."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    assert (
        cli(
            "call", str(copy), "add_note", "--input", '{"title": "x"}', "--pin", "first", cwd=tmp_path
        ).returncode
        == 0
    )
    calls = copy / "tests" / "calls"
    kept = {p: p.read_bytes() for p in calls.rglob("*") if p.is_file()}
    nb = new_notebook(
        cells=[
            new_code_cell(f"%gem open {copy}"),
            new_code_cell('%tool add_note {"title": "x"} --pin first'),
            new_code_cell('bench.call("add_note", {"title": "y"}).pin("second")'),
        ]
    )
    nbformat.write(nb, copy / "pins.ipynb")
    tool = copy / "tools" / "add_note.py"
    tool.write_text(tool.read_text().replace('"status": "open"', '"status": "new"'))  # a regression

    out = cli("test", str(copy), cwd=tmp_path)
    assert out.returncode == 1 and "1 failed, 1 passed" in out.stdout, out.stdout[-3000:]
    assert 'after.status: expected "open", got "new"' in out.stdout
    now = {p: p.read_bytes() for p in calls.rglob("*") if p.is_file()}
    assert now == kept  # byte for byte, nothing added
    assert "2 calls pinned during the run, kept out of the gem's tests/calls/" in out.stdout
    pinned = [line.split()[1] for line in out.stdout.splitlines() if line.startswith("pinned ")]
    assert [Path(p).relative_to(Path(p).parents[4]).as_posix() for p in pinned] == [
        "notes/tests/calls/add_note/first.json",
        "notes/tests/calls/add_note/second.json",
    ]
    assert all(json.loads(Path(p).read_text())["result"]["ok"] for p in pinned)
    assert "--update-pins rewrites cases" in out.stdout
