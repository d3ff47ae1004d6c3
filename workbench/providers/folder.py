"""The real file store: the conversation folder in place, run folders under the state folder.

Only regular files, folders and symlinks exist here: FIFOs, sockets and device files are not
reported, listed or opened (reading a FIFO would block the call forever), and names that are
not valid UTF-8 on disk are skipped (no gem path can name them). Writes go through a temp file
in the state folder's `runs/.tmp/` (same filesystem: an atomic rename), or, when the conversation
folder is on another filesystem, through a hidden `.wb-tmp-<pid>-…` file next to the target; a
process killed mid-write leaves its temp behind, and the next `open` removes it (`housekeep`).
Every path is opened step by step from its root's fd, never looked up by name again (SEC2,
_fdpath.py): a folder swapped for a symlink after the ctx layer resolved the path is refused.
"""

from __future__ import annotations

import builtins
import errno
import functools
import os
import secrets
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Literal

from .._text import is_unicode
from . import _fdpath
from ._regular import open_regular
from .base import Entry, LinkInPath

TMP_PREFIX = ".wb-tmp-"  # a dot-name: invisible to gems (F10) while a write is in flight
MAX_LINKS = 40  # symlinks followed per path, as Linux's MAXSYMLINKS: more is a loop for us too
STALE_TMP_SECONDS = 24 * 3600  # a temp this old is a leftover even if its pid was reused
_CHUNK = 1 << 20
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC


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


