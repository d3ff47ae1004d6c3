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
    kw.setdefault("trust", True)  # the notes gem's tools are Python: the checks past E_TRUST
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
    err = _refused(path, "format '99': this workbench reads formats 1, 2")
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
    assert main(["replay", str(path), "--trust"]) == 1
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


# -- where a bundle is written -------------------------------------------------------------
def test_export_onto_a_folder_or_an_unusable_path_is_a_coded_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    folder = tmp_path / "x.gemrepro"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    (tmp_path / "afile").write_text("a file")
    previous = tmp_path / "old.gemrepro"
    previous.write_bytes(b"an earlier bundle")
    with workbench.open(EXAMPLE_GEM) as bench:
        bench.call("add_note", {"title": "a"})
        for target, code in (
            (folder, "E_IS_A_FOLDER"),
            (tmp_path / "afile" / "x.gemrepro", "E_NOT_A_FOLDER"),
            (tmp_path / ("n" * 300 + ".gemrepro"), "E_PATH"),
            (tmp_path / "nul\x00.gemrepro", "E_PATH"),
        ):
            with pytest.raises(workbench.WorkbenchError) as err:
                bench.export(target)
            assert err.value.code == code, err.value
            assert "cannot write the bundle at" in err.value.message
    with (
        workbench.open(EXAMPLE_GEM, limits=workbench.Limits(bundle_bytes=100)) as bench,
        pytest.raises(workbench.WorkbenchError, match=r"Limits\.bundle_bytes"),
    ):
        bench.export(previous)
    assert previous.read_bytes() == b"an earlier bundle"  # a failed export loses nothing
    assert (folder / "keep.txt").read_text() == "mine" and (tmp_path / "afile").read_text() == "a file"
    monkeypatch.chdir(tmp_path)
    assert main(["export", str(EXAMPLE_GEM), "--out", "x.gemrepro"]) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith("error E_IS_A_FOLDER: cannot write the bundle at x.gemrepro")
        and "Traceback" not in err
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "old.gemrepro", "x.gemrepro"]


# -- secrets: the one mask the pins use ----------------------------------------------------
DEEP_SECRET = 'tok"en\\-VALUE-42'  # a quote and a backslash: each JSON level escapes it again
DEEP_TOOLS = {
    "py": """
        import json
        async def handle(input, ctx):
            v = {"k": input["token"]}
            for _ in range(5):
                v = json.dumps(v)
            await ctx.storage.kv.set("deep", v)
            await ctx.files.write("workspace:deep.json", v)
            return {"ok": True}
        """,
    "js": """
        export default async function (input, ctx) {
          let v = { k: input.token }
          for (let i = 0; i < 5; i++) v = JSON.stringify(v)
          await ctx.storage.kv.set('deep', v)
          await ctx.files.write('workspace:deep.json', v)
          return { ok: true }
        }
        """,
}


def _strings(value: Any) -> Iterator[str]:
    """Every string of a JSON value, and of each JSON text inside a string, however deep."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value
        try:
            inner = json.loads(value)
        except ValueError:
            return
        if inner != value:
            yield from _strings(inner)


def test_a_secret_escaped_deeper_than_the_mask_forms_is_masked_as_in_a_pin(
    lang: str, gem: Any, opened: Any, tmp_path: Path
) -> None:
    """A tool parks a secret in JSON five levels deep (kv and a file): the bundle's state.json
    and the state folder's files hold it no more than the pinned case of the same call does."""
    gem.tool("keep", DEEP_TOOLS[lang], ext=lang)
    gem.manifest["permissions"] = {"http": {"connections": {"acme": {"hosts": ["api.acme.example"]}}}}
    bench = opened(gem, credentials={"acme": {"token": DEEP_SECRET, "hosts": ["api.acme.example"]}})
    res = bench.call("keep", {"token": DEEP_SECRET})
    assert res.ok, res.error
    with zipfile.ZipFile(bench.export(tmp_path / "deep.gemrepro")) as z:
        entries = {n: z.read(n).decode() for n in z.namelist() if not n.startswith("gem/")}
    folder = bench.export_state(tmp_path / "exported")
    entries |= {f"state folder {p.name}": p.read_text() for p in folder.rglob("*") if p.is_file()}
    assert "state folder deep.json" in entries
    case = res.pin("deep").read_text()
    for where, text in {**entries, "the pin": case}.items():
        leaked = [s for s in _strings(json.loads(text)) if "VALUE-42" in s]
        assert not leaked, f"{where} holds the secret: {leaked[0][:80]!r}"
    assert "***" in entries["state.json"]


