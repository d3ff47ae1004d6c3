"""The code is kept in shape: the layers point one way (import-linter's contracts in
pyproject.toml, imports inside functions included; README "Architecture"), and ruff's lint
and format checks pass."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


def test_import_contracts_are_kept() -> None:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    out = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent)) or "ruff"
    return subprocess.run(
        [exe, *args, "workbench", "tests"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_ruff_check_is_clean() -> None:
    out = _ruff("check", "--no-cache", "--output-format", "concise")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_ruff_format_is_clean() -> None:
    out = _ruff("format", "--check", "--no-cache")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


@pytest.mark.parametrize(
    "package",
    ["workbench.jupyter", "workbench.providers", "workbench.runners.deno"],
)
def test_no_import_circle_within(package: str) -> None:
    """No two modules of these packages import each other, even through others or inside
    functions (display.py and display_agent.py did, and mailmock.py and maillocal.py)."""
    import grimp

    graph = grimp.build_graph("workbench")
    mods = sorted(m for m in graph.modules if m.startswith(package + "."))
    circles = [
        (a, b)
        for i, a in enumerate(mods)
        for b in mods[i + 1 :]
        if graph.find_shortest_chain(a, b) and graph.find_shortest_chain(b, a)
    ]
    assert circles == []


def test_the_sqlite3_contract_covers_every_module_but_providers() -> None:
    """The storage seam's contract names its source modules one by one (import-linter cannot
    say "all but providers"): a module added to workbench/ must be added to it, or sqlite3
    could come back through it unseen."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c.get("forbidden_modules") == ["sqlite3"]]
    pkg = ROOT / "workbench"
    tops = {
        f"workbench.{p.stem if p.suffix == '.py' else p.name}"
        for p in pkg.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    } - {"workbench.providers"}
    assert set(contract["source_modules"]) == tops
