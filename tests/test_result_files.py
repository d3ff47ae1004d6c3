"""res.files and the result display's "files" section (issue 28, point 2): each file a call
created, modified, moved or deleted, with its area and size; previews (text, Markdown, CSV,
images by magic bytes), a diff for an overwrite; hostile names and content escaped, bounded."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import GemBuilder

from workbench.jupyter.display import result_html, result_text

PNG = base64.b64encode(
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
).decode()

TOOL = {
    "py": "def handle(input, ctx):\n"
    "    for op in input['ops']:\n"
    "        k = op[0]\n"
    "        if k == 'w':\n"
    "            ctx.files.write(op[1], op[2])\n"
    "        elif k == 'b':\n"
    "            ctx.files.write(op[1], op[2], {'encoding': 'base64'})\n"
    "        elif k == 'm':\n"
    "            ctx.files.move(op[1], op[2])\n"
    "        elif k == 'd':\n"
    "            ctx.files.delete(op[1])\n"
    "    return 1\n",
    "js": "export default async function (input, ctx) {\n"
    "  for (const op of input.ops) {\n"
    "    if (op[0] === 'w') await ctx.files.write(op[1], op[2]);\n"
    "    else if (op[0] === 'b') await ctx.files.write(op[1], op[2], { encoding: 'base64' });\n"
    "    else if (op[0] === 'm') await ctx.files.move(op[1], op[2]);\n"
    "    else if (op[0] === 'd') await ctx.files.delete(op[1]);\n"
    "  }\n"
    "  return 1;\n}\n",
}


@pytest.fixture(params=["mock", "real"])
def kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def bench(gem: GemBuilder, opened: Callable, lang: str, kind: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    gem.tool("w", TOOL[lang], ext=lang)
    return opened(gem.write(), providers=kind, state_dir=tmp_path / "state", workspace=tmp_path / "ws")


def test_files_records_write_overwrite_move_delete(bench) -> None:  # type: ignore[no-untyped-def]
    bench.call(
        "w",
        {
            "ops": [
                ["w", "workspace:old.txt", "one\ntwo\n"],
                ["w", "workspace:gone.txt", "x"],
                ["w", "workspace:a.txt", "a"],
            ]
        },
    ).raise_for_error()
    res = bench.call(
        "w",
        {
            "ops": [
                ["w", "output/new.txt", "hello"],
                ["w", "workspace:old.txt", "one\nTHREE\n"],
                ["d", "workspace:gone.txt"],
                ["m", "workspace:a.txt", "workspace:b.txt"],
            ]
        },
    ).raise_for_error()
    by = {f.path: f for f in res.files}
    assert by["output/new.txt"].change == "created" and by["output/new.txt"].size == 5
    assert by["output/new.txt"].text == "hello"
    old = by["workspace:old.txt"]
    assert old.change == "modified" and old.before_text == "one\ntwo\n" and old.text == "one\nTHREE\n"
    assert "-two" in (old.diff() or "") and "+THREE" in (old.diff() or "")
    assert by["workspace:gone.txt"].change == "deleted" and by["workspace:gone.txt"].size is None
    assert by["workspace:b.txt"].change == "moved" and by["workspace:b.txt"].from_path == "workspace:a.txt"
    html = result_html(res)
    assert f"files ({len(res.files)})" in html
    assert "THREE" in html and "two" in html  # the diff of the overwrite
    text = result_text(res)
    assert "files (4)" in text and "output/new.txt" in text and "deleted" in text


def test_files_section_escapes_names_and_content(bench) -> None:  # type: ignore[no-untyped-def]
    res = bench.call(
        "w",
        {
            "ops": [
                ["w", "output/<img src=x onerror=alert(1)>.txt", "<script>alert(1)</script>"],
                ["w", "output/r.md", "# T\n\n<script>alert(2)</script>\n"],
            ]
        },
    ).raise_for_error()
    html = result_html(res)
    assert "<script>" not in html and "<img src=x onerror" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<h1>T</h1>" in html  # Markdown rendered, its raw HTML escaped
    assert "&lt;script&gt;alert(2)" in html


def test_markdown_preview_renders_pipe_tables_with_html_still_escaped(bench) -> None:  # type: ignore[no-untyped-def]
    report = (
        "# Summary\n\n| unit | count |\n|------|------:|\n| <blink>cm</blink> | 4 |\n| kg | 1 |\n\n"
        "<img src=x onerror=alert(3)>\n"
    )
    res = bench.call("w", {"ops": [["w", "output/report.md", report]]}).raise_for_error()
    html = result_html(res).split("files (1)")[1]  # the preview (the input above shows the text)
    assert "<table>" in html and "<th>unit</th>" in html
    assert "<td>kg</td>" in html and ">4</td>" in html
    assert "<blink>" not in html and "&lt;blink&gt;cm&lt;/blink&gt;" in html  # a tag in a cell: text
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(3)&gt;" in html
    assert "| unit |" not in html  # not one paragraph of pipes


def test_files_section_tables_csv_embeds_png_by_magic_only(bench) -> None:  # type: ignore[no-untyped-def]
    res = bench.call(
        "w",
        {
            "ops": [
                ["w", "output/t.csv", "name,n\nalpha,1\nbeta,2\n"],
                ["b", "output/dot.png", PNG],
                ["w", "output/fake.png", "not a png at all"],
            ]
        },
    ).raise_for_error()
    html = result_html(res)
    assert "<td>alpha</td>" in html and "<th>name</th>" in html
    assert html.count("data:image/png;base64,") == 1
    assert "not a png at all" in html  # the fake one: shown as text, never embedded


def test_files_section_is_bounded(gem: GemBuilder, opened: Callable, kind: str, tmp_path: Path) -> None:
    gem.tool("w", TOOL["py"])
    bench = opened(gem.write(), providers=kind, state_dir=tmp_path / "state", workspace=tmp_path / "ws")
    res = bench.call("w", {"ops": [["w", "output/big.txt", ("y" * 99 + "\n") * 100_000]]}).raise_for_error()
    assert res.files[0].size == 10_000_000
    html = result_html(res)
    assert len(html) < 200_000
    assert "big.txt" in html


def test_agent_results_have_no_files(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("t", "def handle(input, ctx):\n    return 1\n").as_agent()
    res = opened(gem.write()).call("t", {}).raise_for_error()
    assert res.files == []
    assert "files (" not in result_html(res)


def test_cli_call_show_files_prints_them_on_stderr(gem: GemBuilder, tmp_path: Path) -> None:
    from test_cli import cli

    gem.tool("w", TOOL["py"])
    ops = [["w", "workspace:n.txt", "one\n"]]
    state = tmp_path / "state"
    first = cli("call", str(gem.write()), "w", "--state", str(state), "--input", json.dumps({"ops": ops}))
    assert first.returncode == 0, first.stderr
    ops = [["w", "workspace:n.txt", "one\ntwo\n"], ["w", "output/<b>.md", "# hi"]]
    out = cli(
        "call",
        str(gem.write()),
        "w",
        "--state",
        str(state),
        "--show",
        "files",
        "--input",
        json.dumps({"ops": ops}),
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == 1  # stdout stays the result
    assert "files (2):" in out.stderr
    assert "modified" in out.stderr and "workspace:n.txt" in out.stderr and "+two" in out.stderr
    assert "created  output/<b>.md" in out.stderr and "# hi" in out.stderr
    assert "files (" not in first.stderr  # only with --show files


def test_a_file_change_holds_its_bytes_on_held_not_as_columns(gem: GemBuilder, opened: Callable) -> None:
    import dataclasses

    import pandas as pd

    gem.tool("w", TOOL["py"], ext="py")
    bench = opened(gem.write())
    bench.call("w", {"ops": [["w", "workspace:a.txt", "one"]]}).raise_for_error()
    ops = [["w", "workspace:a.txt", "two"], ["m", "workspace:a.txt", "workspace:b.txt"]]
    (change,) = bench.call("w", {"ops": ops}).raise_for_error().files
    held = change.held
    assert (change.change, change.path, change.from_path) == ("moved", "workspace:b.txt", "workspace:a.txt")
    assert (held.before, held.after, held.root, held.source) == (
        b"one",
        b"two",
        "workspace",
        ("workspace", "a.txt"),
    )
    assert held.limit == bench.limits.file_bytes and change.read() == "two"
    columns = [f.name for f in dataclasses.fields(change)]
    assert list(pd.DataFrame([change]).columns) == columns and "held" not in columns
