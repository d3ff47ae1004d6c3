"""End to end: JupyterLab's own debugger panel steps through a TS tool (workbench/debug/kernel.py).
The debugger toggled on in the notebook's toolbar, the tool's file opened from the panel's
Kernel Sources, a breakpoint set by a click in its gutter; the cell that calls the tool stops
there, the panel shows the TS frame and its variables, Next steps a line, Continue lets the
call end and the cell shows the result. Screenshots: debug-lab-paused.png, debug-lab-stepped.png,
debug-lab-done.png in .artifacts/."""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest
from _deno import ADD
from _lab import CHROMIUM, TOKEN, folder, lab  # noqa: F401  (the module's JupyterLab, per test a folder)
from conftest import ARTIFACTS, GemBuilder
from nbformat.v4 import new_code_cell, new_notebook

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]  # one worker: one JupyterLab

if not Path(CHROMIUM).exists():
    if os.environ.get("CI"):
        raise RuntimeError(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium")
    pytest.skip("needs Debian's chromium (bash .ci/run installs it)", allow_module_level=True)

SUM_LINE = 9  # `const sum: number = doubled + input.b;` as the editor numbers it


def _notebook(folder: Path) -> None:
    GemBuilder(folder / "gem").tool("add", ADD, ext="ts", side_effect="read").write()
    nb = new_notebook(
        metadata={
            "kernelspec": {"name": "gem-workbench", "display_name": "Gem Workbench", "language": "python"}
        },
        cells=[
            new_code_cell("bench = workbench.open('gem')"),
            new_code_cell("r = bench.call('add', {'a': 3, 'b': 4})\nprint('result:', r.value, r.error)"),
        ],
    )
    nbformat.write(nb, folder / "debug.ipynb")


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name))


def _variable(page, name: str) -> str:
    """The value the panel's Variables tree shows for `name` (waited for)."""
    label = page.locator(".jp-DebuggerVariables-body .jp-DebuggerVariables-name").filter(
        has_text=re.compile(rf"^{name}$")
    )
    label.first.wait_for(timeout=30_000)
    return str(label.first.locator("xpath=following-sibling::span[1]").inner_text())


def test_the_debugger_panel_steps_through_a_ts_tool(lab, folder):
    _notebook(folder)
    with lab.page(folder, "debug-lab.png", height=1000) as (page, base):
        page.goto(f"{base}/debug.ipynb?token={TOKEN}")
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
        page.get_by_text("Gem Workbench | Idle").wait_for(timeout=60_000)
        # the debugger on: the bug button of the notebook's toolbar
        bug = page.locator(".jp-DebuggerBugButton").first
        bug.wait_for(timeout=30_000)
        bug.click()
        page.locator(".jp-DebuggerBugButton[aria-pressed='true']").first.wait_for(timeout=30_000)
        if not page.locator(".jp-DebuggerCallstack").first.is_visible():
            page.locator(
                ".lm-TabBar-tab[title*='Debugger'], .lm-TabBar-tab[data-id='jp-debugger-sidebar']"
            ).first.click()
        # open the bench; the panel lists the tool among the kernel's sources
        page.click(".jp-Cell .cm-content")
        page.keyboard.press("Shift+Enter")
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
        source = page.locator(".jp-DebuggerKernelSource-source", has_text="test.gem: add")
        if not source.first.is_visible():
            page.locator(".jp-AccordionPanel-title", has_text="Kernel Sources").first.click()
        source.first.wait_for(timeout=60_000)
        source.first.dblclick()
        # the tool's file, read-only in the main area: a click in its gutter at the TS line
        editor = page.locator("[data-jp-debugger='true'].jp-Editor", has_text="const doubled").last
        editor.wait_for(timeout=30_000)
        # (not the gutter's hidden spacer, which holds the widest number)
        number = (
            editor.locator(".cm-lineNumbers .cm-gutterElement")
            .filter(has_text=re.compile(rf"^{SUM_LINE}$"))
            .last
        )
        box = number.bounding_box()
        gutter = editor.locator(".cm-breakpoint-gutter").first.bounding_box()
        page.mouse.click(gutter["x"] + gutter["width"] / 2, box["y"] + box["height"] / 2)
        page.locator(".jp-DebuggerBreakpoint", has_text="add.ts").first.wait_for(timeout=30_000)
        page.locator(".jp-DebuggerBreakpoint-line", has_text=str(SUM_LINE)).first.wait_for(timeout=10_000)
        # the cell that calls the tool stops at the breakpoint
        page.locator(".lm-TabBar-tab", has_text="debug.ipynb").first.click()
        page.click(".jp-Cell:nth-child(2) .cm-content")
        page.keyboard.press("Shift+Enter")
        frame = page.locator(".jp-DebuggerCallstackFrame", has_text="add")
        frame.first.wait_for(timeout=60_000)
        page.locator(".jp-DebuggerCallstackFrame-location", has_text=f"add.ts:{SUM_LINE}").first.wait_for(
            timeout=10_000
        )
        assert _variable(page, "doubled") == "6"
        assert _variable(page, "input") == "Object"  # expandable (its a and b)
        _shot(page, "debug-lab-paused.png")
        # Next: one TS line on, `sum` is set
        page.locator("[data-command='debugger:next']").first.click()
        page.locator(".jp-DebuggerCallstackFrame-location", has_text=f"add.ts:{SUM_LINE + 1}").first.wait_for(
            timeout=30_000
        )
        assert _variable(page, "sum") == "10"
        _shot(page, "debug-lab-stepped.png")
        # Continue: the call ends, the cell shows the result
        page.locator("[data-command='debugger:continue']").first.click()
        page.locator(".lm-TabBar-tab", has_text="debug.ipynb").first.click()
        page.get_by_text("result: {'sum': 10} None").wait_for(timeout=30_000)
        _shot(page, "debug-lab-done.png")
