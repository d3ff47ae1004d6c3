"""One error root for the workbench, carrying the platform's error codes as data.

WorkbenchError            a platform error: .code is E_SCHEMA, E_PERM_DENIED, ...
├── GemLoadError          the gem folder or its manifest is unusable (E_MANIFEST)
└── UsageError            misuse of the workbench's own Python API (E_USAGE)
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._text import terminal_safe

TRACEBACK_CHARS = 64 * 1024  # of an E_INTERNAL's traceback: its last frames and the error

#: Every code the workbench can report, with what it means.
CODES: dict[str, str] = {
    "E_MANIFEST": "the gem folder or manifest.json is invalid",
    "E_UNKNOWN_TOOL": "no tool of that name in the gem",
    "E_SCHEMA": "the input does not match the tool's input schema",
    "E_RESULT_NOT_JSON": "the tool's return value cannot be serialised as JSON",
    "E_RESULT_TOO_LARGE": "the tool's return value is over 1,048,576 JSON characters",
    "E_TOOL_ERROR": "the tool raised or threw",
    "E_SANDBOX": "the Deno sandbox denied a capability (read, write, net, env, run, npm, …) or died",
    "E_TIMEOUT": "the call ran over its wall-clock limit and was stopped",
    "E_OUT_OF_MEMORY": "the sandbox ran out of memory",
    "E_PERM_DENIED": "the call is not allowed (permission, dot-entry, no conversation)",
    "E_PATH": "the path is not a valid gem path (absolute, '..', symlink escape)",
    "E_NOT_FOUND": "the file, folder or document does not exist",
    "E_EXISTS": "the target already exists and is never overwritten",
    "E_NOT_A_FOLDER": "a folder was expected",
    "E_IS_A_FOLDER": "a file was expected",
    "E_TOO_LARGE": "over a size limit (20 MB per read or write)",
    "E_INVALID_ARGUMENT": "an argument has the wrong type or value",
    "E_UNKNOWN_COLLECTION": "the collection is not declared in the manifest",
    "E_SQL": "SQLite rejected the statement",
    "E_SIDE_EFFECT": "a sideEffect: read tool wrote storage (strict mode)",
    "E_USAGE": "the workbench API was used wrongly",
    "E_INTERNAL": "the workbench itself failed (a bug or a broken provider): please report it",
    "E_UNSUPPORTED": "the workbench does not run this kind of tool (.wasm)",
    "E_MAILBOX": "the mail server cannot be reached, refused the login, or broke off",
    "E_HTTP": "ctx.http.fetch got no answer: timeout, connection failure, or no mock handler matched",
    "E_BUSY": "the state folder's database stayed locked by another process past the call's time",
    "E_STATE": "the bench's state database is unreadable (corrupt, or not a database), or a ctx "
    "was used after its call ended",
    "E_LIMIT": "a platform limit on calls was reached (50 cross-tool calls per invocation)",
    "E_DISPATCH": "ctx.tools could not dispatch the call (the platform's connection failed)",
    "E_RESOURCE": "a declared resource could not be downloaded and verified from any address",
    "E_BUNDLE": "a repro bundle (.gemrepro) is unusable: not a bundle, too large, a hash that does not "
    "match, an entry that escapes its folder or a link",
    "E_SMTP": "the SMTP server cannot be reached, refused the login, the sender, a recipient or the message",
    "E_CASE": "a pinned call's case file (tests/calls/…) is unreadable or holds what a replay refuses",
    "E_REPLAY": "a replay made a ctx call its pinned case did not record",
    "E_CONVERSATION": "a recorded conversation to replay is unreadable, over a bound (size, depth, calls), "
    "in no format read, or holds a field of the wrong type (named)",
    "E_SECRET": "a secret would be written where it cannot be masked (a pinned call's case): nothing was",
    "E_TRUST": "a repro bundle would run code outside the sandbox (Python tools, tests/doctor.py): "
    "refused unless its opener trusts it (--trust, trust=True)",
    "E_CDP": "a Chrome DevTools Protocol command to the sandbox's inspector failed or got no answer in time",
    "E_SOURCEMAP": "a script's source map is unreadable: too large, not JSON, a broken VLQ number, an "
    "index out of range",
    "E_INTERRUPTED": "the call was stopped by Ctrl-C (a notebook's interrupt); what it wrote before was kept",
}


class WorkbenchError(Exception):
    """An error with a platform code, a message, and where it applies (field, path or limit)."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def __str__(self) -> str:  # what pytest reports and tracebacks show: a tool's text, made safe
        return f"{self.code}: {terminal_safe(self.message)}"

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.details}


class GemLoadError(WorkbenchError):
    """The gem cannot be loaded; .details has `file` and `pointer` (or `line`/`column`)."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__("E_MANIFEST", message, **details)


class GemWarning(UserWarning):
    """Something in a gem the platform accepts but that is likely a mistake (an Ekanos tool's
    unknown key that misspells `parameters`): the gem loads; the warning names the field."""


class UsageError(WorkbenchError):
    """The workbench's own API was called wrongly (not a tool or platform error)."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__("E_USAGE", message, **details)


def internal_error(where: str, exc: Exception) -> WorkbenchError:
    """E_INTERNAL for an exception the workbench's own code let out of `where` (a bug, or a
    provider that broke): said as one, with the traceback in details["traceback"] to report
    (its last TRACEBACK_CHARS characters), instead of raised out of an API that never raises
    for bad data (SEC7). Never raises itself."""
    try:
        text = "".join(traceback.format_exception(exc))
        summary = f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001  (an exception whose str() fails)
        text, summary = "", type(exc).__name__
    if len(text) > TRACEBACK_CHARS:
        text = "…" + text[-TRACEBACK_CHARS:]
    return WorkbenchError(
        "E_INTERNAL",
        f"{where} failed inside the workbench: {summary[:2000]}. This is a bug in the workbench, "
        "not in the tool: please report it with the traceback in error.details['traceback']",
        traceback=text,
        exception=type(exc).__name__,
    )


class CallInterrupted(KeyboardInterrupt):
    """Ctrl-C (a kernel's interrupt) stopped a tool call: it still stops the cell or script, as
    KeyboardInterrupt; the call is in `bench.calls()` as E_INTERRUPTED, and `.result` is it."""

    def __init__(self, message: str, result: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.result = result

    def _render_traceback_(self) -> list[str]:
        """IPython shows this instead of a traceback: one line, as the CLI's Ctrl-C is (the
        frames are the workbench's, where the signal happened to land)."""
        return [f"KeyboardInterrupt: {terminal_safe(self.message)}"]


# -- the surface whose words a hint uses -------------------------------------------------------
# process-wide, not a ContextVar: a Python tool's own threads and the Deno bridge make ctx calls
# outside the command's context, and one process runs one command
_command_line = False


@contextmanager
def command_line() -> Iterator[None]:
    """Within it, a hint names the `gem-workbench` command's flags, not open()'s keywords or a
    bench's methods (ctx/surface.py spells both from the option table)."""
    global _command_line
    before, _command_line = _command_line, True
    try:
        yield
    finally:
        _command_line = before


def in_command_line() -> bool:
    """Whether hints name command-line flags now (`command_line`)."""
    return _command_line
