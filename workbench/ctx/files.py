"""ctx.files (F1–F12): the run folder and the conversation folder, with the platform's rules."""

from __future__ import annotations

import base64
import binascii
import os
import sys
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from .._text import well_formed
from ..providers.base import LinkInPath
from . import history, written
from .limits import DEFAULT
from .paths import GemPath, resolve
from .spec import CapabilitySpec, Flag, Option, View, path_or
from .state_store import FILES

if TYPE_CHECKING:
    from ..providers.base import Entry
    from ._session import CallSession

MAX_BYTES = DEFAULT.file_bytes  # F12: 20 MB (MiB) per read or write; a bench's own: limits
ENCODINGS = ("utf8", "base64")


def desktop_has_trash() -> bool:
    """False on the headless build: CI, or Linux with no display; delete is then permanent."""
    if os.environ.get("CI"):
        return False
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):g} MB"


def _info(e: Entry) -> dict[str, Any]:
    return {"name": e.name, "type": e.type, "size": e.size, "modified": e.modified}


def _encoding(options: Any, encoding: str | None) -> str:
    if options is not None and not isinstance(options, dict):
        raise WorkbenchError(
            "E_INVALID_ARGUMENT", "options must be an object like { encoding: 'base64' }", field="options"
        )
    enc = encoding or (options or {}).get("encoding") or "utf8"
    if enc not in ENCODINGS:
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"encoding {enc!r} is not supported: use 'utf8' or 'base64'",
            field="encoding",
        )
    return enc


