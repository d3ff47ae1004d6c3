"""The mock file store: files in a dict, as small as a transport double should be."""

from __future__ import annotations

import builtins
import posixpath
import time
from collections.abc import Callable, Iterator

from .._text import is_unicode
from .base import Entry


class MemoryFileStore:
    """Keeps (root, path) -> bytes and a set of folders; nothing touches the disk."""

    def __init__(self) -> None:
        self.now: Callable[[], float] = time.time  # the bench's clock (ctx/clock.py): `modified`
        self._files: dict[tuple[str, str], tuple[bytes, int]] = {}
        self._dirs: dict[tuple[str, str], int] = {}

    def _ms(self) -> int:
        return int(self.now() * 1000)

    def entry(self, root: str, path: str) -> Entry | None:
        name = posixpath.basename(path)
        if (root, path) in self._files:
            data, mtime = self._files[(root, path)]
            return Entry(name, "file", len(data), mtime)
        if path == "" or (root, path) in self._dirs:
            return Entry(name, "folder", 0, self._dirs.get((root, path), 0))
        return None

    def resolve(self, root: str, path: str) -> str | None:
        return path  # no symlinks in memory

    def list(self, root: str, path: str) -> builtins.list[Entry]:
        here = self.entry(root, path)
        if here is None:
            raise FileNotFoundError(path)
        if here.type != "folder":
            raise NotADirectoryError(path)
        names = {
            p
            for r, p in [*self._files, *self._dirs]
            if r == root and p and posixpath.dirname(p) == path and is_unicode(p)
        }
        return [e for e in (self.entry(root, n) for n in sorted(names)) if e]

    def read(self, root: str, path: str) -> bytes:
        if (root, path) not in self._files:
            raise FileNotFoundError(path)
        return self._files[(root, path)][0]

    def write(self, root: str, path: str, data: bytes) -> None:
        self.mkdir(root, posixpath.dirname(path))
        self._files[(root, path)] = (bytes(data), self._ms())

    def mkdir(self, root: str, path: str) -> None:
        while path and (root, path) not in self._dirs:
            self._dirs[(root, path)] = self._ms()
            path = posixpath.dirname(path)

    def _under(self, root: str, path: str) -> builtins.list[tuple[str, str]]:
        return [
            k
            for k in [*self._files, *self._dirs]
            if k[0] == root and (k[1] == path or k[1].startswith(path + "/"))
        ]

    def move(self, src_root: str, src: str, dst_root: str, dst: str) -> None:
        if self.entry(dst_root, dst) is not None:
            raise FileExistsError(dst)
        self.mkdir(dst_root, posixpath.dirname(dst))
        for key in self._under(src_root, src):
            new = (dst_root, dst + key[1][len(src) :])
            if key in self._files:
                self._files[new] = self._files.pop(key)
            else:
                self._dirs[new] = self._dirs.pop(key)

    def remove(self, root: str, path: str, *, trash: bool) -> None:
        for key in self._under(root, path):  # a mock has no trash: gone is gone
            self._files.pop(key, None)
            self._dirs.pop(key, None)

    def walk(self, root: str) -> Iterator[tuple[str, Entry]]:
        for r, p in sorted({*self._files, *self._dirs}):
            if r == root and is_unicode(p) and (e := self.entry(r, p)):
                yield p, e

    def unlisted_under(self, root: str, path: str) -> str | None:
        """A seeded name that is not UTF-8 inside the folder's tree, printable; else None."""
        for r, p in sorted({*self._files, *self._dirs}):
            inside = r == root and p != path and (not path or p.startswith(path + "/"))
            if inside and not is_unicode(p):
                return p.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        return None

    def roots(self) -> builtins.list[str]:
        return sorted({r for r, _ in [*self._files, *self._dirs]})
