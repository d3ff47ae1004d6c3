"""Gem Workbench: develop and test sandboxed AI-assistant tools against mock or real ctx.

import workbench
bench = workbench.open("notebooks/gems/notes")
res = bench.call("add_note", {"title": "hi"})
"""

from . import _speedups

_speedups.install()  # before anything imports jsonschema: see _speedups.py

from ._bench import Bench  # noqa: E402
from ._errors import CODES, GemLoadError, UsageError, WorkbenchError  # noqa: E402
from ._open import open  # noqa: E402
from ._result import CallResult  # noqa: E402
from .platforms.base import Limits  # noqa: E402

__version__ = "0.1.0"


def load_ipython_extension(ipython: object) -> None:
    """`%load_ext workbench`: register the magics and displays (imports IPython lazily)."""
    from .jupyter import load_ipython_extension as load

    load(ipython)


__all__ = [
    "Bench",
    "CODES",
    "CallResult",
    "GemLoadError",
    "Limits",
    "UsageError",
    "WorkbenchError",
    "__version__",
    "load_ipython_extension",
    "open",
]
