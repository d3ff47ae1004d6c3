"""A test run keeps its pins out of the gems under test: a `bench` fixture's `res.pin` (as a
notebook's `%tool … --pin`, tests/test_pins_cli.py) goes to the item's own folder under
pytest's basetemp and the summary lists it; a gem the run copied elsewhere keeps its own."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE_GEM

pytest_plugins = ["pytester"]

PINNING_TEST = """
import pytest

@pytest.mark.gem({gem!r})
def test_pins(bench):
    path = bench.call("add_note", {{"title": "x"}}).pin("from-a-test")
    print("PINNED", path)
"""


def _gem(where: Path) -> Path:
    shutil.copytree(EXAMPLE_GEM, where, ignore=shutil.ignore_patterns(".gem-workbench", "calls"))
    return where


def test_a_bench_fixture_pin_goes_to_the_run_folder_and_is_listed(pytester: pytest.Pytester) -> None:
    gem = _gem(pytester.path / "notes")
    pytester.makepyfile(test_pinning=PINNING_TEST.format(gem="notes"))
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not (gem / "tests").exists()  # nothing written into the gem under test
    out = result.stdout.str()
    [line] = [line for line in out.splitlines() if line.startswith("pinned ")]
    path = Path(line.split()[1])
    assert path.is_file() and path.parts[-5:] == ("notes", "tests", "calls", "add_note", "from-a-test.json")
    assert f"PINNED {path}" in out
    assert "1 call pinned during the run, kept out of the gem's tests/calls/" in out
    assert "--update-pins rewrites cases from their replays" in line


def test_a_gem_outside_the_tree_under_test_keeps_its_own_pins(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """A scratch copy the run made elsewhere (tutorial 07 pins into one and replays it)."""
    gem = _gem(tmp_path / "scratch" / "notes")
    assert not gem.resolve().is_relative_to(pytester.path.resolve())
    pytester.makepyfile(test_pinning=PINNING_TEST.format(gem=str(gem)))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert (gem / "tests" / "calls" / "add_note" / "from-a-test.json").is_file()
    assert "pinned during the run" not in result.stdout.str()


def test_the_doctors_findings_in_a_test_run_go_to_the_run_folder(pytester: pytest.Pytester) -> None:
    gem = pytester.path / "buggy"
    shutil.copytree(
        EXAMPLE_GEM.parent / "buggy", gem, ignore=shutil.ignore_patterns(".gem-workbench", "calls")
    )
    pytester.makepyfile(
        test_doctor="""
import pytest

@pytest.mark.gem("buggy")
def test_doctor(bench):
    report = bench.doctor(tool="greet", examples=10, seed=1)
    assert [f.kind for f in report.findings] == ["throw"]
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not (gem / "tests").exists()
    [line] = [line for line in result.stdout.str().splitlines() if line.startswith("pinned ")]
    assert Path(line.split()[1]).parts[-6:] == ("buggy", "tests", "calls", "doctor", "greet", "throw.json")
