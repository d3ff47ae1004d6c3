"""Debugging a tool call from the notebook (issue 46): `bench.debug(...)` pauses a call at ctx
breakpoints and lets the next cells drive it (session.py); breakpoint names (ctxbreak.py); its
HTML (view.py). Source-line debugging plugs in as a `FrameBackend` (the V8 inspector)."""

from .ctxbreak import Breakpoints, SourceLine, ctx_methods, parse_break_at
from .session import DebugSession, FrameBackend, NoInspector, Pause, start

__all__ = [
    "Breakpoints",
    "DebugSession",
    "FrameBackend",
    "NoInspector",
    "Pause",
    "SourceLine",
    "ctx_methods",
    "parse_break_at",
    "start",
]
