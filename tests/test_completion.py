"""Tab completion (issue 28 point 5): tool names after `%tool` and in `bench.call('…`, input
field names after `%tool NAME`, gem folders and flags after `%gem open`, views after `%state`,
through a real kernel's complete_request and through the matcher itself; and `%tool NAME` with
no input opening the tool's form."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from test_kernel import _start, _stop

import workbench
from workbench.jupyter.complete import complete, gem_paths

NOTES = Path(__file__).resolve().parent.parent / "notebooks" / "gems" / "notes"
AGENT = NOTES.parent / "agent-research"
NOTES_TOOLS = ["add_note", "close_note", "count_views", "list_notes", "write_report"]


# -- through a real kernel ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """gems/notes and gems/agent (gems), gems/plain (a folder), gems/readme.md (a file)."""
    root = tmp_path_factory.mktemp("completion")
    shutil.copytree(NOTES, root / "gems" / "notes")
    shutil.copytree(AGENT, root / "gems" / "agent")
    (root / "gems" / "plain").mkdir()
    (root / "gems" / "readme.md").write_text("not a gem\n")
    return root


def _run(kc: Any, code: str) -> list[dict[str, Any]]:
    """Run a cell; its outputs (iopub content of stream, display and result messages)."""
    out: list[dict[str, Any]] = []

    def hook(msg: dict[str, Any]) -> None:
        if msg["msg_type"] in ("stream", "display_data", "execute_result", "error"):
            out.append({"type": msg["msg_type"], **msg["content"]})

    reply = kc.execute_interactive(code, output_hook=hook, timeout=60)
    assert reply["content"]["status"] == "ok", (reply["content"], out)
    return out


@pytest.fixture(scope="module")
def kernel(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A gem-workbench kernel in `folder`, with gems/notes open as `bench`."""
    km, kc = _start("gem-workbench", tmp_path_factory.mktemp("kernel"))
    try:
        _run(kc, f"import os; os.chdir({str(folder)!r})")
        _run(kc, "%gem open gems/notes")
        yield kc
    finally:
        _stop(km, kc)


def _complete(kc: Any, code: str, cursor: int | None = None) -> tuple[list[str], int, int]:
    content = kc.complete(code, len(code) if cursor is None else cursor, reply=True, timeout=30)["content"]
    assert content["status"] == "ok"
    return content["matches"], content["cursor_start"], content["cursor_end"]


def test_kernel_completes_tool_names_after_tool(kernel):
    assert _complete(kernel, "%tool ") == (NOTES_TOOLS, 6, 6)
    assert _complete(kernel, "%tool c") == (["close_note", "count_views"], 6, 7)
    assert _complete(kernel, "r = %tool li") == (["list_notes"], 10, 12)
    assert _complete(kernel, "%%tool ad") == (["add_note"], 7, 9)


def test_kernel_completes_tool_names_in_bench_call(kernel):
    assert _complete(kernel, "bench.call('") == (NOTES_TOOLS, 12, 12)
    matches, start, _ = _complete(kernel, "import jso")  # elsewhere: IPython's completion
    assert "json" in matches and start == 7
    assert _complete(kernel, 'res = bench.call("wr') == (["write_report"], 18, 20)
    _run(kernel, "other = bench")
    assert _complete(kernel, "other.form('add") == (["add_note"], 12, 15)
    code = "x = 1\nbench.call('co', {})\n"
    assert _complete(kernel, code, cursor=code.index("co'") + 2) == (
        ["count_views"],
        code.index("co'"),
        code.index("co'") + 2,
    )


def test_kernel_completes_input_fields_after_the_tool_name(kernel):
    assert _complete(kernel, "%tool add_note ") == (["priority", "tags", "title"], 15, 15)
    assert _complete(kernel, "%tool add_note ti") == (["title"], 15, 17)
    assert _complete(kernel, '%tool add_note {"ti') == (["title"], 17, 19)
    assert _complete(kernel, '%tool add_note {"title": "a", "') == (["priority", "tags"], 31, 31)
    assert _complete(kernel, "%%tool add_note\ntitle: a\np") == (["priority"], 25, 26)
    assert _complete(kernel, "%tool nope ") == ([], 11, 11)


