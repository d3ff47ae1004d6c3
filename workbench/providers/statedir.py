"""A state folder says which gem it belongs to (D3): `gem.json` in it, `{"id", "platform"}`,
written once when a bench on real state first uses the folder.

Opening another gem on it is E_STATE naming both, before anything in it is read, written or
pruned: `gem-workbench call --state DIR` or `open(state_dir=…)` of gem B on gem A's folder read
A's kv, SQL and files before. A folder from before the record (no `gem.json`) is adopted: the
first gem opened on it is recorded as its owner.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path

from .._errors import WorkbenchError
from .folder import read_regular

MARKER = "gem.json"
MAX_MARKER_BYTES = 64 * 1024


def _describe(record: dict[str, str]) -> str:
    return f"gem {record['id']!r} (platform {record['platform']})"


def make_state_dir(state: Path) -> None:
    """Create the state folder; E_STATE (not a traceback) when it cannot be one: a file, a
    symlink loop, a folder we may not write in."""
    try:
        state.mkdir(parents=True, exist_ok=True)
        if not state.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(state))
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        code = getattr(exc, "errno", None)
        if code == errno.ELOOP or (os.path.islink(state) and not os.path.exists(state)):
            why = "a symbolic link loop, or a link that leads nowhere"
        elif isinstance(exc, FileExistsError) or code == errno.ENOTDIR:
            why = "it, or a folder on its path, is a file"
        raise WorkbenchError(
            "E_STATE",
            f"the state folder {state} cannot be used: {why}; give another state_dir=",
            path=str(state),
        ) from None


def claim(state: Path, gem_id: str, platform: str) -> None:
    """Record the gem as the owner of `state`, or check that it is; E_STATE when another gem
    owns it or its record cannot be read. Race-free: the record is linked into place, so of
    two benches creating it at once one finds the other's."""
    me = {"id": gem_id, "platform": platform}
    marker = state / MARKER
    if not os.path.lexists(marker):
        fd, tmp = tempfile.mkstemp(dir=state, prefix=".gem.json.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(me, f)
            os.link(tmp, marker)  # exclusive, and the record appears whole
            return
        except FileExistsError:
            pass  # another bench recorded its gem first: checked below
        except OSError as exc:
            raise WorkbenchError(
                "E_STATE", f"the state folder {state} cannot record its gem: {exc.strerror}", path=str(state)
            ) from None
        finally:
            os.unlink(tmp)
    owner = _read(marker)
    if owner != me:
        raise WorkbenchError(
            "E_STATE",
            f"the state folder {state} belongs to {_describe(owner)}, not to {_describe(me)}: its "
            "storage, SQL and files are that gem's. Open this gem with another state_dir= (or "
            f"--state), or remove {MARKER} there once that gem's state is no longer wanted",
            path=str(state),
            owner=owner,
            gem=me,
        )


def _read(marker: Path) -> dict[str, str]:
    try:
        data = read_regular(marker)
        if len(data) > MAX_MARKER_BYTES:
            raise ValueError(f"over {MAX_MARKER_BYTES:,} bytes")
        record = json.loads(data.decode("utf-8"))
        if not (
            isinstance(record, dict)
            and set(record) >= {"id", "platform"}
            and all(isinstance(record[k], str) for k in ("id", "platform"))
        ):
            raise ValueError('not {"id": …, "platform": …}')
    except (OSError, ValueError, RecursionError) as exc:
        raise WorkbenchError(
            "E_STATE",
            f"{marker} (which gem the state folder belongs to) cannot be read: {exc}; move the "
            "folder away or open with another state_dir=",
            path=str(marker),
        ) from None
    return {"id": record["id"], "platform": record["platform"]}
