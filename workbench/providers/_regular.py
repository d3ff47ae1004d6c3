"""Opening a regular file without blocking: the one helper of the file store and the mailboxes.

O_NONBLOCK: a FIFO swapped in after the caller's check opens at once instead of waiting for a
writer; then fstat of the opened file decides, so no check-then-use gap remains. A module of
its own, low in providers/, so that folder.py, maillocal.py and mailmock.py share it without
importing one another.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import IO

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def open_regular(path: str | os.PathLike[str], *, dir_fd: int | None = None, follow: bool = False) -> int:
    """A read-only fd of a regular file; FileNotFoundError for anything else, without blocking.

    Without `follow` (the file store), O_NOFOLLOW: a final symlink swapped in is not followed,
    and a symlink, socket or FIFO refused by the open is FileNotFoundError too. With it (a
    mailbox's messages), a symlink is followed and the open's own OSError is raised as is.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | _CLOEXEC
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_BINARY", 0), dir_fd=dir_fd)
    except OSError as exc:
        if not follow and exc.errno in (errno.ELOOP, errno.ENXIO, errno.EMLINK):  # a symlink, socket, FIFO
            raise FileNotFoundError(errno.ENOENT, "not a regular file", str(path)) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileNotFoundError(errno.ENOENT, "not a regular file", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular_file(path: str | os.PathLike[str]) -> IO[bytes]:
    """open_regular(path, follow=True) as a binary file object."""
    fd = open_regular(path, follow=True)
    try:
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
