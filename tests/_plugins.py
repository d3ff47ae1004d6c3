"""Plugin packages under tests/plugins/, installed by pip offline into a folder of their own,
and code run in a fresh Python that sees them (tests/test_plugin_platform.py,
tests/test_plugin_capability.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).parent.parent
PLUGINS = Path(__file__).parent / "plugins"


def install(name: str, tmp: Path) -> Path:
    """tests/plugins/<name> installed into a new folder under `tmp`; that folder. The build
    runs in a copy (with the shared in-tree backend, tests/plugins/_backend), so the source
    tree stays clean; the backend needs nothing but pip."""
    target, src = tmp / f"site-{name}", tmp / f"src-{name}"
    shutil.copytree(PLUGINS / name, src, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(PLUGINS / "_backend", src / "_backend", ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index"]
        + ["--disable-pip-version-check", "--target", str(target), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (target / name / "__init__.py").is_file()
    return target


def run(code: str, *paths: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh Python whose path has `paths` and this checkout's workbench."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([*map(str, paths), str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "GEM_WORKBENCH_HOME": str(cwd / "home"),
    }
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def fake_dist(site: Path, group: str, name: str, entry: str, module: str) -> None:
    """A hand-made installed distribution in `site`: `module` as <name>.py and a dist-info
    registering one entry point (`entry`: "name = module:attr") in `group`."""
    info = site / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entry}\n", encoding="utf-8")
    (site / f"{name}.py").write_text(textwrap.dedent(module), encoding="utf-8")
