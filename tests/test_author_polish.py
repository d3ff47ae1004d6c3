"""Issue 28, points 5 and 10, as a new user met them: the tutorials' widgets after Run All, the
form's button, the trace's args, outbox bodies, the rewind dropdown's label, misspelled manifest
keys, JupyterLab's news prompt."""

from __future__ import annotations

import json
import os
from pathlib import Path

import ipywidgets as widgets
import nbformat
import pytest
from conftest import EXAMPLE_GEM

import workbench
from workbench import _lab
from workbench.jupyter.display import result_html

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL_03 = ROOT / "notebooks" / "03-email-cursor-replay.ipynb"
MAIL_DIGEST = ROOT / "notebooks" / "gems" / "mail-digest"
PY_ECHO = "def handle(input, ctx):\n    return input\n"


# -- point 5: tutorial 03's widgets after Run All ----------------------------------------------
@pytest.mark.deno
def test_tutorial_03_widgets_still_work_after_the_last_cell(tmp_path):
    """The whole tutorial on a fresh kernel, then the first replay widget's own buttons: it is
    not closed by a later cell, and what it shows is still what its cell asserted."""
    from workbench.testing import run_notebook

    nb = nbformat.read(TUTORIAL_03, as_version=4)
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "import json\n"
            "after_run_all = dict(w.state)\n"
            "w.run_button.click()\n"  # the button, as a click in the page does
            "w.rewind_button.click()\n"
            "print('RESULT', json.dumps({'before': {k: after_run_all[k] for k in ('once', 'twice', 'lost', 'pending')},"
            " 'after': {k: w.state[k] for k in ('once', 'twice', 'lost', 'pending')},"
            " 'status': w.status.value, 'closed': first.closed,"
            " 'fixed': wf.state['once'], 'fixed_closed': fixed.closed}))"
        )
    )
    path = tmp_path / "03.ipynb"
    nbformat.write(nb, path)
    out = run_notebook(path, cwd=ROOT / "notebooks", timeout=300)
    text = "".join(o.get("text", "") for o in out.cells[-1].outputs)
    got = json.loads(text.split("RESULT ", 1)[1])
    # what cell 16 asserted is what the widget still shows after Run All
    assert got["before"] == {"once": 31, "twice": 0, "lost": 2, "pending": 0}
    assert got["after"] == got["before"]  # Run to end: one more call, nothing new
    assert "closed" not in got["status"] and "error" not in got["status"]
    assert "cursor rewound" in got["status"]
    assert got["closed"] is False and got["fixed_closed"] is False and got["fixed"] == 30


def test_a_replay_widget_whose_bench_was_closed_says_so(tmp_path):
    bench = workbench.open(MAIL_DIGEST)
    bench.email.allow("all")
    w = bench.email.replay("digest")  # drawn without a call
    bench.close()
    w.run_button.click()
    assert "the bench of example.mail-digest" in w.status.value and "is closed" in w.status.value
    assert "by a bench.close() run after this widget was made: run the cell" in w.status.value
    assert w.step_button.disabled and w.run_button.disabled


def test_a_form_whose_bench_was_closed_says_so():
    bench = workbench.open(EXAMPLE_GEM)
    f = bench.form("add_note")
    bench.close()
    f.fields["title"].value = "x"
    assert f.run() is None
    assert "by a bench.close() run after the form was made: run the cell" in f.status.value
    assert f.run_button.disabled


# -- point 10 ----------------------------------------------------------------------------------
def test_the_form_button_shows_the_whole_tool_name(gem):
    gem.tool(
        "csv_summary_of_the_workspace_tables",
        PY_ECHO,
        schema={"type": "object", "properties": {"a": {"type": "string"}}},
    )
    with workbench.open(gem.write()) as bench:
        f = bench.form("csv_summary_of_the_workspace_tables")
        assert f.run_button.description == "Run csv_summary_of_the_workspace_tables"
        assert f.run_button.layout.width == "auto"  # ipywidgets' fixed default cut the name


def test_the_rewind_dropdown_has_a_visible_label():
    with workbench.open(MAIL_DIGEST) as bench:
        bench.email.allow("all")
        w = bench.email.replay("digest")
        assert w.rewind_to.description == "rewind to:"
        assert isinstance(w.rewind_to, widgets.Dropdown)


