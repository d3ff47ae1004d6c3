"""The edit loop (issue 13): an open bench notices its gem's definition was edited —
manifest.json (or an Ekanos integration's module) — and loads it again before the next call,
checked as `workbench.open` checks it; a definition that no longer loads fails that call with
its E_MANIFEST (file and pointer), and `bench.reload()` does the same on demand. What reloading
cannot change in place (another platform) asks to reopen the gem."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .._errors import GemLoadError
from ..gem.folder import DEFINITIONS, realpath, tool_open_problem

if TYPE_CHECKING:
    from ..gem import Manifest, ToolSpec
    from .bench import Bench


def definition_files(manifest: Manifest) -> tuple[str, ...]:
    """The definition files the gem has now (as strings: the check runs before every call)."""
    return tuple(str(manifest.root / n) for n in DEFINITIONS if os.path.lexists(manifest.root / n))


def stamp(files: tuple[str, ...]) -> tuple[int, ...]:
    """Their modification times (-1: gone), cheap enough to take before each call."""
    out = []
    for name in files:
        try:
            out.append(os.stat(name).st_mtime_ns)
        except OSError:
            out.append(-1)
    return tuple(out)


def tool_file_error(manifest: Manifest, tool: ToolSpec) -> GemLoadError | None:
    """E_MANIFEST naming the tool's file when it is no longer a regular file, checked before
    each call: a file swapped for a FIFO would block the import that reads it (the call then
    hung past its timeout), a folder or device fails it with a traceback. Opened, never read."""
    why = tool_open_problem(realpath(tool.file), tool.rel_file)
    if why is None:
        return None
    index = next(
        (
            i
            for i, t in enumerate(manifest.raw.get("tools") or ())
            if isinstance(t, dict) and t.get("name") == tool.name and "file" in t
        ),
        None,
    )
    return GemLoadError(
        why,
        file=str(tool.file),
        pointer=f"/tools/{index}/file" if index is not None else "",
    )


def reload(bench: Bench) -> None:
    """Load the gem's definition again into `bench` (GemLoadError when it no longer loads)."""
    from ..ctx import prepare
    from ..platforms import detect

    profile = detect(bench.manifest.root)
    if profile is not bench.profile:
        raise GemLoadError(
            f"the gem's platform changed ({bench.profile.name} → {profile.name}): open it again "
            "with workbench.open(...) to run it under the other platform's rules",
            file=str(bench.manifest.root),
        )
    files = definition_files(bench.manifest)
    at = stamp(files)
    manifest = profile.load(bench.manifest.root)
    old = bench.manifest
    profile.closed(old)
    try:
        profile.opened(manifest)  # K4: its names may collide now
    except GemLoadError:
        profile.opened(old)
        raise
    prepare(bench.providers, manifest, bench.limits)  # new collections; db/schema.sql if first
    bench.manifest = manifest
    bench.core.loaded(files, at)
    from ..types import refresh_quietly

    refresh_quietly(manifest)  # the editor's types follow the definition
