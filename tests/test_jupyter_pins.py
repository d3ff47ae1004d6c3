"""Pinning from the notebook: `%tool … --pin CASE`, its completion, and the pin control
(`res.pin_button()`, the form's)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import ipywidgets as widgets
import pytest
from _ipython import workbench_shell
from conftest import EXAMPLE_GEM

import workbench
from workbench.jupyter.complete import complete
from workbench.jupyter.pin import PinControl
from workbench.jupyter.pinflag import split_pin


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory):
    return workbench_shell(tmp_path_factory.mktemp("ipython"))


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of the example gem at tmp_path/gems/notes (pinning writes into the gem)."""
    dest = tmp_path / "gems" / "notes"
    shutil.copytree(EXAMPLE_GEM, dest)
    return dest


@pytest.fixture
def ip(shell, tmp_path, monkeypatch, copy, capsys):
    """The shell in tmp_path with the copy open as `bench`; closed after."""
    monkeypatch.chdir(tmp_path)
    magics = shell.magics_manager.registry["WorkbenchMagics"]
    assert shell.run_cell("%gem open gems/notes").success
    capsys.readouterr()
    yield shell
    bench = shell.user_ns.pop("bench", None)
    for b in {id(x): x for x in (bench, magics.opened) if isinstance(x, workbench.Bench)}.values():
        b.close()
    magics.opened = None


def cases(gem: Path) -> list[str]:
    return sorted(str(p.relative_to(gem / "tests" / "calls")) for p in gem.glob("tests/calls/*/*.json"))


# -- the flag ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"title": "x"} --pin first', ('{"title": "x"}', "first", True)),
        ('{"title": "x"} --pin=first ', ('{"title": "x"}', "first", True)),
        ("title: x --pin first", ("title: x", "first", True)),
        ("--pin first", ("", "first", True)),
        ('{"title": "x"} --pin', ('{"title": "x"}', None, True)),
        # inside the input: a string, a bracket, a Python string with a prefix
        ('{"title": "a --pin b"}', ('{"title": "a --pin b"}', None, False)),
        ("{title: 'a --pin b'}", ("{title: 'a --pin b'}", None, False)),
        ("title: 'a --pin b'", ("title: 'a --pin b'", None, False)),
        ("[1, 2, --pin x", ("[1, 2, --pin x", None, False)),
        ('dict(title=f"a --pin b")', ('dict(title=f"a --pin b")', None, False)),
        ('{"t": "say \\" --pin x"}', ('{"t": "say \\" --pin x"}', None, False)),
        # an apostrophe in a word opens no string
        ("title: don't --pin x", ("title: don't", "x", True)),
        ("title: a--pin b", ("title: a--pin b", None, False)),
        ('{"title": "x"} --pinned', ('{"title": "x"} --pinned', None, False)),
        ("--pin a --pin b", ("--pin a", "b", True)),
    ],
)
def test_split_pin(text, expected):
    assert split_pin(text) == expected


# -- %tool --pin ---------------------------------------------------------------------------------
def test_tool_line_pins_the_call_and_says_where(ip, copy, capsys):
    res = ip.run_cell('%tool add_note {"title": "buy milk"} --pin first')
    assert res.success and res.result.ok and res.result.input == {"title": "buy milk"}
    out, err = capsys.readouterr()
    assert err == ""
    assert out.splitlines()[0] == f"pinned: {Path('gems/notes/tests/calls/add_note/first.json')}"
    case = json.loads((copy / "tests/calls/add_note/first.json").read_text())
    assert case["tool"] == "add_note" and case["input"] == {"title": "buy milk"}
    assert case["result"]["value"] == res.result.value


def test_tool_cell_pins_the_call(ip, copy, capsys):
    res = ip.run_cell("%%tool add_note --pin=second\ntitle: buy bread\npriority: 2\n")
    assert res.success and res.result.input == {"title": "buy bread", "priority": 2}
    assert "pinned: " in capsys.readouterr().out
    assert cases(copy) == ["add_note/second.json"]


def test_pin_inside_the_input_is_part_of_the_input(ip, copy, capsys):
    res = ip.run_cell('%tool add_note {"title": "a --pin b"}')
    assert res.success and res.result.input == {"title": "a --pin b"}
    assert "pinned" not in capsys.readouterr().out and cases(copy) == []


def test_pinning_again_replaces_the_case(ip, copy, capsys):
    ip.run_cell("%tool add_note title: one --pin same")
    ip.run_cell("%tool add_note title: two --pin same")
    assert cases(copy) == ["add_note/same.json"]
    assert json.loads((copy / "tests/calls/add_note/same.json").read_text())["input"] == {"title": "two"}


@pytest.mark.parametrize(
    "cell, says",
    [
        ("%tool add_note {} --pin", "--pin CASE: name the case"),
        ("%tool add_note {} --pin ../x", "pin name '../x'"),
        ("%tool add_note {} --pin a/b", "pin name 'a/b'"),
        ("%tool add_note --pin first", "give the input to call with"),
        ("%%tool add_note --pin\ntitle: x\n", "--pin CASE: name the case"),
        ("%%tool add_note extra --pin x\ntitle: x\n", "takes only the tool name and `--pin CASE`"),
    ],
)
def test_pin_mistakes_are_one_line_and_call_nothing(ip, copy, capsys, cell, says):
    res = ip.run_cell(cell)
    assert not res.success
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert err.startswith("error E_USAGE: ") and err.count("\n") == 1 and says in err, err
    assert len(ip.user_ns["bench"].calls()) == 0 and cases(copy) == []


