"""The doctor's report in JupyterLab (headless Chromium): each finding is one line, a click
unfolds its whole message; its screenshot is .artifacts/doctor-report.png."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from _lab import TOKEN
from conftest import ARTIFACTS
from nbformat.v4 import new_code_cell, new_notebook
from test_browser import _run_all

# the group of tests/test_browser.py: the same worker, so the same JupyterLab
pytestmark = [pytest.mark.browser, pytest.mark.deno, pytest.mark.xdist_group("browser")]
GEMS = Path(__file__).resolve().parent.parent / "notebooks" / "gems"


def test_the_doctor_report_keeps_each_finding_on_one_line(lab, folder):
    shutil.copytree(GEMS / "buggy", folder / "buggy", ignore=shutil.ignore_patterns("calls"))
    nb = new_notebook(
        metadata={
            "kernelspec": {"name": "gem-workbench", "display_name": "Gem Workbench", "language": "python"}
        },
        cells=[
            new_code_cell(
                "import workbench\nbench = workbench.open('buggy')\n"
                "report = bench.doctor(examples=40, seed=1, write=False)\nreport"
            )
        ],
    )
    nbformat.write(nb, folder / "doctor.ipynb")
    with lab.page(folder, "doctor-report-lab.png") as (page, base):
        page.set_viewport_size({"width": 1440, "height": 900})
        page.goto(f"{base}/doctor.ipynb?token={TOKEN}")
        _run_all(page)
        report = page.locator(".gw-doctor").first
        report.wait_for(timeout=120_000)
        rows = report.locator("table").nth(1).locator("tr")
        assert rows.count() == 5  # its header and the four planted bugs
        line = report.locator("p").first.evaluate("p => parseFloat(getComputedStyle(p).lineHeight)")
        heights = [rows.nth(i).bounding_box()["height"] for i in range(1, 5)]
        why = rows.nth(4).evaluate(
            "r => [...r.querySelectorAll('td, details, summary, code')].map(e => e.tagName + ' '"
            " + e.getBoundingClientRect().height + ' ' + getComputedStyle(e).marginBottom + ' '"
            " + getComputedStyle(e).paddingBottom + ' ' + getComputedStyle(e).whiteSpace)"
        )
        assert all(h < 2 * line for h in heights), (heights, line, why)  # one line each, however long
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        report.screenshot(path=str(ARTIFACTS / "doctor-report.png"))
        d4 = rows.filter(has_text="count_reads").first
        message = d4.locator("details").first
        assert "plan mode runs read tools" in (message.locator("summary").get_attribute("title") or "")
        message.locator("summary").click()
        whole = message.locator("pre")
        whole.wait_for(timeout=10_000)
        assert "plan mode runs read tools before the user approves" in whole.inner_text()
        assert d4.bounding_box()["height"] > 2 * line  # unfolded: the whole message
        report.screenshot(path=str(ARTIFACTS / "doctor-report-unfolded.png"))
