"""A hint that says how to give an option or run a bench action is in the words of the surface
showing it: the CLI's flags from `gem-workbench`, open()'s keywords and bench methods in Python."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import GemBuilder
from test_cli import cli

ROOT = Path(__file__).resolve().parent.parent
MAILBOX = ROOT / "notebooks" / "gems" / "mail-digest" / "fixtures" / "mailbox.json"

LIST = """
def handle(input, ctx):
    return ctx.email.listSince({"since": 0})
"""
GET = """
def handle(input, ctx):
    return ctx.email.getMessage({"accountId": "work", "id": "m1"})
"""
FETCH = """
def handle(input, ctx):
    return {"status": ctx.http.fetch("https://api.acme.example/v1/x").status}
"""


@pytest.fixture
def mail_gem(gem: GemBuilder) -> Path:
    mail = {"email": {"read": True}}
    gem.tool("list", LIST, side_effect="read", permissions=mail)
    gem.tool("get", GET, side_effect="read", permissions=mail)
    gem.tool("fetch", FETCH, side_effect="read")
    gem.manifest["permissions"] = {
        "email": {"read": True},
        "http": {"connections": {"acme": {"hosts": ["api.acme.example"]}}},
    }
    root = gem.write()
    (root / "fixtures").mkdir()
    shutil.copy(MAILBOX, root / "fixtures" / "mailbox.json")
    return root


def _cli(root: Path, tool: str, tmp_path: Path) -> str:
    out = cli("call", str(root), tool, "--state-dir", str(tmp_path / "s"))
    return out.stderr


def test_cli_warning_of_no_allowed_account_names_allow_account(mail_gem: Path, tmp_path: Path) -> None:
    said = _cli(mail_gem, "list", tmp_path)
    assert "allow them with --allow-account all or --allow-account ID" in said, said
    assert "bench.email" not in said


def test_python_warning_of_no_allowed_account_names_bench_email_allow(mail_gem: Path, opened) -> None:
    res = opened(mail_gem).call("list")
    (warning,) = [w for w in res.warnings if "allowed none" in w]
    assert "bench.email.allow('all') or bench.email.allow([account ids])" in warning


def test_cli_refused_account_names_allow_account(mail_gem: Path, tmp_path: Path) -> None:
    said = _cli(mail_gem, "get", tmp_path)
    assert "E_PERM_DENIED" in said and "--allow-account ID or --allow-account all" in said, said
    assert "bench.email" not in said


def test_python_refused_account_names_bench_email_allow(mail_gem: Path, opened) -> None:
    err = opened(mail_gem).call("get").error
    assert err is not None and err.code == "E_PERM_DENIED"
    assert "bench.email.allow([account ids]) or bench.email.allow('all')" in err.message


def test_cli_unmatched_mock_fetch_names_the_http_flag(mail_gem: Path, tmp_path: Path) -> None:
    said = _cli(mail_gem, "fetch", tmp_path)
    assert "E_HTTP" in said and "add one with --http real|FILE" in said, said
    assert "workbench.open" not in said


def test_python_unmatched_mock_fetch_names_the_http_keyword(mail_gem: Path, opened) -> None:
    err = opened(mail_gem).call("fetch").error
    assert err is not None and "add one with workbench.open(..., http=[{'match'" in err.message


def test_every_action_has_its_python_spelling() -> None:
    """A flag added to the table says how a notebook does the same, or hints would name the
    flag in Python too."""
    from workbench.bench.options import specs

    assert all(a.python for s in specs() for a in s.actions)


def test_the_spelling_follows_the_command_line_surface() -> None:
    from workbench._errors import command_line
    from workbench.ctx.registry import specs
    from workbench.ctx.surface import spell_action, spell_option

    every = specs()

    with command_line():
        assert (
            spell_action("--allow-recipient", "*@acme.example", among=every)
            == "--allow-recipient *@acme.example"
        )
        assert spell_option("fetch_handlers", "[…]", among=every).startswith("--fetch-fixtures FILE")
    assert (
        spell_action("--allow-recipient", "*@acme.example", among=every)
        == "bench.allow_recipients('*@acme.example')"
    )
    assert spell_option("fetch_handlers", "[…]", among=every) == "workbench.open(..., fetch_handlers=[…])"
    assert json.dumps(spell_action("--allow-account", among=every)) == json.dumps(
        "bench.email.allow([account ids])"
    )


def test_cli_refused_option_value_names_its_flag(mail_gem: Path, tmp_path: Path) -> None:
    for command in ("call", "check"):
        args = [command, str(mail_gem), *(["list"] if command == "call" else []), "--reuse", "bogus"]
        said = cli(*args).stderr
        assert "--reuse 'bogus': use 'always', 'never' or 'random'" in said, said
        assert "reuse=" not in said


def test_python_refused_option_value_names_its_keyword(mail_gem: Path) -> None:
    import workbench

    with pytest.raises(workbench.UsageError) as raised:
        workbench.open(mail_gem, reuse="bogus")
    assert raised.value.message == "reuse='bogus': use 'always', 'never' or 'random'"
