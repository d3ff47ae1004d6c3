"""Testing tools: run notebooks on the Gem Workbench kernel, replay pinned calls; the pytest
plugin (`plugin`).

from workbench.testing import replay_case, run_notebook
run_notebook("notebooks/01-quickstart.ipynb", timeout=60)   # raises NotebookFailure
replay_case("notebooks/gems/notes/tests/calls/add_note/first.json").ok   # docs/pins.md
"""

from __future__ import annotations

from typing import Any

from .notebook import NotebookFailure, run_notebook, strip_ansi

__all__ = ["NotebookFailure", "Replay", "Replayer", "replay_case", "run_notebook", "strip_ansi"]


def __getattr__(name: str) -> Any:
    # the replay needs the ctx layer: imported when asked for, not by every pytest start (the
    # plugin imports this package)
    if name in ("Replay", "Replayer", "replay_case"):
        from ..pins import replay as _pinreplay

        return getattr(_pinreplay, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
