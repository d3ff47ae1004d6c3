"""An Ekanos integration's `tests/*.test.ts` as pytest items: one item per TS test case.

The file runs once, with `deno test`, when pytest collects it (Deno names a file's cases only by
running it); each item then reports its case: a failed case fails with its message, an ignored
one (`it.skip`, `it.todo`, the others when `.only` is used) is skipped. A file that fails
outside any test (an import error, an uncaught rejection, a timeout) is one failed item.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .._tstests import TsTestCase

#: How a test file's name ends (kept here so collecting other files imports nothing).
SUFFIXES = (".test.ts", ".test.js")


class TsTestFailure(Exception):
    """A TS test case failed; `str()` is Deno's message (the assertion, its source line, the stack)."""


class TsTestFile(pytest.File):
    """A `*.test.ts` of an integration: run once, one item per case it reported."""

    integration: Path
    timeout: float | None

    def collect(self) -> Iterator[pytest.Item]:
        from .._tstests import run_ts_test_file

        for case in run_ts_test_file(self.integration, self.path, timeout=self.timeout):
            yield TsTestItem.from_parent(self, name=case.name, case=case)


class TsTestItem(pytest.Item):
    """One case of a TS test file, already run: reports its outcome."""

    def __init__(self, *, case: TsTestCase, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case

    def runtest(self) -> None:
        if self.case.outcome == "ignored":
            pytest.skip("ignored in the test file (it.skip, it.todo, or another test has .only)")
        if self.case.outcome != "passed":
            raise TsTestFailure(self.case.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | Any:
        if isinstance(excinfo.value, TsTestFailure):
            from ._report import failure_report
            from .notebook import first_line

            headline = f"{self.path}: {self.case.name} failed"
            text = f"{headline}\n------------------\n{self.case.message}\n"
            cause = first_line(self.case.message.strip())  # (in the short summary)
            return failure_report(self.path, f"{headline}: {cause}" if cause else headline, text)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, 0, f"{self.path.name} > {self.case.name}"  # (a skip mark needs a line)


def collect_ts_file(file_path: Path, parent: pytest.Collector, timeout: float | None) -> TsTestFile | None:
    """A TsTestFile when `file_path` is in the tests/ folder of an Ekanos integration."""
    from .._tstests import integration_of

    folder = integration_of(file_path)
    if folder is None:
        return None
    node = TsTestFile.from_parent(parent, path=file_path)
    node.integration, node.timeout = folder, timeout
    return node
