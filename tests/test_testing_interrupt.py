"""Ctrl-C during notebook tests stops the session, as in any pytest run, and leaves no kernel.

Each run is a process of its own, sent SIGINT as a terminal's Ctrl-C would (to its process
group, xdist's workers included), once a notebook's cell is running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_testing_plugin import IDLE_CPU_CONFTEST, running, write_notebook

# The cell that runs when Ctrl-C comes: it says so (and which kernel runs it), then sleeps
RUNS = "import os, pathlib\npathlib.Path('a.pid').write_text(str(os.getpid()))\nimport time\ntime.sleep({s})"
# ... or, in a kernel that ignores SIGINT (the interrupt a first Ctrl-C sends it), loops
STUBBORN = (
    "import os, pathlib, signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "pathlib.Path('a.pid').write_text(str(os.getpid()))\nwhile True: time.sleep(0.01)"
)


def _interrupted_run(folder: Path, *args: str, presses: int = 1, ignore: bool = False) -> tuple[int, str]:
    """Run pytest on `folder`'s notebooks; once a.pid exists, press Ctrl-C `presses` times;
    return its exit code and output. Every process it started is gone by then (asserted)."""
    tmp = folder / "tmp"  # the kernels' homes are made here
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}

    def ignore_sigint() -> None:  # (as a script's background job starts)
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    cmd = [sys.executable, "-m", "pytest", "--nb", ".", "-p", "no:cacheprovider", "-p", "no:randomly", *args]
    proc = subprocess.Popen(
        cmd,
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=ignore_sigint if ignore else None,
    )
    try:
        deadline = time.monotonic() + 90
        while not (folder / "a.pid").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        for _ in range(presses):
            os.killpg(proc.pid, signal.SIGINT)
            time.sleep(0.5)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert (folder / "a.pid").exists(), out
    kernel = int((folder / "a.pid").read_text())
    assert not running(kernel), f"a's kernel (pid {kernel}) is still running\n{out}"
    assert not list(tmp.glob("gem-workbench-nb-*")), f"a kernel's home is left behind\n{out}"
    assert not _processes_with(f"TMPDIR={tmp}"), f"a process of the run still runs\n{out}"
    return proc.returncode, out


def _processes_with(variable: str) -> list[int]:
    """The running processes whose environment has `variable` (NAME=value)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if variable.encode() in environ and running(int(proc.name)):
            found.append(int(proc.name))
    return found


@pytest.mark.parametrize("workers", ["0", "2"])
def test_ctrl_c_during_a_notebook_stops_the_session_and_its_kernels(tmp_path: Path, workers: str):
    # with a CPU idle (-n 0), b's kernel was started ahead meanwhile: it is gone too
    (tmp_path / "conftest.py").write_text(IDLE_CPU_CONFTEST)
    write_notebook(tmp_path / "a.ipynb", "print('first')", RUNS.format(s=60))
    write_notebook(tmp_path / "b.ipynb", "open('b-ran', 'w').close()")
    code, out = _interrupted_run(tmp_path, "-n", workers)
    assert code == pytest.ExitCode.INTERRUPTED, out
    assert "KeyboardInterrupt" in out, out
    if workers == "0":  # (under xdist b may have run on the other worker; the controller reports)
        assert "KeyboardInterrupt: " + str(tmp_path / "a.ipynb") + ": Ctrl-C at cell 3" in out, out
        assert "passed" not in out and not (tmp_path / "b-ran").exists(), "the session went on"


def test_a_second_ctrl_c_kills_a_kernel_that_ignores_the_interrupt(tmp_path: Path):
    write_notebook(tmp_path / "a.ipynb", STUBBORN)
    code, out = _interrupted_run(tmp_path, presses=2)
    assert code == pytest.ExitCode.INTERRUPTED, out
    assert "a.ipynb: Ctrl-C 2 times: its kernel was killed" in out, out


