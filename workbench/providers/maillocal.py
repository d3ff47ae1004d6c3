"""Real local mailboxes, read in place: Maildir folders and mbox files.

One folder or file is one account (id: the folder's name, or the file's name without `.mbox`,
unless given). Headers are indexed on first use and re-indexed when the folder or file changes
(new mail shows up on the next call); bodies are read only by `message`. No file is held open
between calls. The layouts are the ones stdlib `mailbox` reads and writes: Maildir `new/` and
`cur/` (a message's id is its unique name, the part before `:`, as `mailbox.Maildir` keys it;
dot-files ignored), mbox split at `From ` lines (id: the position, from 0, as `mailbox.mbox`
keys it — stable while mail is only appended).

Dates: the `Date:` header; missing or unparsable, a Maildir message's file mtime (what
Dovecot uses as INTERNALDATE), an mbox message's `From ` line date, else 0.

Hostile files (SEC5/SEC7): only regular files are read (a FIFO, device or a symlink to one is
skipped, and opened without blocking), messages are parsed as a stream within mailparse's
bounds, so a 200 MB message or a 1 GB line costs time in proportion to its size and never its
size in memory; nothing in a mailbox file makes a call fail other than with a coded error.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._regular import open_regular_file
from .mail import Envelope, Message
from .mailmock import DateIndex
from .mailparse import from_line_date, parse_envelope, parse_message, read_headers, split_mbox

__all__ = ["LocalMailbox", "MaildirMailbox", "MboxMailbox", "is_maildir", "local_mailbox"]


def is_maildir(path: Path) -> bool:
    return path.is_dir() and (path / "cur").is_dir() and (path / "new").is_dir()


class _Maildir:
    """One Maildir folder: `scan` indexes headers of new files, `read` returns a message's bytes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, ...] | None = None
        self._known: dict[str, tuple[str, int, Envelope]] = {}  # id -> (path, mtime, envelope)

    def scan(self, account: str) -> dict[str, tuple[Envelope, Any]] | None:
        try:
            stamp = tuple(os.stat(self.path / d).st_mtime_ns for d in ("new", "cur"))
        except FileNotFoundError:
            stamp = ()
        if stamp == self._stamp:
            return None
        self._stamp = stamp
        known, self._known = self._known, {}
        for sub in ("new", "cur"):
            try:
                entries = list(os.scandir(self.path / sub))
            except FileNotFoundError:
                continue
            for e in entries:
                if e.name.startswith(".") or not e.is_file():
                    continue
                key = e.name.split(":", 1)[0]
                try:
                    mtime = e.stat().st_mtime_ns // 1_000_000
                except OSError:  # gone since the listing: next scan
                    self._stamp = None
                    continue
                old = known.get(key)
                if old is not None and old[1] == mtime:
                    self._known[key] = (e.path, mtime, old[2])
                    continue
                try:
                    with open_regular_file(e.path) as fp:
                        headers = read_headers(fp)
                except FileNotFoundError:  # moved between listing and reading: next scan
                    self._stamp = None
                    continue
                except OSError:  # unreadable: skipped, as a FIFO or a device is
                    continue
                env = parse_envelope(headers, account=account, id=key, fallback_date=mtime)
                self._known[key] = (e.path, mtime, env)
        return {k: (v[2], v[0]) for k, v in self._known.items()}

    def reset(self) -> None:
        self._stamp = None

    def read(self, account: str, id: str, where: Any) -> Message:
        with open_regular_file(where) as fp:  # streamed: a huge message is never all in memory
            return parse_message(fp, account=account, id=id, fallback_date=self._known[id][1])


