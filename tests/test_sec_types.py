"""A gem's `.gem-workbench/` as hostile input (SEC7): open() and `gem-workbench check` read its
`.stamp.json`, which anyone who sends the gem wrote."""

from __future__ import annotations

import json
from pathlib import Path

import workbench
from workbench.cli import main
from workbench.scaffold._create import create


def test_SEC7_a_stamp_nested_past_the_parser_is_not_ours(tmp_path: Path) -> None:
    """A stamp nested 32,000 deep (64 KiB, the most read) was a RecursionError out of open()
    and `check`: now a stamp past its depth (8) is not ours, as one that is not JSON, and the
    folder is made anew with a stamp of its own."""
    deep = "[" * 32_000 + "]" * 32_000
    gem = create("tg", platform="notochord", lang="ts", parent=tmp_path)
    stamp = gem / ".gem-workbench" / ".stamp.json"
    stamp.write_text(deep)
    with workbench.open(gem):
        pass
    assert sorted(json.loads(stamp.read_text())) == ["files", "inputs", "workbench"]
    stamp.write_text(deep)
    assert main(["check", str(gem)]) == 0
    assert sorted(json.loads(stamp.read_text())) == ["files", "inputs", "workbench"]
