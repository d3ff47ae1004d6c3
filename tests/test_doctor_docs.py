"""docs/doctor.md's table of finding kinds is workbench.doctor.findings.KINDS: the same kinds, in
the same order, each with its rule ID, the rule each platform names it by (rule_of), and what it
is (code spans aside), so the page and the doctor cannot drift apart."""

from __future__ import annotations

import re
from pathlib import Path

from workbench.doctor.findings import KINDS, rule_of
from workbench.platforms import profile

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "doctor.md"
PLATFORMS = [profile(name) for name in ("notochord", "agent", "ekanos")]


def _table() -> list[list[str]]:
    """The rows of the table under "## Finding kinds", as lists of cells."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("## Finding kinds") :]
    section = section[: section.index("\n## ", 1)]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [[cell.strip() for cell in row.strip().strip("|").split(" | ")] for row in rows]


def _expected() -> str:
    """The table's first three columns as KINDS says them (to paste when a kind is added)."""
    return "\n".join(f"| `{k}` | {rule} | {what} | …" for k, (rule, what) in KINDS.items())


def test_the_table_lists_exactly_the_kinds_in_order() -> None:
    kinds = [re.fullmatch(r"`(\w+)`", row[0])[1] for row in _table()]  # type: ignore[index]
    assert kinds == list(KINDS), f"docs/doctor.md's kinds drifted from KINDS; they are:\n{_expected()}"


def test_each_row_has_its_rule_and_what_it_is() -> None:
    for row in _table():
        kind = row[0].strip("`")
        rule, what = KINDS[kind]
        assert len(row) == 4 and row[3], f"{kind}: a row is kind | rule | what it is | how it is found"
        ids = re.findall(r"\[([A-Z]+[0-9]+)\]\(rules\.md#\1\)", row[1])
        first = ids[0] if ids else row[1]
        assert first == rule, f"{kind}: the rule column starts with {first!r}, KINDS says {rule!r}"
        assert set(ids) | {rule} == {rule} | {rule_of(kind, p) for p in PLATFORMS} - {"-"}, (
            f"{kind}: the rule column names {ids}, the platforms name it {[rule_of(kind, p) for p in PLATFORMS]}"
        )
        assert row[2].replace("`", "") == what, f"{kind}: 'what it is' should read {what!r} (KINDS)"
