"""K4 across integrations: two integrations open in one process (one emulated platform) may
not share an effective tool name; the second is rejected, naming both. Re-opening the same
folder is not a collision (a notebook cell run again), and a bench that was dropped without
`close()` stops counting once it is collected (the registry holds weak references)."""

from __future__ import annotations

import threading
import weakref
from pathlib import Path

from ..._errors import GemLoadError
from ...gem.model import Manifest

_lock = threading.Lock()
# id(manifest) -> (the manifest, weakly), its root, slug and effective names
_open: dict[int, tuple[weakref.ref[Manifest], Path, str, frozenset[str]]] = {}


def names(manifest: Manifest) -> frozenset[str]:
    """The integration's effective tool names (K4)."""
    return frozenset(t["effectiveName"] for t in manifest.raw["tools"])


def claim(manifest: Manifest) -> None:
    """Register an opened integration; GemLoadError when another open one (another folder)
    has one of its effective names."""
    mine = names(manifest)
    with _lock:
        for key in [k for k, v in _open.items() if v[0]() is None]:
            del _open[key]
        for _, root, slug, theirs in _open.values():
            both = sorted(mine & theirs)
            if both and root != manifest.root:
                raise GemLoadError(
                    f"integration {manifest.id!r} ({manifest.root}) and the open integration "
                    f"{slug!r} ({root}) both have the tool {both[0]!r}"
                    + (f" (and {len(both) - 1} more)" if len(both) > 1 else "")
                    + "; the platform rejects the collision (K4): close the other bench or rename",
                    file=str(manifest.root),
                    pointer="tools",
                    collides_with=str(root),
                    names=both,
                )
        _open[id(manifest)] = (weakref.ref(manifest), manifest.root, manifest.id, mine)


def release(manifest: Manifest) -> None:
    with _lock:
        _open.pop(id(manifest), None)
