"""Issue 9 around the file providers: what a hostile conversation folder or document can do.

FIFOs and other non-regular files (SEC5: never block), symlink loops and long chains (SEC7:
coded errors), odd file names (SEC7), temp files of a killed write (F5), run-folder retention
(F1) and PDF bombs given to ctx.extract (SEC5). JS tools run in the real Deno sandbox.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _load import slowdown
from conftest import OPS_TOOL, GemBuilder

import workbench
from workbench.ctx.limits import Limits
from workbench.providers.base import Entry
from workbench.providers.folder import TMP_PREFIX, FolderFileStore

OPS_JS = """
export default async (input, ctx) => {
  const out = [];
  for (const [op, ...args] of input.ops) {
    try {
      const fn = op === "extract" ? ctx.extract : ctx.files[op];
      out.push({ ok: (await fn(...args)) ?? null });
    } catch (e) {
      out.push({ error: e.code, message: e.message });
    }
  }
  return out;
};
"""
# OPS_TOOL (conftest) runs ctx.files ops; this one adds "extract"
OPS_PY = OPS_TOOL.replace(
    "getattr(ctx.files, op)", "(ctx.extract if op == 'extract' else getattr(ctx.files, op))"
)
CODED = {"E_PATH", "E_NOT_FOUND"}
LANGS = [pytest.param("py", id="python"), pytest.param("js", id="js", marks=pytest.mark.deno)]


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """fn() run in a daemon thread; fails the test (instead of hanging it) if it blocks."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the test below
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"blocked for more than {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.fixture
def real(gem: GemBuilder, tmp_path: Path):
    """real(lang, **open options) -> (bench, run(*ops) -> results, workspace), on real providers
    unless providers= says otherwise; `real.ws` is the workspace, to fill before opening."""
    benches: list[workbench.Bench] = []
    ws = tmp_path / "workspace"
    ws.mkdir()

    def make(lang: str, **kw: Any):
        if not gem.manifest["tools"]:
            gem.tool("ops", OPS_JS if lang == "js" else OPS_PY, ext=lang)
        kw.setdefault("timeout", 10)
        b = workbench.open(
            gem.write(),
            providers=kw.pop("providers", "real"),
            workspace=ws,
            state_dir=tmp_path / "state",
            headless=True,
            **kw,
        )
        benches.append(b)

        def run(*ops: list) -> list[dict]:
            res = within(30, lambda: b.call("ops", {"ops": [list(o) for o in ops]}))
            if not res.ok and res.error.code == "E_TIMEOUT":  # a JS call stopped as a whole
                return [{"error": "E_TIMEOUT", "message": res.error.message}]
            assert res.ok, res.error
            return res.value

        return b, run, ws

    make.ws = ws  # type: ignore[attr-defined]
    yield make
    for b in benches:
        b.close()


def _names(listing: dict) -> list[str]:
    assert "ok" in listing, listing
    return [e["name"] for e in listing["ok"]]


# -- FIFOs, sockets: not files for the gem, and never a blocked call ---------------------------
@pytest.mark.parametrize("lang", LANGS)
def test_SEC5_F2_F3_fifo_in_the_conversation_folder_does_not_exist(real, lang):
    b, run, ws = real(lang)
    (ws / "dir").mkdir()
    (ws / "note.txt").write_text("hi")
    os.mkfifo(ws / "pipe.txt")
    os.mkfifo(ws / "dir" / "inner.txt")
    os.symlink("pipe.txt", ws / "to-pipe.txt")
    out = run(
        ["list", "workspace:"],
        ["list", "workspace:dir"],
        ["stat", "workspace:pipe.txt"],
        ["stat", "workspace:to-pipe.txt"],
        ["read", "workspace:pipe.txt"],
        ["read", "workspace:to-pipe.txt"],
        ["read", "workspace:dir/inner.txt"],
        ["extract", "workspace:pipe.txt"],
        ["delete", "workspace:pipe.txt"],
        ["move", "workspace:pipe.txt", "workspace:moved.txt"],
        ["move", "workspace:pipe.txt", "taken.txt"],
    )
    assert _names(out[0]) == ["dir", "note.txt"]
    assert _names(out[1]) == []
    assert out[2] == {"ok": None} and out[3] == {"ok": None}
    assert [r.get("error") for r in out[4:]] == ["E_NOT_FOUND"] * 7, out[4:]
    assert (ws / "pipe.txt").exists() and not (ws / "moved.txt").exists()
    # the bench's own views walk the folder too
    files = within(10, b.files)
    assert not {"workspace:pipe.txt", "workspace:dir/inner.txt"} & set(files["path"])
    within(10, b.snapshot)


