"""One option table drives every surface (issue 27, point 2): workbench.open's checks and
docstring, the gem-workbench call/check flags, %gem open's flags and docs/open.md's table are
the capabilities' rows (ctx/spec.py), and a platform refuses another's option naming it."""

from __future__ import annotations

import difflib
import json
import os
import pydoc
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_GEM, GemBuilder

import workbench
from workbench.bench.options import MARKS, gem_flags, options_markdown, profiles, table, with_options
from workbench.platforms import profile

ROOT = Path(__file__).resolve().parent.parent
ACME = ROOT / "notebooks" / "gems" / "acme-payments"
MAIL = "def handle(input, ctx):\n    return ctx.tools.send_email(input)\n"
NOTE = {"to": "ann@acme.example", "subject": "Re: sources", "body_text": "Hi"}
PAYMENTS = [
    {"match": "https://api.acme.example/v1/payments", "respond": {"json": {"payments": [{"id": "p1"}]}}}
]


def agent_gem(gem: GemBuilder) -> Path:
    return gem.tool("mail", MAIL).as_agent("agent-123", "Research helper").write()


def notochord_gem(gem: GemBuilder) -> Path:
    return gem.tool("echo", "def handle(input, ctx):\n    return input\n").write()


def cli(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("gem-workbench", path=os.path.dirname(sys.executable))
    cmd = [exe] if exe else [sys.executable, "-m", "workbench.cli"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=120)


# -- workbench.open -----------------------------------------------------------------------------
GENERIC: dict[str, Any] = dict(
    strict=True, reuse="never", timeout=20.0, memory_mb=256, keep_runs=5, keep_run_days=1
)


def test_notochord_options_are_accepted(gem: GemBuilder, tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    own = dict(workspace=tmp_path / "ws", conversation=True, headless=True, mailbox=None, http=[],
               credentials=None, http_timeout=5.0, resources={})  # fmt: skip
    with workbench.open(notochord_gem(gem), state_dir=tmp_path / "s", **GENERIC, **own) as bench:
        assert bench.call("echo", {"a": 1}).value == {"a": 1}


def test_agent_options_are_accepted(gem: GemBuilder, tmp_path: Path) -> None:
    (tmp_path / "files").mkdir()
    own = dict(web_search="mock", outbox="mock", files=tmp_path / "files")
    with workbench.open(agent_gem(gem), state_dir=tmp_path / "s", **GENERIC, **own) as bench:
        bench.allow_recipients("ann@acme.example")
        assert "message_id" in bench.call("mail", NOTE).value


@pytest.mark.deno
def test_ekanos_options_are_accepted(tmp_path: Path) -> None:
    own = dict(
        secrets={"api_key": "sk_test_1"}, fetch_handlers=PAYMENTS, account_storage={}, http_timeout=5.0
    )
    with workbench.open(ACME, state_dir=tmp_path / "s", **GENERIC, **own) as bench:
        assert bench.call("list_recent_payments", {}).value == {"payments": [{"id": "p1"}]}


@pytest.mark.parametrize(
    "platform, option, value, has_it, suggest",
    [
        ("notochord", "fetch_handlers", [], "Ekanos integrations (ctx.http)", "http"),
        ("notochord", "secrets", {}, "Ekanos integrations (ctx.secrets)", None),
        ("notochord", "web_search", "mock", "agent custom tools (ctx.tools)", None),
        ("agent", "workspace", ".", "Notochord gems (ctx.files)", None),
        ("agent", "http", "mock", "Notochord gems (ctx.http), Ekanos integrations (ctx.http)", None),
        ("agent", "account_storage", {}, "Ekanos integrations (ctx.storage.account)", None),
        ("ekanos", "mailbox", None, "Notochord gems (ctx.email)", None),
        ("ekanos", "outbox", "mock", "agent custom tools (ctx.tools)", None),
        ("ekanos", "headless", True, "Notochord gems (ctx.files)", None),
    ],
)
def test_another_platforms_option_is_refused_naming_it(
    platform: str, option: str, value: Any, has_it: str, suggest: str | None, gem: GemBuilder, tmp_path: Path
) -> None:
    path = {"notochord": lambda: notochord_gem(gem), "agent": lambda: agent_gem(gem), "ekanos": lambda: ACME}[
        platform
    ]()
    state = tmp_path / "state"
    with pytest.raises(workbench.UsageError) as caught:
        workbench.open(path, state_dir=state, **{option: value})
    err = caught.value
    mine = profile(platform).title
    assert f"{option}= is an option of {has_it}; {mine} do not have it" in err.message
    assert err.details["platform"] == platform and err.details["option"] == option
    if suggest:
        assert err.message.endswith(f"did you mean {suggest}=?")
    assert not state.exists()  # refused before anything opened


def test_a_misspelt_option_suggests_the_closest(gem: GemBuilder) -> None:
    with pytest.raises(workbench.UsageError, match=r"no option workspce= .*did you mean workspace=\?"):
        workbench.open(notochord_gem(gem), workspce=".")
    with pytest.raises(workbench.UsageError, match=r"did you mean web_search=\?"):
        workbench.open(agent_gem(gem), websearch="mock")


def test_option_values_are_checked_from_the_table(gem: GemBuilder) -> None:
    root = notochord_gem(gem)
    for bad in (dict(reuse="sometimes"), dict(http_timeout=0), dict(keep_runs=-1), dict(keep_run_days=True)):
        with pytest.raises(workbench.UsageError, match=next(iter(bad))):
            workbench.open(root, **bad)


@pytest.mark.deno
def test_fetch_handlers_and_http_are_one_option(tmp_path: Path) -> None:
    with pytest.raises(workbench.UsageError, match="not both"):
        workbench.open(ACME, state_dir=tmp_path / "s", fetch_handlers=PAYMENTS, http=PAYMENTS)


@pytest.mark.deno
def test_an_ekanos_hint_names_fetch_handlers(tmp_path: Path) -> None:
    with workbench.open(ACME, state_dir=tmp_path / "s", secrets={"api_key": "k"}, fetch_handlers=[]) as bench:
        res = bench.call("list_recent_payments", {})
    text = json.dumps(res.error.to_dict() if res.error else res.value)
    assert "fetch_handlers=[" in text and "http=[" not in text


def test_help_lists_every_option_of_every_platform() -> None:
    doc = pydoc.render_doc(workbench.open, renderer=pydoc.plaintext)
    for p in profiles():
        for name, (o, _) in table(p).items():
            assert f"{name}: {o.type} = " in workbench.open.__doc__, name
            assert f"{name}:" in doc and p.title in doc
    import inspect

    assert set(inspect.signature(workbench.open).parameters) >= {n for p in profiles() for n in table(p)}


def test_docs_open_md_options_are_the_table() -> None:
    page = (ROOT / "docs" / "open.md").read_text(encoding="utf-8")
    start, end = page.index(MARKS[0]) + len(MARKS[0]), page.index(MARKS[1])
    documented, expected = page[start:end], options_markdown()
    diff = "".join(
        difflib.unified_diff(documented.splitlines(True), expected.splitlines(True), "docs/open.md", "table")
    )
    assert not diff, (
        "docs/open.md's options differ from the table; regenerate with\n"
        '  python -c "from pathlib import Path; from workbench.bench.options import with_options; '
        "p = Path('docs/open.md'); p.write_text(with_options(p.read_text()))\"\n" + diff
    )
    assert with_options(page) == page


# -- the command line ---------------------------------------------------------------------------
def test_cli_call_agent_with_allow_recipient_sends_to_the_mock_outbox(
    gem: GemBuilder, tmp_path: Path
) -> None:
    root = agent_gem(gem)
    refused = cli("call", str(root), "mail", "--input", json.dumps(NOTE), "--state-dir", str(tmp_path / "s1"))
    assert refused.returncode == 0, refused.stderr
    assert json.loads(refused.stdout)["error"] == "recipient_not_allowed"
    out = cli("call", str(root), "mail", "--input", json.dumps(NOTE), "--allow-recipient", "*@acme.example",
              "--state-dir", str(tmp_path / "s2"))  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "message_id" in json.loads(out.stdout)


@pytest.mark.deno
def test_cli_call_ekanos_with_secret_and_fetch_fixtures(tmp_path: Path) -> None:
    fixtures = tmp_path / "fetch.json"
    fixtures.write_text(json.dumps(PAYMENTS))
    out = cli("call", str(ACME), "list_recent_payments", "--secret", "api_key=sk_test_1",
              "--fetch-fixtures", str(fixtures), "--state-dir", str(tmp_path / "s"))  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"payments": [{"id": "p1"}]}


@pytest.mark.deno
def test_cli_call_with_allow_account_reads_the_mailbox(tmp_path: Path) -> None:
    digest = ROOT / "notebooks" / "gems" / "mail-digest"
    none = cli("call", str(digest), "digest", "--state-dir", str(tmp_path / "s1"))
    every = cli("call", str(digest), "digest", "--allow-account", "all", "--state-dir", str(tmp_path / "s2"))
    assert none.returncode == every.returncode == 0, none.stderr + every.stderr
    assert json.loads(none.stdout)["processed"] == 0 < json.loads(every.stdout)["processed"]


@pytest.mark.parametrize(
    "args, says",
    [
        (["--secret", "api_key=x"], "--secret (secrets=) is an option of Ekanos integrations"),
        (["--fetch-fixtures", "nowhere.json"], "Notochord gems do not have it; did you mean --http?"),
        (["--allow-recipient", "a@x.example"], "--allow-recipient is a flag of agent custom tools"),
    ],
)
@pytest.mark.parametrize("command", ["call", "check"])
def test_cli_refuses_another_platforms_flag_in_one_line(command: str, args: list[str], says: str) -> None:
    argv = [command, str(EXAMPLE_GEM), *(["list_notes"] if command == "call" else []), *args]
    out = cli(*argv)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.count("\n") == 1 and says in out.stderr, out.stderr


def test_cli_help_groups_flags_by_capability_with_their_platforms() -> None:
    out = cli("call", "--help")
    assert out.returncode == 0
    text = " ".join(out.stdout.split())
    for group in ("ctx.secrets (Ekanos integrations):", "ctx.tools (agent custom tools):",
                  "ctx.files (Notochord gems):", "every bench (every platform):"):  # fmt: skip
        assert group in text
    for flag in ("--allow-recipient ADDR", "--secret NAME=VALUE", "--secrets FILE", "--fetch-fixtures FILE",
                 "--web-search URL|FILE", "--mailbox PATH", "--real", "--workspace DIR", "--state DIR"):  # fmt: skip
        assert flag in text


# -- %gem open ----------------------------------------------------------------------------------
@pytest.fixture
def ip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from _ipython import workbench_shell

    sh = workbench_shell(tmp_path / "ipython")
    monkeypatch.chdir(tmp_path)
    magics = sh.magics_manager.registry["WorkbenchMagics"]
    yield sh
    sh.user_ns.pop("bench", None)
    if magics.opened is not None:
        magics.opened.close()
    magics.opened = None


@pytest.mark.deno
def test_gem_open_takes_secrets_for_ekanos(ip: Any, tmp_path: Path) -> None:
    (tmp_path / "secrets.json").write_text(json.dumps({"api_key": "sk_test_1"}))
    (tmp_path / "fetch.json").write_text(json.dumps(PAYMENTS))
    res = ip.run_cell(
        f"%gem open {ACME} --secrets secrets.json --fetch-fixtures fetch.json --state-dir {tmp_path / 's'}"
    )
    assert res.success, res.error_in_exec
    assert ip.user_ns["bench"].call("list_recent_payments", {}).value == {"payments": [{"id": "p1"}]}


def test_gem_open_refuses_secrets_for_notochord(
    ip: Any, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "secrets.json").write_text("{}")
    res = ip.run_cell(f"%gem open {EXAMPLE_GEM} --secrets secrets.json")
    assert not res.success
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "error E_USAGE: --secrets (secrets=) is an option of Ekanos"
    )
    assert "Notochord gems do not have it" in err


