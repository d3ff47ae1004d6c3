"""Asserts with values in notebook tests (pytest's rewriting of cells), and one name per cell.

The notebooks run once, through `gem-workbench test` (module fixture `reports`); each test
reads the report of its notebook.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_kernel import _start, _stop
from test_testing_plugin import write_notebook

NOTEBOOKS = {
    "values": ("x = 6", "def total_fn():\n    return x", "print('checking')\nassert total_fn() == 7"),
    "dicts": ("d = {'a': 1, 'b': 2, 'c': 3}", "assert d == {'a': 1, 'b': 5, 'c': 3, 'e': '100%'}"),
    "lists": ("assert [1, 2, 3] == [1, 2, 4]",),
    "awaits": (
        "import asyncio\nasync def six():\n    await asyncio.sleep(0)\n    return 6",
        "assert await six() == 6\nn = await six()\nassert n + 1 == 8",
    ),
    "magics": ("%load_ext workbench", "%time y = 6\nassert y == 7"),
    "names": ("def boom():\n    raise ValueError('boom')", "x = 1\nboom()"),
    "syntax": ("x = 1", "x = (\n  1,"),
    # cells without an assert run as written; passing asserts leave nothing behind
    "passes": (
        "x = 41\nx + 1",
        "assert x == 41\nx",
        "names = [n for n in globals() if n.startswith('@py_assert')]\nassert not names, names",
        "%who",
        "def check(v):\n    assert v == 1, 'v is not one'\n    return v",
        "check(1)",
    ),
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each failing notebook's report in the output of `gem-workbench test`, by its name;
    "all": the whole output."""
    folder = tmp_path_factory.mktemp("asserts")
    for name, cells in NOTEBOOKS.items():
        write_notebook(folder / "notebooks" / f"{name}.ipynb", *cells)
    out = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "test", "--timeout", "60", "--", "-p", "no:cacheprovider"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    text = out.stdout
    assert f"{len(NOTEBOOKS) - 1} failed, 1 passed" in text, text + out.stderr
    found = dict(re.findall(r"_{3,} notebook (\w+)\.ipynb _{3,}\n(.*?)(?=\n_{3,} |\n={3,} )", text, re.S))
    assert set(found) == set(NOTEBOOKS) - {"passes"}, text
    return {**found, "all": text}


def test_a_failing_assert_says_what_it_compared(reports: dict[str, str]) -> None:
    report = reports["values"]
    assert "values.ipynb: cell 4 raised AssertionError: assert 6 == 7 […]" in report, report
    lines = report.splitlines()
    at = lines.index("AssertionError: assert 6 == 7")
    assert re.fullmatch(r" \+  where 6 = <function total_fn at 0x\w+>\(\)", lines[at + 1]), report
    assert "FAILED notebooks/values.ipynb::values - cell 4 raised AssertionError: ass" in reports["all"]


def test_comparisons_of_dicts_and_lists_have_pytests_detail(reports: dict[str, str]) -> None:
    dicts = reports["dicts"]
    for line in ["Differing items:", "{'b': 2} != {'b': 5}", "Right contains 1 more item:", "{'e': '100%'}"]:
        assert f"\n  {line}\n" in dicts, dicts  # ('%' as it is: pytest's formatting is undone)
    assert "Full diff:" in dicts and "-vv" not in dicts, dicts  # (a notebook has no -vv to give)
    lists = reports["lists"]
    assert "AssertionError: assert [1, 2, 3] == [1, 2, 4]" in lists, lists
    assert "At index 2 diff: 3 != 4" in lists, lists


def test_an_assert_with_top_level_await(reports: dict[str, str]) -> None:
    report = reports["awaits"]
    assert "cell 3 raised AssertionError: assert (6 + 1) == 8" in report, report


def test_an_assert_after_a_magic(reports: dict[str, str]) -> None:
    report = reports["magics"]
    assert "cell 3 raised AssertionError: assert 6 == 7" in report, report
    assert "Wall time" in report  # the magic ran