def test_SEC5_unix_socket_is_not_listed_or_read(real, monkeypatch):
    import socket

    b, run, ws = real("py")
    monkeypatch.chdir(ws)  # a relative name: socket paths are limited to ~100 bytes
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind("s.sock")
        out = run(["list", "workspace:"], ["stat", "workspace:s.sock"], ["read", "workspace:s.sock"])
    finally:
        sock.close()
    assert _names(out[0]) == [] and out[1] == {"ok": None}
    assert out[2]["error"] == "E_NOT_FOUND"


def test_SEC5_read_of_a_fifo_swapped_in_after_the_check_does_not_block(real, tmp_path):
    """TOCTOU: the ctx layer saw a file, then a FIFO took its place; the read must not wait."""
    b, run, ws = real("py")
    os.mkfifo(ws / "swap.txt")
    store = b.providers.files
    with pytest.raises(FileNotFoundError):
        within(5, lambda: store.read("workspace", "swap.txt"))
    real_entry = store.entry

    def stale_entry(root: str, path: str) -> Entry | None:  # what the check saw a moment ago
        return Entry("swap.txt", "file", 4, 0) if path == "swap.txt" else real_entry(root, path)

    store.entry = stale_entry  # type: ignore[method-assign]
    out = run(["read", "workspace:swap.txt"])
    assert "ok" not in out[0]


def test_SEC5_read_of_a_symlink_swapped_in_is_not_followed(tmp_path):
    """O_NOFOLLOW: a final symlink swapped in after resolve() cannot read outside the root."""
    (tmp_path / "outside.txt").write_text("secret")
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink(tmp_path / "outside.txt", ws / "a.txt")
    store = FolderFileStore(workspace=ws, runs=tmp_path / "runs")
    with pytest.raises(FileNotFoundError):
        store.read("workspace", "a.txt")


# -- symlink loops and chains: coded errors, never E_INTERNAL or a hang ---------------------
@pytest.mark.parametrize("lang", LANGS)
def test_SEC7_F9_symlink_loops_and_long_chains_are_coded_errors(real, lang):
    b, run, ws = real(lang)
    (ws / "real.txt").write_text("target")
    os.symlink("b", ws / "a")
    os.symlink("a", ws / "b")
    os.symlink("self", ws / "self")
    os.symlink("loop/x", ws / "loop")  # a loop through a folder component
    for i in range(1000):  # 1000 links: os.path.realpath recursed once per link
        os.symlink(f"c{i + 1}" if i < 999 else "real.txt", ws / f"c{i}")
    ops = []
    for name in ("a", "self", "loop", "c0"):
        p = f"workspace:{name}"
        ops += [
            ["stat", p],
            ["read", p],
            ["list", p],
            ["write", p, "x"],
            ["write", f"{p}/x", "x"],
            ["mkdir", f"{p}/d"],
            ["move", p, "workspace:m"],
            ["move", "workspace:real.txt", f"{p}/m"],
            ["delete", p],
            ["extract", p],
        ]
    out = run(["list", "workspace:"], *ops)
    for op, r in zip(ops, out[1:]):
        assert r.get("error") in CODED, (op, r)
    names = _names(out[0])
    assert not {"a", "b", "self", "loop", "c0", "c500"} & set(names)
    assert "real.txt" in names and "c999" in names  # one link to a file is that file
    assert (ws / "real.txt").read_text() == "target" and not (ws / "m").exists()
    within(10, b.files)


