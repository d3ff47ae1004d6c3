"""Debugging JS/TS tools: Deno's inspector behind a relay (inspector.py, proxy.py, frames.py),
a Chrome DevTools Protocol client (cdp.py) and source maps read both ways (sourcemap.py).
docs/debugging.md."""

from __future__ import annotations

from .cdp import CDPError, Connection, WorkerSession, targets
from .inspector import Inspector, launch_json, print_addresses
from .sourcemap import Position, SourceMap, SourceMapError

__all__ = [
    "CDPError",
    "Connection",
    "Inspector",
    "Position",
    "SourceMap",
    "SourceMapError",
    "WorkerSession",
    "launch_json",
    "print_addresses",
    "targets",
]
