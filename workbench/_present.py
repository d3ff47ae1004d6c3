"""Where the Face's objects get their notebook presentation (HTML, widgets).

The Face (Bench, CallResult, bench.email) never imports `workbench.jupyter`: that package sits
above it and owns every widget and HTML view. The Face asks for a presenter by name, and the
presentation package is looked up by its module name when first needed — like pandas'
`plotting.backend` option, which finds matplotlib by name. So the dependency points one way
(jupyter → Face, checked by import-linter), `import workbench` stays light, and a Face method
such as `bench.form(tool)` still works without `%load_ext workbench`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

#: the package that presents the Face's objects; it defines `PRESENTERS: dict[str, callable]`
BACKEND = "workbench.jupyter.present"


def presenter(name: str) -> Callable[..., Any]:
    """The presentation function `name` ("bench_html", "form", ...) of the backend."""
    table: dict[str, Callable[..., Any]] = importlib.import_module(BACKEND).PRESENTERS
    try:
        return table[name]
    except KeyError:
        raise LookupError(
            f"{BACKEND} has no presenter {name!r} (it has: {', '.join(sorted(table))})"
        ) from None
