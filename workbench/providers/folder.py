"""The real file store: the conversation folder in place, run folders under the state folder."""

from __future__ import annotations

import builtins
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Literal

from .base import Entry

TMP_PREFIX = ".wb-tmp-"  # a dot-name: invisible to gems (F10) while a write is in flight


def _entry(p: Path, name: str) -> Entry | None:
    try:
        st = p.lstat()
    except (FileNotFoundError, NotADirectoryError):  # missing, or a parent is a file
        return None
    kind: Literal["file", "folder", "link"] = (
        "link" if p.is_symlink() else "folder" if p.is_dir() else "file")
    return Entry(name, kind, st.st_size if kind == "file" else 0, st.st_mtime_ns // 1_000_000)


class FolderFileStore:
    """Files on disk: root 'workspace' is `workspace`, root 'run/<id>' is `runs/<id>`."""

    def __init__(self, *, workspace: Path, runs: Path) -> None:
        self.workspace = Path(workspace)
        self.runs = Path(runs)

    def _base(self, root: str) -> Path:
        return self.workspace if root == "workspace" else self.runs / root.removeprefix("run/")

    def _abs(self, root: str, path: str) -> Path:
        return self._base(root) / path if path else self._base(root)

    def entry(self, root: str, path: str) -> Entry | None:
        if path == "":
            return Entry("", "folder", 0, 0)
        return _entry(self._abs(root, path), os.path.basename(path))

    def resolve(self, root: str, path: str) -> str | None:
        base = os.path.realpath(self._base(root))
        real = os.path.realpath(self._abs(root, path))
        if real != base and not real.startswith(base + os.sep):
            return None
        return os.path.relpath(real, base).replace(os.sep, "/") if real != base else ""

    def list(self, root: str, path: str) -> builtins.list[Entry]:
        p = self._abs(root, path)
        if path == "" and not p.exists():
            return []  # a run folder is created on its first write
        return [e for n in sorted(os.listdir(p)) if (e := _entry(p / n, n))]

    def read(self, root: str, path: str) -> bytes:
        return self._abs(root, path).read_bytes()

    def write(self, root: str, path: str, data: bytes) -> None:
        target = self._abs(root, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=TMP_PREFIX)
        try:
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
            with open(a, "rb") as fa, open(b, "xb") as fb:
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
            dirs.sort()
            rel = os.path.relpath(dirpath, base)
            for n in sorted(dirs) + sorted(files):
                path = n if rel == "." else f"{rel}/{n}".replace(os.sep, "/")
                if (e := _entry(Path(dirpath) / n, n)):
                    yield path, e

    def roots(self) -> builtins.list[str]:
        runs = sorted(f"run/{p.name}" for p in self.runs.iterdir()) if self.runs.is_dir() else []
        return ["workspace", *runs]
