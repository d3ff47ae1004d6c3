"""Debugging a tool call (issue 46). From the notebook: `bench.debug(...)` pauses a call at ctx
breakpoints and lets the next cells drive it (session.py, ctxbreak.py, view.py). From VS Code
or Chrome: `open(inspect=)` runs Deno's inspector behind a relay (inspector.py, proxy.py,
frames.py); a Chrome DevTools Protocol client (cdp.py), source maps read both ways
(sourcemap.py). From JupyterLab's debugger panel: the kernel's debugger (kernel.py) speaks DAP
to the Worker over CDP (dap.py, dapframes.py) and to ctx breakpoints (dapctx.py).
docs/debugging.md.

Names are imported when first used (PEP 562): the kernel's debugger (kernel.py) is loaded at
every kernel start, and needs none of the modules behind them until the panel asks."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cdp import CDPError, Connection, WorkerSession, targets
    from .ctxbreak import Breakpoints, SourceLine, ctx_methods, parse_break_at
    from .inspector import Inspector, launch_json, print_addresses
    from .session import DebugSession, FrameBackend, NoInspector, Pause, start
    from .sourcemap import Position, SourceMap, SourceMapError


__all__ = [
    "Breakpoints",
    "CDPError",
    "Connection",
    "DebugSession",
    "FrameBackend",
    "Inspector",
    "NoInspector",
    "Pause",
    "Position",
    "SourceLine",
    "SourceMap",
    "SourceMapError",
    "WorkerSession",
    "ctx_methods",
    "launch_json",
    "parse_break_at",
    "print_addresses",
    "start",
    "targets",
]

_WHERE = {
    "Breakpoints": "ctxbreak",
    "CDPError": "cdp",
    "Connection": "cdp",
    "DebugSession": "session",
    "FrameBackend": "session",
    "Inspector": "inspector",
    "NoInspector": "session",
    "Pause": "session",
    "Position": "sourcemap",
    "SourceLine": "ctxbreak",
    "SourceMap": "sourcemap",
    "SourceMapError": "sourcemap",
    "WorkerSession": "cdp",
    "ctx_methods": "ctxbreak",
    "launch_json": "inspector",
    "parse_break_at": "ctxbreak",
    "print_addresses": "inspector",
    "start": "session",
    "targets": "cdp",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
