"""A failure report for pytest whose short summary line is its headline, not all of it.

pytest's short summary ("FAILED item - message") shows a report given as a string whole on CI
(CI=true) and with -vv: every failing notebook's report then came twice. A report with a crash
location carries its own message; xdist carries it from its workers as it does a traceback's.
"""

from __future__ import annotations

from pathlib import Path

from _pytest._code.code import ReprExceptionInfo, ReprFileLocation, ReprTracebackNative

from .._text import terminal_safe


def failure_report(path: Path, headline: str, text: str) -> ReprExceptionInfo:
    """`text` as the report (as is), `headline` as its line in the short summary (less the
    path it starts with: the item's id there, and the crash location of --tb=line, have it)."""
    message = terminal_safe(headline.removeprefix(f"{path}: "))  # a tool's text reaches a terminal
    return ReprExceptionInfo(
        reprtraceback=ReprTracebackNative(terminal_safe(text).splitlines(keepends=True)),
        reprcrash=ReprFileLocation(str(path), 1, message),
    )