def test_SEC7_resolve_of_a_long_chain_gives_none_not_an_exception(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f").write_text("x")
    for i in range(41):
        os.symlink(f"l{i + 1}" if i < 40 else "f", ws / f"l{i}")
    store = FolderFileStore(workspace=ws, runs=tmp_path / "runs")
    assert store.resolve("workspace", "l1") == "f"  # 40 links: as the kernel follows
    assert store.resolve("workspace", "l0") is None  # 41: a loop for us as for open(2)
    assert store.resolve("workspace", "l0/deeper/x") is None


# -- odd names: a trailing newline, control characters, bytes that are not UTF-8 -------------
ODD = ["notes.md\n", "a\nb.txt", "tab\t.md", "cr.txt\r", " lead and trail ", "ünï.txt"]


@pytest.mark.parametrize("kind", ["mock", "real"])
@pytest.mark.parametrize("lang", LANGS)
def test_SEC7_F2_F7_F8_odd_file_names_work_and_undecodable_ones_are_skipped(real, kind, lang):
    ws = real.ws
    for n in ODD:
        (ws / n).write_text(f"<{n}>")
    (ws / os.fsdecode(b"\xff\xfe.txt")).write_text("latin-1 name")
    b, run, _ = real(lang, providers=kind)
    out = run(
        ["list", "workspace:"],
        *[["read", f"workspace:{n}"] for n in ODD],
        ["write", "workspace:new.md\n", "n"],
        ["move", "workspace:notes.md\n", "workspace:m\n"],
        ["delete", "workspace:a\nb.txt"],
        ["list", "workspace:"],
        ["read", "workspace:m\n"],
    )
    assert _names(out[0]) == sorted(ODD)
    assert [r["ok"] for r in out[1 : 1 + len(ODD)]] == [f"<{n}>" for n in ODD]
    assert all("ok" in r for r in out[1 + len(ODD) :]), out
    assert _names(out[-2]) == sorted({*ODD, "new.md\n", "m\n"} - {"notes.md\n", "a\nb.txt"})
    assert out[-1]["ok"] == "<notes.md\n>"
    if kind == "real":
        on_disk = set(os.listdir(ws))
        assert {"new.md\n", "m\n", os.fsdecode(b"\xff\xfe.txt")} <= on_disk
        assert not {"notes.md\n", "a\nb.txt"} & on_disk
    files = b.files()
    assert "workspace:m\n" in set(files["path"])
    assert not any("\udcff" in p for p in files["path"])  # skipped, not shown mangled
    snap = b.snapshot()
    b.restore(snap)


# -- F5: a killed write leaves nothing in the conversation folder ------------------------------
BIG_WRITER = """
def handle(input, ctx):
    data = "x" * input["size"]
    for i in range(input["n"]):
        ctx.files.write(f"workspace:big-{i}.bin", data)
"""
SIZE = 8 * 1024 * 1024


def _leftovers(folder: Path) -> list[str]:
    return [n for n in os.listdir(folder) if n.startswith(TMP_PREFIX)] if folder.is_dir() else []


def test_F5_kill_9_mid_write_leaves_no_partial_file_and_open_cleans_the_temp(gem, tmp_path):
    """A real process killed (SIGKILL) while it writes 8 MB files into the conversation
    folder: no temp or partial file there, and the next open removes the staged temp."""
    gem.tool("big", BIG_WRITER)
    root, ws, state = gem.write(), tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    tmp = state / "runs" / ".tmp"
    script = textwrap.dedent(f"""
        import workbench
        b = workbench.open({str(root)!r}, providers="real", workspace={str(ws)!r},
                           state_dir={str(state)!r}, headless=True, timeout=300)
        b.call("big", {{"size": {SIZE}, "n": 40}})
    """)
    for _attempt in range(5):  # the kill must land while a temp exists: retry if it missed
        proc = subprocess.Popen([sys.executable, "-c", script])
        try:
            deadline = time.monotonic() + 60
            while (
                not (_leftovers(tmp) or _leftovers(ws))
                and time.monotonic() < deadline
                and proc.poll() is None
            ):
                time.sleep(0.002)
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait()
        if _leftovers(tmp) or _leftovers(ws):
            break
    else:
        pytest.fail("never caught the writer mid-write")
    assert _leftovers(ws) == []  # the user never sees a temp
    for f in ws.iterdir():  # and every file there is whole
        assert f.stat().st_size == SIZE, f
    workbench.open(root, providers="real", workspace=ws, state_dir=state).close()
    assert _leftovers(tmp) == [] and _leftovers(ws) == []


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_F5_open_removes_dead_writers_temps_and_keeps_live_ones(gem, tmp_path):
    root, ws, state = gem.tool("t", OPS_TOOL).write(), tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    tmp = state / "runs" / ".tmp"
    tmp.mkdir(parents=True)
    dead, me = _dead_pid(), os.getpid()
    (tmp / f"{TMP_PREFIX}{dead}-aaa").write_bytes(b"partial")
    (tmp / f"{TMP_PREFIX}{me}-bbb").write_bytes(b"in flight")  # a live writer: kept
    # the other-filesystem case: a hidden temp next to the target, announced by a marker
    (ws / f"{TMP_PREFIX}{dead}-ccc").write_bytes(b"partial")
    (tmp / f"{dead}-m1.pending").write_bytes(os.fsencode(ws / f"{TMP_PREFIX}{dead}-ccc"))
    (ws / "precious.txt").write_text("mine")  # a marker naming a non-temp is never obeyed
    (tmp / f"{dead}-m2.pending").write_bytes(os.fsencode(ws / "precious.txt"))
    workbench.open(root, providers="real", workspace=ws, state_dir=state).close()
    assert sorted(os.listdir(tmp)) == [f"{TMP_PREFIX}{me}-bbb"]
    assert sorted(os.listdir(ws)) == ["precious.txt"]


def test_F5_write_on_another_filesystem_uses_a_hidden_announced_temp(tmp_path, monkeypatch):
    ws, runs = tmp_path / "ws", tmp_path / "state" / "runs"
    ws.mkdir()
    store = FolderFileStore(workspace=ws, runs=runs)
    seen: list[list[str]] = []
    real_rename = os.rename

    def cross_device(src: Any, dst: Any, **fds: Any) -> None:
        seen.append(sorted(os.listdir(ws)) + sorted(os.listdir(store.tmp)))
        if Path(src).parent == store.tmp:  # as rename(2) across mount points answers
            raise OSError(18, "Invalid cross-device link")
        real_rename(src, dst, **fds)

    monkeypatch.setattr(os, "rename", cross_device)
    store.write("workspace", "d/a.txt", b"one")
    store.write("workspace", "d/b.txt", b"two")  # remembered: straight to the fallback
    assert (ws / "d" / "a.txt").read_bytes() == b"one" and (ws / "d" / "b.txt").read_bytes() == b"two"
    assert sorted(os.listdir(ws / "d")) == ["a.txt", "b.txt"]
    assert os.listdir(store.tmp) == []  # markers gone once the rename is done
    assert any(n.endswith(".pending") for n in seen[1])  # announced while in flight
    assert len(seen) == 3


def test_F5_written_files_keep_their_mode_or_get_the_default(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    store = FolderFileStore(workspace=ws, runs=tmp_path / "runs")
    (ws / "x.sh").write_text("old")
    (ws / "x.sh").chmod(0o751)
    store.write("workspace", "x.sh", b"new")
    store.write("workspace", "fresh.txt", b"new")
    assert (ws / "x.sh").stat().st_mode & 0o777 == 0o751
    umask = os.umask(0o022)
    os.umask(umask)
    assert (ws / "fresh.txt").stat().st_mode & 0o777 == 0o666 & ~umask


# -- F1: run folders are not kept forever -------------------------------------------------
RUN_WRITER = """
def handle(input, ctx):
    ctx.files.write("out.txt", "x")
"""


def _age(folder: Path, days: float) -> None:
    t = time.time() - days * 86400
    os.utime(folder, (t, t))


def test_F1_run_folders_retention_at_open(gem, tmp_path):
    root, state = gem.tool("w", RUN_WRITER).write(), tmp_path / "state"
    runs = state / "runs"

    def opened(**kw: Any) -> workbench.Bench:
        return workbench.open(root, providers="real", state_dir=state, headless=True, **kw)

    with opened() as b:
        for _ in range(3):
            assert b.call("w").ok
    made = sorted(os.listdir(runs))
    assert len([n for n in made if not n.startswith(".")]) == 3
    for i in range(60):  # old runs of earlier sessions, oldest first
        (runs / f"old-{i:02}").mkdir()
        _age(runs / f"old-{i:02}", 30 - i * 0.1)
    opened().close()  # default: the newest 50, plus everything of the last 7 days
    left = {n for n in os.listdir(runs) if not n.startswith(".")}
    assert len(left) == 50 and set(made) - {".tmp"} <= left
    assert left - set(made) == {f"old-{i:02}" for i in range(13, 60)}
    opened(keep_runs=None).close()  # None: keep them all
    assert len(set(os.listdir(runs)) - {".tmp"}) == 50
    opened(keep_runs=2, keep_run_days=10).close()  # young ones stay whatever their number
    assert {n for n in os.listdir(runs) if not n.startswith(".")} == set(made) - {".tmp"}
    with opened(keep_runs=1, keep_run_days=0) as b:
        assert len(set(os.listdir(runs)) - {".tmp"}) == 1
        assert len([p for p in b.files()["area"] if p == "run"]) == 1


@pytest.mark.parametrize("lang", LANGS)
def test_F1_a_long_lived_bench_prunes_run_folders_as_calls_make_them(gem, tmp_path, lang):
    """The policy applies while the bench is open, not only when it opens: 200 calls of one
    bench with keep_runs=20, keep_run_days=0 leave at most 20 + 2 run folders (it is applied
    every tenth of keep_runs new folders), the last call's among them. Before: 200."""
    src = (
        RUN_WRITER
        if lang == "py"
        else "export default async (input, ctx) => { await ctx.files.write('out.txt', 'x'); return 1; };\n"
    )
    root, state = gem.tool("w", src, ext=lang).write(), tmp_path / "state"
    runs = state / "runs"
    with workbench.open(
        root, providers="real", state_dir=state, headless=True, keep_runs=20, keep_run_days=0
    ) as b:
        for _ in range(200):
            res = b.call("w")
            assert res.ok, res.error
        left = set(os.listdir(runs)) - {".tmp"}
        assert 20 <= len(left) <= 22 and res.call_id in left


def test_F1_retention_options_are_checked(gem, tmp_path):
    root = gem.tool("w", RUN_WRITER).write()
    for bad in (
        {"keep_runs": -1},
        {"keep_runs": True},
        {"keep_runs": "5"},
        {"keep_run_days": -1},
        {"keep_run_days": float("nan")},
        {"keep_run_days": None},
    ):
        with pytest.raises(workbench.UsageError, match="keep_run"):
            workbench.open(root, providers="real", state_dir=tmp_path / "s", **bad)


# -- SEC5: ctx.extract on PDF bombs -----------------------------------------------------
def _pdf(objects: list[bytes]) -> bytes:
    """A PDF from its objects (1: catalog), with a correct xref table."""
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def _one_page(content: bytes, *, flate: bool = True, pages: int = 1) -> bytes:
    """One page (or `pages` that share it) showing `content`."""
    data = zlib.compress(content, 9) if flate else content
    return _pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [" + b" ".join([b"3 0 R"] * pages) + b"] /Count %d >>" % pages,
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            b"/Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< /Length %d%s >>\nstream\n" % (len(data), b" /Filter /FlateDecode" * flate)
            + data
            + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )


def _page_tree(width: int) -> bytes:  # width * width pages from two nodes of `width` kids
    return _pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [" + b" ".join([b"3 0 R"] * width) + b"] /Count %d >>" % (width * width),
            b"<< /Type /Pages /Parent 2 0 R /Kids ["
            + b" ".join([b"4 0 R"] * width)
            + b"] /Count %d >>" % width,
            b"<< /Type /Page /Parent 3 0 R /MediaBox [0 0 612 792] >>",
        ]
    )


