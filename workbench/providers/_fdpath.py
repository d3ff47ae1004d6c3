"""Paths opened step by step from their root folder's fd (SEC2): a folder swapped for a symlink
after the ctx layer resolved the path is never followed.

The ctx layer resolves a gem's symlinks (inside the root) before it asks the store for a path,
so the path a store gets holds no link; one that holds a link now was swapped in since. Each
step is opened with `O_NOFOLLOW | O_DIRECTORY` relative to the one before (openat), and the
last name is used relative to its folder's fd (`dir_fd=`), so no name is ever looked up again
from the root while another process swaps folders: before, with paths resolved and then opened
by name, 855 writes of one tool landed outside the workspace.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager

from .base import LinkInPath

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC


def open_base(base: str, *, create: bool = False) -> int:
    """An fd of a root folder itself (the user's workspace, or a run folder of ours): its own
    path may hold links; `create` makes it first (a run folder appears on its first write)."""
    if create:
        os.makedirs(base, exist_ok=True)
    return os.open(base, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)


def is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def step(dir_fd: int, name: str, rel: str, *, create: bool = False) -> int:
    """An fd of the folder `name` in `dir_fd` (`rel`: its path in the root, for messages);
    LinkInPath when it is a symlink, made first when `create` and missing."""
    for attempt in (0, 1):
        try:
            return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            if not create or attempt:
                raise
            try:
                os.mkdir(name, 0o777, dir_fd=dir_fd)
            except FileExistsError:
                pass  # made meanwhile: opened (and checked) on the second attempt
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and is_link(dir_fd, name):
                raise LinkInPath(rel) from None
            if create and exc.errno == errno.ENOTDIR:  # as `mkdir -p` says of a FIFO in the way
                raise FileExistsError(
                    errno.EEXIST, "an entry that is not a folder is in the way", rel
                ) from None
            raise
    raise AssertionError("unreachable")


def walk_to(base_fd: int, parts: list[str], *, create: bool = False) -> int:
    """An fd of the folder at `parts` under `base_fd` (which stays open: the caller's)."""
    fd = base_fd
    try:
        for i, name in enumerate(parts):
            nxt = step(fd, name, "/".join(parts[: i + 1]), create=create)
            if fd != base_fd:
                os.close(fd)
            fd = nxt
    except BaseException:
        if fd != base_fd:
            os.close(fd)
        raise
    return os.dup(fd) if fd == base_fd else fd


@contextmanager
def folder(base: str, parts: list[str], *, create: bool = False) -> Iterator[int]:
    """`with folder(base, ["a", "b"]) as fd`: the fd of base/a/b, every step checked."""
    base_fd = open_base(base, create=create)
    try:
        fd = walk_to(base_fd, parts, create=create)
    finally:
        os.close(base_fd)
    try:
        yield fd
    finally:
        os.close(fd)


@contextmanager
def parent(base: str, path: str, *, create: bool = False) -> Iterator[tuple[int, str]]:
    """`with parent(base, "a/b/c.txt") as (fd, name)`: the fd of base/a/b and "c.txt"."""
    parts = path.split("/")
    with folder(base, parts[:-1], create=create) as fd:
        yield fd, parts[-1]