def test_a_pin_that_fails_still_shows_the_result(ip, copy, capsys, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (copy / "tests" / "calls").mkdir(parents=True)
    (copy / "tests" / "calls" / "add_note").symlink_to(elsewhere)  # never written through
    res = ip.run_cell("%tool add_note title: x --pin first")
    assert not res.success
    out, err = capsys.readouterr()
    assert "add_note: ok" in out  # the call's result, shown before the error
    assert err.startswith("error E_PATH: ") and "is a link" in err
    assert list(elsewhere.iterdir()) == []


# -- completion ----------------------------------------------------------------------------------
def offered(ip, text: str) -> list[str] | None:
    found = complete(ip, text)
    return None if found is None else found.matches


def test_completion_offers_pin_after_the_input_and_the_cases_after_it(ip, copy):
    assert offered(ip, '%tool add_note {"title": "x"} --') == ["--pin"]
    assert offered(ip, "%tool add_note title: x -") == ["--pin"]
    assert offered(ip, "%%tool add_note -") == ["--pin"]
    assert offered(ip, '%tool add_note {"title": "x --') is None  # in a string: IPython's
    assert offered(ip, "%tool add_note {} --pin ") == []
    ip.run_cell("%tool add_note title: x --pin first")
    ip.run_cell("%tool add_note title: y --pin second")
    assert offered(ip, "%tool add_note {} --pin ") == ["first", "second"]
    assert offered(ip, "%tool add_note {} --pin=s") == ["second"]
    assert offered(ip, "%%tool add_note --pin f") == ["first"]
    assert offered(ip, "%%tool add_note --pin first\nti") == ["title"]  # the body's fields still


# -- the pin control -----------------------------------------------------------------------------
def test_pin_button_pins_and_shows_the_path(copy, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with workbench.open(copy) as bench:
        res = bench.call("add_note", {"title": "x"})
        control = res.pin_button()
        assert isinstance(control, PinControl) and isinstance(control, widgets.HBox)
        assert isinstance(control.name, widgets.Text) and isinstance(control.button, widgets.Button)
        control.button.click()  # no name yet
        assert "type a name" in control.status.value and control.path is None and cases(copy) == []
        control.name.value = " first "
        control.button.click()
        assert control.path == copy / "tests/calls/add_note/first.json" and control.path.is_file()
        assert "pinned: gems/notes/tests/calls/add_note/first.json" in control.status.value
        bench.call("add_note", {"title": "later"})
        control.name.value = "again"
        assert control.pin() is None
        assert "error E_USAGE" in control.status.value and "latest call" in control.status.value
        assert res.pin_button(name="preset").name.value == "preset"


def test_a_results_display_stays_plain_html(copy):
    with workbench.open(copy) as bench:
        res = bench.call("add_note", {"title": "x"})
        # no widget in a result's own display: saved notebooks and nbconvert see HTML and text
        assert not hasattr(res, "_ipython_display_") and not hasattr(res, "_repr_mimebundle_")
        assert "pin" not in res._repr_html_().split("</style>", 1)[1].lower()


def test_the_form_pins_its_result(copy, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with workbench.open(copy) as bench:
        form = bench.form("add_note")
        assert form.pin_control in form.children and form.pin_control.layout.display == "none"
        form.fields["title"].value = "from the form"
        res = form.run()
        assert res is not None and form.pin_control.layout.display is None
        assert form.pin_control.result is res
        form.pin_control.name.value = "formed"
        form.pin_control.button.click()
        case = json.loads((copy / "tests/calls/add_note/formed.json").read_text())
        assert case["input"] == {"title": "from the form"}
        form.fields["title"].value = "again"
        form.run()  # a new result: the line is cleared, the name kept
        assert form.pin_control.status.value == "" and form.pin_control.name.value == "formed"


def test_a_rejected_pin_name_leaves_the_button_its_label(copy):
    """The error goes on the line beside the button, which takes the room left and wraps; the
    button and the name box never shrink (tests/test_browser.py draws it in JupyterLab)."""
    with workbench.open(copy) as bench:
        control = bench.call("add_note", {"title": "x"}).pin_button(name="../x y")
        assert control.pin() is None and "error E_USAGE: pin name" in control.status.value
        assert control.button.description == "pin"
        assert control.button.layout.flex == "0 0 auto" and control.name.layout.flex == "0 0 auto"
        assert control.status.layout.flex == "1 1 auto" and control.status.layout.min_width == "0"


def test_pin_button_on_a_closed_bench_says_so(copy):
    bench = workbench.open(copy)
    res = bench.call("add_note", {"title": "x"})
    bench.close()
    control = res.pin_button(name="late")
    assert control.pin() is None and "error E_" in control.status.value
    assert not os.path.exists(copy / "tests/calls/add_note/late.json")