def test_a_run_that_ignores_sigint_runs_on(tmp_path: Path):
    # (nbclient's own handler shut the kernel down: the cell failed as "the kernel died")
    write_notebook(tmp_path / "a.ipynb", RUNS.format(s=2), "print('after')")
    code, out = _interrupted_run(tmp_path, ignore=True)
    assert code == pytest.ExitCode.OK and "1 passed" in out, out


def test_run_notebook_raises_keyboard_interrupt_after_its_cleanup(tmp_path: Path):
    write_notebook(tmp_path / "a.ipynb", RUNS.format(s=60))
    script = (
        "import sys\nfrom workbench.testing import run_notebook\n"
        "try:\n    run_notebook(sys.argv[1])\n"
        "except KeyboardInterrupt as exc:\n    print('interrupted:', exc)\n"
    )
    (tmp_path / "run.py").write_text(script)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "run.py", "a.ipynb"],
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(tmp)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 90
        while not (tmp_path / "a.pid").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert out.strip() == "interrupted: a.ipynb: Ctrl-C at cell 2", out
    assert not running(int((tmp_path / "a.pid").read_text()))
    assert not list(tmp.glob("gem-workbench-nb-*"))


def test_ctrl_c_while_the_kernel_boots_stops_the_session(tmp_path: Path):
    # (nbclient's handler is set while it waits for the kernel to answer: it failed the notebook
    # with a CancelledError traceback, and the next one ran)
    startup = tmp_path / "ipy" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00.py").write_text(
        "import os, pathlib, time\npathlib.Path('a.pid').write_text(str(os.getpid()))\ntime.sleep(3)\n"
    )
    (tmp_path / "conftest.py").write_text(
        f"import os\nos.environ['IPYTHONDIR'] = {str(tmp_path / 'ipy')!r}\n"
    )
    write_notebook(tmp_path / "a.ipynb", "print('a')")
    write_notebook(tmp_path / "b.ipynb", "open('b-ran', 'w').close()")
    code, out = _interrupted_run(tmp_path)
    assert code == pytest.ExitCode.INTERRUPTED, out
    assert "KeyboardInterrupt: " + str(tmp_path / "a.ipynb") + ": Ctrl-C" in out, out
    assert "CancelledError" not in out and not (tmp_path / "b-ran").exists(), out


def test_a_cancelled_wait_for_a_kernels_end_still_kills_it(tmp_path: Path):
    # a Ctrl-C while aclose waits out the grace of a kernel that does not exit
    import asyncio

    from workbench.testing._kernel import astart_kernel

    write_notebook(tmp_path / "a.ipynb", "1")

    async def main() -> int:
        kernel = await astart_kernel(tmp_path / "a.ipynb", kernel_name="gem-workbench")
        pid = kernel.km.provisioner.process.pid  # type: ignore[union-attr]
        waiting = asyncio.ensure_future(kernel.aclose(grace=60))  # (never asked to shut down)
        await asyncio.sleep(0.5)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        return pid

    pid = asyncio.run(main())
    assert not running(pid), "the kernel still runs"


def test_a_notebook_run_on_a_thread_beside_one_on_the_main_thread(tmp_path: Path):
    # (the thread's run took the main thread's SIGINT handler for its own: RuntimeError)
    import asyncio
    import threading

    from workbench.testing import run_notebook

    write_notebook(tmp_path / "a.ipynb", "import time\ntime.sleep(3)")
    write_notebook(tmp_path / "b.ipynb", "print('b')")
    errors: list[BaseException] = []

    def on_thread() -> None:
        time.sleep(1)
        try:
            run_notebook(tmp_path / "b.ipynb")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:  # the loop jupyter_core made for this thread
            asyncio.get_event_loop_policy().get_event_loop().close()

    thread = threading.Thread(target=on_thread)
    thread.start()
    run_notebook(tmp_path / "a.ipynb")
    thread.join()
    assert errors == []
