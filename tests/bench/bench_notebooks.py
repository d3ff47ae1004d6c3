"""Notebook suites in parallel (issue 14 item 5): the tutorials under `gem-workbench test -n 2`
(pytest-xdist, longest first by the serial run's times) against `-n 0`, and what the pytest
plugin adds to one notebook against plain nbclient execution of it on the same kernel, each in
fresh processes."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import Figures, Sizes

ROOT = Path(__file__).resolve().parents[2]
NBCLIENT = """
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, kernel_name="gem-workbench", resources={"metadata": {"path": sys.argv[2]}}).execute()
"""


# A plugin (-p, on PYTHONPATH: xdist's workers load it too) that appends each notebook's start
# and end, on the wall clock, to the file SPAN_FILE names
SPAN_PLUGIN = """
import os, time
def _note(nodeid):
    with open(os.environ["SPAN_FILE"], "a") as f:
        f.write(f"{time.time()}\\n")
def pytest_runtest_logstart(nodeid, location):
    _note(nodeid)
def pytest_runtest_logfinish(nodeid, location):
    _note(nodeid)
"""


def _seconds(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - t


def _timed(cmd: list[str], folder: Path) -> tuple[float, float, float, float]:
    """Seconds `cmd` took: in all, to its first notebook's start, from there to its last
    notebook's end, and from there to its exit."""
    spans = folder / "spans"
    spans.unlink(missing_ok=True)
    env = {**os.environ, "SPAN_FILE": str(spans), "PYTHONPATH": str(folder)}
    t = time.time()
    subprocess.run([*cmd, "-p", "bench_span"], check=True, capture_output=True, cwd=ROOT, env=env)
    end = time.time()
    times = [float(x) for x in spans.read_text().split()]
    return end - t, min(times) - t, max(times) - min(times), end - max(times)


def bench_notebooks_parallel(sizes: Sizes) -> Figures:
    notebooks = sorted(str(p) for p in (ROOT / "notebooks").glob("*.ipynb"))
    if sizes.docs < 100_000:  # quick: the two shortest, enough to see both workers busy
        notebooks = notebooks[:2]
    # the plugins of our test extra are not in a user's install, so not what a user of
    # `gem-workbench test` pays: hypothesis' imports hypothesis at the end of every session
    # (~1.1 s), pytest-httpserver's and anyio's add ~0.15 s to each process's start
    pytest = [sys.executable, "-m", "pytest", "-q", "--nb"]
    for plugin in ("randomly", "hypothesispytest", "pytest_httpserver", "anyio"):
        pytest += ["-p", f"no:{plugin}"]
    with tempfile.TemporaryDirectory() as cache:
        # a cache of its own: the serial run records each notebook's time, and the parallel run
        # starts the longest first (testing/order.py), as every run after a user's first does
        cached = [*pytest, "-o", f"cache_dir={cache}"]
        (Path(cache) / "bench_span.py").write_text(SPAN_PLUGIN)
        serial, serial_start, serial_span, serial_stop = _timed([*cached, "-n", "0", *notebooks], Path(cache))
        parallel, parallel_start, parallel_span, parallel_stop = _timed(
            [*cached, "-n", "2", *notebooks], Path(cache)
        )
    one = notebooks[0]
    pytest += ["-p", "no:cacheprovider"]
    plugin = min(_seconds([*pytest, one]) for _ in range(2))
    plain = min(_seconds([sys.executable, "-c", NBCLIENT, one, str(Path(one).parent)]) for _ in range(2))
    return {
        "notebooks": len(notebooks),
        "serial_s": serial,
        "parallel_s": parallel,
        "speedup": serial / parallel,
        "serial_start_s": serial_start,
        "serial_span_s": serial_span,
        "serial_stop_s": serial_stop,
        "parallel_start_s": parallel_start,
        "parallel_span_s": parallel_span,
        "parallel_stop_s": parallel_stop,
        "span_speedup": serial_span / parallel_span,
        "plugin_s": plugin,
        "nbclient_s": plain,
        "overhead": plugin / plain,
    }
