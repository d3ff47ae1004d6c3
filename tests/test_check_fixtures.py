"""`gem-workbench check` reads the gem's fixtures with the code the first call would run: a bad
fixture is a problem naming its file and field, not an error at the first call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GemBuilder
from test_cli import cli

import workbench
from workbench._check import check

READ_MAIL = """
def handle(input, ctx):
    return ctx.email.listSince({"since": 0})
"""
MESSAGES = [
    {"accountId": "work", "id": "w1", "subject": "a", "date": 1709539200000, "body": "x"},
    {"accountId": "work", "id": "w2", "subject": "b", "date": "2024-13-45", "body": "y"},
]


def _mail_gem(gem: GemBuilder, messages: list) -> Path:
    gem.tool("read", READ_MAIL, side_effect="read", permissions={"email": {"read": True}})
    root = gem.write()
    (root / "fixtures").mkdir()
    (root / "fixtures" / "mailbox.json").write_text(json.dumps(messages))
    return root


def test_check_reports_a_bad_date_in_the_mailbox_fixture(gem: GemBuilder) -> None:
    (problem,) = check(_mail_gem(gem, MESSAGES))
    assert problem == {
        "file": "fixtures/mailbox.json",
        "pointer": "/1/date",
        "message": "E_MANIFEST: '2024-13-45' is not ms since the epoch or an ISO 8601 date",
    }


@pytest.mark.parametrize("flags", [[], ["--typecheck"]])
def test_check_command_names_the_fixture_file_and_field(gem: GemBuilder, flags: list[str]) -> None:
    out = cli("check", str(_mail_gem(gem, MESSAGES)), *flags)
    assert out.returncode == 1
    assert "fixtures/mailbox.json#/1/date: E_MANIFEST: '2024-13-45' is not ms" in out.stderr, out.stderr


def test_check_says_what_the_first_call_would(gem: GemBuilder, opened) -> None:
    """The same providers' code: the message check prints is the one opening the bench raises."""
    root = _mail_gem(gem, MESSAGES)
    with pytest.raises(workbench.GemLoadError) as raised:
        opened(root)
    (problem,) = check(root)
    assert problem["message"].split(": ", 1)[1] in str(raised.value)


def test_check_passes_a_good_mailbox_fixture(gem: GemBuilder) -> None:
    assert check(_mail_gem(gem, MESSAGES[:1])) == []


def test_check_reports_a_web_search_fixture_the_mock_refuses(gem: GemBuilder) -> None:
    gem.tool("t", "def handle(input, ctx):\n    return 1\n").as_agent()
    root = gem.write()
    (root / "fixtures").mkdir()
    results = [{"title": "t", "url": "ftp://files.example/x"}]
    (root / "fixtures" / "web_search.json").write_text(json.dumps([{"query": "q", "results": results}]))
    (problem,) = check(root)
    assert problem["file"] == "fixtures/web_search.json" and problem["pointer"] == "/0/results/0/url"
    assert problem["message"] == "E_MANIFEST: expected an absolute http:// or https:// address"


def test_check_of_a_gem_without_fixture_files_does_not_import_the_ctx_layer() -> None:
    """check's start-up (docs/benchmarks.md): the notes gem's fixtures/ holds only a workspace."""
    code = (
        "import sys; from workbench._check import check; assert check('notebooks/gems/notes') == []; "
        "print(sorted(m for m in sys.modules if m.startswith('workbench.ctx')))"
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