BOMBS = {
    # 200 MB of spaces in a 200 KB Flate stream: over pypdf's decompression limit
    "flate.pdf": lambda: _one_page(b" " * (200 << 20)),
    # 8 pages sharing 4.4 MB of text operators in 11 KB: pypdf parses them once per page, ~5 s
    # each here (a page under pypdf's own parsing budget, which one page of 300,000 reaches
    # sooner on a fast machine: E_TOO_LARGE before the deadline)
    "ops.pdf": lambda: _one_page(b"BT /F1 1 Tf (x) Tj ET\n" * 200_000, pages=8),
    # 2.5 billion pages from two small nodes
    "pages.pdf": lambda: _page_tree(50_000),
    # arrays nested 100,000 deep
    "nested.pdf": lambda: _pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R /X " + b"[" * 100_000 + b"]" * 100_000 + b" >>",
            b"<< /Type /Pages /Kids [] /Count 0 >>",
        ]
    ),
    "junk.pdf": lambda: b"%PDF-1.4\n" + os.urandom(3000),
    # 1,100,000 characters of text from 2 KB (the test's limit is 1,000,000)
    "text.pdf": lambda: _one_page(b"BT /F1 1 Tf 0 0 Td (" + b"A" * 1_100_000 + b") Tj ET"),
}