def test_every_entry_goes_through_the_one_mask(
    gem: Any, opened: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A form the mask learns (here: a canary word) is masked in every entry of a bundle and of
    a state folder, text and binary alike, as in a pin: there is no second mask to teach."""
    from workbench.ctx.masking import SecretMask

    canary = "CANARY-Q7-FORM"
    plain = SecretMask.mask
    monkeypatch.setattr(SecretMask, "mask", lambda self, text: plain(self, text).replace(canary, "***"))
    gem.tool(
        "keep",
        """
        async def handle(input, ctx):
            await ctx.storage.kv.set("k", input["x"])
            await ctx.files.write("workspace:w.txt", input["x"])
            return {"echo": input["x"]}
        """,
    )
    gem.manifest["permissions"] = {"http": {"connections": {"acme": {"hosts": ["api.acme.example"]}}}}
    root = gem.write()
    (root / "fixtures" / "workspace").mkdir(parents=True)
    (root / "fixtures" / "workspace" / "f.txt").write_text(f"a {canary} in a fixture\n")
    (root / "fixtures" / "workspace" / "f.bin").write_bytes(b"\xff\xfe\x00" + canary.encode() + b"\x80")
    bench = opened(root, credentials={"acme": {"token": "s3cr3t-t0ken-VALUE", "hosts": ["api.acme.example"]}})
    res = bench.call("keep", {"x": f"an input with {canary}"})
    assert res.ok, res.error
    with zipfile.ZipFile(bench.export(tmp_path / "c.gemrepro")) as z:
        blobs = {f"bundle:{n}": z.read(n) for n in z.namelist()}
    folder = bench.export_state(tmp_path / "exported")
    blobs |= {f"state:{p.name}": p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    blobs["pin"] = res.pin("c").read_bytes()
    assert "bundle:gem/fixtures/workspace/f.bin" in blobs and "bundle:cases/0000.json" in blobs
    for where, data in blobs.items():
        assert canary.encode() not in data, f"{where} was not masked by the one mask"


@pytest.mark.parametrize("at", [1e300, -1e20, 2**70])
def test_a_clock_no_clock_can_stand_at_is_the_bundles_fault(
    at: float, good: dict[str, bytes], tmp_path: Path, temp: Path, capsys: Any
) -> None:
    """A time past the clock's range in bundle.json (the bench's clock, a call's) was E_USAGE, as
    if the user had given it: it is E_BUNDLE naming the field, for open and replay alike."""
    meta = _meta(good)
    meta["clock"] = {"mode": "frozen", "at": at}
    err = _refused(
        _bundle(tmp_path / "a.gemrepro", {**good, "bundle.json": json.dumps(meta).encode()}), "clock"
    )
    assert err.details["entry"] == "bundle.json: clock"
    meta = _meta(good)
    meta["calls"][0]["call"]["clock_ms"] = at
    path = _bundle(tmp_path / "b.gemrepro", {**good, "bundle.json": json.dumps(meta).encode()})
    err = _refused(path, "is not a time the clock can stand at")
    assert err.details["entry"] == "bundle.json: calls.0.call.clock_ms"
    assert main(["replay", str(path), "--trust"]) == 1
    out = capsys.readouterr().err
    assert out.startswith("error E_BUNDLE: ") and "clock_ms" in out and "Traceback" not in out
    _nothing_left(temp, tmp_path)


def test_export_state_onto_an_unusable_path_is_a_coded_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a bundle's: a file on the way, a name too long or with a NUL were raw OSErrors; a swap
    that fails halfway puts the earlier state folder back."""
    import errno

    import workbench.bundles.statedir as statedir

    (tmp_path / "afile").write_text("a file")
    with workbench.open(EXAMPLE_GEM) as bench:
        bench.call("add_note", {"title": "a"})
        for target, code in (
            (tmp_path / "afile" / "st", "E_NOT_A_FOLDER"),
            (tmp_path / ("n" * 300), "E_PATH"),
            (tmp_path / "nul\x00", "E_PATH"),
        ):
            with pytest.raises(workbench.WorkbenchError) as err:
                bench.export_state(target)
            assert err.value.code == code, err.value
            assert "cannot write the state folder at" in err.value.message
        earlier = bench.export_state(tmp_path / "st")
        before = {p.relative_to(earlier): p.read_bytes() for p in earlier.rglob("*") if p.is_file()}
        bench.call("add_note", {"title": "b"})
        real = os.replace

        def full_disk(src: Any, dst: Any) -> None:
            if Path(dst) == earlier and ".tmp" in Path(src).name:
                raise OSError(errno.ENOSPC, "No space left on device")
            real(src, dst)

        monkeypatch.setattr(statedir.os, "replace", full_disk)
        with pytest.raises(workbench.WorkbenchError) as err:
            bench.export_state(earlier)
        assert err.value.code == "E_TOO_LARGE" and "No space left" in err.value.message
    after = {p.relative_to(earlier): p.read_bytes() for p in earlier.rglob("*") if p.is_file()}
    assert after == before, "the earlier state folder is back as it was"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "st"]  # no temp, no .old


