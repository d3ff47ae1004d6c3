"""Repro bundles and state folders (issue 29 point 5): `bench.export(path)` writes one
*.gemrepro file, `workbench.open(path)` restores it, `gem-workbench export/replay` make and rerun
one; `bench.export_state(DIR)` and `workbench.open(GEM, state=DIR)` round-trip a bench's state.
Hostile bundles and folders: tests/test_sec_bundles.py."""

from __future__ import annotations

import base64
import io
import json
import urllib.parse
import zipfile
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_GEM

import workbench
from workbench.cli import main
from workbench.ctx.statejson import dump_state

SECRET = "s3cr3t-t0ken-VALUE-42"


def _open_notes(**kw: Any) -> workbench.Bench:
    return workbench.open(EXAMPLE_GEM, seed=7, clock="2026-01-01T00:00:00Z", **kw)


def _entries(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def test_export_then_open_restores_state_clock_seed_and_gem(tmp_path: Path) -> None:
    with _open_notes() as bench:
        bench.call("add_note", {"title": "a"})
        bench.call("close_note", {"id": bench.call("add_note", {"title": "b"}).value["id"]})
        bench.call("write_report", {})
        bench.clock.advance("1h")
        path = bench.export(tmp_path / "x.gemrepro")
        before = dump_state(bench)
        at = bench.clock.time()
    entries = _entries(path)
    meta = json.loads(entries["bundle.json"])
    assert meta["bundle"] == 2 and meta["gem"] == "acme.notes" and meta["platform"] == "notochord"
    assert meta["seed"] == 7 and meta["clock"] == {"mode": "frozen", "at": at}
    assert [c["tool"] for c in meta["calls"]] == ["add_note", "add_note", "close_note", "write_report"]
    assert [c.get("case") for c in meta["calls"]] == [None, None, None, "cases/0003.json"]
    assert "gem/manifest.json" in entries and "gem/tools/add_note.py" in entries
    assert "gem/fixtures/workspace/.env" in entries  # a fixture's dot-file is the tool's to find
    import hashlib

    listed = {e["name"]: e["sha256"] for e in meta["entries"]}
    assert listed == {n: hashlib.sha256(d).hexdigest() for n, d in entries.items() if n != "bundle.json"}
    with workbench.open(path, trust=True) as again:  # the notes gem's tools are Python
        assert dump_state(again) == before
        assert again.seed == 7 and again.clock.frozen and again.clock.time() == at
        root = again.manifest.root
        assert root.is_dir() and root != EXAMPLE_GEM
        assert again.call("list_notes", {"status": "open"}).ok
    assert not root.exists(), "the bundle's folder goes with its bench"


def test_export_twice_gives_the_same_bytes_and_replaces(tmp_path: Path) -> None:
    with _open_notes() as bench:
        bench.call("add_note", {"title": "a"})
        one = bench.export(tmp_path / "x.gemrepro").read_bytes()
        two = bench.export(tmp_path / "x.gemrepro").read_bytes()
    assert one == two
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.gemrepro"]  # no temp file left


def test_calls_chosen_by_index_or_result(tmp_path: Path) -> None:
    with _open_notes() as bench:
        first = bench.call("add_note", {"title": "a"})
        bench.call("add_note", {"title": "b"})
        meta = json.loads(_entries(bench.export(tmp_path / "a.gemrepro", calls=[-1]))["bundle.json"])
        assert [c["input"]["title"] for c in meta["calls"]] == ["b"]
        meta = json.loads(_entries(bench.export(tmp_path / "b.gemrepro", calls=[first]))["bundle.json"])
        assert [c["input"]["title"] for c in meta["calls"]] == ["a"] and "why" in meta["calls"][0]
        meta = json.loads(_entries(bench.export(tmp_path / "c.gemrepro", calls=[]))["bundle.json"])
        assert meta["calls"] == []
        with pytest.raises(workbench.UsageError, match="not an index"):
            bench.export(tmp_path / "d.gemrepro", calls=[5])
        with _open_notes() as other:
            stranger = other.call("add_note", {"title": "z"})
        with pytest.raises(workbench.UsageError, match="not a call this bench keeps"):
            bench.export(tmp_path / "d.gemrepro", calls=[stranger])
        with pytest.raises(workbench.UsageError, match=r"\*\.gemrepro"):
            bench.export(tmp_path / "d.zip")


def test_export_refuses_a_link(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    (tmp_path / "x.gemrepro").symlink_to(target)
    with _open_notes() as bench, pytest.raises(workbench.WorkbenchError, match="is a link") as err:
        bench.export(tmp_path / "x.gemrepro")
    assert err.value.code == "E_PATH" and target.read_text() == "keep me"


def _secret_gem(gem: Any) -> Path:
    gem.tool(
        "keep",
        """
        import base64, urllib.parse
        async def handle(input, ctx):
            s = input["token"]
            await ctx.storage.kv.set("plain", s)
            await ctx.files.write("workspace:b64.txt", base64.b64encode(s.encode()).decode())
            await ctx.files.write("workspace:url.txt", "q=" + urllib.parse.quote(s + " /&"))
            return {"echo": s, "json": {"nested": "\\"" + s + "\\""}}
        """,
        permissions={},
    )
    gem.manifest["permissions"] = {
        "http": {"connections": {"acme": {"hosts": ["api.acme.example"], "paths": ["/v1/"]}}}
    }
    root = gem.write()
    (root / "fixtures" / "workspace").mkdir(parents=True)
    (root / "fixtures" / "workspace" / "token.txt").write_text(f"TOKEN={SECRET}\n")
    (root / "tools" / "config.json").write_text(json.dumps({"token": SECRET}))
    return root


def _forms(secret: str) -> list[bytes]:
    return [
        secret.encode(),
        json.dumps(secret).encode(),
        urllib.parse.quote(secret).encode(),
        base64.b64encode(secret.encode()),
        base64.urlsafe_b64encode(secret.encode()).rstrip(b"="),
    ]


def test_no_secret_in_any_form_inside_the_bundle(gem: Any, opened: Any, tmp_path: Path) -> None:
    root = _secret_gem(gem)
    creds = {"acme": {"token": SECRET, "hosts": ["api.acme.example"]}}
    bench = opened(root, credentials=creds, seed=1)
    res = bench.call("keep", {"token": SECRET})
    assert res.ok, res.error
    path = bench.export(tmp_path / "s.gemrepro")
    state = bench.export_state(tmp_path / "state")
    blobs = {f"bundle:{n}": d for n, d in _entries(path).items()}
    blobs |= {f"state:{p}": p.read_bytes() for p in state.rglob("*") if p.is_file()}
    assert any(b"***" in d for d in blobs.values())
    for where, data in blobs.items():
        for form in _forms(SECRET):
            assert form not in data, f"{where} holds the secret as {form!r}"


def test_cli_export_and_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(
        [
            "export",
            str(EXAMPLE_GEM),
            "--call",
            'add_note={"title": "a"}',
            "--call",
            "write_report",
            "--seed",
            "3",
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    path = Path(out.out.strip())
    assert path == tmp_path / "notes.gemrepro" and path.is_file()
    assert main(["replay", str(path), "--trust"]) == 0
    out = capsys.readouterr()
    lines = [json.loads(line) for line in out.out.splitlines()]
    # from the bundle's start, each call served its answers (format 2: start.json)
    assert [(r["call"], r["how"], r["matches"]) for r in lines] == [
        (0, "sequence", True),
        (1, "sequence", True),
    ]
    assert main(["replay", str(path), "--call", "1", "--trust"]) == 0
    assert [json.loads(line)["call"] for line in capsys.readouterr().out.splitlines()] == [1]
    # a recorded result that differs: exit 1, the difference named
    entries = _entries(path)
    meta = json.loads(entries["bundle.json"])
    meta["calls"][0]["result"]["value"] = {"id": "another"}
    _rewrite(path, {**entries, "bundle.json": json.dumps(meta).encode()})
    assert main(["replay", str(path), "--trust"]) == 1
    out = capsys.readouterr()
    assert json.loads(out.out.splitlines()[0])["matches"] is False
    assert 'value.id: expected "another"' in out.err and "Traceback" not in out.err


def _rewrite(path: Path, entries: dict[str, bytes]) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in entries.items():
            z.writestr(n, d)
    path.write_bytes(buf.getvalue())


def test_cli_export_refuses_bad_call_flags(tmp_path: Path, capsys: Any) -> None:
    assert (
        main(["export", str(EXAMPLE_GEM), "--call", "add_note={x", "--out", str(tmp_path / "x.gemrepro")])
        == 2
    )
    assert "is not JSON" in capsys.readouterr().err
    assert not (tmp_path / "x.gemrepro").exists()


# -- state folders -------------------------------------------------------------------------
def test_export_state_then_open_from_it(tmp_path: Path) -> None:
    with _open_notes() as bench:
        bench.call("add_note", {"title": "a"})
        bench.call("write_report", {})
        folder = bench.export_state(tmp_path / "st")
        before = dump_state(bench)
    assert sorted(p.name for p in folder.iterdir()) == ["state.json", "workspace"]
    assert (folder / "workspace" / "reports" / "notes.md").read_text().startswith("# Open notes")
    head = json.loads((folder / "state.json").read_text())
    assert head["state"] == 1 and head["gem"] == "acme.notes" and "files" not in head
    with workbench.open(EXAMPLE_GEM, state=folder) as again:
        assert dump_state(again) == before
        again.call("add_note", {"title": "b"})
        again.export_state(folder)  # an earlier state folder is replaced
    assert len(json.loads((folder / "state.json").read_text())["documents"]["notes"]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["st"]  # no temp folder left


def test_export_state_refuses_a_folder_that_is_not_one(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("keep")
    with _open_notes() as bench, pytest.raises(workbench.WorkbenchError, match="not a state folder") as err:
        bench.export_state(tmp_path / "mine")
    assert err.value.code == "E_STATE" and (tmp_path / "mine" / "thesis.tex").read_text() == "keep"


def test_state_option_is_mock_only_and_in_the_cli(tmp_path: Path, capsys: Any) -> None:
    with _open_notes() as bench:
        bench.call("add_note", {"title": "from-state"})
        folder = bench.export_state(tmp_path / "st")
    with pytest.raises(workbench.UsageError, match="MOCK"):
        workbench.open(EXAMPLE_GEM, state=folder, providers="real", state_dir=tmp_path / "real")
    code = main(["call", str(EXAMPLE_GEM), "list_notes", "--input", "{}", "--state-from", str(folder)])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "from-state" in out.out


def test_state_of_another_gem_is_refused(tmp_path: Path, gem: Any) -> None:
    with _open_notes() as bench:
        folder = bench.export_state(tmp_path / "st")
    root = gem.tool("t", "async def handle(input, ctx):\n    return 1\n").write()
    with pytest.raises(workbench.WorkbenchError, match="state of gem 'acme.notes'") as err:
        workbench.open(root, state=folder)
    assert err.value.code == "E_STATE"


def test_call_and_flags_take_a_bundle(tmp_path: Path, capsys: Any) -> None:
    """`gem-workbench call x.gemrepro TOOL` (and `%gem open`, the same flag check) open a
    bundle as workbench.open does: its platform read from bundle.json alone."""
    from workbench.bench.options import gem_profile

    with _open_notes() as bench:
        bench.call("add_note", {"title": "in-the-bundle"})
        path = bench.export(tmp_path / "x.gemrepro")
    assert gem_profile(path).name == "notochord"
    assert main(["call", str(path), "list_notes", "--input", "{}"]) == 1  # Python tools: not unasked
    assert "error E_TRUST" in capsys.readouterr().err
    assert main(["call", str(path), "list_notes", "--input", "{}", "--trust"]) == 0
    assert "in-the-bundle" in capsys.readouterr().out
    assert main(["call", str(path), "list_notes", "--real"]) == 1
    assert "mock providers" in capsys.readouterr().err


@pytest.mark.deno
def test_replay_of_a_bundle_holding_a_doctor_case(tmp_path: Path, capsys: Any) -> None:
    """A doctor's case (a finding of the planted-bug gem) in a bundle replays as its finding's
    probe: a "doctor" row, no one result, matching while the finding still occurs."""
    import hashlib
    import shutil

    gem = tmp_path / "buggy"
    shutil.copytree(
        EXAMPLE_GEM.parent / "buggy", gem, ignore=shutil.ignore_patterns(".gem-workbench", "calls")
    )
    with workbench.open(gem, seed=1) as bench:
        [finding] = bench.doctor(tool="greet", examples=3, seed=1).findings
        bench.call("greet", {"name": ""})
        path = bench.export(tmp_path / "d.gemrepro", calls=[-1])
    entries = _entries(path)

    def with_case(case: bytes) -> None:
        entries["cases/0000.json"] = case
        meta = json.loads(entries.pop("bundle.json"))
        meta["entries"] = [
            {"name": n, "sha256": hashlib.sha256(d).hexdigest(), "size": len(d)} for n, d in entries.items()
        ]
        entries["bundle.json"] = json.dumps(meta).encode()
        _rewrite(path, entries)

    with_case(finding.case.read_bytes())
    assert main(["replay", str(path)]) == 0
    out = capsys.readouterr()
    row = json.loads(out.out)
    assert (row["how"], row["matches"], row["result"], row["differences"]) == ("doctor", True, None, [])
    assert "the doctor's finding throw" in row["note"] and "still occurs" in row["note"]
    assert "from its doctor's case): matches" in out.err and "Traceback" not in out.err
    # a kind the doctor never wrote reproduces nothing: a difference, not a match
    case = json.loads(finding.case.read_text())
    case["doctor"]["kind"] = "bogus"
    with_case(json.dumps(case).encode())
    assert main(["replay", str(path)]) == 1
    row = json.loads(capsys.readouterr().out)
    assert not row["matches"] and "is not one this workbench checks" in row["differences"][0]