def test_kernel_completes_gem_folders_and_flags_after_gem_open(kernel):
    assert _complete(kernel, "%gem open gems/") == (["gems/agent", "gems/notes", "gems/plain/"], 10, 15)
    assert _complete(kernel, "%gem open gems/n") == (["gems/notes"], 10, 16)
    assert _complete(kernel, "%gem open ge") == (["gems/"], 10, 12)
    matches, start, end = _complete(kernel, "%gem open gems/notes --allow")
    assert (matches, start, end) == (["--allow-account"], 21, 28)
    matches, _, _ = _complete(kernel, "%gem open gems/agent --allow")
    assert matches == ["--allow-recipient"]
    assert _complete(kernel, "%gem cl") == (["close"], 5, 7)


def test_kernel_completes_views_after_state(kernel):
    matches, start, end = _complete(kernel, "%state ")
    assert (start, end) == (7, 7)
    assert {"files", "kv", "calls", "tools", "data", "sql"} <= set(matches)
    assert "outbox" not in matches  # an agent's view, not a Notochord gem's
    assert _complete(kernel, "%state k") == (["kv"], 7, 8)
    assert _complete(kernel, "%state data n") == (["notes"], 12, 13)


def test_kernel_tool_without_input_shows_the_form_not_an_empty_call(kernel):
    outputs = _run(kernel, "%tool add_note")
    text = json.dumps(outputs)
    assert "E_SCHEMA" not in text, outputs
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs), outputs
    called = _run(kernel, "%tool add_note {}")  # an explicit empty object still calls
    assert "E_SCHEMA" in json.dumps(called)


# -- the matcher ---------------------------------------------------------------------------------
def _shell(**ns: Any) -> Any:
    """What complete() reads of an IPython shell: the namespace and the magics' opened bench."""
    magics = SimpleNamespace(opened=None)
    return SimpleNamespace(
        user_ns=dict(ns), magics_manager=SimpleNamespace(registry={"WorkbenchMagics": magics})
    )


@pytest.fixture
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[workbench.Bench]:
    monkeypatch.setenv("GEM_WORKBENCH_HOME", str(tmp_path / "home"))
    with workbench.open(NOTES) as bench:
        yield bench


def _texts(shell: Any, text: str, cursor: int | None = None) -> tuple[list[str], int] | None:
    found = complete(shell, text, cursor)
    return None if found is None else (found.matches, found.start)


def test_no_bench_open_offers_nothing_but_says_where(notes):
    shell = _shell()
    assert _texts(shell, "%tool ") == ([], 6)
    assert _texts(shell, "%state ") == ([], 7)
    assert _texts(shell, "%tool add_note ti") == ([], 15)
    assert _texts(shell, "bench.call('") == ([], 12)


def test_the_opened_bench_answers_when_bench_was_rebound(notes):
    shell = _shell(bench=42)
    shell.magics_manager.registry["WorkbenchMagics"].opened = notes
    assert _texts(shell, "%tool a") == (["add_note"], 6)
    assert _texts(shell, "bench.call('") == ([], 12)  # `bench` is not a Bench here


def test_a_closed_bench_offers_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("GEM_WORKBENCH_HOME", str(tmp_path / "home"))
    bench = workbench.open(NOTES)
    bench.close()
    assert _texts(_shell(bench=bench), "%tool ") == ([], 6)


def test_any_bench_variable_and_either_quote(notes):
    shell = _shell(b2=notes, n=3)
    assert _texts(shell, 'b2.call("l') == (["list_notes"], 9)
    assert _texts(shell, "b2.call(tool='l") == (["list_notes"], 14)
    assert _texts(shell, "n.call('") is None  # not a Bench: IPython's completion
    assert _texts(shell, "x.b2.call('") is None
    assert _texts(shell, "bench.call(name") is None  # not in a string