# -- format 2: start.json, the setup, each call's outside answers ---------------------------
def _with_call(good: dict[str, bytes], edit: Any) -> dict[str, bytes]:
    meta = _meta(good)
    edit(meta)
    return {**good, "bundle.json": json.dumps(meta).encode()}


def _outside(key: str, value: Any) -> Any:
    return lambda meta: meta["calls"][0]["outside"].__setitem__(key, value)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda m: m.__setitem__("setup", ["recipients"]), "bundle.json: setup: is not an object"),
        (lambda m: m.__setitem__("start", 7), "bundle.json: start: is not a text"),
        (lambda m: m["calls"][0].__setitem__("outside", "x"), r"calls.0.outside: is not \{served"),
        (_outside("served", {"method": "x"}), "calls.0.outside.served: is not a list"),
        (_outside("http", "GET /"), "calls.0.outside.http: is not a list"),
        (_outside("secrets", [1, 2]), "secrets is not a list of secret names"),
        (_outside("credentials", {"c": {"hosts": "a"}}), r"credentials.c is not \{hosts, paths\?\}"),
        (
            _outside("served", [{"method": "email.listSince", "ok": False, "error": {"code": "nope"}}]),
            "served.0.error",
        ),
        (
            _outside("http", [{"request": {"url": "https://a.example/"}, "response": {"status": 99}}]),
            "http.0.response.status",
        ),
        (_outside("served", [{"method": "m", "ok": True}] * 20_001), "more answers than a call records"),
        (lambda m: m["calls"][0]["call"].__setitem__("ticks", ["soon"]), "call.ticks is not a list"),
        (lambda m: m["calls"][0]["call"].__setitem__("crash_after", -1), "call.crash_after: is not a number"),
    ],
    ids=[
        "setup",
        "start",
        "outside",
        "served",
        "http",
        "secrets",
        "credentials",
        "served-error",
        "http-status",
        "too-many",
        "ticks",
        "crash_after",
    ],
)
def test_format_2_fields_are_checked(
    edit: Any, match: str, good: dict[str, bytes], tmp_path: Path, temp: Path
) -> None:
    path = _bundle(tmp_path / "b.gemrepro", _with_call(good, edit))
    err = _refused(path, match)
    assert "bundle.json" in err.message
    _nothing_left(temp, tmp_path)


@pytest.mark.parametrize(
    ("start", "match"),
    [
        ([], r"start.json: is not \{state, setup\}"),
        ({"state": {}, "setup": {}, "more": 1}, r"start.json: is not \{state, setup\}"),
        ({"state": [], "setup": {}}, "start.json: state: is not an object"),
        ({"state": {}, "setup": "all"}, "start.json: setup: is not an object"),
    ],
)
def test_a_hostile_start_is_refused_on_open(
    start: Any, match: str, good: dict[str, bytes], tmp_path: Path, temp: Path
) -> None:
    path = _bundle(tmp_path / "b.gemrepro", {**good, "start.json": json.dumps(start).encode()})
    _refused(path, match)
    _nothing_left(temp, tmp_path)


@pytest.mark.parametrize(
    ("start", "said"),
    [
        (
            {
                "state": {"files": [{"root": "workspace", "path": "../x", "type": "file", "text": "x"}]},
                "setup": {},
            },
            "start.json: state: files.0",
        ),
        ({"state": {"kv": {"k": 1}}, "setup": {}}, "start.json: state: kv"),
        ({"state": {}, "setup": {"wormhole": 1}}, "start.json: setup: wormhole"),
    ],
    ids=["file-escapes", "kv-not-text", "unknown-setup-part"],
)
def test_a_hostile_start_is_refused_by_the_parts_on_replay(
    start: dict[str, Any], said: str, good: dict[str, bytes], tmp_path: Path, capsys: Any
) -> None:
    path = _bundle(tmp_path / "b.gemrepro", {**good, "start.json": json.dumps(start).encode()})
    assert main(["replay", str(path), "--trust"]) == 1
    err = capsys.readouterr().err
    assert "E_BUNDLE" in err and said in err and "Traceback" not in err
    assert not (tmp_path / "x").exists() and not (tmp_path.parent / "x").exists()
