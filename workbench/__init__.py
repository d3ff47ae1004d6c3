"""Gem Workbench: develop and test sandboxed AI-assistant tools against mock or real ctx.

import workbench
bench = workbench.open("notebooks/gems/notes")
res = bench.call("add_note", {"title": "hi"})
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from . import _plugins, _speedups
from ._errors import CODES, GemLoadError, UsageError, WorkbenchError

_speedups.install()  # before anything imports jsonschema: see _speedups.py


def _platform_rows(profile: _Any) -> list[str]:
    """A platform plugin's problems (ctx/verify.py): its rows name the ctx layer's classes,
    which workbench.platforms, a layer below, may not import; the package puts them together."""
    from .ctx.registry import implementation
    from .ctx.verify import profile_problems

    return profile_problems(profile, implementation)


_plugins.CHECKS["gem_workbench.platforms"] = _platform_rows

if _TYPE_CHECKING:
    from .bench.bench import Bench
    from .bench.core import CallIdentity
    from .bench.open import open
    from .bench.result import CallResult
    from .ctx.hooks import CallHooks
    from .platforms.base import Limits

# Imported on first use (PEP 562): `gem-workbench check` and `import workbench` need not load
# the bench, the ctx layer and the runners (start-up, issue 13)
_LAZY = {
    "Bench": ".bench.bench",
    "open": ".bench.open",
    "CallResult": ".bench.result",
    "Limits": ".platforms.base",
    "CallHooks": ".ctx.hooks",
    "CallIdentity": ".bench.core",
}


def __getattr__(name: str) -> _Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'workbench' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


from ._version import __version__  # noqa: E402 - after the lazy names, as it was


def load_ipython_extension(ipython: object) -> None:
    """`%load_ext workbench`: register the magics and displays (imports IPython lazily)."""
    from .jupyter import load_ipython_extension as load

    load(ipython)


__all__ = [
    "Bench",
    "CODES",
    "CallHooks",
    "CallIdentity",
    "CallResult",
    "GemLoadError",
    "Limits",
    "UsageError",
    "WorkbenchError",
    "__version__",
    "load_ipython_extension",
    "open",
]
