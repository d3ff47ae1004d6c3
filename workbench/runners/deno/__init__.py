"""JS/TS tools in a real Deno sandbox (N1–N5): one process per gem, ctx bridged to Python."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from ..._errors import GemLoadError
from ..python import Outcome
from .entry import entry_file
from .sandbox import Sandbox, SandboxOptions
from .typecheck import typecheck

if TYPE_CHECKING:
    from ...ctx import Capabilities
    from ...gem import ToolSpec
    from .. import Setup


class DenoRunner:
    """The Deno runner of one bench: the gem's sandbox process, started on first use (N3)."""

    def __init__(self, setup: Setup) -> None:
        options = setup.options or SandboxOptions()
        if setup.readable:  # e.g. R4: the gem's resource cache, read-only
            options = dataclasses.replace(options, readable=(*options.readable, *setup.readable))
        self.sandbox = Sandbox(setup.gem_root, deno_dir=setup.state_dir / "deno", options=options)

    def call(
        self, tool: ToolSpec, args: Any, caps: Capabilities, *, fresh: bool, mtime: int | None = None
    ) -> Outcome:
        entry = caps.session.profile.entry
        try:
            file = entry_file(tool.file, entry.js_exports[0]) if entry.js_plain else tool.file
        except GemLoadError as exc:  # swapped for a FIFO since the bench's check of it
            return Outcome(error=exc)
        # the bench's mtime of the tool file, when that is the file the Worker imports
        return self.sandbox.call(file, args, caps, fresh=fresh, mtime=mtime if file is tool.file else None)

    def warm(self) -> None:
        """Start the sandbox in the background (the gem has JS/TS tools)."""
        self.sandbox.warm()

    def crash(self) -> str:
        return self.sandbox.stop()  # kill -9: the process dies with the call in flight

    def stop(self) -> None:
        self.sandbox.stop()


__all__ = ["DenoRunner", "Sandbox", "SandboxOptions", "typecheck"]
