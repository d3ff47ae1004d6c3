"""File history of the conversation folder (F5, F8): old versions kept so a rollback can restore.

Kept in the bench's data store, next to the gem's storage but never visible to the gem. A copy
larger than the history cap (100 MB) is not kept; its entry says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from ..providers.base import LinkInPath
from ..providers.datastore import VERSION_COLUMNS, Version
from .limits import DEFAULT

if TYPE_CHECKING:
    from ..providers.base import FileStore
    from ..providers.datastore import DataStore
    from ._session import CallSession
    from .paths import GemPath

MAX_HISTORY_BYTES = DEFAULT.history_bytes
#: the fields of one saved version, as `versions` gives them (bench.history()'s columns)
COLUMNS = VERSION_COLUMNS


def versions(store: DataStore, path: str | None = None) -> list[dict[str, Any]]:
    """Every saved version (of the conversation file `path`, "workspace:" prefix or not),
    oldest first, each a dict of COLUMNS; `kept` False: its copy was over the history cap."""
    return store.history_versions(path.removeprefix("workspace:") if path else None)


def _files_under(store: FileStore, root: str, rel: str) -> list[tuple[str, int]]:
    """(path, size) of every file at or below rel; symlinks are not followed, and dot-entries
    (which do not exist for the gem, F10) are never copied into history (SEC3)."""
    out, todo = [], [(rel, store.entry(root, rel))]
    while todo:  # iterative: a deep tree cannot exhaust the stack
        path, e = todo.pop()
        if e is None or e.type == "link" or path.rsplit("/", 1)[-1].startswith("."):
            continue
        if e.type == "file":
            out.append((path, e.size))
        else:
            todo += [(f"{path}/{c.name}" if path else c.name, c) for c in reversed(store.list(root, path))]
    return out


def record(
    data: DataStore,
    store: FileStore,
    rel: str,
    *,
    reason: str,
    call_id: str | None,
    limit: int = MAX_HISTORY_BYTES,
    now: Callable[[], float] = time.time,
) -> None:
    """Save the current version(s) of a workspace path (file or folder) into history, dated
    `now()` (the bench's clock)."""
    files = _files_under(store, "workspace", rel)
    keep = sum(size for _, size in files) <= limit
    at = int(now() * 1000)
    data.history_save(
        Version(path, reason, call_id, at, size, store.read("workspace", path) if keep else None)
        for path, size in files
    )


def save(session: CallSession, p: GemPath, *, reason: str) -> None:
    session.flush()
    record(
        session.providers.store,
        session.providers.files,
        p.rel,
        reason=reason,
        call_id=session.call_id,
        limit=session.limits.history_bytes,
        now=session.providers.now,
    )


def restore(
    data: DataStore, store: FileStore, path: str, version: int | None, *, limit: int = MAX_HISTORY_BYTES
) -> int:
    """Put a saved version back (the current one goes to history first); returns its version."""
    path = path.removeprefix("workspace:")
    saved = data.history_load(path, version)
    if saved is None:
        raise WorkbenchError(
            "E_NOT_FOUND",
            f"no saved version of workspace:{path}"
            + (f" with version {version}" if version is not None else ""),
            path=path,
        )
    number, content = saved
    if content is None:
        raise WorkbenchError(
            "E_TOO_LARGE",
            f"version {number} of workspace:{path} was over "
            f"the history cap ({limit:,} bytes) and was not kept",
            path=path,
        )
    try:
        current = store.entry("workspace", path)
        if current is not None and current.type == "folder":
            raise WorkbenchError(
                "E_IS_A_FOLDER",
                f"workspace:{path} is now a folder; move it away before restoring the file",
                path=path,
            )
        if current is not None and current.type == "file":
            record(data, store, path, reason="restore", call_id=None, limit=limit)
        store.write("workspace", path, content)  # atomic: the old file or the saved one
    except LinkInPath as exc:  # SEC2: a saved path holds no link; one there now is never followed
        raise WorkbenchError(
            "E_PATH",
            f"workspace:{path}: '{exc.filename}' is a symbolic link now, and a link on a saved "
            "path is never followed; nothing was restored (the saved version is kept)",
            path=path,
            link=exc.filename,
        ) from None
    return number
