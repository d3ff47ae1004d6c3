"""`gem-workbench test [PATH …]`: notebooks, a gem's pinned calls and an integration's
*.test.ts run as tests, by pytest in a process of its own (its exit code)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ._table import OpenFlags, register


def add(sub: Any, flags: OpenFlags) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "test",
        help="run notebooks as tests on fresh Gem Workbench kernels, a gem's pinned calls "
        "(tests/calls/**.json) and saved conversations (tests/conversations/*.json) on fresh "
        "mock benches, and an Ekanos integration's "
        "tests/*.test.ts with deno test (exit code of pytest); after `--`, arguments for pytest",
    )
    p.add_argument(
        "notebooks",
        nargs="*",
        metavar="PATH",
        help="notebooks, folders (a gem folder: its pinned calls and saved conversations too), or "
        "integration folders / "
        "*.test.ts files (default: notebooks/*.ipynb)",
    )
    p.add_argument(
        "--update-pins",
        action="store_true",
        help="write each pinned call that replays otherwise again from its replay (the new "
        "result, changes and effects become the expected ones); the cases rewritten are listed",
    )
    p.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="per-cell timeout, per file for TS tests (default: ini nb_timeout, 120; 0: none)",
    )
    p.add_argument("--kernel", metavar="NAME", help="kernel to run on (default: gem-workbench)")
    p.add_argument(
        "-n",
        "--workers",
        metavar="N",
        help="run notebooks in N processes at once (pytest-xdist; 'auto': one per CPU)",
    )
    return p


def run(args: argparse.Namespace) -> int:
    import subprocess

    notebooks = args.notebooks or sorted(str(p) for p in Path("notebooks").glob("*.ipynb"))
    if not notebooks:
        print("error: no notebooks given and none in notebooks/", file=sys.stderr)
        return 5  # pytest's "no tests collected"
    argv = [*notebooks, "--nb"]
    if args.timeout is not None:
        argv.append(f"--nb-timeout={args.timeout}")
    if args.kernel:
        argv.append(f"--nb-kernel={args.kernel}")
    if args.update_pins:
        argv.append("--update-pins")
    if args.workers:  # pytest-xdist: each notebook already has its own kernel and state
        argv += ["-n", args.workers]
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        # Otherwise the entry point loads it; loading it twice under two names is an error.
        argv += ["-p", "workbench.testing.plugin"]
    # A separate process: pytest must import `workbench` itself (it rewrites the asserts of a
    # plugin's package, and warns when that package is already imported, as it is here).
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *argv, *args.extra])
    try:
        return proc.wait()
    except KeyboardInterrupt:  # pytest got the same SIGINT: let it report and stop
        return proc.wait()


register("test", add, run)
