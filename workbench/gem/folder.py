"""Reading a gem folder as hostile data (SEC2, SEC7), for every platform's loader.

Only GemLoadError (naming the file, and the JSON pointer where there is one) ever leaves
here: a file is read only if it is a regular file within its size limit, JSON nested at most
MAX_DEPTH levels and without lone surrogates; paths are resolved without raising.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

from .._errors import GemLoadError
from .._text import is_unicode
from .schema_text import linked_pointer

MiB = 1024 * 1024
MAX_JSON_BYTES = 4 * MiB  # manifest.json: far above any real one (tens of KB)
MAX_DEPTH = 64  # nesting of manifest.json, inputSchemas included
MAX_SCHEMA_SQL_BYTES = 4 * MiB  # db/schema.sql
MAX_TOOL_BYTES = 64 * MiB  # one tool's source file, as the runners read it

#: the files a gem's definition is read from (the edit loop watches them; the editor types in
#: .gem-workbench/ are made from them)
DEFINITIONS = ("manifest.json", "integration.ts", "integration.js", "db/schema.sql")


def regular_fd(path: Path, *, follow: bool = True) -> int | str:
    """A read-only fd of the regular file at `path`, or why there is none ("is a FIFO…").

    Opened non-blocking (a FIFO swapped in must not hang the caller: the edit loop re-reads
    gem files before calls) and checked with fstat on the fd itself, so what is checked is
    what is read. `follow=False` refuses a link in the last step (O_NOFOLLOW): for a path
    already resolved, a link there now was swapped in after the check."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "cannot be read: " + ("a symbolic link loop" if follow else "it became a symbolic link")
        return f"cannot be read: {exc.strerror}"
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        return f"cannot be read: {exc.strerror}"
    if not stat.S_ISREG(mode):
        os.close(fd)
        return "is a folder" if stat.S_ISDIR(mode) else "is not a regular file (a FIFO, socket or device)"
    return fd


def open_regular(path: Path, *, follow: bool = True) -> int:
    """regular_fd, or GemLoadError naming the file."""
    got = regular_fd(path, follow=follow)
    if isinstance(got, str):
        got = f"not found in {path.parent}" if got == "does not exist" else got
        raise GemLoadError(f"{path.name} {got}", file=str(path))
    return got


def read_file(path: Path, limit: int, *, follow: bool = True) -> bytes:
    """The bytes of a regular file of at most `limit` bytes, or GemLoadError saying why not
    (a directory, FIFO, device, symlink loop or huge file is an error, never a hang)."""
    fd = open_regular(path, follow=follow)
    try:
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 * MiB, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise GemLoadError(f"{path.name} is larger than {limit:,} bytes", file=str(path), limit=limit)
        return b"".join(chunks)
    except OSError as exc:
        raise GemLoadError(f"{path.name} cannot be read: {exc.strerror}", file=str(path)) from None
    finally:
        os.close(fd)


