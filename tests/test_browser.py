"""End to end: JupyterLab started by `gem-workbench lab`, a schema form run in headless Chromium."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

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


def test_form_runs_in_jupyterlab(tmp_path):
    from playwright.sync_api import sync_playwright

    _notebook(tmp_path)
    port = _free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"),
        "IPYTHONDIR": str(tmp_path / "ipy"),
        "GEM_WORKBENCH_HOME": str(tmp_path / "home"),
    }
    exe = shutil.which("gem-workbench", path=os.path.dirname(sys.executable))
    log = tmp_path / "lab.log"
    with log.open("wb") as out:
        lab = subprocess.Popen(
            [
                exe,
                "lab",
                str(tmp_path),
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
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                try:
                    _drive(page, f"{base}/lab/tree/form.ipynb?token={TOKEN}")
                finally:  # what the page showed, pass or fail, for the CI log
                    ARTIFACTS.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(ARTIFACTS / "browser-form.png"))
            finally:
                browser.close()
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        try:
            lab.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(lab.pid, signal.SIGKILL)
            lab.wait()
