""" "Did you mean …?" for a misspelt gem folder, tool name and input field, as a misspelt
manifest key gets one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import GemBuilder
from test_cli import cli

import workbench
from workbench._check import check

SCHEMA = {
    "type": "object",
    "properties": {"file": {"type": "string"}, "limit": {"type": "integer"}},
    "required": ["file"],
    "additionalProperties": False,
}


@pytest.fixture
def csvstats(tmp_path: Path) -> Path:
    gem = GemBuilder(tmp_path / "csvstats")
    gem.tool("summarize", "def handle(input, ctx):\n    return input\n", schema=SCHEMA, side_effect="read")
    (tmp_path / "csvstatic").mkdir()  # a folder as near, but no gem: never suggested
    return gem.write()


def test_open_of_a_misspelt_gem_folder_suggests_the_gem_beside_it(csvstats: Path) -> None:
    with pytest.raises(workbench.GemLoadError) as raised:
        workbench.open(csvstats.parent / "csvstat")
    assert raised.value.message.endswith(f"did you mean {str(csvstats)!r}?")


def test_cli_call_and_check_of_a_misspelt_gem_folder_suggest_it(csvstats: Path) -> None:
    wrong = str(csvstats.parent / "csvstat")
    for out in (cli("call", wrong, "summarize", "--input", "{}"), cli("check", wrong)):
        assert out.returncode == 1 and f"did you mean {str(csvstats)!r}?" in out.stderr, out.stderr


def test_a_folder_that_is_no_gem_is_not_suggested(tmp_path: Path) -> None:
    (tmp_path / "csvstats").mkdir()
    (problem,) = check(tmp_path / "csvstat")
    assert "did you mean" not in problem["message"]


def test_a_misspelt_tool_name_gets_a_suggestion(csvstats: Path, opened) -> None:
    err = opened(csvstats).call("summarise", {"file": "a.csv"}).error
    assert err is not None and err.code == "E_UNKNOWN_TOOL"
    assert err.message.endswith("(tools: summarize); did you mean 'summarize'?")


def test_cli_misspelt_tool_name_gets_a_suggestion(csvstats: Path) -> None:
    out = cli("call", str(csvstats), "sumarize", "--input", "{}")
    assert "did you mean 'summarize'?" in out.stderr, out.stderr


def test_a_misspelt_input_field_gets_a_suggestion(csvstats: Path, opened) -> None:
    err = opened(csvstats).call("summarize", {"fil": "a.csv"}).error
    assert err is not None and err.code == "E_SCHEMA"
    assert err.details["violations"][0] == {
        "path": "/fil",
        "message": "unexpected field 'fil' (additionalProperties is false: did you mean 'file'?)",
    }


def test_an_unknown_field_near_no_absent_one_gets_none(csvstats: Path, opened) -> None:
    """`file` is given already: `files` is no typo of it, and `zzz` is near nothing."""
    err = opened(csvstats).call("summarize", {"file": "a.csv", "files": [], "zzz": 1}).error
    assert err is not None
    assert [v["message"] for v in err.details["violations"]] == [
        "unexpected field 'files' (additionalProperties is false)",
        "unexpected field 'zzz' (additionalProperties is false)",
    ]


def test_cli_misspelt_input_field_gets_a_suggestion(csvstats: Path) -> None:
    out = cli("call", str(csvstats), "summarize", "--input", json.dumps({"file": "a", "limt": 3}))
    assert "unexpected field 'limt' (additionalProperties is false: did you mean 'limit'?)" in out.stderr


def test_a_huge_unknown_key_is_not_compared(csvstats: Path, opened) -> None:
    """An input's key of 100,000 characters is no typo (near.MAX_CHARS): no suggestion."""
    err = opened(csvstats).call("summarize", {"file": "a", "f" * 100_000: 1}).error
    assert err is not None and "did you mean" not in err.message


def test_the_doctor_of_a_misspelt_tool_suggests_it(csvstats: Path, opened) -> None:
    with pytest.raises(workbench.UsageError, match=r"no such tool .*; did you mean 'summarize'\?"):
        opened(csvstats).doctor(tool="sumarize", examples=1)


def test_the_form_and_the_email_replay_of_a_misspelt_tool_suggest_it(csvstats: Path, opened) -> None:
    bench = opened(csvstats)
    for make in (bench.form, bench.email.replay_run):
        with pytest.raises(workbench.WorkbenchError, match=r"did you mean 'summarize'\?$") as raised:
            make("summarise")
        assert raised.value.code == "E_UNKNOWN_TOOL"
