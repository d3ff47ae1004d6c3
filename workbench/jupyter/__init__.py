"""The IPython extension: magics, rich display of results and benches, forms from schemas.

    %load_ext workbench          (the Gem Workbench kernel preloads it)

Kept light on purpose: the kernel imports this at start, so IPython's magic machinery is
imported only by `load_ipython_extension`, and ipywidgets / pandas only by the features that
draw widgets or tables.
"""

from __future__ import annotations

from typing import Any


def load_ipython_extension(ipython: Any) -> None:
    """Register `%gem`, `%tool`/`%%tool` and `%state`, and one-line reports of magic errors."""
    from .magics import register

    register(ipython)


__all__ = ["load_ipython_extension"]