def _entry(dir_fd: int, name: str) -> Entry | None:
    """The entry `name` in the folder `dir_fd`, a final link not followed."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
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


def read_regular(path: str | os.PathLike[str], *, dir_fd: int | None = None) -> bytes:
    """The bytes of a regular file (see open_regular), at most the size it had when opened:
    a file growing meanwhile does not make the read run on."""
    fd = open_regular(path, dir_fd=dir_fd)
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
        self._keep: tuple[int, float] | None = None  # retention, from housekeep: applied as runs appear
        self._new_runs = 0  # run folders made since the last prune
        # the bench's clock (ctx/clock.py): run-folder retention's "now"; files' mtimes are the disk's
        self.now: Callable[[], float] = time.time

    def _base(self, root: str) -> Path:
        return self.workspace if root == "workspace" else self.runs / root.removeprefix("run/")

    def _abs(self, root: str, path: str) -> Path:
        return self._base(root) / path if path else self._base(root)

    def _parent(
        self, root: str, path: str, *, create: bool = False
    ) -> AbstractContextManager[tuple[int, str]]:
        """(fd of the folder holding `path`, its last name), every step opened from the root's
        fd without following a link (SEC2: LinkInPath when a step became one)."""
        if create:
            self._making(root)
        return _fdpath.parent(os.fspath(self._base(root)), path, create=create)

    def _folder(self, root: str, path: str, *, create: bool = False) -> AbstractContextManager[int]:
        if create:
            self._making(root)
        return _fdpath.folder(os.fspath(self._base(root)), path.split("/") if path else [], create=create)

    def _making(self, root: str) -> None:
        """A write is about to make `root`'s folder: when it is a new run folder, apply the
        retention policy every tenth of `keep_runs` new ones (F1), so a bench open for 1,000
        calls keeps what one opened for each would (it pruned only at open before)."""
        if self._keep is None or root == "workspace" or os.path.isdir(self._base(root)):
            return
        self._new_runs += 1
        keep_runs, keep_days = self._keep
        if self._new_runs >= max(1, keep_runs // 10):
            self._new_runs = 0
            self.prune_runs(keep_runs=keep_runs, keep_days=keep_days)  # before it exists: never it

    def entry(self, root: str, path: str) -> Entry | None:
        if path == "":
            return Entry("", "folder", 0, 0)
        try:
            with self._parent(root, path) as (fd, name):
                return _entry(fd, name)
        except LinkInPath:
            raise  # SEC2: said, not taken for "missing" (a write would then go ahead)
        except (OSError, ValueError):  # a step missing or a file: no entry there
            return None

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
        if path == "" and not self._base(root).exists():
            return []  # a run folder is created on its first write
        with self._folder(root, path) as fd:
            names = sorted(n for n in os.listdir(fd) if is_unicode(n))
            return [e for n in names if (e := _entry(fd, n))]

    def read(self, root: str, path: str) -> bytes:
        with self._parent(root, path) as (fd, name):
            return read_regular(name, dir_fd=fd)

    # -- atomic writes ---------------------------------------------------------------------
    def _staging(self, folder_fd: int) -> Path | None:
        """the temp folder when a rename from it into the folder can work (same device), else None."""
        try:
            if self._tmp_dev is None:
                self.tmp.mkdir(parents=True, exist_ok=True)
                self._tmp_dev = os.stat(self.tmp).st_dev
            dev = os.fstat(folder_fd).st_dev
        except OSError:
            return None
        return self.tmp if dev == self._tmp_dev and dev not in self._foreign_devs else None

    def write(self, root: str, path: str, data: bytes) -> None:
        with self._parent(root, path, create=True) as (fd, name):
            try:  # never replace what the store does not show (a FIFO, socket, device)
                old: os.stat_result | None = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                old = None
            if old is not None and _kind(old.st_mode) is None:
                raise FileExistsError(errno.EEXIST, "an entry that is not a file is in the way", path)
            mode = (
                stat.S_IMODE(old.st_mode)
                if old is not None and stat.S_ISREG(old.st_mode)
                else 0o666 & ~_umask()
            )
            staging = self._staging(fd)
            if staging is not None:
                try:
                    self._write_via(fd, name, data, mode, staging=staging)
                    return
                except OSError as exc:
                    if exc.errno != errno.EXDEV:  # e.g. bind mounts: one device, no rename across
                        raise
                    self._foreign_devs.add(os.fstat(fd).st_dev)
            # another filesystem: a hidden temp next to the target, announced in the temp folder so
            # that the next open can remove it if this process dies before the rename
            marker = self._announce()
            try:
                self._write_via(fd, name, data, mode, marker=marker, where=self._abs(root, path).parent)
            finally:
                if marker is not None:
                    marker.unlink(missing_ok=True)

    def _announce(self) -> Path | None:
        try:
            self.tmp.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(dir=self.tmp, prefix=f"{os.getpid()}-", suffix=".pending")
        except OSError:
            return None  # no state folder to write in: the temp is still a hidden dot-name
        os.close(fd)
        return Path(name)

    @staticmethod
    def _write_via(
        dir_fd: int,
        name: str,
        data: bytes,
        mode: int,
        *,
        staging: Path | None = None,
        marker: Path | None = None,
        where: Path | None = None,
    ) -> None:
        """Write a temp (in `staging`, or next to the target), then rename it over `name` in
        the folder `dir_fd`: a killed write leaves the old file or the new one."""
        if staging is not None:
            fd, tmp = tempfile.mkstemp(dir=staging, prefix=f"{TMP_PREFIX}{os.getpid()}-")
            src, src_fd = tmp, None
        else:
            src = f"{TMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
            fd, src_fd = os.open(src, _NEW_FILE, 0o600, dir_fd=dir_fd), dir_fd
            tmp = os.fspath((where or Path()) / src)
        try:
            if marker is not None:
                marker.write_bytes(os.fsencode(tmp))
            if hasattr(os, "fchmod"):  # mkstemp makes it 0600: the mode of the file replaced
                os.fchmod(fd, mode)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.rename(src, name, src_dir_fd=src_fd, dst_dir_fd=dir_fd)
        except BaseException:
            try:
                os.unlink(src, dir_fd=src_fd)
            except OSError:
                pass
            raise

    def mkdir(self, root: str, path: str) -> None:
        with self._folder(root, path, create=True):
            pass

    def move(self, src_root: str, src: str, dst_root: str, dst: str) -> None:
        with self._parent(src_root, src) as (afd, an), self._parent(dst_root, dst, create=True) as (bfd, bn):
            if stat.S_ISDIR(os.stat(an, dir_fd=afd, follow_symlinks=False).st_mode):
                os.mkdir(bn, dir_fd=bfd)  # exclusive: raises FileExistsError; rename then replaces it
                try:
                    os.rename(an, bn, src_dir_fd=afd, dst_dir_fd=bfd)
                except OSError:
                    os.rmdir(bn, dir_fd=bfd)
                    # another filesystem: copied by name, anchored at the two folders' fds
                    shutil.move(f"/proc/self/fd/{afd}/{an}", f"/proc/self/fd/{bfd}/{bn}")
                return
            try:
                os.link(
                    an, bn, src_dir_fd=afd, dst_dir_fd=bfd, follow_symlinks=False
                )  # atomic, never replaces
            except FileExistsError:
                raise
            except OSError:  # another filesystem, or links unsupported: copy exclusively
                with (
                    open(open_regular(an, dir_fd=afd), "rb") as fa,  # no FIFO wait
                    open(os.open(bn, _NEW_FILE, 0o666, dir_fd=bfd), "wb") as fb,
                ):
                    shutil.copyfileobj(fa, fb)
            os.unlink(an, dir_fd=afd)

    def remove(self, root: str, path: str, *, trash: bool) -> None:
        if trash:  # a desktop's trash takes a path (send2trash): by name
            from send2trash import send2trash

            send2trash(self._abs(root, path))
            return
        with self._parent(root, path) as (fd, name):
            if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                shutil.rmtree(name, dir_fd=fd)  # fd-based: never follows a link inside
            else:
                os.unlink(name, dir_fd=fd)

    def _tree(self, root: str, path: str) -> Iterator[tuple[str, builtins.list[tuple[str, Entry | None]]]]:
        """(folder, its children with their entries, None for what gems never see) for the
        folder at `path` and every folder below it, parents first; each opened from the root
        as every path is (a folder that became a link is not entered). Iterative."""
        todo = [path]
        while todo:
            rel = todo.pop()
            try:
                with self._folder(root, rel) as fd:
                    children = [(n, _entry(fd, n)) for n in sorted(os.listdir(fd))]
            except OSError:
                continue
            yield rel, children
            todo += reversed(
                [
                    f"{rel}/{n}" if rel else n
                    for n, e in children
                    if e and e.type == "folder" and is_unicode(n)
                ]
            )

    def walk(self, root: str) -> Iterator[tuple[str, Entry]]:
        for rel, children in self._tree(root, ""):
            listed = [(n, e) for n, e in children if e is not None and is_unicode(n)]
            for n, e in sorted(listed, key=lambda c: c[1].type != "folder"):  # folders first, as os.walk
                yield (f"{rel}/{n}" if rel else n), e

    def unlisted_under(self, root: str, path: str) -> str | None:
        """The first entry in the folder's tree that `list` does not report (a FIFO, socket,
        device, or a name that is not UTF-8), printable; None if there is none. Symlinks are
        not followed; iterative, so a deep tree cannot exhaust the stack."""
        for rel, children in self._tree(root, path):
            for n, e in children:
                if e is None or not is_unicode(n):
                    return os.fsencode(f"{rel}/{n}" if rel else n).decode("utf-8", "backslashreplace")
        return None

    def roots(self) -> builtins.list[str]:
        runs = (
            sorted(f"run/{p.name}" for p in self.runs.iterdir() if not p.name.startswith("."))
            if self.runs.is_dir()
            else []
        )
        return ["workspace", *runs]

    # -- housekeeping at open and as run folders appear ----------------------------------------------------------------
    def housekeep(self, *, keep_runs: int | None = 50, keep_days: float = 7.0) -> None:
        """Remove temps of writers that died, then run folders outside the retention policy
        (keep_runs=None: keep every run folder), which is applied again as calls make run
        folders.

        Never raises: a file another process removes first, or one we may not remove, is left.
        """
        self.clean_temps()
        self._keep = None if keep_runs is None else (keep_runs, keep_days)
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
        cutoff = self.now() - keep_days * 86400
        gone = []
        for mtime, name in found[keep_runs:]:
            if mtime < cutoff:
                shutil.rmtree(self.runs / name, ignore_errors=True)
                gone.append(name)
        return gone
