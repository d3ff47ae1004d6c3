"""End to end: JupyterLab started by `gem-workbench lab`, in headless Chromium: a schema form, and
the notebook `gem-workbench new` writes, run with Run All Cells."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import ARTIFACTS, EXAMPLE_GEM
from nbformat.v4 import new_code_cell, new_notebook

CHROMIUM = "/usr/bin/chromium"
TOKEN = "wb-e2e"
pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    if os.environ.get("CI"):
        raise RuntimeError(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium")
    pytest.skip("needs Debian's chromium (bash .ci/run installs it)", allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


@contextlib.contextmanager
def _lab_page(folder: Path, screenshot: str, *, height: int = 900) -> Iterator[tuple[Any, str]]:
    """JupyterLab on `folder` (started by `gem-workbench lab`) and a Chromium page (`height`
    pixels tall, for what its screenshot must hold); stopped after."""
    from playwright.sync_api import sync_playwright

    port = _free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(folder / "cfg"),
        "JUPYTER_RUNTIME_DIR": str(folder / "rt"),
        "IPYTHONDIR": str(folder / "ipy"),
        "GEM_WORKBENCH_HOME": str(folder / "home"),
    }
    exe = shutil.which("gem-workbench", path=os.path.dirname(sys.executable))
    log = folder / "lab.log"
    with log.open("wb") as out:
        lab = subprocess.Popen(
            [
                exe,
                "lab",
                str(folder),
                "--no-browser",
                "--port",
                str(port),
                "--",
                f"--IdentityProvider.token={TOKEN}",
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert lab.poll() is None, log.read_text()
            try:
                urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "JupyterLab did not answer in 60 s"
                time.sleep(0.25)
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM,
                args=[
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--no-first-run",
                ],
            )
            try:
                page = browser.new_page(viewport={"width": 1280, "height": height})
                try:
                    yield page, base
                finally:  # what the page showed, pass or fail, for the CI log
                    ARTIFACTS.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(ARTIFACTS / screenshot))
            finally:
                browser.close()
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        try:
            lab.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(lab.pid, signal.SIGKILL)
            lab.wait()


def test_form_runs_in_jupyterlab(tmp_path):
    _notebook(tmp_path)
    with _lab_page(tmp_path, "browser-form.png") as (page, base):
        _drive(page, f"{base}/lab/tree/form.ipynb?token={TOKEN}")


def test_scaffolded_notebook_runs_in_jupyterlab(tmp_path):
    """`gem-workbench new`'s notebook, opened in JupyterLab and run with Run All Cells: it opens
    the gem beside it, calls the tool, its asserts pass and the kv state is shown."""
    from workbench.cli import main

    assert (
        main(["new", "browser-gem", "--platform", "notochord", "--lang", "ts", "--dir", str(tmp_path)]) == 0
    )
    with _lab_page(tmp_path, "browser-scaffold.png") as (page, base):
        page.goto(f"{base}/lab/tree/browser-gem/browser-gem.ipynb?token={TOKEN}")
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


def test_tutorial_03_replay_widget_works_after_run_all(tmp_path):
    """Tutorial 03 with Run All Cells, then the first replay widget's own buttons: Run to end
    and Rewind answer (no closed bench), and its counts are still those its cell asserted."""
    root = Path(__file__).resolve().parent.parent / "notebooks"
    shutil.copy(root / "03-email-cursor-replay.ipynb", tmp_path / "03.ipynb")
    shutil.copytree(root / "gems" / "mail-digest", tmp_path / "gems" / "mail-digest")
    with _lab_page(tmp_path, "replay-after-run-all.png") as (page, base):
        page.goto(f"{base}/lab/tree/03.ipynb?token={TOKEN}")
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


def test_replay_widget_shows_the_cursor_as_a_date(tmp_path):
    """The replay widget after one Step, in JupyterLab: the cursor line and the status give the
    cursor as a date, as the timeline does, never as epoch milliseconds; replay-widget.png."""
    gems = Path(__file__).resolve().parent.parent / "notebooks" / "gems"
    shutil.copytree(gems / "mail-digest", tmp_path / "gems" / "mail-digest")
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
    nbformat.write(nb, tmp_path / "replay.ipynb")
    with _lab_page(tmp_path, "replay-widget.png", height=1060) as (page, base):
        page.goto(f"{base}/lab/tree/replay.ipynb?token={TOKEN}")
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


def test_form_button_shows_the_whole_tool_name(tmp_path):
    """The form's Run button and, after a rejected pin name, its pin button show their whole
    labels (the error is drawn beside the pin button); the screenshot is form.png."""
    from conftest import GemBuilder

    name = "csv_summary_of_the_workspace"
    gem = GemBuilder(tmp_path / "g")
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
    nbformat.write(nb, tmp_path / "form.ipynb")
    with _lab_page(tmp_path, "form.png") as (page, base):
        page.goto(f"{base}/lab/tree/form.ipynb?token={TOKEN}")
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
def test_every_tutorial_runs_all_in_jupyterlab(tmp_path, name):
    """Each tutorial with Run All Cells in JupyterLab: every cell ran, none raised. Tutorial 06's
    failed fetch is a marked (⚠) trace row: its screenshot is trace-failed-row.png."""
    root = Path(__file__).resolve().parent.parent / "notebooks"
    shutil.copy(root / name, tmp_path / name)
    shutil.copytree(root / "gems", tmp_path / "gems")
    import nbformat as nbf

    code_cells = sum(1 for c in nbf.read(root / name, as_version=4).cells if c.cell_type == "code")
    with _lab_page(tmp_path, f"tutorial-{name.split('-')[0]}.png") as (page, base):
        page.goto(f"{base}/lab/tree/{name}?token={TOKEN}")
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
