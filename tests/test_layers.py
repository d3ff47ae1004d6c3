"""The code is kept in shape: the layers point one way (import-linter's contracts in
pyproject.toml, imports inside functions included; README "Architecture"), and ruff's lint
and format checks pass."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

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


#: Run-time import circles allowed for now, each with why: the list may only shrink (a circle
#: that is gone must leave it). Empty: the whole package has none.
KNOWN_CIRCLES: dict[frozenset[str], str] = {}


def test_no_import_circle_in_the_whole_package() -> None:
    """No module of workbench imports itself back through others, counting imports inside
    functions (they run too, later); imports under `if TYPE_CHECKING:` never run, so their
    circles are printed for the record, not failed."""
    from importgraph import build, circles

    graph = build(ROOT / "workbench")
    found = {frozenset(c) for c in circles(graph.run)}
    typed = circles({m: graph.run[m] | graph.typed[m] for m in graph.modules})
    for c in typed:
        print(f"type-only circle of {len(c)} modules: {', '.join(c)}")
    assert sorted(map(sorted, found - KNOWN_CIRCLES.keys())) == [], "new import circles"
    assert sorted(map(sorted, KNOWN_CIRCLES.keys() - found)) == [], "gone: take them off KNOWN_CIRCLES"


def test_the_import_graph_counts_function_imports_and_sets_type_only_ones_apart(tmp_path: Path) -> None:
    """The circle test's graph: an import inside a function is an edge, one under
    `if TYPE_CHECKING:` a type-only edge, and `from . import x` loads module x, not the package."""
    from importgraph import build, circles

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("VALUE = 1\n")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .c import g\n    return g\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import b\nfrom . import VALUE\n"
    )
    graph = build(pkg)
    assert graph.run == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": {"pkg"}}
    assert graph.typed["pkg.c"] == {"pkg.a"}
    assert circles(graph.run) == []
    assert circles({m: graph.run[m] | graph.typed[m] for m in graph.modules}) == [["pkg.a", "pkg.b", "pkg.c"]]


@functools.cache
def _graph() -> Any:
    """grimp's graph of workbench/, built once per process (the tests here only read it; it was
    built again for each module of each layer, ~0.3 CPU-s each)."""
    import grimp

    return grimp.build_graph("workbench")


def _direct_imports(prefix: str, target: str) -> list[str]:
    """`module -> imported` for each module under `prefix` that imports one under `target`
    itself (at module level, in a function or for types only)."""
    graph = _graph()
    return sorted(
        f"{m} -> {i}"
        for m in graph.modules
        if m == prefix or m.startswith(prefix + ".")
        for i in graph.find_modules_directly_imported_by(m)
        if i == target or i.startswith(target + ".")
    )


def test_no_runner_imports_a_platform() -> None:
    """Runners are handed what they need from the profile (an import map, the SDK's folders):
    `deno test` and `deno check` took Ekanos' import map from the platform themselves."""
    assert _direct_imports("workbench.runners", "workbench.platforms") == []


def _layers() -> list[str]:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (layers,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return [m.strip() for layer in layers["layers"] for m in layer.replace(":", "|").split("|")]


#: Face modules that still import a provider, each with why (the list may only shrink)
FACE_TO_PROVIDERS: set[str] = set()


def test_the_face_reaches_providers_only_through_ctx() -> None:
    """No module above the ctx layer imports a provider (the CLI's `--state` and the frames'
    store types did): ctx.stores offers what the Face needs."""
    above = _layers()[: _layers().index("workbench.ctx")]
    found = {line for m in above for line in _direct_imports(m, "workbench.providers")}
    assert found == FACE_TO_PROVIDERS


def test_the_face_contract_covers_every_layer_above_ctx() -> None:
    """The contract "The Face reaches providers through the ctx layer only" names every module
    above ctx in the layers, so a module added to a layer there is covered by it too."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["name"].startswith("The Face reaches providers")]
    above = _layers()[: _layers().index("workbench.ctx")]
    assert sorted(set(above) - set(contract["source_modules"])) == []
    ignored = {i.replace(" ", "") for i in contract.get("ignore_imports", [])}
    assert ignored == {i.replace(" ", "") for i in FACE_TO_PROVIDERS}


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
