"""The Gem Workbench kernel: its kernelspec, kernel_info, the preloaded extension, the CLI."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import workbench

ROOT = Path(__file__).resolve().parent.parent


def _start(kernel_name: str, tmp: Path, **km_options: Any) -> tuple[Any, Any]:
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name=kernel_name, **km_options)
    log = open(tmp / f"{kernel_name}.log", "w")  # the kernel's own log (stderr)
    try:
        km.start_kernel(
            env={**os.environ, "GEM_WORKBENCH_HOME": str(tmp / "home")},
            extra_arguments=["--HistoryManager.hist_file=:memory:"],
            stderr=log,
        )
    finally:
        log.close()  # the child holds its own copy
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
    except BaseException:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        raise
    return km, kc


def _stop(km: Any, kc: Any) -> None:
    kc.stop_channels()
    km.shutdown_kernel(now=False)


def _evaluate(kc: Any, **expressions: str) -> dict[str, Any]:
    """Evaluate Python expressions in the kernel; their repr()s, by name."""
    reply = kc.execute("", user_expressions=expressions, reply=True, timeout=30)
    out = {}
    for name, res in reply["content"]["user_expressions"].items():
        assert res["status"] == "ok", res
        out[name] = res["data"]["text/plain"]
    return out


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One gem-workbench kernel for the module (a start costs about a second)."""
    km, kc = _start("gem-workbench", tmp_path_factory.mktemp("kernel"))
    try:
        yield kc
    finally:
        _stop(km, kc)


def test_kernelspec_is_installed_with_the_package():
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("gem-workbench")
    assert spec.display_name == "Gem Workbench"
    assert spec.language == "python"
    assert spec.argv == ["python", "-m", "workbench.kernel", "-f", "{connection_file}"]
    folder = Path(spec.resource_dir)
    for logo in ("logo-32x32.png", "logo-64x64.png"):
        assert (folder / logo).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    shipped = json.loads((ROOT / "extension" / "kernelspec" / "kernel.json").read_text())
    assert json.loads((folder / "kernel.json").read_text()) == shipped, (
        "installed kernelspec is stale: reinstall with pip install -e ."
    )


def test_kernel_info_names_gem_workbench(kernel):
    info = kernel.kernel_info(reply=True, timeout=30)["content"]
    assert info["implementation"] == "gem-workbench"
    assert info["implementation_version"] == workbench.__version__
    assert info["banner"].startswith(f"Gem Workbench {workbench.__version__}")
    assert info["language_info"]["name"] == "python"


def test_kernel_preloads_the_extension(kernel):
    got = _evaluate(
        kernel,
        error="get_ipython().kernel.extension_error",
        loaded="'workbench' in get_ipython().extension_manager.loaded",
        line="sorted(n for n in ('gem', 'tool', 'state') if get_ipython().find_line_magic(n))",
        cell="get_ipython().find_cell_magic('tool') is not None",
        light="sorted(m for m in ('pandas', 'jsonschema', 'ipywidgets', 'nbclient') "
        "if m in __import__('sys').modules)",
    )
    if importlib.util.find_spec("workbench.jupyter") is None:  # not written yet: it was tried
        assert "workbench.jupyter" in got["error"]
    else:
        assert got["error"] == "None", f"the workbench extension failed to load: {got['error']}"
        assert got["loaded"] == "True"
        assert got["line"] == "['gem', 'state', 'tool']"
        assert got["cell"] == "True"
    assert got["light"] == "[]", "kernel start must not import heavy libraries"


def test_a_broken_extension_is_a_warning_not_a_dead_kernel(tmp_path):
    from jupyter_client.kernelspec import KernelSpecManager

    folder = tmp_path / "kernels" / "broken-ext"
    folder.mkdir(parents=True)
    code = "import workbench.kernel as k; k.EXTENSION = 'no_such_extension_xyz'; k.main()"
    (folder / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-c", code, "-f", "{connection_file}"],
                "display_name": "broken",
                "language": "python",
            }
        )
    )
    km, kc = _start(
        "broken-ext", tmp_path, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")])
    )
    try:
        got = _evaluate(kc, error="get_ipython().kernel.extension_error", two="1 + 1")
    finally:
        _stop(km, kc)
    assert "no_such_extension_xyz" in got["error"]
    assert got["two"] == "2"
    log = (tmp_path / "broken-ext.log").read_text()
    assert "could not load the 'no_such_extension_xyz' extension" in log


def test_kernel_install_writes_a_spec_running_this_python(tmp_path):
    from workbench.cli import main

    assert (
        main(
            ["kernel", "install", "--prefix", str(tmp_path), "--name", "gw-test", "--display-name", "GW test"]
        )
        == 0
    )
    folder = tmp_path / "share" / "jupyter" / "kernels" / "gw-test"
    spec = json.loads((folder / "kernel.json").read_text())
    assert spec["argv"] == [sys.executable, "-m", "workbench.kernel", "-f", "{connection_file}"]
    assert spec["display_name"] == "GW test"
    assert sorted(p.name for p in folder.glob("*.png")) == ["logo-32x32.png", "logo-64x64.png"]


def test_kernel_install_rejects_a_bad_name(tmp_path, capsys):
    from workbench.cli import main

    assert main(["kernel", "install", "--prefix", str(tmp_path), "--name", "Bad Name!"]) == 1
    assert "--name 'Bad Name!'" in capsys.readouterr().err