def test_a_report_names_each_cell_as_its_headline_does(reports: dict[str, str]) -> None:
    assert "Cell In[" not in reports["all"] and "Input In [" not in reports["all"]
    names = reports["names"]
    assert "names.ipynb: cell 3 raised ValueError: boom" in names, names
    lines = names.splitlines()
    assert "cell 3, line 2" in lines and "cell 2, line 2, in boom()" in lines, names
    assert names.count("x = 1\nboom()") == 0, "the traceback quotes the cell: no source block"
    assert reports["values"].splitlines().count("cell 4, line 2") == 1, reports["values"]


def test_a_syntax_error_is_reported_as_before_with_the_cells_name(reports: dict[str, str]) -> None:
    report = reports["syntax"]
    assert "syntax.ipynb: cell 3 raised SyntaxError: incomplete input (cell 3, line 2)" in report, report
    assert "  cell 3, line 2\n" in report and "SyntaxError: incomplete input" in report, report
    assert re.search(r"\d+\.py", report) is None, report


def test_cells_without_an_assert_run_as_written(reports: dict[str, str]) -> None:
    assert "notebook passes.ipynb" not in reports["all"]  # (it passed)
    from workbench.testing._asserts import AssertRewriter

    class Shell:
        user_ns_hidden: dict[str, Any] = {}

    tree = ast.parse("x = 1\nx + 1")
    assert AssertRewriter(Shell()).visit(tree) is tree
    with_assert = ast.parse("assert x == 1")
    rewritten = AssertRewriter(Shell()).visit(with_assert)
    assert rewritten is not with_assert and ast.dump(with_assert) == ast.dump(ast.parse("assert x == 1"))
    assert "@pytest_ar" in ast.dump(rewritten)


def _run(kc: Any, code: str) -> dict[str, Any]:
    """Run `code` in the kernel: {"status", "evalue", "stdout"}."""
    stdout: list[str] = []

    def output(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "stream":
            stdout.append(msg["content"]["text"])

    reply = kc.execute_interactive(code, output_hook=output, timeout=60)["content"]
    return {"status": reply["status"], "evalue": reply.get("evalue"), "stdout": "".join(stdout)}


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Gem Workbench kernel started as JupyterLab starts it (no notebook test)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("GEM_WORKBENCH_ASSERT_REWRITE", raising=False)
        km, kc = _start("gem-workbench", tmp_path_factory.mktemp("kernel"))
    try:
        yield kc
    finally:
        _stop(km, kc)


def test_the_kernel_rewrites_asserts_only_when_asked(kernel: Any) -> None:
    assert _run(kernel, "x = 6\nassert x == 7")["evalue"] == ""  # off by default
    assert _run(kernel, "%assert_rewrite")["stdout"] == "assertion rewriting is off\n"
    assert _run(kernel, "%assert_rewrite on")["stdout"] == "assertion rewriting is on\n"
    assert _run(kernel, "assert x == 7")["evalue"] == "assert 6 == 7"
    assert _run(kernel, "x + 1\nassert x == 6")["status"] == "ok"
    assert _run(kernel, "%who")["stdout"] == "x\t \n"  # pytest's names are hidden
    assert _run(kernel, "%assert_rewrite off")["stdout"] == "assertion rewriting is off\n"
    assert _run(kernel, "assert x == 7")["evalue"] == ""
    assert "give on or off" in _run(kernel, "%assert_rewrite maybe")["stdout"]


def test_the_environment_variable_turns_it_on_from_the_start(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GEM_WORKBENCH_ASSERT_REWRITE", "1")
    km, kc = _start("gem-workbench", tmp_path)
    try:
        assert _run(kc, "assert [1] == [2]")["evalue"].startswith("assert [1] == [2]\n")
    finally:
        _stop(km, kc)