@pytest.mark.parametrize("lang", LANGS)
def test_SEC5_F12_extract_of_pdf_bombs_is_bounded_and_coded(real, lang):
    for name, make in BOMBS.items():
        data = make()
        assert len(data) < 1_000_000, name  # small on disk
        (real.ws / name).write_bytes(data)
    # 6 s of an idle machine, scaled by what other work leaves this process (beside two CPU
    # hogs the bounded bombs and a fresh sandbox's start ran past a fixed 6 s)
    timeout = math.ceil(6 * slowdown())
    b, run, ws = real(lang, providers="mock", timeout=timeout, limits=Limits(file_bytes=1_000_000))
    codes = {}
    for name in BOMBS:
        # (a hang: five times the call's own timeout)
        res = within(
            5 * timeout, lambda name=name: b.call("ops", {"ops": [["extract", f"workspace:{name}"]]})
        )
        # the extract call's own outcome, from the trace: a JS call whose time ran out is then
        # stopped as a whole (E_TIMEOUT), whether or not the extract ended at the deadline
        (row,) = [r for r in res.trace_rows if r["method"] == "extract"]
        codes[name] = row["error"]
        if res.ok:
            assert res.value[0].get("error") == row["error"], (name, res.value)
    assert codes["flate.pdf"] == "E_TOO_LARGE", codes
    # the timeout, not pypdf's pace: only the PDF reader killed at the call's deadline makes
    # the extract call itself E_TIMEOUT (pypdf left to its pace spends many seconds on ops.pdf,
    # then gives its text or stops at a limit of its own: E_TOO_LARGE)
    assert codes["ops.pdf"] == "E_TIMEOUT", codes
    assert codes["pages.pdf"] in ("E_TOO_LARGE", "E_TIMEOUT"), codes
    assert codes["nested.pdf"] == "E_INVALID_ARGUMENT", codes
    assert codes["junk.pdf"] == "E_INVALID_ARGUMENT", codes
    assert codes["text.pdf"] == "E_TOO_LARGE", codes
    cut = run(["extract", "workspace:text.pdf", {"maxChars": 100}])[0]["ok"]  # maxChars: a cut
    assert cut["text"] == "A" * 100 and cut["mimeType"] == "application/pdf"


