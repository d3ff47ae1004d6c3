"""Type declarations of each platform's ctx for tool authors, generated from the registries.

`notochord.d.ts`, `agent.d.ts`, `ekanos.d.ts` (TypeScript; `ekanos.d.ts` declares the
`@ekanos/sdk` modules) and `notochord.py`, `agent.py`, `ekanos.py` (Protocol classes for Python
tools). `python -m workbench.types` regenerates them; tests/test_types.py checks they match.
`gem_files(manifest)` is what a gem's `.gem-workbench/` folder holds (the scaffold writes it,
`check --typecheck` maps it onto fresh copies; `refresh(manifest)` keeps it current: open,
reload, `check` and `gem-workbench types`); a plugin platform's `.d.ts` is rendered there
from its registry rows and its profile's `Declarations` (docs/platforms.md).
"""

from __future__ import annotations

from ._gem import FOLDER, declarations, gem_files
from ._refresh import Refresh, TypesWarning, refresh, refresh_quietly

__all__ = ["FOLDER", "Refresh", "TypesWarning", "declarations", "gem_files", "refresh", "refresh_quietly"]
