"""A1's plain `async function handle` (agent tools): the seed's sandbox accepts a handle that is
not exported. A module's own functions cannot be imported, so the runner imports a generated
entry module instead: the tool's source plus `export { handle };`, written beside the tool
(`tools/.<name>.wb-entry.js`) so the tool's relative imports keep working. Regenerated when the
tool changes; a tool that exports its handle is imported as it is."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from ..._errors import GemLoadError
from ...gem.folder import regular_fd

MAX_SOURCE_BYTES = 8 * 1024 * 1024  # a tool's source read to look for its handle

_EXPORTED = re.compile(r"\bexport\s+(?:async\s+)?function\s*\*?\s*handle\b|\bexport\s*\{[^}]*\bhandle\b")
_PLAIN = re.compile(r"^[ \t]*(?:async\s+)?function\s*\*?\s*handle\s*\(", re.M)


def entry_file(file: Path, name: str = "handle") -> Path:
    """The module to import for the tool at `file`: itself, or its generated entry;
    GemLoadError when `file` is not a regular file."""
    got = regular_fd(file)  # never a read that waits: a FIFO swapped in is refused
    if isinstance(got, str):
        raise GemLoadError(f"tool file {file.name} {got}", file=str(file))
    try:
        with os.fdopen(got, "rb") as f:
            source = f.read(MAX_SOURCE_BYTES + 1).decode("utf-8", "replace")
    except OSError:
        return file  # the import reports it
    if len(source) > MAX_SOURCE_BYTES or _EXPORTED.search(source) or not _PLAIN.search(source):
        return file
    target = file.with_name(f".{file.stem}.wb-entry{file.suffix}")
    text = f"{source}\n;export {{ {name} }};\n"
    try:
        if target.read_text("utf-8") == text:
            return target
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(prefix=f".{file.stem}.", suffix=".tmp", dir=file.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, target)  # atomic: a concurrent import sees the old or the new module
    return target
