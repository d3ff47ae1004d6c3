"""docs/architecture.md names only files and folders that exist, so that it cannot go stale."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
# named as examples of what a new thing would be, or files of a gem (not of this repository)
NOT_OURS = {"ctx/calendar.py", "integration.ts", "manifest.json"}
_NAME = re.compile(r"(?<![\w@/.-])([A-Za-z_][\w]*(?:/[\w]+)*(?:/|\.py|\.ts)?)(?![\w/.-]*\w)")


def _diagram() -> list[str]:
    """The lines of the first code block: the layers, each a folder or module of workbench/."""
    return DOC.read_text(encoding="utf-8").split("```")[1].splitlines()


def _missing_in_diagram() -> list[str]:
    """Every x.py, x.ts and x/ the layer diagram names, looked for in workbench/ and in the
    folders named before it in the same entry (an entry's later lines are indented)."""
    missing, dirs = [], [ROOT / "workbench"]
    for line in _diagram():
        if line[:1] not in ("", " "):  # a new entry
            dirs = [ROOT / "workbench"]
        for name in _NAME.findall(line):
            if not (name.endswith(("/", ".py", ".ts")) or "/" in name) or name in NOT_OURS:
                continue
            found = [d / name for d in dirs if (d / name).exists()]
            if not found:
                missing.append(f"{name} (in {line.strip()!r})")
            dirs += [f for f in found if f.is_dir()]
    return missing


def _missing_in_backticks() -> list[str]:
    """Every path in backticks: relative to the repository or to workbench/."""
    missing = []
    for name in re.findall(r"`([^`\s]+)`", DOC.read_text(encoding="utf-8")):
        if "<" in name or name in NOT_OURS or not ("/" in name or name.endswith((".py", ".ts", ".toml"))):
            continue
        if not any((base / name).exists() for base in (ROOT, ROOT / "workbench")):
            missing.append(name)
    return missing


def test_every_module_the_layer_diagram_names_exists() -> None:
    assert _missing_in_diagram() == []


def test_every_path_in_backticks_exists() -> None:
    assert _missing_in_backticks() == []


def test_the_check_sees_a_stale_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """(The check itself: a file that is not there is reported.)"""
    doc = tmp_path / "architecture.md"
    doc.write_text("x\n```\nrunners/  deno/ (links.py)\n```\n`runners/deno/links.py`\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "DOC", doc)
    assert _missing_in_diagram() == ["links.py (in 'runners/  deno/ (links.py)')"]
    assert _missing_in_backticks() == ["runners/deno/links.py"]


def _stateful_rows() -> list[tuple[str, str, str]]:
    """(capability, parts, module) of the table under "A stateful capability"."""
    text = DOC.read_text(encoding="utf-8").split("## A stateful capability", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in text.splitlines():
        cells = [c.strip().replace("`", "") for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[2].endswith(".py"):
            rows.append((cells[0], cells[1], cells[2]))
    return rows


def test_the_stateful_capability_table_is_the_registrys_parts_and_where_they_live() -> None:
    """Every built-in capability's parts, named as the registry declares them, defined in the
    module the table names (a part's functions are its module's)."""
    from workbench.ctx.registry import SPECS
    from workbench.ctx.spec import BENCH

    code = []
    for spec in (BENCH, *SPECS.values()):
        if spec.state:
            modules = sorted({p.dump.__module__ for p in spec.state})
            paths = ", ".join(m.removeprefix("workbench.").replace(".", "/") + ".py" for m in modules)
            code.append((spec.impl or "every bench", ", ".join(p.name for p in spec.state), paths))
    assert _stateful_rows() == code


def test_a_plugins_state_part_touches_its_module_and_registry_row_only() -> None:
    """The count the section gives: the gw_clock ticker's parts are defined in the module of
    the spec that declares them, which the plugin registers in its one entry point; no file of
    the workbench names them."""
    text = DOC.read_text(encoding="utf-8")
    assert "3 places, as any capability: its module, a registry\nrow, one row per platform" in text
    plugin = ROOT / "tests" / "plugins" / "gw_clock"
    sys.path.insert(0, str(plugin))
    try:
        import gw_clock
    finally:
        sys.path.remove(str(plugin))
    assert [p.name for p in gw_clock.TICKER.state] == ["ticker", "ticker_log"]
    assert {p.dump.__module__ for p in gw_clock.TICKER.state} == {"gw_clock"}
    entry_points = (plugin / "pyproject.toml").read_text(encoding="utf-8")
    assert entry_points.count("gw_clock:TICKER") == 1  # its registry row
    named = ('"ticker"', "'ticker'", "ticker_log", "gw_clock")
    assert not [
        p
        for p in (ROOT / "workbench").rglob("*.py")
        if any(n in p.read_text(encoding="utf-8") for n in named)
    ]