def read_text(path: Path, limit: int) -> str:
    data = read_file(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GemLoadError(
            f"{path.name} is not UTF-8 ({exc.reason} at byte {exc.start})", file=str(path)
        ) from None


def read_json(path: Path) -> Any:
    text = read_text(path, MAX_JSON_BYTES)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GemLoadError(
            f"{path.name} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            file=str(path),
            line=exc.lineno,
            column=exc.colno,
        ) from None
    except RecursionError:  # the C parser's own guard, around 1,000 levels
        raise GemLoadError(
            f"{path.name} is nested deeper than {MAX_DEPTH} levels", file=str(path), limit=MAX_DEPTH
        ) from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise GemLoadError(f"{path.name} is not usable JSON: {exc}", file=str(path)) from None
    where, why = hostile_value(value)
    if why:
        raise GemLoadError(
            f"{path.name}: {where or '/'}: {why}",
            file=str(path),
            pointer=where,
            **({"limit": MAX_DEPTH} if "deeper" in why else {}),
        )
    return value


def hostile_value(value: Any) -> tuple[str, str]:
    """(pointer, why) of the first place nested deeper than MAX_DEPTH or holding a
    lone surrogate ("\\ud800": not Unicode text, cannot be printed, stored or sent as UTF-8);
    ("", "") when there is none. Iterative, with parent links: the data is hostile."""
    up: list[tuple[int, Any]] = []  # container -> (its parent container, its key there)
    stack: list[tuple[Any, int, int, Any]] = [(value, 0, -1, None)]  # value, depth, parent, key

    def at(parent: int, key: Any) -> str:
        return linked_pointer(up, parent, key)

    while stack:
        v, depth, parent, key = stack.pop()
        if isinstance(v, str):
            if not v.isascii() and not is_unicode(v):
                return at(parent, key), "a string holds a lone surrogate, which is not Unicode text"
        elif isinstance(v, (dict, list)):
            if depth >= MAX_DEPTH:
                return at(parent, key), f"nested deeper than {MAX_DEPTH} levels"
            up.append((parent, key))
            me = len(up) - 1
            if isinstance(v, dict):
                for k, item in v.items():
                    if not k.isascii() and not is_unicode(k):
                        return at(me, k), "a key holds a lone surrogate, which is not Unicode text"
                    stack.append((item, depth + 1, me, k))
            else:
                stack.extend((item, depth + 1, me, i) for i, item in enumerate(v))
    return "", ""


def realpath(path: Path) -> Path | None:
    """The path with links resolved, or None when it cannot be (a NUL byte, a loop that
    os.path.realpath reports): Path.resolve raises RuntimeError on loops before 3.13."""
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return None


def tool_open_problem(file: Path | None, rel: str) -> str | None:
    """Why the tool file `rel`, resolved to `file` (None: it could not be), is not a regular
    file now, or None. Opened, never waited on: a FIFO is refused, not read."""
    if file is None:
        return f"tool file {rel} cannot be resolved"
    got = regular_fd(file, follow=False)
    if isinstance(got, str):
        return f"tool file {rel} {got}"
    os.close(got)
    return None


def tool_file_problem(root: Path, rel: str) -> str | None:
    """Why the tool file `rel` cannot be run, if it cannot: it must be a regular file inside
    tools/ (links only within it) with the extension the manifest declares."""
    file = realpath(root / rel)
    if file is not None and not file.is_relative_to(root / "tools"):
        return f"{rel} is outside the gem's tools/ folder"
    why = tool_open_problem(file, rel)
    if why is not None or file is None:
        return why
    if file.suffix != Path(rel).suffix:
        return f"tool file {rel} is a link to {file.name}, whose extension differs"
    return None


def escaping_links(root: Path) -> list[tuple[Path, str]]:
    """The gem folder's symlinks that lead outside it, or nowhere ever (a loop, or a chain of
    over 40 links, which nothing can open), each with why: (path, "outside" | "loop")."""
    out = []
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath) / name
            if p.is_symlink():
                target = realpath(p)
                if target is None or not target.is_relative_to(root):
                    out.append((p, "outside"))
                    continue
                try:
                    os.path.realpath(p, strict=True)
                except OSError as exc:
                    if exc.errno == errno.ELOOP:
                        out.append((p, "loop"))
                except ValueError:
                    pass
    return sorted(out)


def clip(text: str, limit: int = 300) -> str:
    """A message of bounded size (jsonschema's quote whole values), printable as UTF-8."""
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


def schema_sql(root: Path) -> str | None:
    """db/schema.sql (a fixed name): a regular UTF-8 file inside the gem, or None."""
    path = root / "db" / "schema.sql"
    if not os.path.lexists(path):
        return None
    real = realpath(path)
    if real is None or not real.is_relative_to(root):
        raise GemLoadError("db/schema.sql is a link leading outside the gem folder", file=str(path))
    return read_text(path, MAX_SCHEMA_SQL_BYTES)
