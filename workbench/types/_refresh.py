"""Keeping a gem's `.gem-workbench/` current (issue 28): the editor's types are remade when the
gem's definition or the installed workbench changed since they were written.

`.gem-workbench/.stamp.json` records what the folder was made from: the workbench's version, a
hash of the gem's definition files (manifest.json, integration.ts, db/schema.sql) and of the
platform's shipped declarations, and the files it wrote. Opening a bench, reloading it and
`gem-workbench check` compare the stamp (a few small reads and a hash; nothing is generated
when it matches); `gem-workbench types` also makes a missing folder.

The gem folder is someone else's: every write goes through a handle of `.gem-workbench/`
opened without following links (a link there is left alone, nothing is written through it),
each file lands by rename from a temporary file beside it (a crash leaves the old file), and
only files the stamp lists are ever removed.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from .._json import load_file_json
from ..gem.folder import DEFINITIONS, MAX_TOOL_BYTES
from ._gem import FOLDER, _platform_dts, declarations, gem_files

if TYPE_CHECKING:
    from ..gem import Manifest

STAMP = ".stamp.json"
STAMP_BYTES = 64 * 1024  # a stamp lists a handful of names; a bigger one is not ours
STAMP_DEPTH = 8  # it nests 3 levels; a deeper one is not ours either
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)

State = Literal["current", "refreshed", "created", "absent", "skipped"]


class TypesWarning(UserWarning):
    """`.gem-workbench/` could not be refreshed (a link, a read-only folder); the bench opens."""


@dataclass(frozen=True)
class Refresh:
    """What `refresh` did: `state`, the files written, left as they were and removed (names
    inside `.gem-workbench/`), and why it did nothing when `state` is "skipped"."""

    state: State
    written: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    reason: str = ""
    folder: str = field(default="", compare=False)


def refresh(manifest: Manifest, *, create: bool = False) -> Refresh:
    """Bring `manifest`'s gem's `.gem-workbench/` up to date; `create`: make it when missing
    (otherwise a gem without the folder is left without it: "absent")."""
    from .._version import __version__

    folder = manifest.root / FOLDER
    try:
        root = os.open(manifest.root, _DIR)
    except OSError as exc:
        return Refresh("skipped", reason=_why(exc), folder=str(folder))
    try:
        inputs = _inputs(manifest, root)
        fd, made = _folder(root, create=create)
        if fd is None:
            return Refresh("absent", folder=str(folder))
        try:
            old = _stamp(fd)
            if not made and old is not None and _matches(fd, old, __version__, inputs):
                return Refresh("current", unchanged=tuple(_names(old)), folder=str(folder))
            return _write(fd, manifest, old, __version__, inputs, made=made, folder=str(folder))
        finally:
            os.close(fd)
    except OSError as exc:
        return Refresh("skipped", reason=_why(exc), folder=str(folder))
    finally:
        os.close(root)


def _why(exc: OSError) -> str:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return f"{FOLDER} is a link or not a folder: left alone (nothing is written through a link)"
    return f"{FOLDER} cannot be written: {exc.strerror or exc}"


def _folder(root: int, *, create: bool) -> tuple[int | None, bool]:
    """A handle of .gem-workbench/ (never through a link) and whether it was just made."""
    made = False
    try:
        return os.open(FOLDER, _DIR, dir_fd=root), made
    except FileNotFoundError:
        if not create:
            return None, made
    os.mkdir(FOLDER, dir_fd=root)
    return os.open(FOLDER, _DIR, dir_fd=root), True


_SOURCES: dict[tuple[object, ...], str] = {}


def _inputs(manifest: Manifest, root: int) -> str:
    """A hash of what the folder is made from: the gem's definition files (read through the
    gem's handle `root`) and the platform's shipped declarations (hashed once per process per
    file version)."""
    h = hashlib.sha256(manifest.platform.encode())
    for name in DEFINITIONS:
        data = _read(root, name, MAX_TOOL_BYTES)  # absent or unreadable: part of what it says
        h.update(b"\0" + name.encode() + b"\0" + (b"-" if data is None else b"+" + data))
    h.update(_platform_sources(manifest.platform).encode())
    return h.hexdigest()


def _platform_sources(platform: str) -> str:
    from ..platforms import profile

    shipped = [str(declarations(platform)), str(profile(platform).declarations.manifest_schema)]
    key: list[object] = [platform]
    for p in shipped:
        try:
            st = os.stat(p)
            key.append((p, st.st_mtime_ns, st.st_size))
        except OSError:
            key.append((p, None))
    k = tuple(key)
    if k not in _SOURCES:
        s = hashlib.sha256(_platform_dts(platform).encode())  # a built-in's file, a plugin's rendering
        schema = profile(platform).declarations.manifest_schema
        s.update(schema.read_bytes() if schema is not None and schema.is_file() else b"-")
        _SOURCES[k] = s.hexdigest()
    return _SOURCES[k]


def _read(fd: int, name: str, limit: int) -> bytes | None:
    """The bytes of the regular file `name` in the folder (not through a link), or None."""
    try:
        f = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), dir_fd=fd
        )
    except OSError:
        return None
    try:
        st = os.fstat(f)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        chunks, left = [], limit + 1
        while left > 0 and (chunk := os.read(f, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= limit else None
    finally:
        os.close(f)


def _stamp(fd: int) -> dict[str, object] | None:
    raw = _read(fd, STAMP, STAMP_BYTES)
    if raw is None:
        return None
    data, why = load_file_json(raw, depth=STAMP_DEPTH)  # (json.loads: a RecursionError 30,000 deep)
    if why is not None:
        return None
    ok = (
        isinstance(data, dict)
        and isinstance(data.get("files"), list)
        and all(isinstance(n, str) and _plain(n) for n in data["files"])
    )
    return data if ok else None


def _names(stamp: dict[str, object]) -> list[str]:
    """The file names a (checked) stamp lists."""
    names = stamp["files"]
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def _plain(name: str) -> bool:
    """A file name of ours: no separator, not hidden, not . or .. (a stamp is read as hostile)."""
    return bool(name) and "/" not in name and "\0" not in name and not name.startswith(".")


def _matches(fd: int, old: dict[str, object], version: str, inputs: str) -> bool:
    if old.get("workbench") != version or old.get("inputs") != inputs:
        return False
    for name in _names(old):
        try:
            if not stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                return False
        except OSError:
            return False
    return True


def _write(
    fd: int,
    manifest: Manifest,
    old: dict[str, object] | None,
    version: str,
    inputs: str,
    *,
    made: bool,
    folder: str,
) -> Refresh:
    files = {name: text.encode() for name, text in gem_files(manifest).items()}
    written, unchanged, removed = [], [], []
    for name, data in files.items():
        if _read(fd, name, len(data)) == data:
            unchanged.append(name)
        else:
            _atomic(fd, name, data)
            written.append(name)
    for name in _names(old) if old else []:
        if name not in files:
            try:
                if stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    os.unlink(name, dir_fd=fd)
                    removed.append(name)
            except FileNotFoundError:
                pass
    stamp = {"workbench": version, "inputs": inputs, "files": sorted(files)}
    _atomic(fd, STAMP, (json.dumps(stamp, indent=2) + "\n").encode())
    state: State = "created" if made else "refreshed" if written or removed else "current"
    return Refresh(state, tuple(written), tuple(unchanged), tuple(removed), folder=folder)


def _atomic(fd: int, name: str, data: bytes) -> None:
    """Write `name` in the folder by rename from a new temporary file beside it: a crash leaves
    the old file, and a link at `name` is replaced (rename does not follow it), not written
    through."""
    tmp = f".{name}.{secrets.token_hex(4)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    f = os.open(tmp, flags, 0o666, dir_fd=fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(f, view) :]
        finally:
            os.close(f)
        os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=fd)
        except OSError:
            pass
        raise


def refresh_quietly(manifest: Manifest) -> Refresh:
    """`refresh` for open, reload and check: an existing folder only; a skip is a TypesWarning
    (the bench opens all the same)."""
    import warnings

    done = refresh(manifest)
    if done.state == "skipped":
        warnings.warn(f"{done.folder}: {done.reason}", TypesWarning, stacklevel=3)
    return done
