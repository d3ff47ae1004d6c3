"""The package is type-checked: mypy finds no issue in workbench/."""

import subprocess
import sys
from pathlib import Path


def test_mypy_clean(mypy_cache):
    root = Path(__file__).resolve().parent.parent
    # a whole check (no cache read), whose cache the session's other mypy runs then read
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", mypy_cache("plain")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