def test_SEC5_extract_text_cap_names_the_limit(real):
    (real.ws / "t.pdf").write_bytes(_one_page(b"BT /F1 1 Tf 0 0 Td (" + b"B" * 150_000 + b") Tj ET"))
    b, run, ws = real("py", providers="mock", limits=Limits(file_bytes=100_000))
    out = run(["extract", "workspace:t.pdf"])[0]
    assert out["error"] == "E_TOO_LARGE" and "100,000" in out["message"]
    assert out["details"] == {"path": "workspace:t.pdf", "limit": 100_000}


# -- SEC3: what list() hides is still known to the store ---------------------------------
@pytest.mark.parametrize("kind", ["memory", "folder"])
def test_SEC3_store_names_entries_that_list_does_not_report(kind, tmp_path):
    """A folder holding a FIFO or a file whose name is not UTF-8 (e.g. a Latin-1 'résumé')
    must not be deleted or moved whole on a gem's behalf: the store says what it holds."""
    latin1 = os.fsdecode(b"r\xe9sum\xe9.pdf")
    if kind == "folder":
        ws = tmp_path / "ws"
        (ws / "docs" / "sub").mkdir(parents=True)
        store: Any = FolderFileStore(workspace=ws, runs=tmp_path / "runs")
        (ws / "docs" / "sub" / latin1).write_text("cv")
        os.mkfifo(ws / "pipes")
        (ws / "pipes-in").mkdir()
        os.mkfifo(ws / "pipes-in" / "p")
    else:
        from workbench.providers.memory import MemoryFileStore

        store = MemoryFileStore()
        store.write("workspace", f"docs/sub/{latin1}", b"cv")
    store.write("workspace", "docs/ok.txt", b"ok")
    store.write("workspace", "clean/ok.txt", b"ok")
    assert store.unlisted_under("workspace", "docs") == "docs/sub/r\\xe9sum\\xe9.pdf"
    assert [e.name for e in store.list("workspace", "docs/sub")] == []
    assert store.unlisted_under("workspace", "clean") is None
    if kind == "folder":
        assert store.unlisted_under("workspace", "pipes-in") == "pipes-in/p"