def test_gem_open_allow_recipient_acts_on_the_bench(ip: Any, gem: GemBuilder) -> None:
    res = ip.run_cell(f"%gem open {agent_gem(gem)} --allow-recipient ann@acme.example")
    assert res.success, res.error_in_exec
    assert "message_id" in ip.user_ns["bench"].call("mail", NOTE).value


def test_gem_open_completes_the_gems_flags(ip: Any, gem: GemBuilder) -> None:
    from IPython.core.completer import provisionalcompleter

    def completed(line: str) -> set[str]:
        with provisionalcompleter():
            return {c.text for c in ip.Completer.completions(line, len(line))}

    assert {"--allow-account"} == completed(f"%gem open {EXAMPLE_GEM} --allow")
    root = agent_gem(gem)
    assert {"--allow-recipient"} == completed(f"%gem open {root} --allow")
    notes, agent = gem_flags(EXAMPLE_GEM), gem_flags(root)
    assert {"--workspace", "--mailbox", "--allow-account", "--real"} <= set(notes)
    assert not {"--secrets", "--allow-recipient", "--files"} & set(notes)
    assert {"--allow-recipient", "--web-search", "--files", "--real"} <= set(agent)
    assert "--workspace" not in agent
    assert {"--secrets", "--workspace", "--allow-recipient"} <= set(gem_flags(None))


