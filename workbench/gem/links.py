"""N1 after load: symlinks in the gem folder that lead outside it, and hard links."""

from __future__ import annotations

import os
import time
from pathlib import Path

from .._errors import WorkbenchError


class GemLinks:
    """N1 after load: a symlink added to the gem folder while the bench is open, leading
    outside it, would be followed by Deno (--allow-read checks the path, not its target).
    Checked before every call, cheaply: only folders whose mtime changed are read again (a
    link added, replaced or renamed changes its folder's mtime). A folder modified in the
    last second is read again next time too: mtimes are as coarse as the kernel's clock tick.

    A hard link (a regular file with more than one name) is refused too: it may be another
    name of a file outside the folder (`ln ~/.ssh/id_rsa tests/key`), which Deno's path check
    cannot tell apart. Neither git, zip nor a bundle makes one; `.git/` is left out (a local
    `git clone` hard-links its objects, which no tool reads as files).
    """

    RECENT_NS = 1_000_000_000

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._git = str(self.root / ".git") + os.sep
        self.mtimes: dict[str, int] = {}
        self.bad: dict[str, str] = {}  # link -> where it leads ("" for a hard link)

    def check(self) -> WorkbenchError | None:
        changed = []
        for d, m in self.mtimes.items():
            try:
                if os.stat(d).st_mtime_ns != m:
                    changed.append(d)
            except OSError:
                changed.append(d)
        if changed or not self.mtimes:
            self._scan(changed or [str(self.root)])
        if not self.bad:
            return None
        link, target = next(iter(sorted(self.bad.items())))
        rel = os.path.relpath(link, self.root)
        if not target:
            return WorkbenchError(
                "E_SANDBOX",
                f"the gem folder has a hard link: {rel} is one of several names of a file, "
                "which may be outside the gem folder. Tools may read only the gem folder and "
                "its resources (N1): replace it with a copy",
                capability="read",
                path=rel,
            )
        return WorkbenchError(
            "E_SANDBOX",
            f"the gem folder has a symlink leading outside it: "
            f"{rel} -> {target}. Tools may read only the gem folder and its "
            "resources (N1): remove the link",
            capability="read",
            path=rel,
            target=target,
        )

    def _scan(self, dirs: list[str]) -> None:
        now = time.time_ns()
        todo = list(dirs)
        while todo:
            d = todo.pop()
            prefix = d + os.sep
            for k in [k for k in self.bad if k.startswith(prefix) and os.sep not in k[len(prefix) :]]:
                del self.bad[k]
            try:
                st = os.stat(d)
                entries = list(os.scandir(d))
            except OSError:  # gone: so are the links in it
                self.mtimes.pop(d, None)
                for k in [k for k in self.bad if k.startswith(prefix)]:
                    del self.bad[k]
                continue
            # a folder changed within the last second may change again within the same tick
            self.mtimes[d] = -1 if now - st.st_mtime_ns < self.RECENT_NS else st.st_mtime_ns
            for e in entries:
                if e.is_symlink():  # resolved all the way (a loop stays inside: Deno fails it)
                    target = os.path.realpath(e.path)
                    if not Path(target).is_relative_to(self.root):
                        self.bad[e.path] = target
                elif e.is_file(follow_symlinks=False):
                    if e.stat(follow_symlinks=False).st_nlink > 1 and not e.path.startswith(self._git):
                        self.bad[e.path] = ""
                elif e.is_dir(follow_symlinks=False) and e.path not in self.mtimes:
                    todo.append(e.path)