def test_prefix_in_the_middle_of_a_line_and_of_a_cell(notes):
    shell = _shell(bench=notes)
    line = "r = bench.call('co', {'a': 1})"
    assert _texts(shell, line, line.index("co") + 2) == (["count_views"], line.index("co"))
    cell = "x = 1\n%tool wr\ny = 2"
    assert _texts(shell, cell, cell.index("wr") + 2) == (["write_report"], cell.index("wr"))
    assert _texts(shell, "x = 1\n%%tool a") is None  # a cell magic only on the first line


def test_fields_skip_given_keys_and_values(notes):
    shell = _shell(bench=notes)
    assert _texts(shell, "%tool add_note {title: a, ")[0] == ["priority", "tags"]
    assert _texts(shell, "%tool add_note title: $ti") is None  # a value: IPython's completion
    assert _texts(shell, "%tool add_note title: a, p") is None  # YAML block: one key a line
    assert _texts(shell, "%tool count_views ") == ([], 18)  # no declared properties
    assert _texts(shell, "%tool nope ") == ([], 11)  # unknown tool
    assert _texts(shell, "%%tool add_note extra") == ([], 21)  # %%tool takes only NAME
    assert _texts(shell, "%%tool add_note\ntitle: a\n  ta") is None  # nested: not a top-level key


def test_a_broken_bench_offers_nothing_and_prints_nothing(notes, capsys):
    class Broken:
        @property
        def tools(self):
            print("noise")
            raise RuntimeError("boom")

    shell = _shell(bench=notes)
    manifest, notes.manifest = notes.manifest, Broken()  # type: ignore[assignment]
    try:
        assert _texts(shell, "%tool ") == ([], 6)
        assert _texts(shell, "bench.call('") == ([], 12)
    finally:
        notes.manifest = manifest
    assert capsys.readouterr() == ("", "")


def test_gem_paths_are_gem_folders_then_folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(NOTES, tmp_path / "my gems" / "notes")
    (tmp_path / "ekanos").mkdir()
    (tmp_path / "ekanos" / "integration.ts").write_text("export default {}\n")
    (tmp_path / "emptydir").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "e.txt").write_text("")
    assert gem_paths("e") == ["ekanos", "emptydir/"]
    assert gem_paths("") == ["ekanos", "emptydir/", '"my gems/']
    assert gem_paths('"my gems/') == ['"my gems/notes"']
    assert gem_paths("./ek") == ["./ekanos"]
    assert _texts(_shell(), "%gem open my") == (['"my gems/'], 10)
    assert _texts(_shell(), "%gem open nowhere/x") == ([], 10)  # no such folder


def test_gem_open_flags_before_the_path_are_every_platforms(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    matches, start = _texts(_shell(), "%gem open --allow")
    assert {"--allow-account", "--allow-recipient"} <= set(matches) and start == 10


def test_completion_is_fast(notes, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for i in range(300):
        (tmp_path / f"d{i}").mkdir()
    shell = _shell(bench=notes)
    began = time.perf_counter()
    for text in ("%tool ", "%tool add_note ", "bench.call('", "%state ", "%gem open d"):
        complete(shell, text)
    assert time.perf_counter() - began < 0.5


def test_ipython_shell_with_load_ext_completes_the_same(tmp_path, monkeypatch):
    from _ipython import workbench_shell
    from IPython.core.completer import provisionalcompleter

    monkeypatch.setenv("GEM_WORKBENCH_HOME", str(tmp_path / "home"))
    sh = workbench_shell(tmp_path / "ipython")
    sh.run_line_magic("load_ext", "workbench")  # twice: one matcher
    assert sum(getattr(m, "matcher_identifier", "") == "workbench" for m in sh.Completer.custom_matchers) == 1
    sh.user_ns["bench"] = workbench.open(NOTES)
    try:
        with provisionalcompleter():
            got = [(c.start, c.end, c.text) for c in sh.Completer.completions("%tool c", 7)]
        assert got == [(6, 7, "close_note"), (6, 7, "count_views")]
    finally:
        sh.user_ns.pop("bench").close()
