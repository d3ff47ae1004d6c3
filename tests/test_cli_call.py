"""The command line of issue 28: `call --input @FILE` and `-`, `--version`, `python -m
workbench`, a one-line Ctrl-C, and `call --real` saying where its folders are."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import EXAMPLE_GEM
from test_cli import cli


def _module(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`python -m workbench ARGS` run in `cwd` (not the checkout: -m puts the folder first on sys.path)."""
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args], capture_output=True, text=True, timeout=60, cwd=cwd
    )


def test_call_input_from_a_file(tmp_path):
    (tmp_path / "in.json").write_text('{"title": "from a file"}')
    out = cli("call", str(EXAMPLE_GEM), "add_note", "--input", f"@{tmp_path / 'in.json'}")
    assert out.returncode == 0, out.stderr
    assert set(json.loads(out.stdout)) == {"id"}


def _piped(text: str, cwd: Path) -> subprocess.CompletedProcess:
    exe = [sys.executable, "-m", "workbench.cli", "call", str(EXAMPLE_GEM), "add_note", "--input", "-"]
    return subprocess.run(exe, input=text, capture_output=True, text=True, timeout=60, cwd=cwd)


def test_call_input_from_stdin(tmp_path):
    out = _piped('{"title": "piped"}', tmp_path)
    assert out.returncode == 0, out.stderr
    assert set(json.loads(out.stdout)) == {"id"}


@pytest.mark.parametrize("what", ["missing", "folder", "fifo", "bare @"])
def test_call_input_file_that_cannot_be_read_is_one_line_exit_2(tmp_path, what):
    path = tmp_path / "in.json"
    if what == "folder":
        path.mkdir()
    elif what == "fifo":
        os.mkfifo(path)  # read without blocking: an error, never a hang
    arg = "@" if what == "bare @" else f"@{path}"
    out = cli("call", str(EXAMPLE_GEM), "add_note", "--input", arg)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("gem-workbench call: error: --input @")


def test_call_input_file_that_is_not_json_names_it_and_the_position(tmp_path):
    (tmp_path / "in.json").write_text('{\n  "title": "a",\n}\n')
    out = cli("call", str(EXAMPLE_GEM), "add_note", "--input", f"@{tmp_path / 'in.json'}")
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert f"--input @{tmp_path / 'in.json'} is not JSON" in out.stderr
    assert "at line 3 column 1" in out.stderr


def test_call_input_stdin_that_is_not_json_names_stdin(tmp_path):
    out = _piped("{title}", tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "--input - (stdin) is not JSON" in out.stderr and "line 1 column 2" in out.stderr


def test_call_help_says_where_input_comes_from():
    out = cli("call", "--help")
    assert out.returncode == 0
    assert "@FILE" in out.stdout and "stdin" in out.stdout


def test_version_is_the_distributions():
    out = cli("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"gem-workbench {version('gem-workbench')}\n"


def test_python_dash_m_workbench_runs_the_cli(tmp_path):
    assert _module("--version", cwd=tmp_path).stdout == f"gem-workbench {version('gem-workbench')}\n"
    out = _module("call", str(EXAMPLE_GEM), "add_note", "--input", '{"title": "m"}', cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert set(json.loads(out.stdout)) == {"id"}


def test_importing_workbench_does_not_import_the_cli(tmp_path):
    code = "import sys, workbench; print(sorted(m for m in sys.modules if m.startswith('workbench.')))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert "workbench.cli" not in out.stdout and "workbench.__main__" not in out.stdout, out.stdout


def test_ctrl_c_during_call_is_one_line_and_exit_130(gem, tmp_path):
    marker = tmp_path / "started"
    gem.tool(
        "slow",
        f"import time\n\ndef handle(input, ctx):\n    open({str(marker)!r}, 'w').close()\n"
        "    time.sleep(30)\n    return {}\n",
    )
    exe = [sys.executable, "-m", "workbench.cli", "call", str(gem.write()), "slow"]
    proc = subprocess.Popen(exe, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert proc.poll() is None, proc.communicate(timeout=10)
            assert time.monotonic() < deadline, "the tool did not start"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 130, stderr
    assert stderr == "gem-workbench call: interrupted\n" and stdout == ""


def test_call_real_says_where_the_state_and_run_folders_are(gem, tmp_path):
    gem.tool("w", "def handle(input, ctx):\n    ctx.files.write('out.txt', 'x')\n    return {}\n")
    out = cli("call", str(gem.write()), "w", "--real", "--state-dir", str(tmp_path / "state"))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {}  # stdout stays the result
    lines = dict(line.split(": ", 1) for line in out.stderr.splitlines())
    assert lines["state folder"] == str(tmp_path / "state")
    run = Path(lines["run folder"])
    assert run.parent == tmp_path / "state" / "runs" and (run / "out.txt").read_text() == "x"


def test_call_on_mock_providers_says_no_folder():
    out = cli("call", str(EXAMPLE_GEM), "list_notes")
    assert out.returncode == 0 and "folder" not in out.stderr, out.stderr