class Files:
    """The methods of ctx.files; each takes gem paths (F9) and applies F1–F12."""

    def __init__(self, session: CallSession) -> None:
        self.s = session
        self.store = session.providers.files

    # -- helpers ---------------------------------------------------------------------------
    def _entry(self, p: GemPath) -> Entry | None:
        if p.hidden:
            return None  # F10: dot-entries of the conversation folder do not exist
        e = self.store.entry(p.root, p.rel)
        if e is not None and e.type == "link":  # resolve() followed every link: swapped in since
            raise LinkInPath(p.rel)  # SEC2: E_PATH, as for a folder on the path (_session._coded)
        return e

    def _need(self, p: GemPath) -> Entry:
        e = self._entry(p)
        if e is None:
            raise WorkbenchError("E_NOT_FOUND", f"{p.raw!r} does not exist{self._elsewhere(p)}", path=p.raw)
        return e

    def _elsewhere(self, p: GemPath) -> str:
        """A hint when the path exists in the other area: a bare path is the run folder (F1),
        the conversation folder's files are `workspace:`-prefixed; and where that folder is."""
        if p.is_workspace:
            where = getattr(self.store, "workspace", None)  # a real folder; the mock is in memory
            return f" (the conversation folder is {where})" if where else ""
        try:  # p.rel was resolved in the run folder: in the conversation folder it may hold a link
            there = self.s.conversation and self.store.entry("workspace", p.rel) is not None
        except OSError:
            there = False
        if there:
            return f" in the run folder; the conversation folder has it: read 'workspace:{p.rel}'"
        return ""

    def existing_file(self, p: GemPath) -> Entry:
        """The entry of an existing file, else E_NOT_FOUND / E_IS_A_FOLDER."""
        e = self._need(p)
        if e.type == "folder":
            raise WorkbenchError("E_IS_A_FOLDER", f"{p.raw!r} is a folder; use list()", path=p.raw)
        return e

    def read_checked(self, p: GemPath, e: Entry) -> bytes:
        """The file's bytes, within the 20 MB per read (F12); `e` from existing_file."""
        cap = self.s.limits.file_bytes
        if e.size > cap:
            raise WorkbenchError(
                "E_TOO_LARGE",
                f"{p.raw!r} is {e.size:,} bytes; at most {cap:,} bytes ({_mb(cap)}) per read",
                path=p.raw,
                limit=cap,
            )
        return self.store.read(p.root, p.rel)

    def _writable(self, p: GemPath) -> None:
        if p.hidden:
            raise WorkbenchError(
                "E_PERM_DENIED",
                f"{p.raw!r}: files and folders starting with "
                "'.' in the conversation folder are not available to gems (F10)",
                path=p.raw,
            )
        parts = p.rel.split("/")
        for i in range(1, len(parts)):  # a file standing where a parent folder must go
            e = self.store.entry(p.root, "/".join(parts[:i]))
            if e is not None and e.type == "file":
                raise WorkbenchError(
                    "E_NOT_A_FOLDER",
                    f"{p.raw!r}: '{'/'.join(parts[:i])}' is a file, not a folder",
                    path=p.raw,
                )

    def _dot_entry_under(self, p: GemPath) -> str | None:
        """The first dot-entry inside a folder (symlinks not followed), or None; iterative, so
        a deep tree cannot exhaust the stack."""
        todo = [p.rel]
        while todo:
            rel = todo.pop()
            for child in self.store.list(p.root, rel):
                if child.name.startswith("."):
                    return f"{rel}/{child.name}"
                if child.type == "folder":
                    todo.append(f"{rel}/{child.name}")
        return None

    def _unseen_under(self, p: GemPath) -> str | None:
        """The first entry inside a folder that the gem cannot see: a dot-entry (F10), or one
        the store does not list (a FIFO, socket, device, a name that is not UTF-8)."""
        return self._dot_entry_under(p) or self.store.unlisted_under(p.root, p.rel)

    # -- ctx.files -------------------------------------------------------------------------
    def list(self, path: str | None = None) -> list[dict[str, Any]]:
        p = resolve(self.s, "" if path is None else path)
        e = self._entry(p)
        if e is None:
            raise WorkbenchError("E_NOT_FOUND", f"folder {p.raw!r} does not exist", path=p.raw)
        if e.type != "folder":
            raise WorkbenchError("E_NOT_A_FOLDER", f"{p.raw!r} is a file, not a folder", path=p.raw)
        out = []
        for child in self.store.list(p.root, p.rel):
            try:
                cp = resolve(self.s, p.child(child.name).raw)
            except WorkbenchError:
                continue  # a symlink leading outside is not part of the folder
            ce = self._entry(cp)
            if ce is not None:
                out.append({**_info(ce), "name": child.name})
        return out

    def stat(self, path: str) -> dict[str, Any] | None:
        e = self._entry(resolve(self.s, path))
        return None if e is None else _info(e)

    def read(self, path: str, options: dict | None = None, *, encoding: str | None = None) -> str:
        enc = _encoding(options, encoding)
        p = resolve(self.s, path)
        data = self.read_checked(p, self.existing_file(p))
        if enc == "base64":
            return base64.b64encode(data).decode("ascii")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WorkbenchError(
                "E_INVALID_ARGUMENT",
                f"{p.raw!r} is not UTF-8 text (byte {exc.start}); read it with {{ encoding: 'base64' }}",
                path=p.raw,
            ) from None

    def write(
        self, path: str, content: str, options: dict | None = None, *, encoding: str | None = None
    ) -> None:
        enc = _encoding(options, encoding)
        p = resolve(self.s, path)
        if not isinstance(content, str):
            raise WorkbenchError(
                "E_INVALID_ARGUMENT",
                f"content for {p.raw!r} must be a string "
                f"(got {type(content).__name__}); binary goes as base64 with "
                "{ encoding: 'base64' }",
                path=p.raw,
                field="content",
            )
        if enc == "base64":
            try:
                if len(content) % 4:  # b64decode would let excess padding ("QUJD=") through
                    raise binascii.Error("length is not a multiple of 4")
                data = base64.b64decode(content, validate=True)
            except (binascii.Error, ValueError):
                raise WorkbenchError(
                    "E_INVALID_ARGUMENT",
                    f"content for {p.raw!r} is not valid base64",
                    path=p.raw,
                    field="content",
                ) from None
        else:  # like JS TextEncoder: surrogate pairs joined, a lone half becomes U+FFFD
            data = well_formed(content).encode("utf-8")
        cap = self.s.limits.file_bytes
        if len(data) > cap:
            raise WorkbenchError(
                "E_TOO_LARGE",
                f"writing {len(data):,} bytes to {p.raw!r}: at most {cap:,} bytes ({_mb(cap)}) per write",
                path=p.raw,
                limit=cap,
            )
        self._writable(p)
        if not p.rel:
            raise WorkbenchError("E_IS_A_FOLDER", f"{p.raw!r} is a folder", path=p.raw)
        old = self._entry(p)
        if old is not None and old.type == "folder":
            raise WorkbenchError("E_IS_A_FOLDER", f"{p.raw!r} is a folder", path=p.raw)
        changes = self.s.of("files")  # res.files: what the call wrote (written.py)
        prior = changes.prior(p, old)
        if old is not None and p.is_workspace:
            history.save(self.s, p, reason="overwrite")  # F5
        self.store.write(p.root, p.rel, data)
        changes.wrote(p, old, data, prior)

    def mkdir(self, path: str) -> None:
        p = resolve(self.s, path)
        self._writable(p)
        e = self._entry(p)
        if e is not None and e.type != "folder":
            raise WorkbenchError("E_EXISTS", f"{p.raw!r} exists and is a file", path=p.raw)
        self.store.mkdir(p.root, p.rel)

    # positional-only, as workbench.types declares it: the row's names, from and to, cannot
    # be Python's (`from` is a keyword), so no caller names them (ctx/verify.py)
    def move(self, src: str, dst: str, /) -> None:
        a, b = resolve(self.s, src), resolve(self.s, dst)
        entry = self._need(a)
        if not a.rel:
            raise WorkbenchError("E_PATH", f"cannot move the folder {a.raw!r} itself", path=a.raw)
        self._writable(b)
        if self.store.entry(b.root, b.rel) is not None:
            raise WorkbenchError(
                "E_EXISTS",
                f"cannot move {a.raw!r} to {b.raw!r}: the target exists and move never overwrites (F7)",
                path=b.raw,
            )
        if a.root == b.root and (b.rel + "/").startswith(a.rel + "/"):
            raise WorkbenchError("E_PATH", f"cannot move {a.raw!r} into itself ({b.raw!r})", path=b.raw)
        if (a.is_workspace or b.is_workspace) and entry.type == "folder" and (dot := self._unseen_under(a)):
            # F10/SEC3: the gem may not move what it cannot see (out of, or within, the
            # conversation folder), nor write a dot-entry into it; a hidden one is not named
            held = (
                "entries that are not available to gems"
                if a.is_workspace
                else f"the dot-entry '{dot}', which gems cannot write into the conversation folder"
            )
            raise WorkbenchError(
                "E_PERM_DENIED",
                f"cannot move {a.raw!r} to {b.raw!r}: it holds {held} (F10, SEC3)",
                path=a.raw,
            )
        try:
            self.store.move(a.root, a.rel, b.root, b.rel)
        except FileExistsError:  # created by someone else between the check and the move
            raise WorkbenchError(
                "E_EXISTS",
                f"cannot move {a.raw!r} to {b.raw!r}: the target exists and move never overwrites (F7)",
                path=b.raw,
            ) from None
        self.s.of("files").moved(a, b, entry)

    def delete(self, path: str) -> None:
        p = resolve(self.s, path)
        e = self._need(p)
        if not p.rel:
            raise WorkbenchError("E_PATH", f"cannot delete the folder {p.raw!r} itself", path=p.raw)
        if p.is_workspace and e.type == "folder" and self._unseen_under(p):
            # F10/SEC3: deleting the folder would destroy entries the gem cannot see (.git, .env)
            raise WorkbenchError(
                "E_PERM_DENIED",
                f"cannot delete {p.raw!r}: it holds entries "
                "that are not available to gems (F10, SEC3); delete what "
                "list() shows instead",
                path=p.raw,
            )
        changes = self.s.of("files")
        prior = changes.prior(p, e)
        if p.is_workspace:
            history.save(self.s, p, reason="delete")  # F8: a copy first, up to 100 MB
        self.store.remove(p.root, p.rel, trash=self.s.trash and p.is_workspace)
        changes.deleted(p, e, prior)