def test_lab_serves_the_folder_with_the_workbench_kernel_as_default(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "nbs").mkdir()
    jupyter = tmp_path / "jupyter"
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(jupyter / "config"),
        "JUPYTER_RUNTIME_DIR": str(jupyter / "runtime"),
        "IPYTHONDIR": str(jupyter / "ipython"),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "workbench.cli",
            "lab",
            str(tmp_path / "nbs"),
            "--no-browser",
            "--port",
            str(port),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed once the server is up
        assert line.startswith("Gem Workbench Lab on "), line
        url = line.split(": ", 1)[1].strip()
        assert url.startswith(f"http://127.0.0.1:{port}/lab?token=")
        token = url.split("token=", 1)[1]
        with urllib.request.urlopen(
            f"http://127.0.0.1:{port}/api/kernelspecs?token={token}", timeout=10
        ) as r:
            specs = json.load(r)
        assert specs["default"] == "gem-workbench"
        assert "gem-workbench" in specs["kernelspecs"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=10) as r:
            assert r.status == 200
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    deadline = time.monotonic() + 10  # Jupyter itself is gone too: it removes its info file
    while list((jupyter / "runtime").glob("jpserver-*.json")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not list((jupyter / "runtime").glob("jpserver-*.json"))


def test_shutdown_never_waits_on_a_closed_iopub_thread(tmp_path):
    """ipykernel stops the shell loop while its control thread still has stdout and stderr to
    flush through the IOPub thread, which the main thread may then close first: that flush
    waits 10 s and prints "IOStream.flush timed out" (about one shutdown in 15 on 2 cores).
    The workbench kernel stops its loops after the control message is done. Racy by nature:
    20 shutdowns right after the start and after a cell, none may hit it."""
    for i in range(20):
        km, kc = _start("gem-workbench", tmp_path)
        if i % 2:
            kc.execute("1", reply=True, timeout=30)
        kc.stop_channels()
        km.request_shutdown()
        # the process exits by itself (a flush timeout would keep it 10 s; the deadline is
        # only a bound on a broken test, never a measure)
        deadline = time.monotonic() + 60
        while km.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        alive = km.is_alive()
        km.shutdown_kernel(now=True)
        log = (tmp_path / "gem-workbench.log").read_text()
        assert not alive
        assert "IOStream.flush timed out" not in log, f"shutdown {i}: {log[-2000:]}"


SLOW_TOOL = {  # a write, then the marker the test waits for, then no end
    "py": """\
import time


def handle(input, ctx):
    ctx.storage.kv.set("seen", input["n"])
    ctx.files.write("workspace:" + input["marker"], "started")
    while True:
        time.sleep(0.05)
""",
    "js": """\
export default async function (input, ctx) {
  await ctx.storage.kv.set("seen", input.n);
  await ctx.files.write("workspace:" + input.marker, "started");
  for (;;) {}
}
""",
}


def _interrupted_run(
    km: Any, kc: Any, code: str, marker: Path
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run `code`, send the kernel's interrupt (SIGINT) once the tool wrote `marker`; its IOPub
    outputs (stream and error contents) and the execute reply."""
    msg_id = kc.execute(code)
    deadline = time.monotonic() + 60  # a bound on a broken test, never a measure
    while not marker.exists():
        assert time.monotonic() < deadline, "the tool never started"
        time.sleep(0.02)
    km.interrupt_kernel()
    outputs = []
    while True:
        msg = kc.get_iopub_msg(timeout=60)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if kind in ("stream", "error", "execute_result", "display_data"):
            outputs.append({"type": kind, **msg["content"]})
        if kind == "status" and msg["content"]["execution_state"] == "idle":
            break
    reply = kc.get_shell_msg(timeout=60)
    assert reply["parent_header"]["msg_id"] == msg_id
    return outputs, reply["content"]


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_a_kernel_interrupt_mid_call_is_one_line_and_a_row_of_calls(tmp_path, lang):
    """Jupyter's interrupt (SIGINT) while a tool runs, from `bench.call` and from `%tool`: one
    line of output, not a traceback; the call is an E_INTERRUPTED row, its writes kept (real
    providers: the state folder's database, the workspace folder)."""
    from conftest import GemBuilder

    gem = GemBuilder(tmp_path / "gem")
    gem.tool("slow", SLOW_TOOL[lang], ext=lang)
    gem.write()
    ws = tmp_path / "ws"
    km, kc = _start("gem-workbench", tmp_path)
    try:
        opened = kc.execute(
            f"import workbench\nbench = workbench.open({str(gem.root)!r}, providers='real', "
            f"state_dir={str(tmp_path / 'st')!r}, workspace={str(ws)!r}, headless=True)",
            reply=True,
            timeout=60,
        )
        assert opened["content"]["status"] == "ok", opened["content"]
        cells = (
            "bench.call('slow', {{'n': 'a', 'marker': {m!r}}})",
            "%tool slow {{'n': 'b', 'marker': {m!r}}}",
        )
        for n, code in enumerate(cells):
            marker = f"marker{n}"
            outputs, reply = _interrupted_run(km, kc, code.format(m=marker), ws / marker)
            assert reply["status"] == "error" and reply["ename"] == "CallInterrupted"
            assert [o["type"] for o in outputs] == ["error"], outputs  # nothing else printed
            (line,) = outputs[0]["traceback"]
            assert line.startswith("KeyboardInterrupt: slow: interrupted (Ctrl-C) after 2 ctx calls, call ")
            assert line.endswith("; what it wrote before was kept (bench.calls() lists it)")
        got = _evaluate(
            kc,
            errors="bench.calls().error.tolist()",
            kv="bench.kv().set_index('key').value['seen']",
        )
        assert got["errors"] == "['E_INTERRUPTED', 'E_INTERRUPTED']"
        assert got["kv"] == "'b'"  # the second interrupted call's write was kept
        assert (ws / "marker1").read_text() == "started"
    finally:
        _stop(km, kc)
