"""Every bound the workbench puts on what a tool controls, as named data (SEC5).

Like Miniflare's `KVLimits`: rule modules read their numbers from a `Limits` value instead of
literals, so a test can shrink a limit to exercise it cheaply and a platform profile can carry
its own. The platform's documented limits (F12, N9, F8's 100 MB) sit next to the workbench's
own safety bounds, which the seeds do not state; those are chosen well above what a
legitimate tool needs and are listed in the README's security model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .._errors import WorkbenchError

MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """The bounds of one bench's calls (defaults: the Notochord platform + workbench bounds)."""

    # the platform's own (seed 000)
    file_bytes: int = 20 * MiB               # F12: per ctx.files read or write
    result_chars: int = 1_048_576            # N9: the tool's result as JSON text
    history_bytes: int = 100 * MiB           # F8: a history copy larger than this is not kept
    # the workbench's (SEC5): every ctx call and every result bounded
    sql_result_bytes: int = 16 * MiB         # rows one ctx.storage.sql call may return
    sql_value_bytes: int = 32 * MiB          # SQLITE_LIMIT_LENGTH: one string or blob
    sql_statement_bytes: int = 1 * MiB       # SQLITE_LIMIT_SQL_LENGTH: one statement's text
    schema_seconds: float = 30.0             # db/schema.sql at open (it is the gem's SQL too)
    storage_bytes: int = 1024 * MiB          # each database (the gem's SQL; data + kv + history)
    sqlite_heap_bytes: int = 1024 * MiB      # SQLite's memory, process-wide (hard_heap_limit)
    http_body_bytes: int = 20 * MiB          # one ctx.http.fetch response body
    resource_bytes: int = 2048 * MiB         # one resource download, streamed to disk
    resource_seconds: float = 1800.0         # one download attempt over all its addresses
    log_bytes: int = 1 * MiB                 # captured console output per call (head + tail)
    bridge_message_bytes: int = 64 * MiB     # one message between Python and the sandbox
    json_depth: int = 200                    # nesting of inputs, results, ctx arguments


DEFAULT = Limits()


def deadline_after(seconds: float | None) -> float | None:
    """A monotonic deadline `seconds` from now (None: no deadline)."""
    return None if seconds is None else time.monotonic() + seconds


def remaining(deadline: float | None, what: str) -> float | None:
    """Seconds left before `deadline`, or E_TIMEOUT when none are; None when unbounded."""
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise WorkbenchError("E_TIMEOUT", f"{what}: the call ran out of time (its timeout "
                             "covers the ctx calls it makes)", method=what)
    return left
