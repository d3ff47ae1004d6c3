"""Hostile repro bundles and state folders (issue 29 point 5; STYLE habit 12): a bundle or a
state folder is written by someone else. Each bad one is a coded error (E_BUNDLE, E_STATE)
naming the entry, and nothing is written outside the bench's own folders."""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_GEM

import workbench
from workbench.cli import main


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Python's temp folder moved into the test's: what a refused bundle left there is seen."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder


@pytest.fixture
def good(tmp_path: Path) -> dict[str, bytes]:
    """The entries of a valid bundle of the notes gem (one call with its case)."""
    with workbench.open(EXAMPLE_GEM, seed=1) as bench:
        bench.call("add_note", {"title": "a"})
        path = bench.export(tmp_path / "good.gemrepro")
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def _meta(entries: dict[str, bytes]) -> dict[str, Any]:
    return json.loads(entries["bundle.json"])


def _bundle(path: Path, entries: dict[str, bytes], *, rehash: bool = True, extra: list[Any] = ()) -> Path:
    """Write `entries` as a bundle: bundle.json's list of hashes made again (`rehash`), then
    `extra` raw entries (ZipInfo, bytes) as a crafted zip has them."""
    entries = dict(entries)
    if rehash:
        meta = _meta(entries)
        meta["entries"] = [
            {"name": n, "sha256": hashlib.sha256(d).hexdigest(), "size": len(d)}
            for n, d in entries.items()
            if n != "bundle.json"
        ]
        entries["bundle.json"] = json.dumps(meta).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in entries.items():
            z.writestr(n, d)
        for info, data in extra:
            z.writestr(info, data)
    path.write_bytes(buf.getvalue())
    return path


def _refused(path: Path, match: str, **kw: Any) -> workbench.WorkbenchError:
    with pytest.raises(workbench.WorkbenchError, match=match) as err:
        workbench.open(path, **kw)
    assert err.value.code == "E_BUNDLE", err.value
    return err.value


def _nothing_left(temp: Path, root: Path) -> None:
    assert list(temp.iterdir()) == [], "a refused bundle left its folder"
    assert not (root / "x").exists() and not (root.parent / "x").exists()


@pytest.mark.parametrize(
    "name", ["../x", "gem/../../x", "/tmp/x", "C:\\x", "gem\\..\\..\\x", "gem/a\\b", "gem//x", "gem/./x"]
)
def test_zip_slip_names(name: str, good: dict[str, bytes], tmp_path: Path, temp: Path) -> None:
    err = _refused(_bundle(tmp_path / "b.gemrepro", {**good, name: b"pwned"}), "relative path|segment")
    assert name[:20] in str(err.details["entry"])
    _nothing_left(temp, tmp_path)


def test_a_link_entry(good: dict[str, bytes], tmp_path: Path, temp: Path) -> None:
    info = zipfile.ZipInfo("gem/tools/evil.py")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    path = _bundle(tmp_path / "b.gemrepro", good, extra=[(info, b"/etc/passwd")])
    err = _refused(path, "is a link")
    assert err.details["entry"] == "gem/tools/evil.py"
    _nothing_left(temp, tmp_path)


@pytest.mark.parametrize("second", ["gem/tools/add_note.py", "gem/TOOLS/add_note.py"])
def test_duplicate_entries(second: str, good: dict[str, bytes], tmp_path: Path, temp: Path) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of a duplicate name: that is the point
        path = _bundle(tmp_path / "b.gemrepro", good, extra=[(second, b"async def handle(i, c): pass\n")])
    _refused(path, "appears twice")
    _nothing_left(temp, tmp_path)


def test_a_file_over_the_size_limit(good: dict[str, bytes], tmp_path: Path, temp: Path) -> None:
    path = _bundle(tmp_path / "b.gemrepro", good)
    limit = path.stat().st_size - 1
    _refused(path, "over Limits.bundle_bytes", limits=workbench.Limits(bundle_bytes=limit))
    _nothing_left(temp, tmp_path)


def test_unpacked_entries_over_the_size_limit(good: dict[str, bytes], tmp_path: Path, temp: Path) -> None:
    # compresses well, under the ratio bound: only the total unpacked bound stops it
    blob = os.urandom(1000).hex().encode() * 300  # 600 KB of text in ~2 KB compressed
    path = _bundle(tmp_path / "b.gemrepro", {**good, "gem/fixtures/big.txt": blob})
    size = path.stat().st_size
    _refused(path, "unpacks past Limits.bundle_bytes", limits=workbench.Limits(bundle_bytes=size + 100_000))
    _nothing_left(temp, tmp_path)


def test_a_zip_bomb_stops_early(good: dict[str, bytes], tmp_path: Path, temp: Path) -> None:
    bomb = b"\0" * (64 * 1024 * 1024)  # 64 MiB of zeros deflate to about 64 KB: ratio ~1000
    err = _refused(_bundle(tmp_path / "b.gemrepro", {**good, "gem/fixtures/zeros.bin": bomb}), "zip bomb")
    assert err.details["entry"] == "gem/fixtures/zeros.bin"
    _nothing_left(temp, tmp_path)


