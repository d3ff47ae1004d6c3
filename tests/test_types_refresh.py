"""Issue 28, point 1: a gem's `.gem-workbench/` types never go stale. open(), reload and
`gem-workbench check` remake them when the definition or the workbench changed (nothing is
generated when the stamp matches); `gem-workbench types` remakes them on demand. Writes are
atomic, confined to `.gem-workbench/`, and never go through a link."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

import workbench
from workbench.cli import main
from workbench.scaffold._create import create
from workbench.types import TypesWarning, refresh

TYPES = ".gem-workbench"


def _gem(tmp_path: Path, platform: str = "notochord", lang: str = "ts") -> Path:
    return create("tg", platform=platform, lang=lang, parent=tmp_path)


def _add_field(gem: Path, field: str = "file") -> None:
    """Edit the manifest as an author would: a new input field on the first tool."""
    path = gem / "manifest.json"
    m = json.loads(path.read_text())
    m["tools"][0]["inputSchema"]["properties"][field] = {"type": "string"}
    path.write_text(json.dumps(m, indent=2))


def _dts(gem: Path) -> str:
    return (gem / TYPES / "gem.d.ts").read_text()


def test_open_refreshes_stale_types_after_a_schema_edit(tmp_path: Path) -> None:
    gem = _gem(tmp_path)
    assert "file" not in _dts(gem)
    _add_field(gem)
    with workbench.open(gem):
        pass
    assert '"hello": { name: string; file?: string }' in _dts(gem)


def test_current_types_are_not_touched(tmp_path: Path) -> None:
    gem = _gem(tmp_path)
    before = {p.name: os.stat(p) for p in (gem / TYPES).iterdir()}
    with workbench.open(gem):
        pass
    after = {p.name: os.stat(p) for p in (gem / TYPES).iterdir()}
    assert sorted(after) == sorted(before)
    for name, st in before.items():
        assert (after[name].st_ino, after[name].st_mtime_ns) == (st.st_ino, st.st_mtime_ns), name


def test_reload_refreshes_types(tmp_path: Path) -> None:
    gem = _gem(tmp_path)
    with workbench.open(gem) as bench:
        _add_field(gem, "pages")
        bench.reload()
        assert "pages?: string" in _dts(gem)


def test_check_refreshes_types(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gem = _gem(tmp_path)
    _add_field(gem)
    assert main(["check", str(gem)]) == 0
    assert "file?: string" in _dts(gem)


def test_types_command_remakes_a_deleted_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gem = _gem(tmp_path)
    expected = {p.name: p.read_bytes() for p in (gem / TYPES).iterdir()}
    for p in (gem / TYPES).iterdir():
        p.unlink()
    (gem / TYPES).rmdir()
    with workbench.open(gem):  # open() refreshes an existing folder only
        pass
    assert not (gem / TYPES).exists()
    assert main(["types", str(gem)]) == 0
    assert {p.name: p.read_bytes() for p in (gem / TYPES).iterdir()} == expected
    out = capsys.readouterr().out
    assert "wrote" in out and "gem.d.ts" in out
    assert main(["types", str(gem)]) == 0
    assert "wrote" not in capsys.readouterr().out


def test_types_command_defaults_to_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gem = _gem(tmp_path)
    _add_field(gem)
    monkeypatch.chdir(gem)
    assert main(["types"]) == 0
    assert "file?: string" in _dts(gem)
    assert "wrote" in capsys.readouterr().out


def test_types_command_on_no_gem_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["types", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "E_MANIFEST" in err and "Traceback" not in err


def test_another_workbench_version_rewrites(tmp_path: Path) -> None:
    gem = _gem(tmp_path)
    stamp = gem / TYPES / ".stamp.json"
    data = json.loads(stamp.read_text())
    (gem / TYPES / "notochord.d.ts").write_text("// STALE-DECLARATIONS\n")
    stamp.write_text(json.dumps({**data, "workbench": "0.0.1"}))
    manifest = workbench.platforms.detect(gem).load(gem)
    done = refresh(manifest)
    assert done.state == "refreshed" and done.written == ("notochord.d.ts",)
    assert json.loads(stamp.read_text())["workbench"] == workbench.__version__
    assert "STALE-DECLARATIONS" not in (gem / TYPES / "notochord.d.ts").read_text()


def test_a_linked_types_folder_is_left_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gem = _gem(tmp_path)
    outside = gem / "elsewhere"  # a link out of the gem is refused by the loader already (SEC2)
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    for p in (gem / TYPES).iterdir():
        p.unlink()
    (gem / TYPES).rmdir()
    (gem / TYPES).symlink_to(outside, target_is_directory=True)
    _add_field(gem)
    with pytest.warns(TypesWarning, match="link"), workbench.open(gem):
        pass
    assert main(["types", str(gem)]) == 1
    assert "E_PATH" in capsys.readouterr().err
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]


def test_a_linked_file_is_replaced_not_written_through(tmp_path: Path) -> None:
    gem = _gem(tmp_path)
    target = gem / "victim.d.ts"  # inside the gem: the loader refuses a link leading out
    target.write_text("not yours")
    (gem / TYPES / "gem.d.ts").unlink()
    (gem / TYPES / "gem.d.ts").symlink_to(target)
    _add_field(gem)
    with workbench.open(gem):
        pass
    assert target.read_text() == "not yours"
    assert not (gem / TYPES / "gem.d.ts").is_symlink()
    assert "file?: string" in _dts(gem)


def test_a_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gem = _gem(tmp_path)
    old = _dts(gem)
    _add_field(gem)
    real = os.replace

    def crash(src: object, dst: object, **kw: object) -> None:
        if dst == "gem.d.ts":
            raise OSError(28, "No space left on device")
        real(src, dst, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", crash)
    with pytest.warns(TypesWarning, match="No space left"), workbench.open(gem):
        pass
    assert _dts(gem) == old
    assert sorted(p.name for p in (gem / TYPES).iterdir()) == [
        ".stamp.json",
        "gem.d.ts",
        "manifest.schema.json",
        "notochord.d.ts",
    ]  # no temporary file left behind
    monkeypatch.setattr(os, "replace", real)
    with workbench.open(gem):  # the stamp was not advanced: the next open finishes the job
        pass
    assert "file?: string" in _dts(gem)


def test_a_hostile_stamp_removes_nothing_outside(tmp_path: Path) -> None:
    gem = _gem(tmp_path)
    (tmp_path / "precious").write_text("x")
    (gem / "manifest.keep").write_text("y")
    stamp = gem / TYPES / ".stamp.json"
    stamp.write_text(
        json.dumps({"workbench": "0", "inputs": "0", "files": ["../../precious", "../manifest.keep"]})
    )
    with workbench.open(gem):
        pass
    assert (tmp_path / "precious").exists() and (gem / "manifest.keep").exists()
    assert json.loads(stamp.read_text())["files"] == ["gem.d.ts", "manifest.schema.json", "notochord.d.ts"]
    stamp.write_text("[" * 100_000)  # deep or huge: not ours, read as no stamp
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with workbench.open(gem):
            pass
    assert json.loads(stamp.read_text())["workbench"] == workbench.__version__


@pytest.mark.parametrize(("platform", "lang"), [("agent", "py"), ("ekanos", "ts")])
def test_other_platforms_get_their_own_types(tmp_path: Path, platform: str, lang: str) -> None:
    gem = _gem(tmp_path, platform, lang)
    names = sorted(p.name for p in (gem / TYPES).iterdir())
    assert f"{platform}.d.ts" in names and ".stamp.json" in names
    (gem / TYPES / f"{platform}.d.ts").write_text("stale")
    stamp = gem / TYPES / ".stamp.json"
    stamp.write_text(stamp.read_text().replace(workbench.__version__, "0.0.0"))
    with workbench.open(gem):
        pass
    assert (gem / TYPES / f"{platform}.d.ts").read_text() != "stale"


def test_the_stamped_version_is_the_distributions() -> None:
    """The stamp names workbench._version's version: pyproject.toml's, or an upgrade would
    not be noticed."""
    import tomllib

    root = Path(__file__).parent.parent
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    from workbench._version import __version__

    assert __version__ == project["version"] == workbench.__version__
