"""%gem, %tool / %%tool and %state, driven through a real IPython shell."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
from _ipython import workbench_shell
from conftest import EXAMPLE_GEM

import workbench
from workbench.jupyter.magics import MagicError, parse_input


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory):
    return workbench_shell(tmp_path_factory.mktemp("ipython"))


@pytest.fixture
def ip(shell, tmp_path, monkeypatch):
    """The shell, in tmp_path, with no bench open before or after the test."""
    monkeypatch.chdir(tmp_path)
    magics = shell.magics_manager.registry["WorkbenchMagics"]
    yield shell
    bench = shell.user_ns.pop("bench", None)
    for b in {id(x): x for x in (bench, magics.opened) if isinstance(x, workbench.Bench)}.values():
        b.close()
    magics.opened = None


def run(ip, cell: str):
    """Run a cell as a notebook would; returns the ExecutionResult."""
    return ip.run_cell(cell)


def one_error_line(capsys, code: str) -> str:
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error {code}: "), err
    return lines[0]


def open_notes(ip, capsys) -> workbench.Bench:
    assert run(ip, f"%gem open {EXAMPLE_GEM}").success
    capsys.readouterr()
    return ip.user_ns["bench"]


# -- loading -----------------------------------------------------------------------------------
def test_load_ext_registers_the_magics(shell):
    assert shell.find_line_magic("gem") and shell.find_line_magic("tool")
    assert shell.find_cell_magic("tool") and shell.find_line_magic("state")
    assert shell.find_cell_magic("state")


def test_loading_again_keeps_the_open_bench(ip, capsys):
    bench = open_notes(ip, capsys)
    from workbench.jupyter import load_ipython_extension

    load_ipython_extension(ip)
    assert ip.run_line_magic("gem", "") is bench
    assert ip.custom_exceptions.count(MagicError) == 1


def test_import_of_the_extension_package_is_light():
    code = (
        "import sys, workbench.jupyter; heavy = [m for m in ('pandas', 'ipywidgets', "
        "'IPython', 'jsonschema') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- %gem --------------------------------------------------------------------------------------
def test_gem_open_stores_and_shows_the_bench(ip, capsys):
    res = run(ip, f"%gem open {EXAMPLE_GEM}")
    assert res.success and res.result is None
    bench = ip.user_ns["bench"]
    assert isinstance(bench, workbench.Bench) and bench.manifest.id == "acme.notes"
    assert "<Bench acme.notes" in capsys.readouterr().out  # displayed
    assert ip.run_line_magic("gem", "") is bench
    assert bench.providers.kind == {"files": "mock", "storage": "mock"}


def test_gem_open_real_with_workspace_state_dir_and_strict(ip, capsys, tmp_path):
    ws, state = tmp_path / "my ws", tmp_path / "state"
    ws.mkdir()
    assert run(ip, f'%gem open {EXAMPLE_GEM} --real --workspace "{ws}" --state-dir={state} --strict').success
    bench = ip.user_ns["bench"]
    assert bench.providers.kind == {"files": "real", "storage": "real"} and bench.strict
    assert (state / "data.sqlite").exists()
    assert ip.run_line_magic("tool", "write_report {}").ok
    assert (ws / "reports" / "notes.md").exists()


def test_gem_open_expands_python_variables_in_the_path(ip, capsys):
    ip.user_ns["GEM"] = str(EXAMPLE_GEM)
    assert run(ip, "%gem open $GEM").success
    assert ip.user_ns["bench"].manifest.id == "acme.notes"


def test_gem_open_again_replaces_and_closes_the_previous_bench(ip, capsys, gem):
    first = open_notes(ip, capsys)
    gem.tool("t", "def handle(input, ctx):\n    return 1\n")
    assert run(ip, f"%gem open {gem.write()}").success
    assert ip.user_ns["bench"].manifest.id == "test.gem"
    assert run(ip, "%tool t {}").success
    with pytest.raises(workbench.WorkbenchError, match="closed"):
        first.kv()


def test_gem_close(ip, capsys):
    bench = open_notes(ip, capsys)
    assert run(ip, "%gem close").success
    assert "closed acme.notes" in capsys.readouterr().out
    assert "bench" not in ip.user_ns
    assert not run(ip, "%gem").success
    one_error_line(capsys, "E_USAGE")
    with pytest.raises(workbench.WorkbenchError, match="closed"):
        bench.kv()


def test_magics_use_a_bench_assigned_in_python(ip, capsys):
    ip.user_ns["bench"] = workbench.open(EXAMPLE_GEM)
    res = run(ip, '%tool add_note {"title": "x"}')
    assert res.success and res.result.ok
    assert len(ip.user_ns["bench"].calls()) == 1


@pytest.mark.parametrize(
    "line, code",
    [
        ("%gem", "E_USAGE"),  # nothing open
        ("%gem open", "E_USAGE"),  # no path
        ("%gem open /no/such/gem", "E_MANIFEST"),
        ("%gem open a b", "E_USAGE"),
        ("%gem open x --bogus", "E_USAGE"),
        ("%gem open x --workspace", "E_USAGE"),
        ("%gem open 'unclosed", "E_USAGE"),
        ("%gem frobnicate", "E_USAGE"),
        ("%tool add_note {}", "E_USAGE"),  # nothing open
        ("%state files", "E_USAGE"),
    ],
)
def test_magic_errors_are_one_line_and_fail_the_cell(ip, capsys, line, code):
    res = run(ip, line)
    assert not res.success and isinstance(res.error_in_exec, MagicError)
    one_error_line(capsys, code)


def test_broken_gem_names_the_file_and_field(ip, capsys, gem):
    gem.tool("t", "def handle(input, ctx):\n    return 1\n", side_effect="sometimes")
    assert not run(ip, f"%gem open {gem.write()}").success
    line = one_error_line(capsys, "E_MANIFEST")
    assert "sideEffect" in line


def test_magic_errors_raise_for_programmatic_callers(ip):
    with pytest.raises(workbench.WorkbenchError) as info:
        ip.run_line_magic("gem", "")
    assert info.value.code == "E_USAGE"


def test_a_closed_bench_is_a_usage_error(ip, capsys):
    bench = open_notes(ip, capsys)
    bench.close()
    assert not run(ip, "%tool count_views").success
    assert "closed" in one_error_line(capsys, "E_USAGE")


def test_internal_failure_is_one_line_and_kept_for_tb(ip, capsys, monkeypatch):
    bench = open_notes(ip, capsys)

    def broken(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(bench, "call", broken)
    assert not run(ip, "%tool count_views {}").success
    assert "RuntimeError: boom" in one_error_line(capsys, "E_INTERNAL")
    assert isinstance(sys.last_value, RuntimeError)


# -- %tool -------------------------------------------------------------------------------------
def test_tool_line_with_json_returns_the_result(ip, capsys):
    bench = open_notes(ip, capsys)
    res = run(ip, '%tool add_note {"title": "buy milk", "priority": 2}')
    assert res.success and isinstance(res.result, workbench.CallResult) and res.result.ok
    assert bench.data("notes")["title"].tolist() == ["buy milk"]
    assert bench.calls()["tool"].tolist() == ["add_note"]


def test_tool_cell_with_yaml(ip, capsys):
    bench = open_notes(ip, capsys)
    res = run(ip, "%%tool add_note\ntitle: buy milk\npriority: 4\ntags: [home, today]\n")
    assert res.success and res.result.ok
    assert bench.data("notes")[["title", "priority", "tags"]].values.tolist() == [
        ["buy milk", 4, ["home", "today"]]
    ]


def test_tool_cell_with_json(ip, capsys):
    open_notes(ip, capsys)
    res = run(ip, '%%tool add_note\n{"title": "a",\n "tags": ["x"]}\n')
    assert res.result.ok and res.result.input == {"title": "a", "tags": ["x"]}


def test_tool_input_uses_python_variables(ip, capsys):
    open_notes(ip, capsys)
    ip.user_ns.update(t="from a variable", p=2, payload={"title": "whole"})
    res = run(ip, "%%tool add_note\ntitle: $t\npriority: $p + 1\ntags: [$t, $$literal]\n")
    assert res.result.input == {
        "title": "from a variable",
        "priority": 3,
        "tags": ["from a variable", "$literal"],
    }
    assert run(ip, "%tool add_note payload").result.input == {"title": "whole"}
    assert run(ip, "%tool add_note $payload").result.input == {"title": "whole"}
    assert run(ip, "%tool add_note dict(title=t, priority=p)").result.input == {
        "title": "from a variable",
        "priority": 2,
    }
    res = run(ip, "%%tool add_note\ndict(\n    title=t,\n)\n")
    assert res.result.input == {"title": "from a variable"}


def test_tool_with_an_empty_object_or_body_sends_an_empty_object(ip, capsys):
    open_notes(ip, capsys)
    assert run(ip, "%tool count_views {}").result.input == {}
    assert run(ip, "%%tool count_views\n\n").result.value == {"views": 2}


def test_a_tools_own_failure_is_a_displayed_result_not_a_magic_error(ip, capsys):
    open_notes(ip, capsys)
    res = run(ip, '%tool add_note {"title": 3}')
    assert res.success and not res.result.ok and res.result.error.code == "E_SCHEMA"
    out, err = capsys.readouterr()
    assert err == "" and "E_SCHEMA" in out


@pytest.mark.parametrize(
    "cell, code",
    [
        ("%tool nope {}", "E_UNKNOWN_TOOL"),
        ("%tool", "E_USAGE"),
        ("%tool add_note {bad", "E_USAGE"),
        ("%tool add_note title: $no_such_variable", "E_USAGE"),
        ("%tool add_note hello world", "E_USAGE"),
        ("%%tool add_note extra\ntitle: x\n", "E_USAGE"),
        ("%%tool add_note\ntitle: [unclosed\n", "E_USAGE"),
    ],
)
def test_tool_errors(ip, capsys, cell, code):
    bench = open_notes(ip, capsys)
    res = run(ip, cell)
    assert not res.success
    one_error_line(capsys, code)
    assert len(bench.calls()) == 0  # nothing was called


def test_unknown_tool_lists_the_tools(ip, capsys):
    open_notes(ip, capsys)
    run(ip, "%tool nope")
    assert "add_note" in one_error_line(capsys, "E_UNKNOWN_TOOL")


# -- the INPUT rule ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("", {}),
        ("  \n", {}),
        ('{"a": 1, "b": [true, null]}', {"a": 1, "b": [True, None]}),
        ('{"n": 1e5}', {"n": 100000.0}),  # JSON first: YAML 1.1 would read a string
        ("a: 1\nb: [x, y]", {"a": 1, "b": ["x", "y"]}),
        ("{a: x}", {"a": "x"}),
        ("[1, 2]", [1, 2]),
        ("a: $v", {"a": [1, 2]}),
        ("a: $v[0] * 10", {"a": 10}),
        ("a: $$v", {"a": "$v"}),
        ('{"a": "$v"}', {"a": [1, 2]}),
        ("v", [1, 2]),
        ("$v", [1, 2]),
        ("{**d, 'c': 3}", {"k": 1, "c": 3}),
        # YAML with JSON's scalars: no YAML 1.1 booleans, dates, octal or base-60 numbers
        (
            "a: no\nb: 2024-01-01\nc: 0755\nd: 1e5\ne: 1:30\nf: -2\ng: .5\nh: ~\ni: true",
            {
                "a": "no",
                "b": "2024-01-01",
                "c": "0755",
                "d": 100000.0,
                "e": "1:30",
                "f": -2,
                "g": 0.5,
                "h": None,
                "i": True,
            },
        ),
    ],
)
def test_parse_input(text, expected):
    assert parse_input(text, {"v": [1, 2], "d": {"k": 1}}) == expected


def test_parse_input_errors_say_what_to_write():
    with pytest.raises(MagicError, match="write YAML"):
        parse_input("two words", {})
    with pytest.raises(MagicError, match="NameError"):
        parse_input("undefined_name", {})
    with pytest.raises(MagicError, match=r"line 1, column"):
        parse_input("a: [", {})


# -- %state ------------------------------------------------------------------------------------
def test_state_views_are_dataframes(ip, capsys):
    bench = open_notes(ip, capsys)
    run(ip, '%tool add_note {"title": "a"}')
    run(ip, "%tool count_views {}")
    run(ip, "%tool write_report {}")
    files = ip.run_line_magic("state", "files")
    assert isinstance(files, pd.DataFrame) and "workspace:reports/notes.md" in files["path"].tolist()
    assert ip.run_line_magic("state", "data notes")["title"].tolist() == ["a"]
    assert ip.run_line_magic("state", "kv").values.tolist() == [["views", "1"]]
    calls = ip.run_line_magic("state", "calls")
    assert calls["tool"].tolist() == ["add_note", "count_views", "write_report"]
    assert ip.run_line_magic("state", "tools")["name"].tolist()[0] == "add_note"
    note_id = bench.data("notes")["id"][0]
    run(ip, f'%tool close_note {{"id": "{note_id}"}}')
    assert ip.run_line_magic("state", "sql select note_id from closed").values.tolist() == [[note_id]]
    assert ip.run_cell_magic("state", "sql", "select count(*) as n\nfrom closed").values.tolist() == [[1]]
    res = run(ip, "%state data notes")
    assert res.success and isinstance(res.result, pd.DataFrame)


@pytest.mark.parametrize(
    "line, code",
    [
        ("%state sql select * from no_such_table", "E_SQL"),
        ("%state data nope", "E_USAGE"),
        ("%state data", "E_USAGE"),
        ("%state", "E_USAGE"),
        ("%state everything", "E_USAGE"),
        ("%state kv extra", "E_USAGE"),
    ],
)
def test_state_errors(ip, capsys, line, code):
    open_notes(ip, capsys)
    assert not run(ip, line).success
    one_error_line(capsys, code)


def test_state_sql_is_not_variable_expanded(ip, capsys):
    open_notes(ip, capsys)
    df = ip.run_line_magic("state", "sql select '$x {y}' as s")
    assert df["s"].tolist() == ["$x {y}"]


def test_magics_work_unchanged_on_an_agent_gem(ip, capsys):
    """The agent example gem (notebooks/gems/agent-research) through %gem and %tool."""
    gem = EXAMPLE_GEM.parent / "agent-research"
    assert run(ip, f"%gem open {gem}").success
    bench = ip.user_ns["bench"]
    assert bench.profile.name == "agent"
    res = run(ip, "%tool hello_py {}")
    assert res.success and res.result.value == {"ok": True}
    res = run(ip, '%tool resilient {"topic": "workers"}')
    assert res.success and res.result.value["ok"] is True


@pytest.mark.deno
def test_gem_open_and_tool_work_for_an_ekanos_integration(ip, capsys):
    """K1/K2 through the magics: an integration folder opens; %tool calls by effective name."""
    acme = EXAMPLE_GEM.parent / "acme-payments"
    assert run(ip, f"%gem open {acme}").success
    bench = ip.user_ns["bench"]
    assert bench.profile.name == "ekanos"
    res = run(ip, "%tool acme_payments_get_current_weather {}")
    assert res.success and res.result.outcome == "expected_failure"  # no saved location
    form = bench.form("refund_payment")
    assert {"paymentId", "reason"} <= set(form.fields)
