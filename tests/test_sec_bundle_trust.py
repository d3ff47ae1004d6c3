"""A repro bundle is the file people send each other: opening or replaying one never runs host
code unannounced. A bundle whose gem has Python tools (run in the workbench's own process) or a
tests/doctor.py (imported by the doctor and by a doctor's case) is refused with E_TRUST, in one
line naming what would run, unless its opener says trust (`trust=True`, `--trust`); JavaScript
and TypeScript tools run in the Deno sandbox and need no trust. Each attack here writes a
marker file outside the bundle's folder: refused, the marker is absent; trusted, it is there."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _ipython import workbench_shell
from conftest import GemBuilder

import workbench
from workbench.bundles.replay import replay_bundle
from workbench.cli import main

GEMS = Path(__file__).resolve().parent.parent / "notebooks" / "gems"

HELLO_JS = "export default async function (input, ctx) { return { hi: 1 } }\n"


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Python's temp folder moved into the test's: what a refused bundle left there is seen."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder


def _py_bundle(gem: GemBuilder, tmp_path: Path, marker: Path, *, agent: bool = False) -> Path:
    """A bundle of a gem whose Python tool writes `marker` when imported and when called (a
    hostile module does its work at import): exported on its author's machine, where it ran."""
    gem.tool(
        "evil",
        f"""
        import pathlib
        pathlib.Path({str(marker)!r}).write_text("imported")

        def handle(input, ctx):
            pathlib.Path({str(marker)!r}).write_text("called")
            return {{"done": True}}
        """,
    )
    if agent:
        gem.as_agent()
    with workbench.open(gem.write(), seed=1) as bench:
        assert bench.call("evil", {}).ok
        path = bench.export(tmp_path / "evil.gemrepro")
    marker.unlink()
    return path


def _js_bundle(gem: GemBuilder, tmp_path: Path, doctor: str | None) -> Path:
    """A bundle of a JS gem (its one call pinned as its case), carrying `doctor` as its
    tests/doctor.py; the case made a doctor's invariant finding, whose replay imports it."""
    gem.tool("hello", HELLO_JS, ext="js", side_effect="read")
    root = gem.write()
    if doctor is not None:
        (root / "tests").mkdir()
        (root / "tests" / "doctor.py").write_text(doctor)
    with workbench.open(root, seed=1) as bench:
        assert bench.call("hello", {}).ok
        path = bench.export(tmp_path / "js.gemrepro")
    if doctor is None:
        return path
    with zipfile.ZipFile(path) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    case = json.loads(entries["cases/0000.json"])
    case["doctor"] = {"kind": "invariant", "seed": 0}
    entries["cases/0000.json"] = json.dumps(case).encode()
    meta = json.loads(entries.pop("bundle.json"))
    meta["entries"] = [
        {"name": n, "sha256": hashlib.sha256(d).hexdigest(), "size": len(d)} for n, d in entries.items()
    ]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("bundle.json", json.dumps(meta))
        for n, d in entries.items():
            z.writestr(n, d)
    path.write_bytes(buf.getvalue())
    return path


def _untrusted(path: Path, names: str, temp: Path) -> None:
    """workbench.open and replay_bundle both refuse `path` with one E_TRUST line naming
    `names`, leaving no folder behind."""
    for attempt in (lambda: workbench.open(path), lambda: replay_bundle(path)):
        with pytest.raises(workbench.WorkbenchError) as err:
            attempt()
        e = err.value
        assert e.code == "E_TRUST", e
        assert f"bundle {path} would run host code: {names}" in e.message
        assert "pass --trust / trust=True" in e.message and "\n" not in e.message
        assert e.details["option"] == "trust"
        assert list(temp.iterdir()) == [], "a refused bundle left its folder"


def _cli_refuses(path: Path, capsys: Any) -> None:
    assert main(["replay", str(path)]) == 1
    out = capsys.readouterr()
    assert out.out == "" and out.err.splitlines()[0].startswith("error E_TRUST: bundle ")
    assert "Traceback" not in out.err


@pytest.mark.parametrize("platform", ["notochord", "agent"])
def test_python_tools_of_a_bundle_run_only_when_trusted(
    platform: str, gem: GemBuilder, tmp_path: Path, temp: Path, capsys: Any
) -> None:
    marker = tmp_path / "outside" / "pwned"
    marker.parent.mkdir()
    path = _py_bundle(gem, tmp_path, marker, agent=platform == "agent")
    _untrusted(path, "tools/evil.py (Python tools)", temp)
    _cli_refuses(path, capsys)
    assert not marker.exists(), "a refused bundle ran its Python tool"
    with pytest.raises(workbench.UsageError, match="trust='yes'"):
        workbench.open(path, trust="yes")
    assert not marker.exists()
    with workbench.open(path, trust=True) as bench:
        assert not marker.exists()  # opening imports nothing: the call does
        assert bench.call("evil", {}).ok
    assert marker.read_text() == "called"
    marker.unlink()
    assert main(["replay", str(path), "--trust"]) == 0
    assert json.loads(capsys.readouterr().out)["matches"] is True
    assert marker.read_text() == "called"


