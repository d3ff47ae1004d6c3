"""What a call wrote (issue 28, point 2): ctx.files' per-call state, one `FileChange` per path
the call created, modified, moved or deleted, in the order it first touched it.

Recorded at the ctx boundary as each write, move and delete succeeds — never by diffing the
store — so it is the same for a JS and a Python tool, mock and real files. What the call left
is kept as the call wrote it (a file read back later may have changed since) and what an
overwrite, a move or a delete replaced is kept too, both bounded: a file over PREVIEW_BYTES
is listed with its size only ("too large to diff"), and a call keeps at most KEPT_BYTES of
content in all (the bench's results ring counts it, SEC5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .._errors import UsageError

if TYPE_CHECKING:
    from ..providers.base import Entry, FileStore
    from ._session import CallSession
    from .paths import GemPath

PREVIEW_BYTES = 256 * 1024  # of one file's content kept, before and after (else: sizes only)
KEPT_BYTES = 4 * 1024 * 1024  # of content one call keeps, all its files together
MAX_FILES = 10_000  # changes one call lists (later ones: counted in `FilesCall.unlisted`)

Change = Literal["created", "modified", "moved", "deleted"]


@dataclass(slots=True)
class Held:
    """What a change holds besides its columns: its bytes and where to read the file again.
    Kept on `FileChange.held`, not as fields, so `pd.DataFrame(res.files)` has one column per
    field and no bytes; the call's `FilesCall` fills it as the call writes."""

    after: bytes | None = None  # the content the call left (None: deleted, a folder, or over the caps)
    before: bytes | None = None  # the content before the call changed it (None: new, or over the caps)
    store: FileStore | None = None
    root: str = ""
    limit: int = 0  # Limits.file_bytes: what read() reads at most, as bench.read
    source: tuple[str, str] | None = None  # a move's source (root, path)


def read_entry(
    store: FileStore, root: str, real: str, entry: Entry, *, limit: int, encoding: str | None, what: str
) -> str | bytes:
    """The file `entry` at `real` read whole and decoded (`encoding=None`: the bytes), for
    bench.read and FileChange.read; UsageError naming `what` over `limit` bytes (Limits.file_bytes)
    or when it is not in `encoding`."""
    if entry.size > limit:
        raise UsageError(f"{what}: {entry.size:,} bytes, over Limits.file_bytes ({limit:,})")
    data = store.read(root, real)
    if encoding is None:
        return data
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{what}: not {encoding} at byte {exc.start}; encoding=None gives the bytes"
        ) from None
    except LookupError:
        raise UsageError(f"{what}: no such encoding {encoding!r}") from None


@dataclass(eq=False)
class FileChange:
    """One file (or folder) a call changed: `path` as a gem writes it (`workspace:` prefix for
    the conversation folder), `area` ("run": the call's run folder, or "workspace", as
    `bench.files()` says), `change`, `from_path` for a move, `size` in bytes after the call
    (None: deleted) and `before_size` (None: it did not exist)."""

    path: str
    area: str
    change: Change
    from_path: str | None = None
    size: int | None = None
    before_size: int | None = None
    type: Literal["file", "folder"] = "file"

    def __post_init__(self) -> None:
        self.held: Held = Held()  # not a field: see Held

    @property
    def data(self) -> bytes | None:
        """The bytes the call left (None: deleted, a folder, or over PREVIEW_BYTES)."""
        return self.held.after

    @property
    def before(self) -> bytes | None:
        """The bytes before the call changed it: what an overwrite replaced, what was moved or
        deleted (None: the file is new, or it was over PREVIEW_BYTES)."""
        return self.held.before

    @property
    def text(self) -> str | None:
        """`data` as UTF-8 text (None: not kept, or not UTF-8)."""
        return _text(self.held.after)

    @property
    def before_text(self) -> str | None:
        return _text(self.held.before)

    @property
    def kept(self) -> bool:
        """Whether the content on both sides of the change is kept (what a diff needs)."""
        after_ok = self.size is None or self.type == "folder" or self.held.after is not None
        before_ok = self.before_size is None or self.type == "folder" or self.held.before is not None
        return after_ok and before_ok

    def read(self, *, encoding: str | None = "utf-8") -> str | bytes:
        """The file as it is now (the whole of it, up to Limits.file_bytes), as `bench.read(path,
        call=res)` reads it; `encoding=None`: the bytes. A later call may have changed a
        `workspace:` file since; `data` is what this call left."""
        store, rel = self.held.store, self.path.removeprefix("workspace:")
        entry, real = None, rel
        if store is not None and self.size is not None and self.type == "file":
            found = store.resolve(self.held.root, rel)
            if found is not None:
                entry, real = store.entry(self.held.root, found), found
        if store is None or entry is None or entry.type != "file":
            gone = "the call deleted it" if self.size is None else "it is not there any more"
            raise UsageError(f"{self.path!r}: no file to read ({gone})")
        return read_entry(
            store, self.held.root, real, entry, limit=self.held.limit, encoding=encoding, what=repr(self.path)
        )

    def diff(self, *, context: int = 3) -> str | None:
        """A unified diff of the text before and after (None: not a text overwrite kept whole)."""
        import difflib

        old, new = self.before_text, self.text
        if old is None or new is None:
            return None
        name = self.from_path or self.path
        lines = difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), name, self.path, n=context
        )
        return "".join(ln if ln.endswith("\n") else ln + "\n" for ln in lines)


