"""A failing pinned case shows the difference: a window around each changed line of a text (a
unified diff for a file's content), JSON held in a string compared by its paths, a one-line
text shown where it first differs; and pinning unchanged behaviour again leaves the case file
byte for byte as it was."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from workbench.pins.replay import value_diff
from workbench.testing import replay_case

GEMS = Path(__file__).resolve().parent.parent / "notebooks" / "gems"


@pytest.fixture
def notes_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "notes"
    shutil.copytree(GEMS / "notes", dest, ignore=shutil.ignore_patterns(".gem-workbench", "calls"))
    return dest


def _report(rows: int, changed: dict[int, str]) -> str:
    lines = ["# Summary", "", "| item | a | b | c |", "|---|---|---|---|"]
    lines += [changed.get(i, f"| units{i} | 4 | 4 | 1 |") for i in range(rows)]
    return "\n".join(lines) + "\n"


def test_a_changed_markdown_report_shows_each_changed_line_with_its_neighbours() -> None:
    expected = _report(30, {})
    got = _report(30, {7: "| units7 | 4 | 4 | 2 |", 25: "| units25 | 4 | 5 | 1 |"})
    lines = list(value_diff({"text": expected}, {"text": got}, "after"))
    assert lines[0] == "after.text: text differs (expected 34 lines, got 34):"
    assert "  -| units7 | 4 | 4 | 1 |" in lines and "  +| units7 | 4 | 4 | 2 |" in lines
    assert "  -| units25 | 4 | 4 | 1 |" in lines and "  +| units25 | 4 | 5 | 1 |" in lines
    assert "   | units6 | 4 | 4 | 1 |" in lines  # a line of context either side
    assert "   | units15 | 4 | 4 | 1 |" not in lines  # not the unchanged middle
    assert len(lines) < 20


def test_a_long_one_line_text_is_shown_where_it_first_differs() -> None:
    expected, got = "x" * 300 + "A" + "y" * 300, "x" * 300 + "B" + "y" * 300
    [line] = value_diff(expected, got)
    assert line.endswith("(from character 301)")
    shown_expected, shown_got = line.split(", got ")
    assert "xA" in shown_expected and "xB" in shown_got and "Ay" in shown_expected
    assert len(line) < 400


def test_an_account_record_held_as_json_text_diffs_by_path() -> None:
    """An Ekanos account-storage record lives in kv as a JSON text: its change is a path."""
    before = {"key": "settings/location", "data": {"tempC": 12.5, "city": "Oslo"}, "updatedAt": "x"}
    after = {**before, "data": {"tempC": 13, "city": "Oslo"}}
    change = {"kind": "kv", "where": "kv", "key": "account:settings/location", "change": "changed"}
    from workbench.pins.replay import _change_lines

    lines = list(
        _change_lines([{**change, "after": json.dumps(before)}], [{**change, "after": json.dumps(after)}])
    )
    assert lines == ["changes: kv 'account:settings/location' after.data.tempC: expected 12.5, got 13"]


def test_json_written_otherwise_is_still_a_difference_of_its_text() -> None:
    assert list(value_diff('{"a": 1}', '{"a":1}')) == ['value: expected "{\\"a\\": 1}", got "{\\"a\\":1}"']


def test_a_replayed_report_file_shows_its_changed_line_and_a_json_file_its_path(
    notes_copy: Path, opened
) -> None:
    tool = notes_copy / "tools" / "write_report.py"
    tool.write_text(  # a JSON file in the workspace too, the counts nested in it
        tool.read_text().replace(
            "    moved = []",
            '    await ctx.files.write("workspace:reports/counts.json", '
            '\'{"counts": {"open": %d, "tags": []}}\' % len(notes))\n    moved = []',
        )
    )
    bench = opened(notes_copy, clock="2026-01-05T09:00:00Z", seed=7)
    for i in range(12):
        bench.call("add_note", {"title": f"note {i:02d}", "priority": 1 + i % 3})
    path = bench.call("write_report", {}).pin("report")
    tool.write_text(
        tool.read_text()
        .replace(
            "{n['title']}\" for n in notes]", "{n['title'].replace('note 07', 'note 7')}\" for n in notes]"
        )
        .replace("% len(notes))", "% (len(notes) + 1))")
    )
    out = replay_case(path)
    assert not out.ok
    report = out.report()
    assert (
        "changes: file workspace:reports/notes.md after.text: text differs (expected 14 lines, got 14):"
        in report
    )
    assert "-- [2] note 07" in report and "+- [2] note 7" in report
    assert "changes: file workspace:reports/counts.json after.text.counts.open: expected 12, got 13" in report


def _pin_on_a_new_bench(gem: Path, state: Path) -> bytes:
    import workbench

    bench = workbench.open(gem, state_dir=state, headless=True, clock="2026-01-05T09:00:00Z", seed=7)
    try:
        a = bench.call("add_note", {"title": "milk", "priority": 2})
        return bench.call("close_note", {"id": a.value["id"]}).pin("close").read_bytes()
    finally:
        bench.close()


def test_pinning_an_unchanged_call_again_leaves_the_case_byte_identical(
    notes_copy: Path, tmp_path: Path
) -> None:
    first = _pin_on_a_new_bench(notes_copy, tmp_path / "s1")
    again = _pin_on_a_new_bench(notes_copy, tmp_path / "s2")
    assert again == first  # not even call.duration_ms, nor the call's start time


def test_pinning_a_changed_call_again_writes_the_new_case(notes_copy: Path, tmp_path: Path) -> None:
    first = _pin_on_a_new_bench(notes_copy, tmp_path / "s1")
    tool = notes_copy / "tools" / "close_note.py"
    tool.write_text(tool.read_text().replace('return {"ok": True}', 'return {"ok": True, "v": 2}'))
    again = _pin_on_a_new_bench(notes_copy, tmp_path / "s2")
    assert again != first and b'"v": 2' in again


@pytest.mark.deno
def test_an_ekanos_account_record_change_replays_as_a_path_into_it(tmp_path: Path, opened) -> None:
    root = tmp_path / "weather"
    root.mkdir()
    source = """import { defineIntegration } from '@ekanos/sdk';
export default defineIntegration({ slug: 'weather', egress: ['api.demo.example'],
  tools: [{ name: 'save', description: 'd', outputExample: { ok: true },
    parameters: { type: 'object', properties: { t: { type: 'number' } } },
    async run(ctx, args) {
      await ctx.storage.account.set('reading', { city: 'Oslo', tempC: args.t });
      return { ok: true };
    } }] });
"""
    (root / "integration.ts").write_text(source)
    bench = opened(root, clock="2026-01-05T09:00:00Z", seed=7)
    path = bench.call("weather_save", {"t": 12.5}).raise_for_error().pin("save")
    bench.close()
    (root / "integration.ts").write_text(source.replace("tempC: args.t", "tempC: Math.round(args.t)"))
    lines = replay_case(path).lines
    assert lines == ["changes: kv 'account:reading' after.data.tempC: expected 12.5, got 13"], lines
