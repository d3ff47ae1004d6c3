"""The real file store: the conversation folder in place, run folders under the state folder.

Only regular files, folders and symlinks exist here: FIFOs, sockets and device files are not
reported, listed or opened (reading a FIFO would block the call forever), and names that are
not valid UTF-8 on disk are skipped (no gem path can name them). Writes go through a temp file
in the state folder's `runs/.tmp/` (same filesystem: an atomic rename), or, when the conversation
folder is on another filesystem, through a hidden `.wb-tmp-<pid>-…` file next to the target; a
process killed mid-write leaves its temp behind, and the next `open` removes it (`housekeep`).
"""

from __future__ import annotations

import builtins
import errno
import functools
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from .._text import is_unicode
from .base import Entry

TMP_PREFIX = ".wb-tmp-"  # a dot-name: invisible to gems (F10) while a write is in flight
MAX_LINKS = 40  # symlinks followed per path, as Linux's MAXSYMLINKS: more is a loop for us too
STALE_TMP_SECONDS = 24 * 3600  # a temp this old is a leftover even if its pid was reused
_CHUNK = 1 << 20


@functools.cache
def _umask() -> int:
    """The process umask, read once (Python can only read it by setting it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _kind(mode: int) -> Literal["file", "folder", "link"] | None:
    """The entry type of an lstat mode; None for what gems never see (FIFO, socket, device)."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISLNK(mode):
        return "link"
    return None


