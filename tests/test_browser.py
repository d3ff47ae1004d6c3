"""End to end: JupyterLab started by `gem-workbench lab`, in headless Chromium: a schema form, and
the notebook `gem-workbench new` writes, run with Run All Cells. One JupyterLab serves the browser
modules (tests/_lab.py); each test has its own folder, page, workspace and kernels."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from _lab import CHROMIUM, TOKEN
from conftest import ARTIFACTS, EXAMPLE_GEM
from nbformat.v4 import new_code_cell, new_notebook

# one worker for all browser modules (tests/test_browser_doctor.py too): one JupyterLab
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

if not Path(CHROMIUM).exists():
    if os.environ.get("CI"):
        raise RuntimeError(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium")
    pytest.skip("needs Debian's chromium (bash .ci/run installs it)", allow_module_level=True)


def _notebook(folder: Path) -> Path:
    nb = new_notebook(
        metadata={
            "kernelspec": {"name": "gem-workbench", "display_name": "Gem Workbench", "language": "python"}
        },
        cells=[
            new_code_cell(
                f"import workbench\nbench = workbench.open({str(EXAMPLE_GEM)!r})\n"
                'form = bench.form("add_note")\nform'
            ),
            new_code_cell('print("calls:", len(bench.calls()), bench.calls().tool.tolist())'),
        ],
    )
    path = folder / "form.ipynb"
    nbformat.write(nb, path)
    return path


def _drive(page, url: str) -> None:
    """Open the notebook, run the form cell, fill and run the form, check the call landed."""
    page.goto(url)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
    page.get_by_text("Gem Workbench | Idle").wait_for(timeout=60_000)  # the kernel is up
    page.click(".jp-Cell .cm-content")
    page.keyboard.press("Shift+Enter")  # runs the form cell, selects the next
    run = page.get_by_role("button", name="Run add_note")
    run.wait_for(timeout=30_000)
    page.locator(".jp-OutputArea-output input[type=text]").first.fill("from the browser")
    run.click()
    page.get_by_text("✓ ok").wait_for(timeout=15_000)
    # the ctx-call trace of the result shows the insert with the title typed in the browser
    page.locator("td", has_text='"title": "from the browser"').first.wait_for(timeout=5_000)
    page.keyboard.press("Escape")
    page.click(".jp-Cell:nth-child(2) .cm-content")
    page.keyboard.press("Shift+Enter")
    page.get_by_text("calls: 1 ['add_note']").wait_for(timeout=15_000)


def test_form_runs_in_jupyterlab(lab, folder):
    _notebook(folder)
    with lab.page(folder, "browser-form.png") as (page, base):
        _drive(page, f"{base}/form.ipynb?token={TOKEN}")


def test_a_test_sees_only_its_own_notebook_and_kernel_in_the_shared_jupyterlab(lab):
    """The module's tests share one JupyterLab: each page opens a workspace of its own, so the
    notebook of the test before is not restored beside this one, and its kernel is gone."""
    first, second = lab.folder("first"), lab.folder("second")
    _notebook(first)
    _notebook(second)
    with lab.page(first, "shared-lab.png") as (page, base):
        page.goto(f"{base}/form.ipynb?token={TOKEN}")
        page.get_by_text("Gem Workbench | Idle").wait_for(timeout=60_000)
        assert [s["path"] for s in lab.sessions()] == [f"{first.name}/form.ipynb"]
    assert lab.sessions() == []  # shut down with its page
    with lab.page(second, "shared-lab.png") as (page, base):
        page.goto(f"{base}/form.ipynb?token={TOKEN}")
        page.get_by_text("Gem Workbench | Idle").wait_for(timeout=60_000)
        tabs = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tabLabel")
        assert tabs.all_inner_texts() == ["form.ipynb"]
        assert [s["path"] for s in lab.sessions()] == [f"{second.name}/form.ipynb"]


def test_scaffolded_notebook_runs_in_jupyterlab(lab, folder):
    """`gem-workbench new`'s notebook, opened in JupyterLab and run with Run All Cells: it opens
    the gem beside it, calls the tool, its asserts pass and the kv state is shown."""
    from workbench.cli import main

    assert main(["new", "browser-gem", "--platform", "notochord", "--lang", "ts", "--dir", str(folder)]) == 0
    with lab.page(folder, "browser-scaffold.png") as (page, base):
        page.goto(f"{base}/browser-gem/browser-gem.ipynb?token={TOKEN}")
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
        page.get_by_text("Gem Workbench | Idle").wait_for(timeout=60_000)
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        # the last cell shows bench.kv(): the call counted one greeting
        page.locator(".jp-OutputArea-output td", has_text="greetings").first.wait_for(timeout=90_000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=30_000)
        errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        tracebacks = page.locator(".jp-OutputArea-output", has_text="Traceback")
        assert tracebacks.count() == 0, tracebacks.all_inner_texts()
        assert "AssertionError" not in " ".join(errors.all_inner_texts())
        page.get_by_text("Hello, Ada!").first.wait_for(timeout=5_000)  # the call's result


def _run_all(page) -> None:
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
    page.get_by_text("Gem Workbench | Idle").wait_for(timeout=60_000)
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()


def test_tutorial_03_replay_widget_works_after_run_all(lab, folder):
    """Tutorial 03 with Run All Cells, then the first replay widget's own buttons: Run to end
    and Rewind answer (no closed bench), and its counts are still those its cell asserted."""
    root = Path(__file__).resolve().parent.parent / "notebooks"
    shutil.copy(root / "03-email-cursor-replay.ipynb", folder / "03.ipynb")
    shutil.copytree(root / "gems" / "mail-digest", folder / "gems" / "mail-digest")
    with lab.page(folder, "replay-after-run-all.png") as (page, base):
        page.goto(f"{base}/03.ipynb?token={TOKEN}")
        _run_all(page)
        # the last widget (digest_fixed) is drawn once every cell before it passed
        page.get_by_text("Replay of digest_fixed").wait_for(timeout=120_000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
        tracebacks = page.locator(".jp-OutputArea-output", has_text="Traceback")
        assert tracebacks.count() == 0, tracebacks.all_inner_texts()
        widget = page.locator(".widget-vbox", has_text="Replay of digest").first
        counts = "31 once, 0 more than once, 0 not yet, 2 lost"  # cell 16's asserts
        widget.get_by_text(counts).wait_for(timeout=10_000)
        widget.get_by_role("button", name="Run to end").click()
        widget.get_by_text("ran call").wait_for(timeout=30_000)
        assert "closed" not in widget.inner_text() and "E_USAGE" not in widget.inner_text()
        widget.get_by_text(counts).wait_for(timeout=10_000)
        assert widget.get_by_text("rewind to:").count() >= 1
        widget.get_by_role("button", name="Rewind").click()
        widget.get_by_text("cursor rewound").wait_for(timeout=30_000)
        widget.scroll_into_view_if_needed()


def test_replay_widget_shows_the_cursor_as_a_date(lab, folder):
    """The replay widget after one Step, in JupyterLab: the cursor line and the status give the
    cursor as a date, as the timeline does, never as epoch milliseconds; replay-widget.png."""
    gems = Path(__file__).resolve().parent.parent / "notebooks" / "gems"
    shutil.copytree(gems / "mail-digest", folder / "gems" / "mail-digest")
    nb = new_notebook(
        metadata={
            "kernelspec": {"name": "gem-workbench", "display_name": "Gem Workbench", "language": "python"}
        },
        cells=[
            new_code_cell(
                "import workbench\nbench = workbench.open('gems/mail-digest')\n"
                "bench.email.allow('all')\nw = bench.email.replay('digest')\nw"
            )
        ],
    )
    nbformat.write(nb, folder / "replay.ipynb")
    with lab.page(folder, "replay-widget.png", height=1060) as (page, base):
        page.goto(f"{base}/replay.ipynb?token={TOKEN}")
        _run_all(page)
        widget = page.locator(".widget-vbox", has_text="Replay of digest").first
        widget.get_by_role("button", name="Step").click()
        widget.get_by_text("call 1: processed 20").wait_for(timeout=60_000)
        line = widget.locator("tr.cur td")
        assert "cursor (kv 'cursor'): 2024-" in line.inner_text() and "UTC" in line.inner_text()
        status = widget.get_by_text("call 1: processed 20")
        assert re.search(r"cursor none → 2024-\S+ \S+ UTC", status.inner_text()), status.inner_text()
        # no 13-digit epoch-ms number anywhere a user reads (the stored value is on hover)
        assert not re.search(r"\b1\d{12}\b", widget.inner_text()), widget.inner_text()
        # the screenshot: the buttons and the status at the top, the cursor line below them
        page.locator(".jp-OutputArea-output", has_text="Replay of digest").first.evaluate(
            "e => e.scrollIntoView({block: 'start'})"
        )


def test_form_button_shows_the_whole_tool_name(lab, folder):
    """The form's Run button and, after a rejected pin name, its pin button show their whole
    labels (the error is drawn beside the pin button); the screenshot is form.png."""
    from conftest import GemBuilder

    name = "csv_summary_of_the_workspace"
    gem = GemBuilder(folder / "g")
    gem.tool(
        name,
        "def handle(input, ctx):\n    return input\n",
        schema={"type": "object", "properties": {"table": {"type": "string"}}},
    )
    gem.write()
    nb = new_notebook(
        metadata={
            "kernelspec": {"name": "gem-workbench", "display_name": "Gem Workbench", "language": "python"}
        },
        cells=[new_code_cell(f"import workbench\nbench = workbench.open('g')\nbench.form({name!r})")],
    )
    nbformat.write(nb, folder / "form.ipynb")
    with lab.page(folder, "form.png") as (page, base):
        page.goto(f"{base}/form.ipynb?token={TOKEN}")
        _run_all(page)
        button = page.get_by_role("button", name=f"Run {name}")
        button.wait_for(timeout=60_000)
        # the whole label is drawn: the button is as wide as its text
        assert button.evaluate("b => b.scrollWidth <= b.clientWidth + 1"), button.inner_text()
        page.locator(".jp-OutputArea-output input[type=text]").first.fill("sales.csv")
        button.click()
        page.get_by_text("✓ ok").wait_for(timeout=30_000)
        # a rejected pin name: the pin button keeps its whole label, the error is beside it
        pin = page.get_by_title("save this call as a regression case", exact=False)
        page.get_by_placeholder("case name, e.g. first").fill("../x y")
        pin.click()
        error = page.get_by_text("error E_USAGE: pin name '../x y'")
        error.wait_for(timeout=30_000)
        assert pin.evaluate("b => b.scrollWidth <= b.clientWidth + 1"), pin.inner_text()
        assert pin.evaluate("b => b.getBoundingClientRect().width >= 40"), pin.bounding_box()
        assert pin.inner_text().strip() == "pin"
        assert error.is_visible() and error.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
        error.scroll_into_view_if_needed()


TUTORIALS = sorted(p.name for p in (Path(__file__).resolve().parent.parent / "notebooks").glob("0*.ipynb"))


@pytest.mark.parametrize("name", [n for n in TUTORIALS if not n.startswith("03-")])  # 03: above
def test_every_tutorial_runs_all_in_jupyterlab(lab, folder, name):
    """Each tutorial with Run All Cells in JupyterLab: every cell ran, none raised. Tutorial 06's
    failed fetch is a marked (⚠) trace row: its screenshot is trace-failed-row.png."""
    root = Path(__file__).resolve().parent.parent / "notebooks"
    shutil.copy(root / name, folder / name)
    shutil.copytree(root / "gems", folder / "gems")
    import nbformat as nbf

    code_cells = sum(1 for c in nbf.read(root / name, as_version=4).cells if c.cell_type == "code")
    with lab.page(folder, f"tutorial-{name.split('-')[0]}.png") as (page, base):
        page.goto(f"{base}/{name}?token={TOKEN}")
        _run_all(page)
        # every code cell has its execution count once the last one ran
        page.locator(".jp-InputPrompt", has_text=f"[{code_cells}]:").first.wait_for(timeout=180_000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)
        tracebacks = page.locator(".jp-OutputArea-output", has_text="Traceback")
        assert tracebacks.count() == 0, tracebacks.all_inner_texts()
        if name.startswith("06-"):
            marked = page.locator("tr", has=page.locator("span.nt", has_text="⚠"))
            marked.first.scroll_into_view_if_needed()
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            display = page.locator(".jp-OutputArea-output", has=marked).first
            display.screenshot(path=str(ARTIFACTS / "trace-failed-row.png"))