def test_trace_args_are_left_aligned_and_long_ones_unfold(gem):
    src = "def handle(input, ctx):\n    ctx.storage.kv.set('k', input['v'])\n    return 1\n"
    gem.tool("t", src, schema={"type": "object"})
    with workbench.open(gem.write()) as bench:
        many = [f"item-{i}" for i in range(60)] + ["END"]  # short values, long args in all
        res = bench.call("t", {"v": many})
        assert res.trace_rows[0]["args"].endswith("…")  # the trace's preview is cut
        html = result_html(res)
    assert "text-align:left !important" in html  # JupyterLab's own rule right-aligns otherwise
    assert html.count("<details class=cell>") == 1  # the whole JSON, unfolded on a click
    assert "&quot;END&quot;" in html.split("<details class=cell>", 1)[1]


def test_trace_args_unfolded_are_bounded(gem):
    src = "def handle(input, ctx):\n    for i in range(40):\n        ctx.storage.kv.set(f'k{i}', input['v'])\n    return 1\n"
    gem.tool("t", src, schema={"type": "object"})
    with workbench.open(gem.write()) as bench:
        html = result_html(bench.call("t", {"v": [f"value-{i}" for i in range(500)]}))
    from workbench.jupyter.display import MAX_ARGS_OPEN

    assert len(html) < 110_000
    assert html.count("<details class=cell>") <= 12_000 // 3 // MAX_ARGS_OPEN + 1


def test_outbox_bodies_keep_their_line_breaks():
    import pandas as pd

    from workbench.inspect.outbox import OutboxFrame
    from workbench.jupyter.display_agent import outbox_html

    frame = OutboxFrame(pd.DataFrame([{"to": ["a@b.example"], "body_text": "line one\nline <two>"}]))
    html = frame[["to", "body_text"]]._repr_html_()
    assert "line one\nline &lt;two&gt;" in html and "\\n" not in html
    assert "white-space:pre-wrap" in html
    assert outbox_html(frame) == html


def test_agent_outbox_is_the_frame_that_keeps_line_breaks(tmp_path):
    agent = ROOT / "notebooks" / "gems" / "agent-research"
    with workbench.open(agent, state_dir=tmp_path) as bench:
        out = bench.outbox()
        assert type(out).__name__ == "OutboxFrame" and list(out.columns)[:2] == ["id", "time"]


@pytest.mark.parametrize(
    "key, meant",
    [("input_schema", "inputSchema"), ("inputschema", "inputSchema"), ("sideEffects", "sideEffect")],
)
def test_a_misspelled_manifest_key_gets_a_did_you_mean(gem, key, meant):
    gem.tool("t", PY_ECHO)
    t = gem.manifest["tools"][0]
    t[key] = t.pop(meant)
    with pytest.raises(workbench.GemLoadError) as err:
        workbench.open(gem.write())
    assert f"/tools/0/{key}: unknown key '{key}': did you mean '{meant}'?" in err.value.message


def test_an_agent_tool_says_parameters(gem):
    gem.tool("t", PY_ECHO).as_agent()
    t = gem.manifest["tools"][0]
    t["input_schema"] = t.pop("parameters")
    with pytest.raises(workbench.GemLoadError) as err:
        workbench.open(gem.write())
    assert "did you mean 'parameters'?" in err.value.message
    assert "inputSchema" not in err.value.message


def test_an_unknown_key_with_no_close_match_lists_the_keys(gem):
    gem.tool("t", PY_ECHO)
    gem.manifest["tools"][0]["zzz"] = 1
    with pytest.raises(workbench.GemLoadError) as err:
        workbench.open(gem.write())
    assert "/tools/0/zzz: unknown key 'zzz' (the keys here: " in err.value.message


def test_lab_disables_the_news_prompt(tmp_path, monkeypatch):
    env = _lab.environment({"JUPYTER_CONFIG_PATH": str(tmp_path)})
    paths = env["JUPYTER_CONFIG_PATH"].split(os.pathsep)
    assert paths[0] == str(tmp_path) and Path(paths[-1]) == _lab.LAB_CONFIG
    page = json.loads((_lab.LAB_CONFIG / "labconfig" / "page_config.json").read_text())
    assert page["disabledExtensions"] == {"@jupyterlab/apputils-extension:announcements": True}
    # and JupyterLab reads it from there
    from jupyterlab_server.config import get_static_page_config

    monkeypatch.setenv("JUPYTER_CONFIG_PATH", env["JUPYTER_CONFIG_PATH"])
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "user"))
    assert get_static_page_config(level="all")["disabledExtensions"][
        "@jupyterlab/apputils-extension:announcements"
    ]