@pytest.mark.parametrize("markup", ["<a" * 60_000, "<![" * 10, "<!--" + "x" * 200_000, "<" * 300_000])
def test_SEC5_extract_of_hostile_html_is_linear_and_coded(markup: str, tmp_path) -> None:
    """html.parser took 15.7 s on 60,000 '<a' (quadratic) and raised AssertionError on '<!['.
    The call's 5 s timeout is the judge: the extract checks the deadline as it converts, and
    the ctx call after it fails with E_TIMEOUT if the extract, however written, ran past it (a
    Python tool is not stopped at its deadline, its next ctx call is)."""
    g = GemBuilder(tmp_path / "gem")
    g.tool(
        "x",
        "def handle(i, ctx):\n    ctx.files.write('x.html', i['html'])\n"
        "    mime = ctx.extract('x.html')['mimeType']\n"
        "    ctx.files.stat('x.html')  # E_TIMEOUT past the call's deadline\n"
        "    return mime",
    )
    with workbench.open(g.write(), state_dir=tmp_path / "state", timeout=5) as bench:
        res = bench.call("x", {"html": markup})
        assert res.ok and res.value == "text/html", res.error


# -- SEC2: a folder swapped for a symlink while the tool works never leads outside ----------
SWAPPER = """
import os, sys
ws, outside, stop = sys.argv[1:]
d, hold = os.path.join(ws, "d"), os.path.join(ws, ".hold")
while not os.path.exists(stop):
    try:
        os.rename(d, hold)          # the real folder steps aside (a dot-name: hidden from gems)
        os.symlink(outside, d)      # a link to the outside folder takes its place
        os.unlink(d)
        os.rename(hold, d)
    except OSError:
        pass
"""