class _Mbox:
    """One mbox file: `scan` splits it and indexes headers, `read` returns a message's bytes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None

    def scan(self, account: str) -> dict[str, tuple[Envelope, Any]] | None:
        try:
            st = os.stat(self.path)
            stamp = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = (0, -1)
        if stamp == self._stamp:
            return None
        self._stamp = stamp
        out: dict[str, tuple[Envelope, Any]] = {}
        if stamp[1] < 0 or not stat.S_ISREG(st.st_mode):
            return out
        try:
            fp = open_regular_file(self.path)
        except OSError:  # gone or replaced since the stat: empty until it changes again
            self._stamp = None
            return out
        with fp:
            for key, (from_line, headers, start, stop) in enumerate(split_mbox(fp)):
                fallback = from_line_date(from_line) or 0
                env = parse_envelope(headers, account=account, id=str(key), fallback_date=fallback)
                out[str(key)] = (env, (start, stop, fallback))
        return out

    def reset(self) -> None:
        self._stamp = None

    def read(self, account: str, id: str, where: Any) -> Message:
        start, stop, fallback = where
        with open_regular_file(self.path) as fp:
            fp.seek(start)
            return parse_message(fp, account=account, id=id, fallback_date=fallback, limit=stop - start)


class LocalMailbox:
    """Accounts backed by Maildir folders and/or mbox files: {account id: source}."""

    def __init__(self, sources: Mapping[str, _Maildir | _Mbox]) -> None:
        self._sources = dict(sources)
        self._envelopes: dict[str, dict[str, tuple[Envelope, Any]]] = {a: {} for a in sources}
        self._index: dict[str, DateIndex] = {a: DateIndex() for a in sources}

    def __repr__(self) -> str:
        where = ", ".join(f"{a}={s.path}" for a, s in self._sources.items())
        return f"<{type(self).__name__} {where}>"

    def _refresh(self, account: str) -> dict[str, tuple[Envelope, Any]]:
        found = self._sources[account].scan(account)
        if found is not None:
            self._envelopes[account] = found
            self._index[account] = DateIndex((e.date, i) for i, (e, _) in found.items())
        return self._envelopes[account]

    def accounts(self) -> list[str]:
        return list(self._sources)

    def envelopes_since(self, account: str, since: int, limit: int) -> list[Envelope]:
        if account not in self._sources:
            return []
        envelopes = self._refresh(account)
        return [envelopes[i][0] for i in self._index[account].since(since, limit)]

    def message(self, account: str, id: str) -> Message | None:
        if account not in self._sources:
            return None
        for _ in range(2):  # a Maildir file may move (new/ -> cur/) after the scan: rescan once
            entry = self._refresh(account).get(id)
            if entry is None:
                return None
            try:
                return self._sources[account].read(account, id, entry[1])
            except FileNotFoundError:
                self._sources[account].reset()
        return None


def _accounts(
    paths: str | os.PathLike[str] | Mapping[str, str | os.PathLike[str]], account: str | None, name: Any
) -> dict[str, Path]:
    if isinstance(paths, Mapping):
        return {str(a): Path(p) for a, p in paths.items()}
    p = Path(paths)
    return {account or name(p): p}


class MaildirMailbox(LocalMailbox):
    """Maildir folders, read in place: `MaildirMailbox(path, account=None)` or {account: path}.

    A folder whose subfolders are all Maildirs is one account per subfolder.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | Mapping[str, str | os.PathLike[str]],
        *,
        account: str | None = None,
    ) -> None:
        if not isinstance(path, Mapping) and not is_maildir(Path(path)) and account is None:
            subs = sorted(p for p in Path(path).iterdir() if p.is_dir() and not p.name.startswith("."))
            if subs and all(is_maildir(s) for s in subs):
                path = {s.name: s for s in subs}
        paths = _accounts(path, account, lambda p: p.name)
        super().__init__({a: _Maildir(p) for a, p in paths.items()})


class MboxMailbox(LocalMailbox):
    """mbox files, read in place: `MboxMailbox(path, account=None)` or {account: path}."""

    def __init__(
        self,
        path: str | os.PathLike[str] | Mapping[str, str | os.PathLike[str]],
        *,
        account: str | None = None,
    ) -> None:
        paths = _accounts(path, account, lambda p: p.stem if p.suffix == ".mbox" else p.name)
        super().__init__({a: _Mbox(p) for a, p in paths.items()})


def local_mailbox(paths: Mapping[str, str | os.PathLike[str]]) -> LocalMailbox:
    """{account id: Maildir folder or mbox file}, mixed as they come."""
    return LocalMailbox(
        {str(a): _Maildir(Path(p)) if is_maildir(Path(p)) else _Mbox(Path(p)) for a, p in paths.items()}
    )