def test_a_header_that_lies_about_sizes(good: dict[str, bytes], tmp_path: Path, temp: Path) -> None:
    """An entry whose header claims 10 bytes but holds more: read by what is there, never by
    what the header says; the CRC check refuses it."""
    path = _bundle(tmp_path / "b.gemrepro", {**good, "gem/fixtures/lie.txt": b"A" * 5000})
    raw = bytearray(path.read_bytes())
    name = b"gem/fixtures/lie.txt"
    for sig in (b"PK\x03\x04", b"PK\x01\x02"):  # local header and central directory entry
        at = raw.find(sig)
        while at != -1:
            off = 22 if sig == b"PK\x03\x04" else 24  # uncompressed size field
            name_at = at + (30 if sig == b"PK\x03\x04" else 46)
            if raw[name_at : name_at + len(name)] == name:
                raw[at + off : at + off + 4] = (10).to_bytes(4, "little")
            at = raw.find(sig, at + 4)
    path.write_bytes(bytes(raw))
    err = _refused(path, "cannot be unpacked|does not match")
    assert err.details["entry"] == "gem/fixtures/lie.txt"


def test_huge_and_deep_json(good: dict[str, bytes], tmp_path: Path, temp: Path) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    _refused(_bundle(tmp_path / "a.gemrepro", {**good, "state.json": deep}), "nests deeper")
    meta = _meta(good)
    meta["calls"][0]["input"] = json.loads("[" * 300 + "]" * 300)
    _refused(
        _bundle(tmp_path / "b.gemrepro", {**good, "bundle.json": json.dumps(meta).encode()}), "nests deeper"
    )
    _refused(_bundle(tmp_path / "c.gemrepro", {**good, "state.json": b'{"kv": {'}), "is not JSON")
    _nothing_left(temp, tmp_path)


def test_a_case_that_claims_another_gem(good: dict[str, bytes], tmp_path: Path, temp: Path) -> None:
    case = json.loads(good["cases/0000.json"])
    case["gem"] = "evil.other"
    path = _bundle(tmp_path / "b.gemrepro", {**good, "cases/0000.json": json.dumps(case).encode()})
    _refused(path, "claims gem 'evil.other'")
    _nothing_left(temp, tmp_path)


def test_a_bundle_json_that_claims_another_gem(good: dict[str, bytes], tmp_path: Path, temp: Path) -> None:
    meta = _meta(good)
    meta["gem"], meta["calls"] = "evil.other", []
    path = _bundle(tmp_path / "b.gemrepro", {**good, "bundle.json": json.dumps(meta).encode()})
    _refused(path, "claims gem 'evil.other'")
    _nothing_left(temp, tmp_path)


def test_a_hash_mismatch(good: dict[str, bytes], tmp_path: Path, temp: Path) -> None:
    entries = {**good, "gem/tools/add_note.py": b"import os\nos.system('echo pwned')\n"}
    err = _refused(_bundle(tmp_path / "b.gemrepro", entries, rehash=False), "does not match its sha256")
    assert err.details["entry"] == "gem/tools/add_note.py"
    _nothing_left(temp, tmp_path)


def test_unlisted_and_missing_entries(good: dict[str, bytes], tmp_path: Path, temp: Path) -> None:
    path = _bundle(tmp_path / "a.gemrepro", good, extra=[("gem/tools/extra.py", b"x = 1\n")])
    _refused(path, "is not listed")
    meta = _meta(good)
    meta["entries"].append({"name": "gem/tools/gone.py", "sha256": "0" * 64, "size": 1})
    path = _bundle(tmp_path / "b.gemrepro", {**good, "bundle.json": json.dumps(meta).encode()}, rehash=False)
    _refused(path, "listed in bundle.json but not in the bundle")
    _nothing_left(temp, tmp_path)


def test_an_unknown_format(good: dict[str, bytes], tmp_path: Path, temp: Path) -> None:
    meta = _meta(good)
    meta["bundle"] = 99
    path = _bundle(tmp_path / "b.gemrepro", {**good, "bundle.json": json.dumps(meta).encode()})
    err = _refused(path, "format '99': this workbench reads format 1")
    assert err.details["field"] == "bundle"


def test_state_entries_out_of_bounds(good: dict[str, bytes], tmp_path: Path, temp: Path) -> None:
    for n, state in enumerate(
        [
            {"files": [{"root": "workspace", "path": "../x", "type": "file", "text": "pwned"}]},
            {"files": [{"root": "workspace", "path": "/etc/x", "type": "file", "text": "pwned"}]},
            {"files": [{"root": "run", "path": "x", "type": "file", "text": "pwned"}]},
            {"documents": {"../secrets": {"a": {}}}},
            {"sql": {"sqlite_master": {"rows": []}}},
        ]
    ):
        path = _bundle(tmp_path / f"{n}.gemrepro", {**good, "state.json": json.dumps(state).encode()})
        err = _refused(path, "state.json")
        assert err.details["field"].split(".")[0] in ("files", "documents", "sql")
    _nothing_left(temp, tmp_path)