@pytest.mark.parametrize("lang", LANGS)
def test_SEC2_a_folder_swapped_for_a_symlink_never_leads_a_write_or_read_outside(real, lang, tmp_path):
    """Another process swaps workspace:d for a link to a folder outside, over and over, while
    the tool writes, reads and lists through it: each step is opened from the folder's fd
    without following a link, so nothing lands or is read outside (before: paths were
    resolved, then opened by name, and hundreds of writes of one call landed outside)."""
    b, run, ws = real(lang)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside")
    (ws / "d").mkdir()
    (ws / "d" / "secret.txt").write_text("inside")
    stop = tmp_path / "stop"
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(ws), str(outside), str(stop)])
    try:
        out = []
        # the same 690 operations as ever, in ten calls of 69: each call's 10 s are then ample
        # beside the spinning swapper on a loaded machine (one call of all 690 ran out of them)
        for batch in range(10):
            ops = []
            for i in range(30 * batch, 30 * batch + 30):
                ops += [["write", f"workspace:d/f{i}.txt", "x"], ["read", "workspace:d/secret.txt"]]
                if i % 10 == 0:
                    ops += [
                        ["list", "workspace:d"],
                        ["mkdir", f"workspace:d/sub{i}"],
                        ["delete", f"workspace:d/f{i}.txt"],
                    ]
            out += run(*ops)
    finally:
        stop.touch()
        swapper.wait(10)
    assert sorted(os.listdir(outside)) == ["secret.txt"], "a write landed outside the workspace"
    assert (outside / "secret.txt").read_text() == "outside"
    assert all(o.get("ok") != "outside" for o in out), "a read came from outside"
    errors = {o["error"] for o in out if "error" in o}
    assert errors <= {"E_PATH", "E_NOT_FOUND", "E_EXISTS", "E_NOT_A_FOLDER"}, [
        o for o in out if "error" in o
    ][:3]


@pytest.mark.parametrize("lang", LANGS)
def test_SEC2_a_link_swapped_in_after_resolve_is_E_PATH_for_every_operation(real, lang, tmp_path):
    """The race made certain: the store is given a path resolved while workspace:d was a
    folder, and d is a link to an outside folder by the time it is used. Every operation (and
    the history copy of an overwrite) is E_PATH naming the step; nothing outside is read,
    written, listed, moved or deleted."""
    b, run, ws = real(lang)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside")
    (outside / "sub").mkdir()
    (ws / "e.txt").write_text("e")
    os.symlink(outside, ws / "d")
    store = b.providers.files
    store.resolve = lambda root, path: path  # type: ignore[method-assign]  # what resolve saw before the swap
    out = run(
        ["write", "workspace:d/new.txt", "x"],
        ["write", "workspace:d/secret.txt", "overwritten"],  # an overwrite: its history copy first
        ["read", "workspace:d/secret.txt"],
        ["stat", "workspace:d/secret.txt"],
        ["list", "workspace:d"],
        ["mkdir", "workspace:d/made"],
        ["delete", "workspace:d/secret.txt"],
        ["delete", "workspace:d/sub"],
        ["move", "workspace:d/secret.txt", "workspace:taken.txt"],
        ["move", "workspace:e.txt", "workspace:d/e.txt"],
    )
    assert sorted(os.listdir(outside)) == ["secret.txt", "sub"]
    assert (outside / "secret.txt").read_text() == "outside" and (ws / "e.txt").exists()
    assert [o.get("error") for o in out] == ["E_PATH"] * len(out), out
    assert "'d' became a symbolic link" in out[0]["message"]


def test_SEC2_restore_file_through_a_link_swapped_in_is_E_PATH_and_loses_nothing(real, tmp_path):
    """bench.restore_file of a history path whose folder was swapped for a link to an outside
    folder: E_PATH naming the path (LinkInPath, an OSError, escaped before); nothing outside
    is written, the saved version stays, and it restores once the folder is back."""
    b, run, ws = real("py")
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("v1")
    assert run(["write", "workspace:d/f.txt", "v2"]) == [{"ok": None}]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("outside")
    os.rename(ws / "d", ws / ".held")
    os.symlink(outside, ws / "d")
    with pytest.raises(workbench.WorkbenchError) as err:
        b.restore_file("workspace:d/f.txt")
    assert err.value.code == "E_PATH" and err.value.details["path"] == "d/f.txt", err.value
    assert "workspace:d/f.txt" in err.value.message and "symbolic link" in err.value.message
    assert sorted(os.listdir(outside)) == ["f.txt"] and (outside / "f.txt").read_text() == "outside"
    assert list(b.history("d/f.txt")["reason"]) == ["overwrite"]
    os.unlink(ws / "d")
    os.rename(ws / ".held", ws / "d")
    b.restore_file("workspace:d/f.txt")
    assert (ws / "d" / "f.txt").read_text() == "v1"
