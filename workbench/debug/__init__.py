"""Debugging JS/TS tools (issue 46): Deno's inspector behind a relay (inspector.py, proxy.py,
frames.py), a Chrome DevTools Protocol client (cdp.py), source maps read both ways
(sourcemap.py); `bench.debug(...)` pauses a call at ctx breakpoints and lets the next cells
drive it (session.py, ctxbreak.py, view.py). docs/debugging.md."""

from __future__ import annotations

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
