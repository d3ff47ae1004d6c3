"""Property tests of gem paths (F9, F10, F11): whatever string a gem passes, an accepted path
stays inside the run folder or the conversation folder, and never reaches a dot-entry of the
conversation folder; end to end on a real disk, nothing is written anywhere else."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import OPS_TOOL, GemBuilder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench
from workbench.ctx import CallSession
from workbench.ctx.files import Files
from workbench.ctx.paths import PREFIX, resolve, split

# errors a path may rightly get; anything else (E_INTERNAL above all) is a bug
PATH_ERRORS = {
    "E_PATH",
    "E_PERM_DENIED",
    "E_NOT_FOUND",
    "E_EXISTS",
    "E_NOT_A_FOLDER",
    "E_IS_A_FOLDER",
    "E_INVALID_ARGUMENT",
}

SEGMENTS = [
    "..",
    ".",
    "",
    "a",
    "b",
    ".h",
    ".hid",
    ".hid/secret",
    "out",
    "out-file",
    "out-rel",
    "dot-link",
    "in-link",
    "sub",
    "file.txt",
    "é",
    "日本",
    "a\\b",
    "C:",
    "c:",
    "\x00",
    "~",
    " ",
    "...",
    "..a",
    "a..",
    "workspace:",
    "\ud800",
    "\udcff",
    "con",
    "a b",
    "\n",
]
PREFIXES = [
    "",
    "workspace:",
    "/",
    "workspace:/",
    "workspace:workspace:",
    "\\",
    "./",
    "workspace:./",
    "//",
    "workspace:..",
    "WORKSPACE:",
]

segment = st.one_of(st.sampled_from(SEGMENTS), st.text(max_size=4))
structured = st.builds(
    lambda pre, segs, trail: pre + "/".join(segs) + trail,
    st.sampled_from(PREFIXES),
    st.lists(segment, max_size=5),
    st.sampled_from(["", "/", "/.", "/.."]),
)
any_text = st.text(alphabet=st.characters(blacklist_categories=()), max_size=24)
gem_paths = st.one_of(structured, any_text)

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _inside(path: str, base: str) -> bool:
    return path == base or path.startswith(base + os.sep)


# -- split: the pure string rules --------------------------------------------------------------


@FAST
@given(gem_paths)
def test_F9_split_accepts_only_relative_paths_without_dot_dot(raw):
    try:
        ws, segs = split(raw)
    except workbench.WorkbenchError as e:
        assert e.code == "E_PATH", e
        return
    assert ws == raw.startswith(PREFIX)
    rest = raw[len(PREFIX) :] if ws else raw
    assert not rest.startswith("/")
    for s in segs:
        assert s not in ("", ".", "..")
        assert "/" not in s and "\\" not in s and "\x00" not in s
    assert "\\" not in rest and "\x00" not in rest
    assert "/".join(segs) == ("" if posixpath.normpath(rest) == "." else posixpath.normpath(rest))


@pytest.mark.parametrize("raw", [None, 1, 1.5, b"a", ["a"], {"p": "a"}, True])
def test_F9_split_rejects_non_strings(raw):
    with pytest.raises(workbench.WorkbenchError) as exc:
        split(raw)
    assert exc.value.code == "E_INVALID_ARGUMENT"


@pytest.mark.parametrize(
    "raw", ["..", "a/../..", "workspace:../x", "/abs", "workspace:/abs", "C:/x", "a\\b", "a\x00b", "x/.."]
)
def test_F9_split_known_escapes(raw):
    with pytest.raises(workbench.WorkbenchError) as exc:
        split(raw)
    assert exc.value.code == "E_PATH"


# -- resolve: against mock and real providers, with symlinks on the real disk ------------------


class World:
    """A gem opened on `kind` providers in its own folder; the real workspace has symlinks."""

    def __init__(self, root: Path, kind: str) -> None:
        self.root, self.kind = root, kind
        self.outside = root / "outside"
        self.outside.mkdir()
        (self.outside / "secret.txt").write_text("outside")
        self.workspace = root / "workspace"
        for rel, text in {"seed.txt": "s", "sub/file.txt": "f", ".hid/secret": "h"}.items():
            (self.workspace / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.workspace / rel).write_text(text)
        if kind == "real":
            (self.workspace / "out").symlink_to(self.outside, target_is_directory=True)
            (self.workspace / "out-file").symlink_to(self.outside / "secret.txt")
            (self.workspace / "out-rel").symlink_to("../outside")
            (self.workspace / "dot-link").symlink_to(".hid", target_is_directory=True)
            (self.workspace / "in-link").symlink_to("sub", target_is_directory=True)
        gem = GemBuilder(root / "gem").tool("ops", OPS_TOOL)
        self.bench = workbench.open(
            gem.write(), providers=kind, workspace=self.workspace, state_dir=root / "state", headless=True
        )
        tool = self.bench.manifest.tools["ops"]
        self.session = CallSession(
            call_id="prop",
            tool=tool,
            manifest=self.bench.manifest,
            providers=self.bench.providers,
            conversation=True,
            strict=False,
            trash=False,
        )
        self.files = Files(self.session)

    def base(self, root: str) -> str:
        if root == "workspace":
            return os.path.realpath(self.workspace)
        return os.path.realpath(self.root / "state" / "runs" / root.removeprefix("run/"))


@pytest.fixture(scope="module", params=["mock", "real"])
def world(request, tmp_path_factory) -> Iterator[World]:
    w = World(tmp_path_factory.mktemp(f"paths-{request.param}"), request.param)
    yield w
    w.bench.close()


@FAST
@given(raw=gem_paths)
def test_F9_F10_resolved_paths_stay_inside_and_never_reach_a_dot_entry(world, raw):
    s = world.session
    try:
        p = resolve(s, raw)
    except workbench.WorkbenchError as e:
        assert e.code == "E_PATH", e
        return
    assert p.root == ("workspace" if raw.startswith(PREFIX) else s.run_root)
    assert not p.rel.startswith("/") and ".." not in p.rel.split("/")
    if world.kind == "real":
        full = os.path.realpath(os.path.join(world.base(p.root), p.rel))
        assert _inside(full, world.base(p.root)), (raw, full)
        parts = os.path.relpath(full, world.base(p.root)).split(os.sep)
    else:
        parts = p.rel.split("/")
        assert p.rel == "/".join(split(raw)[1])
    dot = any(part.startswith(".") and part not in (".",) for part in parts)
    if p.is_workspace and dot:
        assert p.hidden, (raw, p)  # F10: such a path must not exist for the gem
    if not p.is_workspace:
        assert not p.hidden  # dot names in the run folder are ordinary
    if p.hidden:
        assert world.files.stat(raw) is None
        for op, args in (("read", ()), ("write", ("x",)), ("list", ()), ("mkdir", ()), ("delete", ())):
            with pytest.raises(workbench.WorkbenchError) as exc:
                getattr(world.files, op)(raw, *args)
            assert exc.value.code in ("E_NOT_FOUND", "E_PERM_DENIED"), exc.value
        assert world.bench.providers.files.read("workspace", ".hid/secret") == b"h"


@FAST
@given(raw=gem_paths)
def test_F11_without_a_conversation_no_workspace_path_resolves(world, raw):
    s = CallSession(
        call_id="prop2",
        tool=world.session.tool,
        manifest=world.bench.manifest,
        providers=world.bench.providers,
        conversation=False,
        strict=False,
        trash=False,
    )
    try:
        p = resolve(s, raw)
    except workbench.WorkbenchError as e:
        assert e.code in ("E_PATH", "E_PERM_DENIED")
        if raw.startswith(PREFIX):
            assert e.code in ("E_PATH", "E_PERM_DENIED")
        return
    assert not raw.startswith(PREFIX) and p.root == "run/prop2"


# -- end to end: a real disk, nothing written outside ------------------------------------------


def _tree(root: Path) -> dict[str, Any]:
    """Every entry below root (symlinks not followed): path -> file bytes, 'dir' or link target."""
    out: dict[str, Any] = {}
    for dirpath, dirs, files in os.walk(root):
        for n in dirs + files:
            p = Path(dirpath) / n
            rel = str(p.relative_to(root))
            out[rel] = ("link", os.readlink(p)) if p.is_symlink() else "dir" if p.is_dir() else p.read_bytes()
    return out


@pytest.fixture(scope="module")
def real_world(tmp_path_factory) -> Iterator[World]:
    w = World(tmp_path_factory.mktemp("paths-e2e"), "real")
    yield w
    w.bench.close()


@FAST
@given(raw=gem_paths, op=st.sampled_from(["write", "mkdir", "move-in", "move-out", "list", "read", "stat"]))
def test_F9_F10_end_to_end_nothing_is_written_outside(real_world, raw, op):
    w = real_world
    outside_before = _tree(w.outside)
    top_before = sorted(os.listdir(w.root))
    parent_before = sorted(os.listdir(w.root.parent))
    hidden_before = {
        k: v for k, v in _tree(w.workspace).items() if any(part.startswith(".") for part in k.split(os.sep))
    }
    ops = {
        "write": [["write", raw, "x"]],
        "mkdir": [["mkdir", raw]],
        "move-in": [["write", "src.txt", "m"], ["move", "src.txt", raw]],
        "move-out": [["move", raw, "taken"]],
        "list": [["list", raw]],
        "read": [["read", raw]],
        "stat": [["stat", raw]],
    }[op]
    res = w.bench.call("ops", {"ops": ops})
    assert res.ok, res.error
    for r in res.value:
        assert "ok" in r or r["error"] in PATH_ERRORS, (raw, op, r)
    last = res.value[-1]
    if "ok" in last and op in ("list", "read"):
        assert "outside" not in str(last["ok"]) and "'h'" not in str(last["ok"])
    assert _tree(w.outside) == outside_before
    assert sorted(os.listdir(w.root)) == top_before
    assert sorted(os.listdir(w.root.parent)) == parent_before
    hidden_after = {
        k: v for k, v in _tree(w.workspace).items() if any(part.startswith(".") for part in k.split(os.sep))
    }
    assert hidden_after == hidden_before, (raw, op)
    for rel in _tree(w.root / "state"):
        top = rel.split(os.sep)[0]
        assert top in ("runs", "gem.json") or top.startswith(("data.sqlite", "sql.sqlite")), rel
