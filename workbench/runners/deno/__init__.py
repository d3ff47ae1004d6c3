"""JS/TS tools in a real Deno sandbox (N1–N5): one process per gem, ctx bridged to Python."""

from .sandbox import Sandbox, SandboxOptions, typecheck

__all__ = ["Sandbox", "SandboxOptions", "typecheck"]
