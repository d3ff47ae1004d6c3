"""Adversarial tools against ctx.files: SEC3 (what a gem cannot see is never deleted, moved,
copied or read on its behalf), as Python and JS tools, on mock and real providers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import OPS_TOOL, GemBuilder

import workbench
from workbench.ctx import history

JS_OPS = """
export default async function (input, ctx) {
  const out = [];
  for (const [op, ...args] of input.ops) {
    try {
      out.push({ ok: (await ctx.files[op](...args)) ?? null });
    } catch (e) {
      out.push({ error: e.code, message: e.message });
    }
  }
  return out;
}
"""


@pytest.fixture(params=["py", "js"])
def ops(
    request: pytest.FixtureRequest, gem: GemBuilder, open_bench: Callable[..., workbench.Bench]
) -> Callable[..., list[dict[str, Any]]]:
    """ops(*[op, args…]) -> one result per op, from one call of a Python or JS tool."""
    ws: Path = open_bench.workspace  # type: ignore[attr-defined]
    (ws / "proj" / ".git").mkdir(parents=True)
    (ws / "proj" / ".git" / "config").write_text("[core]")
    (ws / "proj" / ".env").write_text("TOKEN=user-secret")
    (ws / "proj" / "notes.md").write_text("# notes")
    (ws / "proj" / "sub").mkdir()
    (ws / "proj" / "sub" / ".keep").write_text("")
    (ws / "open").mkdir()
    (ws / "open" / "a.txt").write_text("a")
    gem.tool("ops", OPS_TOOL if request.param == "py" else JS_OPS, ext=request.param)
    bench = open_bench(gem)

    def run(*o: list[Any]) -> list[dict[str, Any]]:
        res = bench.call("ops", {"ops": [list(x) for x in o]})
        assert res.ok, res.error
        return res.value

    run.bench = bench  # type: ignore[attr-defined]
    return run


def _names(entries: list[dict[str, Any]]) -> list[str]:
    return sorted(e["name"] for e in entries)


def test_SEC3_delete_of_a_folder_holding_hidden_entries_is_refused(ops, kind: str, open_bench) -> None:
    listed, deleted, again = ops(
        ["list", "workspace:proj"], ["delete", "workspace:proj"], ["list", "workspace:proj"]
    )
    assert _names(listed["ok"]) == ["notes.md", "sub"]  # the gem sees no dot-entry
    assert deleted["error"] == "E_PERM_DENIED" and "SEC3" in deleted["message"]
    assert ".git" not in deleted["message"] and ".env" not in deleted["message"]
    assert _names(again["ok"]) == ["notes.md", "sub"]
    # a nested hidden entry protects its ancestors too
    assert ops(["delete", "workspace:proj/sub"])[0]["error"] == "E_PERM_DENIED"
    # what the gem can see, it can delete
    assert ops(["delete", "workspace:proj/notes.md"], ["delete", "workspace:open"]) == [
        {"ok": None},
        {"ok": None},
    ]
    assert ops.bench.history()["path"].tolist() == ["proj/notes.md", "open/a.txt"]
    if kind == "real":
        ws = open_bench.workspace
        assert (ws / "proj" / ".git" / "config").read_text() == "[core]"
        assert (ws / "proj" / ".env").read_text() == "TOKEN=user-secret"


def test_SEC3_move_of_a_folder_holding_hidden_entries_is_refused_within_the_workspace(ops) -> None:
    out = ops(
        ["move", "workspace:proj", "workspace:elsewhere"],
        ["move", "workspace:proj", "stolen"],
        ["list", "workspace:"],
    )
    assert [o.get("error") for o in out] == ["E_PERM_DENIED", "E_PERM_DENIED", None]
    assert _names(out[2]["ok"]) == ["open", "proj"]
    assert ops(["move", "workspace:open", "workspace:moved"])[0] == {"ok": None}


def test_SEC3_history_never_copies_hidden_entries(ops) -> None:
    bench = ops.bench
    # the unit under the rule: a folder's history copy skips what the gem cannot see
    history.record(bench.providers.store, bench.providers.files, "proj", reason="delete", call_id=None)
    assert sorted(bench.history()["path"]) == ["proj/notes.md"]
    assert ops(["write", "workspace:proj/notes.md", "new"])[0] == {"ok": None}
    saved = bench.history()
    assert sorted(saved["path"]) == ["proj/notes.md", "proj/notes.md"]
    contents = [r[0] for r in bench.providers.data_db.conn.execute("SELECT content FROM _wb_history")]
    assert all(b"user-secret" not in c and b"[core]" not in c for c in contents)


def test_SEC3_folders_holding_unlisted_entries_are_not_deleted(gem: GemBuilder, tmp_path: Path) -> None:
    """A FIFO or a file whose name is not UTF-8 is not listed, so it is not the gem's to destroy."""
    import os

    ws = tmp_path / "ws"
    (ws / "pipes").mkdir(parents=True)
    os.mkfifo(ws / "pipes" / "p")
    (ws / "pipes" / "a.txt").write_text("a")
    (ws / "latin").mkdir()
    (ws / "latin" / os.fsdecode(b"r\xe9sum\xe9.txt")).write_text("cv")
    gem.tool("ops", OPS_TOOL)
    with workbench.open(
        gem.write(), providers="real", workspace=ws, state_dir=tmp_path / "st", headless=True
    ) as bench:
        out = bench.call(
            "ops",
            {
                "ops": [
                    ["list", "workspace:pipes"],
                    ["delete", "workspace:pipes"],
                    ["delete", "workspace:latin"],
                    ["move", "workspace:latin", "stolen"],
                ]
            },
        ).value
    assert [e["name"] for e in out[0]["ok"]] == ["a.txt"]
    assert [o.get("error") for o in out[1:]] == ["E_PERM_DENIED"] * 3
    assert (ws / "pipes" / "p").exists() and (ws / "latin").is_dir()


@pytest.mark.parametrize("lang", ["py", "js"])
def test_SEC3_a_fifo_in_the_way_is_never_replaced(gem: GemBuilder, tmp_path: Path, lang: str) -> None:
    import os

    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / "fifo")
    gem.tool("ops", OPS_TOOL if lang == "py" else JS_OPS, ext=lang)
    with workbench.open(
        gem.write(), providers="real", workspace=ws, state_dir=tmp_path / "st", headless=True
    ) as bench:
        out = bench.call(
            "ops",
            {
                "ops": [
                    ["write", "workspace:fifo", "x"],
                    ["mkdir", "workspace:fifo"],
                    ["write", "workspace:fifo/x", "x"],
                ]
            },
        ).value
    assert [o.get("error") for o in out] == ["E_EXISTS"] * 3, out
    import stat

    assert stat.S_ISFIFO(os.lstat(ws / "fifo").st_mode)


def test_SEC7_a_fifo_in_the_fixtures_does_not_block_open(gem: GemBuilder, tmp_path: Path) -> None:
    import os

    gem.tool("ops", OPS_TOOL)
    root = gem.write()
    (root / "fixtures" / "workspace").mkdir(parents=True)
    (root / "fixtures" / "workspace" / "a.txt").write_text("a")
    os.mkfifo(root / "fixtures" / "workspace" / "pipe")
    with workbench.open(root, state_dir=tmp_path / "st") as bench:  # used to block forever
        assert bench.call("ops", {"ops": [["list", "workspace:"]]}).value[0]["ok"][0]["name"] == "a.txt"
