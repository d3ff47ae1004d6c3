"""The provider interfaces: plain storage, no platform rules.

Like an httpx transport, a provider does one narrow thing. Every rule of the platform (paths,
dot-files, sizes, history, never-overwrite, permissions) lives above it, in `workbench.ctx`,
so a mock and a real provider cannot drift apart.

Paths given to a FileStore are already checked: POSIX, relative to a *root*, no '..', no
leading '/', '' meaning the root itself. Roots are 'workspace' (the conversation folder) and
'run/<call id>' (one run folder per call).

What a gem cannot name does not exist here either: FIFOs, sockets and device files are never
reported (`entry` gives None, `list` and `walk` skip them, `read` refuses them without
blocking), nor are names that are not valid UTF-8 on disk. Symlinks are followed only by
`resolve`, at most 40 per path: a loop is a path that cannot be resolved (None).
"""

from __future__ import annotations

import builtins
import errno
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, Protocol


class LinkInPath(OSError):
    """A folder on a path the caller resolved is a symbolic link now (swapped in since): the
    real store never follows it (SEC2). `filename` is the path, relative to its root."""

    def __init__(self, rel: str) -> None:
        super().__init__(errno.ELOOP, "a folder on the path became a symbolic link", rel)


@dataclass(frozen=True)
class Entry:
    """What a FileStore knows about one path, without following a final symlink."""

    name: str
    type: Literal["file", "folder", "link"]
    size: int
    modified: int  # milliseconds since the epoch


class FileStore(Protocol):
    def entry(self, root: str, path: str) -> Entry | None:
        """The entry at path, or None (also for a FIFO, socket or device). The root itself is
        always a folder. This and every method below raise LinkInPath when a folder on the
        path is a symlink: the caller resolved it, so one was swapped in since (SEC2)."""

    def resolve(self, root: str, path: str) -> str | None:
        """The canonical path after following symlinks, or None if it leaves the root or does
        not resolve (a symlink loop, a chain of over 40 links). Never raises."""

    def list(self, root: str, path: str) -> builtins.list[Entry]:
        """Entries of a folder (raises NotADirectoryError / FileNotFoundError)."""

    def read(self, root: str, path: str) -> bytes:
        """The bytes of a regular file; FileNotFoundError for anything else, at once (no wait
        on a FIFO swapped in after the caller's check)."""

    def write(self, root: str, path: str, data: bytes) -> None:
        """Atomically replace the file, creating parent folders."""

    def mkdir(self, root: str, path: str) -> None:
        """Create the folder and its parents; fine if it exists."""

    def move(self, src_root: str, src: str, dst_root: str, dst: str) -> None:
        """Move a file or folder; raise FileExistsError rather than replace anything."""

    def remove(self, root: str, path: str, *, trash: bool) -> None:
        """Delete a file or folder tree; to the user's trash when `trash` and one exists."""

    def unlisted_under(self, root: str, path: str) -> str | None:
        """The first entry in a folder's tree that `list` does not report (FIFO, socket,
        device, a name that is not UTF-8), printable for a message; None if there is none.
        What `list` hides must still stop a folder delete or move (SEC3)."""

    def walk(self, root: str) -> Iterator[tuple[str, Entry]]:
        """Every (path, entry) under the root, parents before children."""

    def roots(self) -> builtins.list[str]:
        """Roots that hold anything."""
