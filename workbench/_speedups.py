"""Start-up: what `import workbench` arranges so the first `open()` and every CLI command stay
under half a second (issue 13; README "Start-up").

jsonschema, which the workbench needs to check manifests and inputs, imports every optional
format-checking library it finds when it is first imported. In a Jupyter environment (which
installs jsonschema's format extras) one of them, `rfc3987_syntax`, compiles a Lark grammar at
import: about 2 s on this machine class; the others add ~0.1 s. The workbench never checks
formats (no platform's schema rules assert them: `format` is an annotation). So while
jsonschema's format module is being imported, those imports fail as if the packages were
absent, and jsonschema leaves those formats unchecked, as it does when they are not installed.
Nothing else is affected: imported anywhere else (or before the workbench), they load as usual.
"""

from __future__ import annotations

import importlib.abc
import sys
from typing import Any

# jsonschema/_format.py's optional imports (not idna: the workbench uses it itself)
_FORMAT_LIBS = frozenset(
    {"rfc3987_syntax", "rfc3987", "rfc3986_validator", "rfc3339_validator", "fqdn", "webcolors",
     "jsonpointer", "uri_template", "isoduration"}
)  # fmt: skip


class SkipSlowFormats(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name in _FORMAT_LIBS:
            fmt = sys.modules.get("jsonschema._format")
            if fmt is not None and getattr(getattr(fmt, "__spec__", None), "_initializing", False):
                raise ImportError(f"{name}: skipped while jsonschema loads (see workbench._speedups)")
        return None


def install() -> None:
    """Once per process, and only if jsonschema is not loaded yet (then it is too late anyway)."""
    if "jsonschema" not in sys.modules and not any(isinstance(f, SkipSlowFormats) for f in sys.meta_path):
        sys.meta_path.insert(0, SkipSlowFormats())
