"""Runners turn (tool, input, ctx layer) into an outcome; they know nothing of storage.

One runner per kind and bench (`RUNNERS[kind](setup)`): the Python runner keeps the bench's
imported tool modules (N5), the Deno runner the gem's one sandbox process (N3), so two benches
of one gem share nothing. `RUNNER_FOR[language]` names the kind that runs a language.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .python import Outcome

if TYPE_CHECKING:
    from ..ctx import Capabilities
    from ..gem import ToolSpec


@dataclass(frozen=True)
class Setup:
    """What a bench tells its runners: the gem folder, where a runner may keep state (the
    Deno cache), and its options (SandboxOptions for Deno)."""

    gem_root: Path
    state_dir: Path
    options: Any = None
    readable: tuple[Path, ...] = field(default=())  # more folders the sandbox may read (R4)


class Runner(Protocol):
    """Runs one kind of tool for one bench."""

    def call(
        self, tool: ToolSpec, args: Any, caps: Capabilities, *, fresh: bool, mtime: int | None = None
    ) -> Outcome:
        """Run one call; ctx calls go to `caps`; `fresh`: a new module instance (N5); `mtime`:
        the tool file's st_mtime_ns as the bench checked it just before (None: look)."""

    def warm(self) -> None:
        """Get ready for the first call in the background (start a process); may do nothing."""

    def crash(self) -> str:
        """N7: die with the call in flight, as a crash would; return the output it had."""

    def stop(self) -> None:
        """Release what the runner holds (processes, modules); the next call starts anew."""


def _python(setup: Setup) -> Runner:
    from .python import PythonRunner

    return PythonRunner()


def _deno(setup: Setup) -> Runner:
    from .deno import DenoRunner

    return DenoRunner(setup)


RUNNERS: dict[str, Callable[[Setup], Runner]] = {"python": _python, "deno": _deno}
RUNNER_FOR: dict[str, str] = {"python": "python", "javascript": "deno", "typescript": "deno"}

__all__ = ["RUNNERS", "RUNNER_FOR", "Outcome", "Runner", "Setup"]