def test_not_a_bundle_at_all(tmp_path: Path, temp: Path) -> None:
    (tmp_path / "text.gemrepro").write_text("hello")
    _refused(tmp_path / "text.gemrepro", "is not a bundle")
    os.mkfifo(tmp_path / "fifo.gemrepro")
    _refused(tmp_path / "fifo.gemrepro", "not a regular file")  # never waits on the FIFO
    with pytest.raises(workbench.UsageError, match="mock providers"):
        workbench.open(tmp_path / "text.gemrepro", providers="real")


def test_replay_of_a_hostile_bundle_is_one_line(good: dict[str, bytes], tmp_path: Path, capsys: Any) -> None:
    meta = _meta(good)
    meta["calls"][0]["tool"] = "../../escape"
    case = json.loads(good["cases/0000.json"])
    case["tool"] = "../../escape"
    entries = {**good, "bundle.json": json.dumps(meta).encode(), "cases/0000.json": json.dumps(case).encode()}
    path = _bundle(tmp_path / "b.gemrepro", entries)
    assert main(["replay", str(path)]) == 1
    err = capsys.readouterr().err
    # the tool's case folder escapes any name (gem/names.py case_folder): the replay refuses
    # the case of a tool the gem does not have, in one coded line
    assert ("error E_BUNDLE" in err or "error E_CASE" in err) and "Traceback" not in err
    assert "does not have" in err or "E_BUNDLE" in err
    assert not (tmp_path / "escape").exists()


# -- state folders -------------------------------------------------------------------------
def _state(tmp_path: Path) -> Path:
    with workbench.open(EXAMPLE_GEM) as bench:
        return bench.export_state(tmp_path / "st")


def test_export_state_refuses_a_linked_folder(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    with (
        workbench.open(EXAMPLE_GEM) as bench,
        pytest.raises(workbench.WorkbenchError, match="is a link") as err,
    ):
        bench.export_state(tmp_path / "link")
    assert err.value.code == "E_STATE" and list(real.iterdir()) == []


def _state_refused(folder: Path, match: str) -> workbench.WorkbenchError:
    with pytest.raises(workbench.WorkbenchError, match=match) as err:
        workbench.open(EXAMPLE_GEM, state=folder)
    assert err.value.code == "E_STATE", err.value
    return err.value


def test_state_folder_with_a_link_inside(tmp_path: Path) -> None:
    folder = _state(tmp_path)
    secret = tmp_path / "outside.txt"
    secret.write_text("private")
    (folder / "workspace" / "inbox" / "leak.txt").symlink_to(secret)
    err = _state_refused(folder, "is a link")
    assert err.details["entry"] == "workspace/inbox/leak.txt"
    (folder / "workspace" / "inbox" / "leak.txt").unlink()
    (folder / "workspace" / "up").symlink_to(tmp_path, target_is_directory=True)
    _state_refused(folder, "is a link")


def test_state_folder_whose_workspace_is_a_link(tmp_path: Path) -> None:
    folder = _state(tmp_path)
    import shutil

    shutil.rmtree(folder / "workspace")
    (folder / "workspace").symlink_to(tmp_path, target_is_directory=True)
    _state_refused(folder, "is a link")


def test_state_folder_with_a_fifo_and_hostile_json(tmp_path: Path) -> None:
    folder = _state(tmp_path)
    os.mkfifo(folder / "workspace" / "pipe")
    _state_refused(folder, "not a file or a folder")
    os.unlink(folder / "workspace" / "pipe")
    head = json.loads((folder / "state.json").read_text())
    for bad, match in (
        ({**head, "files": [{"root": "workspace", "path": "../x", "text": "x"}]}, "files live in workspace/"),
        ({**head, "documents": {"../x": {}}}, "not a collection the gem declares"),
        ({**head, "state": 2}, "format '2'"),
    ):
        (folder / "state.json").write_text(json.dumps(bad))
        _state_refused(folder, match)
    (folder / "state.json").write_text("[" * 100_000 + "]" * 100_000)
    _state_refused(folder, "nests deeper|not an object")
    (folder / "state.json").unlink()
    (folder / "state.json").symlink_to(tmp_path / "st2.json")
    _state_refused(folder, "cannot be read")
    assert not (tmp_path / "x").exists()


def test_state_folder_with_a_backslash_name(tmp_path: Path) -> None:
    folder = _state(tmp_path)
    (folder / "workspace" / "a\\..\\b").write_text("x")
    err = _state_refused(folder, "not a relative path")
    assert "files." in err.details["field"]


def test_too_many_entries_refused_before_parsing(good: dict[str, bytes], tmp_path: Path, temp: Path) -> None:
    path = _bundle(tmp_path / "b.gemrepro", {**good, **{f"gem/fixtures/f{i}": b"" for i in range(50)}})
    err = _refused(path, "over Limits.bundle_entries", limits=workbench.Limits(bundle_entries=20))
    assert err.details["entry"] == "the file"
    _nothing_left(temp, tmp_path)
