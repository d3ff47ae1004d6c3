"""Gem paths (F9, F10, F11): `workspace:` prefix, relative only, no escapes, no dot-entries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._errors import WorkbenchError

if TYPE_CHECKING:
    from ._session import CallSession

PREFIX = "workspace:"
MAX_NAME_BYTES = 255  # per file or folder name, in UTF-8 (ext4, APFS, NTFS all stop near here)
MAX_PATH_BYTES = 1024  # per relative path: the folder's own path must still fit the OS limit


@dataclass(frozen=True)
class GemPath:
    """A checked path: which root, the path inside it, and how the gem wrote it."""

    root: str
    rel: str
    raw: str
    hidden: bool  # a dot-entry of the conversation folder: does not exist for the gem (F10)

    @property
    def is_workspace(self) -> bool:
        return self.root == "workspace"

    def child(self, name: str) -> GemPath:
        rel = f"{self.rel}/{name}" if self.rel else name
        raw = self.raw if self.raw.endswith(("/", ":")) or not self.raw else self.raw + "/"
        return GemPath(self.root, rel, raw + name, self.hidden or _is_dot(name, self.root))


def _is_dot(segment: str, root: str) -> bool:
    return root == "workspace" and segment.startswith(".")


def hidden(root: str, rel: str) -> bool:
    """Whether the entry at `rel` of provider root `root` is, or is inside, a dot-entry of the
    conversation folder: one the gem cannot see, so nothing copies it on its behalf (SEC3)."""
    return any(_is_dot(s, root) for s in rel.split("/"))


def split(raw: object) -> tuple[bool, list[str]]:
    """(in workspace?, segments) for a raw gem path; raises E_PATH / E_INVALID_ARGUMENT."""
    if not isinstance(raw, str):
        raise WorkbenchError(
            "E_INVALID_ARGUMENT",
            f"path must be a string, got {type(raw).__name__}",
            path=raw if raw is None else repr(raw),
        )
    ws = raw.startswith(PREFIX)
    rest = raw[len(PREFIX) :] if ws else raw
    if "\x00" in rest:
        raise WorkbenchError("E_PATH", f"path {raw!r} contains a NUL character", path=raw)
    try:
        rest.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone UTF-16 surrogate: no file name can hold it
        raise WorkbenchError(
            "E_PATH", f"path {raw!r} is not valid Unicode (lone surrogate at {exc.start})", path=raw
        ) from None
    if "\\" in rest:
        raise WorkbenchError("E_PATH", f"path {raw!r} contains '\\': gem paths use '/'", path=raw)
    if rest.startswith("/") or (len(rest) > 1 and rest[1] == ":" and rest[0].isalpha()):
        raise WorkbenchError(
            "E_PATH",
            f"path {raw!r} is absolute: gems use paths relative to the "
            "run folder, or 'workspace:<relative path>'",
            path=raw,
        )
    segs = [s for s in rest.split("/") if s not in ("", ".")]
    if ".." in segs:
        raise WorkbenchError(
            "E_PATH", f"path {raw!r} uses '..': going outside the folder is rejected", path=raw
        )
    for s in segs:
        if len(s.encode("utf-8")) > MAX_NAME_BYTES:  # what file systems hold, mock or real
            raise WorkbenchError(
                "E_PATH",
                f"path {raw!r}: the name {s[:40]!r}… is over {MAX_NAME_BYTES} bytes",
                path=raw,
                limit=MAX_NAME_BYTES,
            )
    if len("/".join(segs).encode("utf-8")) > MAX_PATH_BYTES:
        raise WorkbenchError(
            "E_PATH", f"path {raw[:60]!r}… is over {MAX_PATH_BYTES} bytes", path=raw, limit=MAX_PATH_BYTES
        )
    return ws, segs


def resolve(session: CallSession, raw: object) -> GemPath:
    """Check a gem path and map it to a provider root and path, following symlinks inside."""
    ws, segs = split(raw)
    assert isinstance(raw, str)
    if ws and not session.conversation:
        raise WorkbenchError(
            "E_PERM_DENIED",
            f"{raw!r}: this call has no conversation, so 'workspace:' paths are not available (F11)",
            path=raw,
        )
    root = "workspace" if ws else session.run_root
    rel = "/".join(segs)
    real = session.providers.files.resolve(root, rel)
    if real is None:
        raise WorkbenchError(
            "E_PATH",
            f"path {raw!r} leads outside the "
            f"{'conversation' if ws else 'run'} folder through a symbolic link, "
            "or through a loop or a chain of over 40 links",
            path=raw,
        )
    hidden = any(_is_dot(s, root) for s in segs + real.split("/"))
    return GemPath(root, real, raw, hidden)
