"""The storage engine's failures as the providers' own error, translated inside them.

As httpx turns its transport's errors into its own inside the transport, a provider over SQLite
turns `sqlite3.Error` into `EngineError` at its seam: every public method of `SqlDatabase` and
`SqliteDataStore` (`translating`), and the rows of a cursor it hands out (`TranslatedRows`).
No SQLite exception crosses into the ctx layer; there one function, `storage_error`, gives each
kind of failure its code, once.
"""

from __future__ import annotations

import functools
import sqlite3
import types
from collections.abc import Callable, Iterator
from typing import Any, Literal, Protocol, TypeVar

from .._errors import WorkbenchError

__all__ = ["EngineError", "EngineLimits", "TranslatedRows", "engine_error", "storage_error", "translating"]

Kind = Literal["interrupted", "busy", "full", "memory", "too_big", "attach", "sql"]


class EngineLimits(Protocol):
    """The bounds SQLite is held to (the platform's `Limits` has them)."""

    @property
    def sql_value_bytes(self) -> int: ...

    @property
    def sql_statement_bytes(self) -> int: ...

    @property
    def storage_bytes(self) -> int: ...

    @property
    def sqlite_heap_bytes(self) -> int: ...


class Refused(Protocol):
    """What a statement's authorizer refused (sqlguard's `Guard`): the first reason, or ""."""

    @property
    def denied(self) -> str: ...


class EngineError(Exception):
    """A storage engine failure, classified where it happened: `kind` says which (stopped at
    the deadline, locked, full, out of memory, a value too big, an attach refused by the
    confinement, any other SQL error); `text` is the engine's own
    words."""

    def __init__(self, kind: Kind, text: str) -> None:
        super().__init__(text)
        self.kind: Kind = kind
        self.text = text


def engine_error(exc: sqlite3.Error) -> EngineError:
    """SQLite's exception as an EngineError of its kind (by SQLite's words: the exception
    classes do not tell a full database from a locked one)."""
    msg = str(exc)
    kind: Kind
    if msg == "interrupted":  # by the ctx layer's watchdog at the call's deadline
        kind = "interrupted"
    elif "database is locked" in msg or "database is busy" in msg:
        kind = "busy"
    elif "database or disk is full" in msg:
        kind = "full"
    elif msg == "out of memory":
        kind = "memory"
    elif "too big" in msg or "too long" in msg or "too large" in msg:
        kind = "too_big"
    elif "too many attached databases" in msg:
        kind = "attach"
    else:
        kind = "sql"
    return EngineError(kind, msg)


class TranslatedRows:
    """A cursor's rows with SQLite's failures as EngineError (a row can fail as it is read:
    malformed JSON, the deadline's interrupt), and what the statement changed."""

    __slots__ = ("_cur",)

    def __init__(self, cur: sqlite3.Cursor) -> None:
        self._cur = cur

    @property
    def description(self) -> Any:
        return self._cur.description

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cur.lastrowid

    def __iter__(self) -> Iterator[Any]:
        try:
            yield from self._cur
        except sqlite3.Error as exc:
            raise engine_error(exc) from exc

    def fetchone(self) -> Any:
        try:
            return self._cur.fetchone()
        except sqlite3.Error as exc:
            raise engine_error(exc) from exc

    def fetchall(self) -> list[Any]:
        try:
            return self._cur.fetchall()
        except sqlite3.Error as exc:
            raise engine_error(exc) from exc

    def close(self) -> None:
        self._cur.close()


def _translated(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def method(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except sqlite3.Error as exc:
            raise engine_error(exc) from exc

    return method


C = TypeVar("C", bound=type)


def translating(cls: C) -> C:
    """Each public method the class defines raises EngineError where SQLite raised: the seam
    of a provider is all of its public methods, so none is left out by hand (but those marked
    `untouched`, which never reach SQLite)."""
    for name, value in list(vars(cls).items()):
        if (
            not name.startswith("_")
            and isinstance(value, types.FunctionType)
            and not getattr(value, _PLAIN, False)
        ):
            setattr(cls, name, _translated(value))
    return cls


_PLAIN = "__engine_untouched__"
F = TypeVar("F", bound=Callable[..., Any])


def untouched(fn: F) -> F:
    """Mark a method of a `translating` class that never reaches SQLite (it returns an object
    it holds): left as it is, since it runs on every call (a wrapper's frame per call)."""
    setattr(fn, _PLAIN, True)
    return fn


def storage_error(
    exc: BaseException, limits: EngineLimits, *, guard: Refused | None = None, **details: Any
) -> WorkbenchError | None:
    """A storage engine failure as a coded error; None when `exc` is not one (the ctx layer's
    own failures). With the statement's `guard`: a refusal of the authorizer (or of the attach
    limit) is E_PERM_DENIED. The one place each kind gets its code."""
    if not isinstance(exc, EngineError):
        return None
    if guard is not None and guard.denied:
        return WorkbenchError("E_PERM_DENIED", f"SQLite: {guard.denied} (SEC1)", **details)
    kind, msg = exc.kind, exc.text
    if kind == "attach" and guard is not None:
        return WorkbenchError(
            "E_PERM_DENIED",
            "ATTACH and VACUUM are not available: the gem's SQL reaches only its own database (SEC1)",
            **details,
        )
    if kind == "interrupted":
        return WorkbenchError(
            "E_TIMEOUT",
            "the storage operation was stopped: the call ran out "
            "of time (its timeout covers the ctx calls it makes)",
            **details,
        )
    if kind == "busy":
        return busy_error(exc)
    if kind == "full":
        return WorkbenchError(
            "E_TOO_LARGE",
            f"storage is full: each database holds at most {limits.storage_bytes:,} bytes",
            limit=limits.storage_bytes,
            **details,
        )
    if kind == "memory":
        return WorkbenchError(
            "E_TOO_LARGE",
            f"SQLite ran out of memory: it may hold at most {limits.sqlite_heap_bytes:,} bytes at once",
            limit=limits.sqlite_heap_bytes,
            **details,
        )
    if kind == "too_big":
        return WorkbenchError(
            "E_TOO_LARGE",
            f"SQLite: {msg} (strings and blobs up to "
            f"{limits.sql_value_bytes:,} bytes, statements up to "
            f"{limits.sql_statement_bytes:,})",
            **details,
        )
    return WorkbenchError("E_SQL", f"SQLite: {msg}", **details)


def busy_error(exc: BaseException) -> WorkbenchError:
    """A locked state database (another process's call) as a coded error, not E_INTERNAL."""
    return WorkbenchError(
        "E_BUSY",
        f"the state database stayed locked by another process "
        f"until the call ran out of time ({exc}); try again, or give each "
        "process its own state_dir",
    )
