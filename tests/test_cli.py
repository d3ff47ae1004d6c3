"""The gem-workbench command, run as a subprocess like a user would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import EXAMPLE_GEM


def cli(*args: str, env_home=None) -> subprocess.CompletedProcess:
    exe = shutil.which("gem-workbench", path=os.path.dirname(sys.executable))
    cmd = [exe] if exe else [sys.executable, "-m", "workbench.cli"]
    env = {**os.environ, **({"GEM_WORKBENCH_HOME": str(env_home)} if env_home else {})}
    return subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, timeout=60)


def test_check_ok():
    out = cli("check", str(EXAMPLE_GEM))
    assert out.returncode == 0 and "ok" in out.stdout


def test_check_reports_pointer_and_exits_1(gem):
    gem.tool(
        "a",
        "def handle(i, c): return 1",
        schema={"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}},
    )
    out = cli("check", str(gem.write()))
    assert out.returncode == 1
    assert "manifest.json#/tools/0/inputSchema/properties/a/pattern" in out.stderr
    assert "Traceback" not in out.stderr


def test_call_prints_json(tmp_path):
    out = cli("call", str(EXAMPLE_GEM), "add_note", "--input", '{"title": "hi"}')
    assert out.returncode == 0, out.stderr
    assert set(json.loads(out.stdout)) == {"id"}


def test_call_error_is_one_line_plus_json_and_exit_1():
    out = cli("call", str(EXAMPLE_GEM), "add_note", "--input", '{"title": 3}')
    assert out.returncode == 1 and out.stdout == ""
    first, rest = out.stderr.split("\n", 1)
    assert first.startswith("error E_SCHEMA: ") and "/title" in first
    assert json.loads(rest)["error"]["code"] == "E_SCHEMA"


def test_call_bad_input_json():
    out = cli("call", str(EXAMPLE_GEM), "add_note", "--input", "{title}")
    assert out.returncode == 1 and out.stderr.startswith("error E_USAGE: --input is not JSON")


def test_call_broken_gem_is_one_line(tmp_path):
    (tmp_path / "manifest.json").write_text("{")
    out = cli("call", str(tmp_path), "x")
    assert out.returncode == 1 and out.stderr.startswith("error E_MANIFEST:")
    assert "Traceback" not in out.stderr


def test_call_real_persists_between_runs(tmp_path):
    for _ in range(2):
        assert (
            cli(
                "call", str(EXAMPLE_GEM), "add_note", "--input", '{"title": "a"}', "--real", env_home=tmp_path
            ).returncode
            == 0
        )
    out = cli("call", str(EXAMPLE_GEM), "list_notes", "--real", env_home=tmp_path)
    assert json.loads(out.stdout)["total"] == 2
    [state] = tmp_path.glob("acme.notes-*")  # one folder per gem folder: <id>-<path hash>
    assert (state / "data.sqlite").is_file()


def test_check_typecheck_reports_ts_errors(gem, tmp_path):
    gem.tool(
        "t",
        "export default async function (input: {a: number}): Promise<string> {\n  return input.a\n}\n",
        ext="ts",
    )
    out = cli("check", str(gem.write()), "--typecheck", env_home=tmp_path)
    assert out.returncode == 1
    assert "TS2322" in out.stderr and "tools/t.ts:2:3" in out.stderr
    assert "\x1b[" not in out.stderr  # no colour codes


def test_check_typecheck_passes_good_ts(gem, tmp_path):
    gem.tool(
        "t",
        "export default async function (input: {a: number}): Promise<number> {\n  return input.a\n}\n",
        ext="ts",
    )
    out = cli("check", str(gem.write()), "--typecheck", env_home=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "TypeScript tools type-check" in out.stdout


def test_call_js_tool_from_cli(tmp_path):
    from test_seed_examples import SEED_GEM

    out = cli("call", str(SEED_GEM), "add_note", "--input", '{"title": "x"}', env_home=tmp_path)
    assert out.returncode == 0, out.stderr
    assert set(json.loads(out.stdout)) == {"id"}


@pytest.mark.deno
def test_ekanos_check_and_call(tmp_path):
    acme = EXAMPLE_GEM.parent / "acme-payments"
    assert cli("check", str(acme)).returncode == 0
    out = cli("call", str(acme), "acme_payments_get_current_weather", "--state-dir", str(tmp_path))
    assert out.returncode == 0 and json.loads(out.stdout) == {"error": "No location saved for this account."}
    assert "expected failure" in out.stderr


def test_call_with_state_keeps_it_between_invocations(tmp_path):
    state = tmp_path / "state"
    for title in ("a", "b"):
        assert cli("call", str(EXAMPLE_GEM), "add_note", "--input", json.dumps({"title": title}),
                   "--state", str(state)).returncode == 0  # fmt: skip
    out = cli("call", str(EXAMPLE_GEM), "list_notes", "--state", str(state))
    assert [n["title"] for n in json.loads(out.stdout)["notes"]] == ["a", "b"]
    assert (state / "workspace").is_dir() and (state / "data.sqlite").is_file()


def test_test_runs_notebooks_in_parallel_workers(tmp_path):
    nbs = [str(EXAMPLE_GEM.parent.parent / n) for n in ("01-quickstart.ipynb", "05-agent-tools.ipynb")]
    out = cli("test", "-n", "2", *nbs)
    assert out.returncode == 0, out.stdout[-2000:]
    assert "2 passed" in out.stdout


@pytest.mark.parametrize("what", ["a file", "a symlink loop", "under a file"])
def test_SEC7_call_with_a_state_that_cannot_be_a_folder_is_E_STATE(tmp_path, what):
    state = tmp_path / "state"
    if what == "a file":
        state.write_text("x")
    elif what == "a symlink loop":
        os.symlink(state, state)
    else:
        state.write_text("x")
        state = state / "inner"
    out = cli("call", str(EXAMPLE_GEM), "list_notes", "--state", str(state))
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.startswith("error E_STATE: ") and str(state) in out.stderr.splitlines()[0]


def test_SEC7_call_with_input_nested_100000_deep_is_E_SCHEMA(tmp_path):
    out = cli("call", str(EXAMPLE_GEM), "add_note", "--input", "[" * 100_000)  # one argument: < 128 KiB
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert out.stderr.startswith("error E_SCHEMA: --input is nested too deeply")


def test_SEC5_call_with_state_skips_a_fifo_in_the_fixtures(tmp_path):
    gem = tmp_path / "gem"
    shutil.copytree(EXAMPLE_GEM, gem)
    (gem / "fixtures" / "workspace").mkdir(parents=True, exist_ok=True)
    os.mkfifo(gem / "fixtures" / "workspace" / "pipe")
    out = cli("call", str(gem), "list_notes", "--state", str(tmp_path / "state"))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert not os.path.lexists(tmp_path / "state" / "workspace" / "pipe")


def test_SEC7_call_echoing_a_lone_surrogate_prints_its_json_escape(gem):
    gem.tool("echo", "def handle(input, ctx):\n    return input\n")
    out = cli("call", str(gem.write()), "echo", "--input", '{"s": "x\\ud800y"}')
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert json.loads(out.stdout) == {"s": "x\ud800y"} and "\\ud800" in out.stdout
