"""The package is type-checked: mypy finds no issue in workbench/."""

import subprocess
import sys
from pathlib import Path


def test_mypy_clean():
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