@pytest.mark.parametrize("kind", ["fifo", "folder", "deep", "large"])
def test_SEC5_a_flags_json_file_is_read_bounded_and_never_hangs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """`--secrets FILE` / `--fetch-fixtures FILE` are someone else's files: a FIFO or a folder in
    their place is one E_USAGE naming the file (a plain open() of a FIFO would wait for a
    writer forever), as are JSON nested past the parser's guard and a file over the bound."""
    from workbench.ctx import spec

    path = tmp_path / "secrets.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    else:
        monkeypatch.setattr(spec, "JSON_FILE_BYTES", 10)
        path.write_text(json.dumps({"api_key": "sk_test_1"}))
    with pytest.raises(workbench.UsageError) as err:
        spec.json_file(str(path))
    assert err.value.code == "E_USAGE" and err.value.details["file"] == str(path), err.value
    if kind == "fifo":  # and through the command, in one line, before any call
        out = cli("call", str(ACME), "list_recent_payments", "--secrets", str(path),
                  "--state-dir", str(tmp_path / "s"))  # fmt: skip
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        assert out.stderr.count("\n") == 1 and "secrets.json" in out.stderr, out.stderr


@pytest.mark.deno
def test_a_relative_state_dir_is_the_one_under_the_folder_open_ran_in(
    gem: GemBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """state_dir="st" is tmp_path/st: a JS tool runs (its sandbox's folder is a file URI, which
    a relative path cannot be), and a later chdir does not move it."""
    gem.tool("t", "export default async () => 41 + 1;\n", ext="js")
    monkeypatch.chdir(tmp_path)
    with workbench.open(gem.write(), state_dir="st") as bench:
        monkeypatch.chdir(gem.root)
        res = bench.call("t")
        assert res.ok and res.value == 42, res.error
        assert bench.providers.state_dir == tmp_path / "st"
