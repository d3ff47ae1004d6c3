"""bench.read (issue 28, point 2): what a tool wrote, read back as the tool wrote it — a run
folder's path (the latest call's that has it, or `call=`'s) or `workspace:<path>`, mock and
real providers, text or bytes, confined and bounded like ctx.files."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import GemBuilder

import workbench
from workbench.platforms import Limits

WRITE = {
    "py": "def handle(input, ctx):\n"
    "    ctx.files.write('output/summary.md', '# ' + input['title'] + '\\n')\n"
    "    ctx.files.write('workspace:notes/' + input['title'] + '.txt', 'é ' + input['title'])\n"
    "    return 1\n",
    "js": "export default async function (input, ctx) {\n"
    "  await ctx.files.write('output/summary.md', '# ' + input.title + '\\n');\n"
    "  await ctx.files.write('workspace:notes/' + input.title + '.txt', 'é ' + input.title);\n"
    "  return 1;\n}\n",
}


@pytest.fixture(params=["mock", "real"])
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


def test_bench_read_gives_what_the_call_wrote(
    gem: GemBuilder, opened: Callable, lang: str, kind: str, tmp_path: Path
) -> None:
    gem.tool("w", WRITE[lang], ext=lang)
    bench = opened(gem.write(), providers=kind, state_dir=tmp_path / "state", workspace=tmp_path / "ws")
    first = bench.call("w", {"title": "one"}).raise_for_error()
    bench.call("w", {"title": "two"}).raise_for_error()
    assert bench.read("output/summary.md") == "# two\n"  # the latest call's run folder
    assert bench.read("output/summary.md", call=first) == "# one\n"
    assert bench.read("./output//summary.md", call=first.call_id) == "# one\n"
    assert bench.read("workspace:notes/one.txt") == "é one"
    assert bench.read("workspace:notes/one.txt", encoding=None) == "é one".encode()
    with pytest.raises(workbench.UsageError, match="no file 'output/nope.md' in any call's run folder"):
        bench.read("output/nope.md")
    with pytest.raises(workbench.UsageError, match="uses '..'"):
        bench.read("workspace:../secret")
    with pytest.raises(workbench.UsageError, match="a conversation-folder file is 'workspace:notes/one.txt'"):
        bench.read("notes/one.txt")
    bench.providers.files.write("workspace", "bin.dat", b"\xff\xfe")
    with pytest.raises(workbench.UsageError, match="not utf-8 at byte 0; encoding=None gives the bytes"):
        bench.read("workspace:bin.dat")
    assert bench.read("workspace:bin.dat", encoding=None) == b"\xff\xfe"


def test_bench_read_is_bounded_and_stays_in_its_folder(
    gem: GemBuilder, opened: Callable, tmp_path: Path
) -> None:
    gem.tool("w", WRITE["py"])
    ws, outside = tmp_path / "ws", tmp_path / "outside.txt"
    ws.mkdir()
    outside.write_text("not the gem's")
    os.symlink(outside, ws / "escape.txt")  # a link out of the conversation folder (F9)
    bench = opened(
        gem.write(), providers="real", state_dir=tmp_path / "state", workspace=ws, limits=Limits(file_bytes=8)
    )
    with pytest.raises(workbench.UsageError, match="no file 'escape.txt' in the conversation folder"):
        bench.read("workspace:escape.txt")
    (ws / "big.txt").write_text("x" * 9)
    with pytest.raises(workbench.UsageError, match="9 bytes, over Limits.file_bytes"):
        bench.read("workspace:big.txt")


def test_bench_read_is_a_view_of_the_platforms_with_ctx_files(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("t", "def handle(i, c): return 1")
    bench = opened(gem.as_agent().write())
    with pytest.raises(AttributeError, match=r"read\(\) is a view of Notochord gems \(ctx.files\)"):
        bench.read("x")
