"""The seed's own JS examples run unmodified as tools, in the Deno sandbox, on mock and real."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

SEED_GEM = Path(__file__).resolve().parent.parent / "notebooks" / "gems" / "seed-examples"
pytestmark = pytest.mark.deno


@pytest.fixture
def seed_bench(open_bench):
    shutil.copytree(SEED_GEM / "fixtures" / "workspace", open_bench.workspace, dirs_exist_ok=True)
    return open_bench(SEED_GEM)


def test_seed_files_example_files_pdfs_and_writes_report(seed_bench):
    res = seed_bench.call("file_pdfs", {"table": "sales.csv", "target": "inbox/"})
    assert res.ok, res.error
    assert res.value == {"ok": True}
    files = seed_bench.files()
    ws = set(files[files.area == "workspace"].path)
    assert {
        "workspace:inbox/PDF/invoice-1.pdf",
        "workspace:inbox/PDF/invoice-2.pdf",
        "workspace:inbox/readme.txt",
    } <= ws
    assert not {"workspace:inbox/invoice-1.pdf", "workspace:inbox/invoice-2.pdf"} & ws
    run = files[(files.area == "run") & (files.call_id == res.call_id)]
    report = run[run.path == "output/report.md"]
    assert len(report) == 1 and report["size"].iloc[0] == len("# 本月汇总\n…".encode())
    assert res.trace["method"].tolist() == [
        "files.read",
        "files.list",
        "files.move",
        "files.move",
        "files.write",
    ]


def test_seed_files_example_second_run_finds_nothing_to_move(seed_bench):
    seed_bench.call("file_pdfs", {"table": "sales.csv", "target": "inbox/"}).raise_for_error()
    res = seed_bench.call("file_pdfs", {"table": "sales.csv", "target": "inbox/"})
    assert res.ok and "files.move" not in res.trace["method"].tolist()


def test_seed_files_example_missing_table_fails_with_ctx_code(seed_bench):
    res = seed_bench.call("file_pdfs", {"table": "nope.csv", "target": "inbox/"})
    assert res.error.code == "E_NOT_FOUND" and "nope.csv" in res.error.message
    assert "tools/file_pdfs.js:3" in res.error.details["stack"]


def test_seed_data_example_inserts_notes(seed_bench):
    ids = [seed_bench.call("add_note", {"title": t}).value["id"] for t in ("a", "b")]
    df = seed_bench.data("notes")
    assert df["id"].tolist() == ids
    assert df["title"].tolist() == ["a", "b"] and set(df["status"]) == {"open"}