def _entry(p: str, name: str) -> Entry | None:
    try:
        st = os.lstat(p)
    except (OSError, ValueError):  # missing, a parent is a file or a loop, name too long
        return None
    kind = _kind(st.st_mode)
    if kind is None:
        return None
    return Entry(name, kind, st.st_size if kind == "file" else 0, st.st_mtime_ns // 1_000_000)


def _alive(pid: int) -> bool:
    """Whether process `pid` may still be writing (on doubt: yes)."""
    if pid == os.getpid():
        return True
    if os.name != "posix":  # os.kill(pid, 0) is not a probe on Windows: rely on age
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, owned by someone else
        return True
    return True


def _tmp_pid(name: str) -> int | None:
    """The writer's pid in `.wb-tmp-<pid>-<random>` or `<pid>-<random>.pending`."""
    head = name.removeprefix(TMP_PREFIX).split("-", 1)[0]
    return int(head) if head.isascii() and head.isdigit() else None


def open_regular(path: str | os.PathLike[str]) -> int:
    """A read-only fd of a regular file; FileNotFoundError for anything else, without blocking.

    O_NONBLOCK: a FIFO swapped in after the caller's check opens at once instead of waiting
    for a writer; O_NOFOLLOW: a final symlink swapped in is not followed; then fstat of the
    opened file decides, so no check-then-use gap remains.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EMLINK):  # a symlink, socket, FIFO
            raise FileNotFoundError(errno.ENOENT, "not a regular file", str(path)) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileNotFoundError(errno.ENOENT, "not a regular file", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a regular file (see open_regular), at most the size it had when opened:
    a file growing meanwhile does not make the read run on."""
    fd = open_regular(path)
    try:
        parts, left = [], os.fstat(fd).st_size
        while left > 0:
            chunk = os.read(fd, min(left, _CHUNK))
            if not chunk:
                break
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


class FolderFileStore:
    """Files on disk: root 'workspace' is `workspace`, root 'run/<id>' is `runs/<id>`.

    `tmp`: where writes stage their temp files (default: `runs/.tmp`, in the state folder; a
    dot-name is never a call id); it must be the workbench's own folder: `housekeep` empties it.
    """

    def __init__(self, *, workspace: Path, runs: Path, tmp: Path | None = None) -> None:
        self.workspace = Path(workspace)
        self.runs = Path(runs)
        self.tmp = Path(tmp) if tmp is not None else self.runs / ".tmp"
        self._tmp_dev: int | None = None
        self._foreign_devs: set[int] = set()  # devices where a rename from the temp folder failed (EXDEV)

    def _base(self, root: str) -> Path:
        return self.workspace if root == "workspace" else self.runs / root.removeprefix("run/")

    def _abs(self, root: str, path: str) -> Path:
        return self._base(root) / path if path else self._base(root)

    def entry(self, root: str, path: str) -> Entry | None:
        if path == "":
            return Entry("", "folder", 0, 0)
        return _entry(os.fspath(self._abs(root, path)), os.path.basename(path))

    def resolve(self, root: str, path: str) -> str | None:
        """Follow symlinks component by component, at most MAX_LINKS of them (a loop or a
        longer chain gives None, like a path leaving the root); missing parts stay as given."""
        base = os.path.realpath(self._base(root))
        cur, todo, links = base, [s for s in path.split("/") if s], 0
        todo.reverse()  # a stack: the next component last
        while todo:
            name = todo.pop()
            if name in ("", "."):
                continue
            if name == "..":
                cur = os.path.dirname(cur)
                continue
            nxt = os.path.join(cur, name)
            try:
                st = os.lstat(nxt)
            except (FileNotFoundError, NotADirectoryError):
                cur = nxt  # the rest does not exist yet (a write's new folders): take it as is
                continue
            except (OSError, ValueError):  # no permission, name too long: not a path we use
                return None
            if not stat.S_ISLNK(st.st_mode):
                cur = nxt
                continue
            links += 1
            try:
                target = os.readlink(nxt)
            except OSError:
                return None
            if links > MAX_LINKS:
                return None
            if os.path.isabs(target):
                cur = os.path.abspath(os.sep)
            todo.extend(reversed(target.split(os.sep)))
        if cur != base and not cur.startswith(base.rstrip(os.sep) + os.sep):
            return None
        return os.path.relpath(cur, base).replace(os.sep, "/") if cur != base else ""

    def list(self, root: str, path: str) -> builtins.list[Entry]:
        p = self._abs(root, path)
        if path == "" and not p.exists():
            return []  # a run folder is created on its first write
        names = sorted(n for n in os.listdir(p) if is_unicode(n))
        return [e for n in names if (e := _entry(os.path.join(p, n), n))]

    def read(self, root: str, path: str) -> bytes:
        return read_regular(self._abs(root, path))

    # -- atomic writes ---------------------------------------------------------------------
    def _staging(self, folder: Path) -> Path | None:
        """the temp folder when a rename from it into `folder` can work (same device), else None."""
        try:
            if self._tmp_dev is None:
                self.tmp.mkdir(parents=True, exist_ok=True)
                self._tmp_dev = os.stat(self.tmp).st_dev
            dev = os.stat(folder).st_dev
        except OSError:
            return None
        return self.tmp if dev == self._tmp_dev and dev not in self._foreign_devs else None

    def write(self, root: str, path: str, data: bytes) -> None:
        target = self._abs(root, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:  # never replace what the store does not show (a FIFO, socket, device)
            if _kind(os.lstat(target).st_mode) is None:
                raise FileExistsError(errno.EEXIST, "an entry that is not a file is in the way", str(target))
        except FileNotFoundError:
            pass
        staging = self._staging(target.parent)
        if staging is not None:
            try:
                self._write_via(staging, target, data)
                return
            except OSError as exc:
                if exc.errno != errno.EXDEV:  # e.g. bind mounts: one device, no rename across
                    raise
                self._foreign_devs.add(os.stat(target.parent).st_dev)
        # another filesystem: a hidden temp next to the target, announced in the temp folder so that the
        # next open can remove it if this process dies before the rename
        marker = self._announce(target.parent)
        try:
            self._write_via(target.parent, target, data, marker=marker)
        finally:
            if marker is not None:
                marker.unlink(missing_ok=True)

    def _announce(self, folder: Path) -> Path | None:
        try:
            self.tmp.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(dir=self.tmp, prefix=f"{os.getpid()}-", suffix=".pending")
        except OSError:
            return None  # no state folder to write in: the temp is still a hidden dot-name
        os.close(fd)
        return Path(name)

    @staticmethod
    def _write_via(folder: Path, target: Path, data: bytes, *, marker: Path | None = None) -> None:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f"{TMP_PREFIX}{os.getpid()}-")
        try:
            if marker is not None:
                marker.write_bytes(os.fsencode(tmp))
            try:  # mkstemp makes it 0600: keep the mode of the file replaced, else the default
                mode = stat.S_IMODE(os.stat(target).st_mode)
            except OSError:
                mode = 0o666 & ~_umask()
            if hasattr(os, "fchmod"):
                os.fchmod(fd, mode)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def mkdir(self, root: str, path: str) -> None:
        self._abs(root, path).mkdir(parents=True, exist_ok=True)

    def move(self, src_root: str, src: str, dst_root: str, dst: str) -> None:
        a, b = self._abs(src_root, src), self._abs(dst_root, dst)
        b.parent.mkdir(parents=True, exist_ok=True)
        if a.is_dir() and not a.is_symlink():
            b.mkdir()  # exclusive: raises FileExistsError; rename then replaces this empty dir
            try:
                os.rename(a, b)
            except OSError:
                b.rmdir()
                shutil.move(a, b)  # another filesystem
            return
        try:
            os.link(a, b, follow_symlinks=False)  # atomic, and never replaces an existing b
        except FileExistsError:
            raise
        except OSError:  # another filesystem, or links unsupported: copy exclusively
            with open(open_regular(a), "rb") as fa, open(b, "xb") as fb:  # no FIFO wait
                shutil.copyfileobj(fa, fb)
        os.unlink(a)

    def remove(self, root: str, path: str, *, trash: bool) -> None:
        p = self._abs(root, path)
        if trash:
            from send2trash import send2trash

            send2trash(p)
        elif p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()

    def walk(self, root: str) -> Iterator[tuple[str, Entry]]:
        base = self._base(root)
        for dirpath, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if is_unicode(d))  # not descended into either
            rel = os.path.relpath(dirpath, base)
            for n in dirs + sorted(f for f in files if is_unicode(f)):
                path = n if rel == "." else f"{rel}/{n}".replace(os.sep, "/")
                if e := _entry(os.path.join(dirpath, n), n):
                    yield path, e

    def unlisted_under(self, root: str, path: str) -> str | None:
        """The first entry in the folder's tree that `list` does not report (a FIFO, socket,
        device, or a name that is not UTF-8), printable; None if there is none. Symlinks are
        not followed; iterative, so a deep tree cannot exhaust the stack."""
        todo = [os.fspath(self._abs(root, path))]
        base = os.fspath(self._base(root))
        while todo:
            folder = todo.pop()
            try:
                with os.scandir(folder) as it:
                    children = list(it)
            except OSError:
                continue
            for child in children:
                try:
                    kind = _kind(child.stat(follow_symlinks=False).st_mode)
                except OSError:
                    continue
                if kind is None or not is_unicode(child.name):
                    rel = os.path.relpath(child.path, base)
                    return os.fsencode(rel).decode("utf-8", "backslashreplace").replace(os.sep, "/")
                if kind == "folder":
                    todo.append(child.path)
        return None

    def roots(self) -> builtins.list[str]:
        runs = (
            sorted(f"run/{p.name}" for p in self.runs.iterdir() if not p.name.startswith("."))
            if self.runs.is_dir()
            else []
        )
        return ["workspace", *runs]

    # -- housekeeping at open ----------------------------------------------------------------
    def housekeep(self, *, keep_runs: int | None = 50, keep_days: float = 7.0) -> None:
        """Remove temps of writers that died, then run folders outside the retention policy
        (keep_runs=None: keep every run folder).

        Never raises: a file another process removes first, or one we may not remove, is left.
        """
        self.clean_temps()
        if keep_runs is not None:
            self.prune_runs(keep_runs=keep_runs, keep_days=keep_days)

    def clean_temps(self) -> None:
        """Delete temp-folder entries (and the hidden temps they announce) whose writer is gone."""
        try:
            names = os.listdir(self.tmp)
        except OSError:
            return
        now = time.time()
        for name in names:
            p = self.tmp / name
            pid = _tmp_pid(name)
            try:
                if pid is not None and _alive(pid) and now - p.lstat().st_mtime < STALE_TMP_SECONDS:
                    continue
                if name.endswith(".pending"):
                    leftover = Path(os.fsdecode(p.read_bytes()))
                    if leftover.name.startswith(TMP_PREFIX):  # only ever our own temp names
                        leftover.unlink(missing_ok=True)
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink(missing_ok=True)
            except (OSError, ValueError):
                continue

    def prune_runs(self, *, keep_runs: int, keep_days: float) -> builtins.list[str]:
        """Delete run folders that are neither among the `keep_runs` most recently modified nor
        modified within `keep_days` days; returns the names deleted."""
        try:
            found = []
            for d in os.scandir(self.runs):
                if d.is_dir(follow_symlinks=False) and not d.name.startswith("."):  # not .tmp
                    found.append((d.stat(follow_symlinks=False).st_mtime, d.name))
        except OSError:
            return []
        found.sort(reverse=True)  # newest first
        cutoff = time.time() - keep_days * 86400
        gone = []
        for mtime, name in found[keep_runs:]:
            if mtime < cutoff:
                shutil.rmtree(self.runs / name, ignore_errors=True)
                gone.append(name)
        return gone