def _text(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


@dataclass(slots=True)
class FilesCall:
    """ctx.files' state in one call: its changes, by (root, path) and in order."""

    session: CallSession
    changes: list[FileChange] = field(default_factory=list)
    at: dict[tuple[str, str], FileChange] = field(default_factory=dict)
    kept: int = 0  # bytes of content held (KEPT_BYTES)
    unlisted: int = 0  # changes past MAX_FILES: counted only

    # -- what Files calls, once its checks passed ------------------------------------------------
    def prior(self, p: GemPath, entry: Entry | None) -> bytes | None:
        """Before a write or a delete: the bytes of the file at `p` (`entry`) when this is the
        call's first change of it and they are within the caps; else None."""
        if entry is None or (p.root, p.rel) in self.at:
            return None
        return self._take(p, entry)

    def wrote(self, p: GemPath, old: Entry | None, data: bytes, prior: bytes | None) -> None:
        """A write of `data` to `p`, which held `old` (None: it did not exist) with the bytes
        `prior` (from `prior()`)."""
        rec = self.at.get((p.root, p.rel))
        if rec is None:
            rec = self._new(p, "modified" if old is not None else "created")
            if rec is None:
                return
            if old is not None:
                rec.before_size, rec.held.before = old.size, self._hold(prior)
        elif rec.change == "deleted":  # deleted earlier in the call, written again: an overwrite
            rec.change, rec.type = "modified", "file"
        self._keep_after(rec, data)
        rec.size = len(data)

    def moved(self, a: GemPath, b: GemPath, entry: Entry) -> None:
        """A move of `a` (a file or a folder, `entry`) to `b`, which the store just made."""
        for key in self._under(a, entry):
            if self.at[key].change == "deleted":
                continue
            rec = self.at.pop(key)  # what the call changed in it moves with it
            rel = b.rel + key[1][len(a.rel) :]
            if rec.change == "modified":  # a move of the original, changed on the way
                rec.change, rec.from_path, rec.held.source = "moved", rec.path, key
            rec.path, rec.area, rec.held.root = _shown(b.root, rel), _area(b.root), b.root
            self.at[(b.root, rel)] = rec
        there = self.at.get((b.root, b.rel))
        if there is not None and there.change != "deleted":  # the call made or changed it: above
            return
        made = self._new(b, "moved")
        if made is None:
            return
        rec = made
        rec.from_path, rec.held.source = _shown(a.root, a.rel), (a.root, a.rel)
        if entry.type == "folder":
            rec.type = "folder"
        else:
            rec.size = rec.before_size = entry.size
            rec.held.before = rec.held.after = self._hold(
                self._take(b, entry)
            )  # the same bytes, counted once

    def deleted(self, p: GemPath, entry: Entry, prior: bytes | None) -> None:
        """A delete of `p` (a file or a folder, `entry`, whose bytes were `prior`)."""
        had = self.at.get((p.root, p.rel))
        for key in self._under(p, entry):
            rec = self.at.pop(key)
            self._drop(rec.held.after if rec.held.after is not rec.held.before else None)
            rec.held.after, rec.size = None, None
            if rec.change == "created":  # made and deleted in the same call: nothing is left
                self.changes.remove(rec)
                self._drop(rec.held.before)
                continue
            if rec.change == "moved" and rec.held.source is not None:  # the original is what went
                root, rel = rec.held.source
                rec.path, rec.area, rec.held.root = _shown(root, rel), _area(root), root
                rec.from_path = rec.held.source = None
                key = (root, rel)
            rec.change = "deleted"
            self.at[key] = rec
        if had is not None:
            return
        gone = self._new(p, "deleted")
        if gone is None:
            return
        if entry.type == "folder":
            gone.type = "folder"
        else:
            gone.before_size, gone.held.before = entry.size, self._hold(prior)

    # -- helpers ---------------------------------------------------------------------------------
    def _under(self, p: GemPath, entry: Entry) -> list[tuple[str, str]]:
        """The keys of the changes at or inside `p` (a folder's: a scan; a file's: one look-up,
        so deleting many files one by one stays linear)."""
        if entry.type == "folder":
            return [k for k in self.at if _under(k, p)]
        return [(p.root, p.rel)] if (p.root, p.rel) in self.at else []

    def _new(self, p: GemPath, change: Change) -> FileChange | None:
        if len(self.changes) >= MAX_FILES:
            self.unlisted += 1
            return None
        rec = FileChange(_shown(p.root, p.rel), _area(p.root), change)
        rec.held.store, rec.held.root = self.session.providers.files, p.root
        rec.held.limit = self.session.limits.file_bytes
        self.changes.append(rec)
        self.at[(p.root, p.rel)] = rec
        return rec

    def _cap(self) -> int:
        return min(PREVIEW_BYTES, self.session.limits.file_bytes)

    def _take(self, p: GemPath, entry: Entry) -> bytes | None:
        """The bytes of the file `entry` at `p` now, when within the caps; else None."""
        if entry.type != "file" or entry.size > self._cap() or self.kept + entry.size > KEPT_BYTES:
            return None
        try:
            data = self.session.providers.files.read(p.root, p.rel)
        except OSError:  # changed under the call: the change is listed, its bytes are not
            return None
        return data

    def _hold(self, data: bytes | None) -> bytes | None:
        """`data`, counted in what the call keeps, when it still fits KEPT_BYTES; else None."""
        if data is None or self.kept + len(data) > KEPT_BYTES:
            return None
        self.kept += len(data)
        return data

    def _keep_after(self, rec: FileChange, data: bytes) -> None:
        if rec.held.after is not rec.held.before:
            self._drop(rec.held.after)
        rec.held.after = self._hold(data) if len(data) <= self._cap() else None

    def _drop(self, data: bytes | None) -> None:
        if data is not None:
            self.kept -= len(data)

    def into(self, res: Any) -> None:
        res.files = self.changes
        if self.unlisted:
            self.session.warn(
                f"res.files lists the first {MAX_FILES:,} files the call changed; "
                f"{self.unlisted:,} more changes are not listed"
            )


def _shown(root: str, rel: str) -> str:
    return f"workspace:{rel}" if root == "workspace" else rel


def _area(root: str) -> str:
    return "workspace" if root == "workspace" else "run"


def _under(key: tuple[str, str], p: GemPath) -> bool:
    root, rel = key
    return root == p.root and (rel == p.rel or rel.startswith(p.rel + "/"))


def call_state(session: CallSession) -> FilesCall:
    return FilesCall(session)


def kept_bytes(changes: list[FileChange]) -> int:
    """The bytes of content `changes` hold (what keeping the result costs)."""
    seen: set[int] = set()
    n = 0
    for c in changes:
        for b in (c.held.after, c.held.before):
            if b is not None and id(b) not in seen:
                seen.add(id(b))
                n += len(b)
    return n
