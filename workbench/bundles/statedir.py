"""A state folder (issue 29): `bench.export_state(DIR)` writes one and `workbench.open(GEM,
state=DIR)` starts a mock bench from it, as the Firebase emulator's --export-on-exit and --import.

The folder is diff-friendly:

    DIR/state.json    {"state": 1, workbench, gem, platform, kv, documents, sql}, indented
    DIR/workspace/    the conversation folder as real files and folders (dot-files included)

Written whole into a temp folder beside DIR, then swapped in; DIR may be missing, empty or an
earlier state folder (one with state.json), never a link or another folder's content. Read
back, it is someone else's: no link, device or FIFO inside, each file within file_bytes, all
within Limits.bundle_bytes and bundle_entries, state.json within case_bytes and the JSON depth
bound; the entries are then put on the bench by ctx/statejson.put_state's checks (E_STATE).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from .._json import MAX_JSON_DEPTH, load_file_json
from .._version import __version__

if TYPE_CHECKING:
    from ..bench.bench import Bench
    from ..platforms import Limits

__all__ = ["STATE_FORMAT", "export_state", "read_state_dir"]

STATE_FORMAT = 1
STATE_FILE = "state.json"
FILES = "workspace"


def _bad(folder: Path, entry: str, why: str, **details: Any) -> WorkbenchError:
    return WorkbenchError("E_STATE", f"{folder}: {entry}: {why}", path=str(folder), entry=entry, **details)


# -- writing -------------------------------------------------------------------------------
def _replaceable(folder: Path) -> bool:
    """Whether `folder` may be replaced: missing, empty, or an earlier state folder."""
    if not folder.exists():
        return True
    if not folder.is_dir():
        return False
    names = set(os.listdir(folder))
    return not names or (STATE_FILE in names and names <= {STATE_FILE, FILES})


def export_state(bench: Bench, folder: str | os.PathLike[str]) -> Path:
    """Write the bench's state as a state folder at `folder` (replacing an earlier one); every
    secret the bench has seen is masked. Returns the folder."""
    from ..bundles.export import _masker, scrubbed, unwritable
    from ..ctx.statejson import dump_state

    target = Path(folder)
    try:  # a name too long, a NUL, a parent that is a file: coded, before the work
        linked, replaceable = target.is_symlink(), _replaceable(target)
    except (OSError, ValueError) as exc:
        raise unwritable(target, exc, "the state folder") from None
    if linked:
        raise _bad(target, "the folder", "is a link: a state folder is not written through one")
    if not replaceable:
        raise _bad(
            target,
            "the folder",
            f"is not a state folder (it has more than {STATE_FILE} and {FILES}/): choose a new or empty folder",
        )
    with bench.core.lock:
        bench.check_open()
        state = scrubbed(bench, dump_state(bench))  # as a pinned case's `before` is
        mask = _masker(bench)
    files = state.pop("files", [])
    head = {
        "state": STATE_FORMAT,
        "workbench": __version__,
        "gem": bench.manifest.id,
        "platform": bench.profile.name,
        **state,
    }
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name[:100]}.", suffix=".tmp"))
    except (OSError, ValueError) as exc:
        raise unwritable(target, exc, "the state folder") from None
    try:
        (tmp / STATE_FILE).write_bytes(
            mask(json.dumps(head, indent=1, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n")
        )
        root = tmp / FILES
        root.mkdir()
        for entry in files:  # the bench's own entries (paths it made): relative, checked on write
            where = root.joinpath(*entry["path"].split("/"))
            if entry["type"] == "folder":
                where.mkdir(parents=True, exist_ok=True)
                continue
            where.parent.mkdir(parents=True, exist_ok=True)
            data = (
                entry["text"].encode("utf-8", "surrogatepass") if "text" in entry else _b64(entry["base64"])
            )
            where.write_bytes(mask(data))
        _swap(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise unwritable(target, exc, "the state folder") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _b64(text: str) -> bytes:
    import base64

    return base64.b64decode(text)


def _swap(new: Path, target: Path) -> None:
    """Put `new` at `target`: the old one renamed aside first, removed after."""
    if not target.exists():
        os.replace(new, target)
        return
    old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name[:100]}.", suffix=".old"))
    os.rmdir(old)
    os.replace(target, old)
    try:
        os.replace(new, target)
    except OSError:
        os.replace(old, target)  # the earlier folder back where it was: nothing lost
        raise
    shutil.rmtree(old, ignore_errors=True)


# -- reading -------------------------------------------------------------------------------
def _read(path: Path, folder: Path, entry: str, limit: int, what: str) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise _bad(folder, entry, f"cannot be read ({exc.strerror}; a link is refused)") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _bad(folder, entry, "is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise _bad(folder, entry, f"is over {what} ({limit:,} bytes)", limit=limit)
    return data


def read_state_dir(folder: str | os.PathLike[str], limits: Limits, *, gem: str) -> dict[str, Any]:
    """The state in `folder` of gem `gem` as ctx/statejson's JSON (files from DIR/workspace/),
    checked."""
    from ..ctx.statejson import content_json

    folder = Path(folder)
    if not folder.is_dir():
        raise _bad(folder, "the folder", "is not a folder (a state folder written by bench.export_state)")
    raw = _read(folder / STATE_FILE, folder, STATE_FILE, limits.case_bytes, "Limits.case_bytes")
    head, why = load_file_json(raw)
    if why is not None:
        raise _bad(folder, STATE_FILE, why)
    if not isinstance(head, dict):
        raise _bad(folder, STATE_FILE, f"is not an object nested at most {MAX_JSON_DEPTH} levels")
    if head.get("state") != STATE_FORMAT:
        raise _bad(
            folder,
            f"{STATE_FILE}: state",
            f"format {str(head.get('state'))[:20]!r}: this workbench reads format {STATE_FORMAT}",
        )
    if head.get("gem") != gem:
        raise _bad(
            folder, f"{STATE_FILE}: gem", f"is the state of gem {str(head.get('gem'))[:60]!r}, not of {gem!r}"
        )
    if "files" in head:
        raise _bad(
            folder, f"{STATE_FILE}: files", f"files live in {FILES}/ as real files, not in {STATE_FILE}"
        )
    state: dict[str, Any] = {k: head.get(k) or {} for k in ("kv", "documents", "sql")}
    # every other part the bench's capabilities declare (the mailbox, the outbox, a plugin's),
    # each checked by its part when put
    state.update(
        {k: v for k, v in head.items() if k not in (*state, "state", "workbench", "gem", "platform")}
    )
    files: list[dict[str, Any]] = []
    root = folder / FILES
    if root.is_symlink():
        raise _bad(folder, FILES, "is a link: the conversation folder is a real folder")
    total = 0
    for dirpath, dirs, names in os.walk(root, followlinks=False) if root.is_dir() else ():
        here = Path(dirpath)
        for name in sorted(dirs + names):
            p = here / name
            rel = p.relative_to(root).as_posix()
            mode = os.lstat(p).st_mode
            if stat.S_ISLNK(mode):
                raise _bad(folder, f"{FILES}/{rel}", "is a link: a state folder holds files and folders only")
            if stat.S_ISDIR(mode):
                files.append({"root": "workspace", "path": rel, "type": "folder"})
            elif stat.S_ISREG(mode):
                data = _read(p, folder, f"{FILES}/{rel}", limits.file_bytes, "the platform's file_bytes")
                total += len(data)
                if total > limits.bundle_bytes:
                    raise _bad(
                        folder,
                        f"{FILES}/{rel}",
                        f"the files are over Limits.bundle_bytes ({limits.bundle_bytes:,})",
                    )
                files.append({"root": "workspace", "path": rel, "type": "file", **content_json(data)})
            else:
                raise _bad(folder, f"{FILES}/{rel}", "is not a file or a folder (a FIFO, socket or device)")
            if len(files) > limits.bundle_entries:
                raise _bad(
                    folder, FILES, f"has more than {limits.bundle_entries:,} entries (Limits.bundle_entries)"
                )
        dirs.sort()
    state["files"] = sorted(files, key=lambda e: e["path"])
    return state
