"""The tests' own measure of load (tests/_load.py): a budget scaled by `slowdown()` asks a loaded
machine for the work it asks of an idle one, so a timing-sensitive test passes beside CPU hogs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# one CPU shared with a spinning process: the scheduler gives this process about half of it
SHARED = """
import os, subprocess, sys
sys.path.insert(0, sys.argv[1])
os.sched_setaffinity(0, {int(sys.argv[2])})
from _load import slowdown
hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])  # inherits the one CPU
try:
    shared = min(slowdown() for _ in range(3))
finally:
    hog.kill()
    hog.wait()
print(shared)
"""


def test_slowdown_sees_the_share_of_a_cpu_another_process_takes() -> None:
    cpu = min(os.sched_getaffinity(0))
    out = subprocess.run(
        [sys.executable, "-c", SHARED, str(TESTS), str(cpu)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    # pinned beside a spinner it gets at most about half the CPU: twice its CPU time or more
    # (more where other work shares that CPU too); the best of three looks, for a margin
    assert float(out.stdout) >= 1.6, out.stdout
