"""Notebook suites in parallel (issue 14 item 5): the tutorials under `gem-workbench test -n 2`
(pytest-xdist, longest first by the serial run's times) against `-n 0`, and what the pytest
plugin adds to one notebook against plain nbclient execution of it on the same kernel, each in
fresh processes.

The two modes alternate over a few rounds (the VMs' speed drifts by tens of percent within
minutes); the ratio is the median of the rounds' ratios, each mode's time its median, and each
mode's CPU time (of the pytest processes, kernels and sandboxes it waited for) shows how many
CPUs it kept busy: a serial run that keeps more than one busy caps what two workers can gain.
"""

from __future__ import annotations

import os
import resource
import statistics
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


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(cmd: list[str], folder: Path) -> dict[str, float]:
    """Seconds `cmd` took: in all, to its first notebook's start, from there to its last
    notebook's end, from there to its exit; and the CPU seconds of the processes it waited for."""
    spans = folder / "spans"
    spans.unlink(missing_ok=True)
    env = {**os.environ, "SPAN_FILE": str(spans), "PYTHONPATH": str(folder)}
    cpu = _children_cpu()
    t = time.time()
    subprocess.run([*cmd, "-p", "bench_span"], check=True, capture_output=True, cwd=ROOT, env=env)
    end = time.time()
    times = [float(x) for x in spans.read_text().split()]
    return {
        "s": end - t,
        "start_s": min(times) - t,
        "span_s": max(times) - min(times),
        "stop_s": end - max(times),
        "cpu_s": _children_cpu() - cpu,
    }


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
    rounds = 3 if sizes.docs >= 100_000 else 1
    runs: dict[str, list[dict[str, float]]] = {"serial": [], "parallel": []}
    with tempfile.TemporaryDirectory() as cache:
        # a cache of its own: the serial run records each notebook's time, and the parallel run
        # starts the longest first (testing/order.py), as every run after a user's first does
        cached = [*pytest, "-o", f"cache_dir={cache}"]
        (Path(cache) / "bench_span.py").write_text(SPAN_PLUGIN)
        for i in range(rounds):  # serial first in the first round: it fills the cache
            for mode in ("serial", "parallel") if i % 2 == 0 else ("parallel", "serial"):
                workers = "0" if mode == "serial" else "2"
                runs[mode].append(_timed([*cached, "-n", workers, *notebooks], Path(cache)))
    ratios = [s["s"] / p["s"] for s, p in zip(runs["serial"], runs["parallel"])]
    figures: Figures = {
        "notebooks": len(notebooks),
        "rounds": rounds,
        "speedup": statistics.median(ratios),
        "speedup_min": min(ratios),
        "speedup_max": max(ratios),
    }
    for mode, timed in runs.items():
        for key in timed[0]:
            figures[f"{mode}_{key}"] = statistics.median(t[key] for t in timed)
    figures["span_speedup"] = figures["serial_span_s"] / figures["parallel_span_s"]
    one = notebooks[0]
    pytest += ["-p", "no:cacheprovider"]
    tries = 1 if sizes.smoke else 2
    plugin = min(_seconds([*pytest, one]) for _ in range(tries))
    plain = min(_seconds([sys.executable, "-c", NBCLIENT, one, str(Path(one).parent)]) for _ in range(tries))
    figures.update(plugin_s=plugin, nbclient_s=plain, overhead=plugin / plain)
    return figures