@pytest.mark.deno
def test_a_js_bundle_carrying_tests_doctor_py_is_refused_unless_trusted(
    gem: GemBuilder, tmp_path: Path, temp: Path, capsys: Any
) -> None:
    marker = tmp_path / "outside" / "pwned"
    marker.parent.mkdir()
    doctor = (
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('imported')\n\n"
        "def invariant_holds(bench):\n    return True\n"
    )
    path = _js_bundle(gem, tmp_path, doctor)
    _untrusted(path, "tests/doctor.py (the doctor's invariants)", temp)
    _cli_refuses(path, capsys)
    assert not marker.exists(), "a refused bundle imported its tests/doctor.py"
    # trusted: the doctor's case replays its invariant finding, which imports the file
    assert main(["replay", str(path), "--trust"]) == 1  # the invariant holds: no finding now
    out = capsys.readouterr()
    row = json.loads(out.out)
    assert row["how"] == "doctor" and row["result"] is None and not row["matches"]
    assert "no longer occurs" in row["differences"][0] and "Traceback" not in out.err
    assert marker.read_text() == "imported"


@pytest.mark.deno
def test_js_tools_need_no_trust(gem: GemBuilder, tmp_path: Path, capsys: Any) -> None:
    path = _js_bundle(gem, tmp_path, None)
    with workbench.open(path) as bench:
        assert bench.call("hello", {}).value == {"hi": 1}
    assert replay_bundle(path)[0].ok
    assert main(["replay", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["how"] == "sequence"  # from the bundle's start


def test_many_python_tools_are_named_in_one_bounded_line(tmp_path: Path, temp: Path) -> None:
    gem = GemBuilder(tmp_path / "many")
    for i in range(40):
        gem.tool(f"t{i:02d}", "def handle(input, ctx):\n    return {}\n")
    with workbench.open(gem.write()) as bench:
        path = bench.export(tmp_path / "many.gemrepro")
    with pytest.raises(workbench.WorkbenchError) as err:
        workbench.open(path)
    message = err.value.message
    assert "tools/t00.py" in message and "tools/t09.py and 30 more (Python tools)" in message
    assert "tools/t10.py" not in message and err.value.details["files"] == 40
    assert list(temp.iterdir()) == []


@pytest.fixture
def ip(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The process's IPython shell with the workbench's magics, no bench open after the test."""
    shell = workbench_shell(tmp_path_factory.mktemp("ipython"))
    magics = shell.magics_manager.registry["WorkbenchMagics"]
    shell.user_ns.pop("bench", None)  # (another test's, in this shared shell: not ours to see)
    try:
        yield shell
    finally:
        bench = shell.user_ns.pop("bench", None)
        for b in {id(x): x for x in (bench, magics.opened) if isinstance(x, workbench.Bench)}.values():
            b.close()
        magics.opened = None


def test_gem_open_magic_refuses_an_untrusted_bundle(
    ip: Any, gem: GemBuilder, tmp_path: Path, capsys: Any
) -> None:
    marker = tmp_path / "outside" / "pwned"
    marker.parent.mkdir()
    path = _py_bundle(gem, tmp_path, marker)
    capsys.readouterr()
    res = ip.run_cell(f"%gem open {path}")
    assert not res.success
    err = capsys.readouterr().err
    assert err.startswith("error E_TRUST: bundle ") and len(err.splitlines()) == 1, err
    assert "bench" not in ip.user_ns and not marker.exists()
    assert ip.run_cell(f"%gem open {path} --trust").success
    assert ip.run_cell("%tool evil {}").result.ok
    assert marker.read_text() == "called"


def test_python_tools_and_tests_doctor_py_are_both_named(tmp_path: Path, temp: Path) -> None:
    """A bundle of the project's notes gem with a tests/doctor.py added: both reasons named."""
    root = tmp_path / "notes"
    shutil.copytree(GEMS / "notes", root, ignore=shutil.ignore_patterns(".gem-workbench", "calls"))
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "doctor.py").write_text("def invariant_ok(bench):\n    return True\n")
    with workbench.open(root) as bench:
        path = bench.export(tmp_path / "notes.gemrepro")
    with pytest.raises(workbench.WorkbenchError) as err:
        workbench.open(path)
    assert err.value.code == "E_TRUST"
    assert "(Python tools), tests/doctor.py (the doctor's invariants);" in err.value.message
    assert err.value.details["would_run"][-1] == "tests/doctor.py"
