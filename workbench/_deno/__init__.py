"""The Deno binary (PyPI `deno`), the flags every workbench run of it takes and the minimal
environment it gets: shared by the sandbox (runners/deno) and the platforms that must run an
integration's module to load it (platforms/ekanos)."""

from __future__ import annotations

import os
from pathlib import Path

# no prompt, no config file, no lock file, no npm:, no remote imports (N4)
DENO_FLAGS = ("--no-prompt", "--no-config", "--no-lock", "--no-npm", "--no-remote")


def deno_bin() -> str:
    from deno import find_deno_bin

    return str(find_deno_bin())


def minimal_env(deno_dir: Path) -> dict[str, str]:
    """A minimal environment: nothing of the user's leaks into the sandbox."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(deno_dir),
        "DENO_DIR": str(deno_dir),
        "NO_COLOR": "1",
        "DENO_NO_UPDATE_CHECK": "1",
    }
