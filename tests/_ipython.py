"""The one in-process IPython shell the magics tests share, with the workbench extension
loaded (IPython keeps one InteractiveShell per process: the first caller's folder is its home)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def workbench_shell(ipython_dir: Path) -> Any:
    """The process's InteractiveShell (made with history in memory and `ipython_dir` if none
    is yet), after `%load_ext workbench`."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    if InteractiveShell.initialized():
        sh = InteractiveShell.instance()
    else:
        cfg = Config()
        cfg.HistoryManager.hist_file = ":memory:"
        sh = InteractiveShell.instance(config=cfg, ipython_dir=str(ipython_dir))
    sh.run_line_magic("load_ext", "workbench")
    return sh