#: ctx.files as a unit: its open() options, views (rules above, backends in providers/)
SPEC = CapabilitySpec(
    impl="files",
    state=(FILES,),
    title="ctx.files",
    implementation=Files,
    provider_kinds=("files",),
    call_state=written.call_state,  # res.files: each file the call wrote, moved or deleted
    options=(
        Option(
            "workspace",
            "the conversation folder (real files: used in place; mock: copied into memory)",
            type="str | os.PathLike[str] | None",
            default_doc="the gem's fixtures/workspace/",
            flags=(Flag("--workspace", metavar="DIR", help="the conversation folder", parse=path_or()),),
        ),
        Option(
            "conversation",
            "False makes every `workspace:` path fail with E_PERM_DENIED (F11)",
            default=True,
            type="bool",
            flags=(Flag("--no-conversation", how="const", const=False, help="no conversation folder (F11)"),),
        ),
        Option(
            "headless",
            "True deletes permanently (the headless build)",
            type="bool | None",
            default_doc="no trash under CI or without a display",
            flags=(Flag("--headless", how="const", help="delete permanently, as the headless build"),),
        ),
    ),
    views=(
        View("files", "the file store's files, one row per path"),
        View("read", "a file's content, as a tool wrote it", table=False),
        View("history", "a file's versions (N6)"),
        View("restore_file", "put back a version of a file", table=False),
    ),
)
