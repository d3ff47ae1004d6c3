"""An Ekanos integration's TypeScript tests, for the pytest plugin (testing/ reaches runners
only through the Face): which folders have them, and each test file's cases."""

from __future__ import annotations

from pathlib import Path

from .ctx.stores import default_state_dir
from .runners.deno.testrun import TEST_SUFFIXES, TsTestCase, run_ts_tests, test_files

__all__ = ["TsTestCase", "integration_of", "is_ts_integration", "run_ts_test_file", "ts_test_files"]


def is_ts_integration(folder: Path) -> bool:
    """An Ekanos integration: `integration.ts` or `integration.js`, and no manifest.json."""
    has_module = (folder / "integration.ts").is_file() or (folder / "integration.js").is_file()
    return has_module and not (folder / "manifest.json").exists()


def integration_of(file: Path) -> Path | None:
    """The integration folder whose tests/ holds `file` (a *.test.ts|js), or None."""
    if not file.name.endswith(TEST_SUFFIXES):
        return None
    for parent in file.parents:
        if parent.name == "tests" and is_ts_integration(parent.parent):
            return parent.parent
    return None


def ts_test_files(folder: Path) -> list[Path]:
    """The integration's `tests/**/*.test.ts|js`, sorted."""
    return test_files(folder)


def run_ts_test_file(folder: Path, file: Path, *, timeout: float | None) -> list[TsTestCase]:
    """Every case of one test file, run with `deno test` in the integration's sandbox rules."""
    deno_dir = default_state_dir(folder.resolve().name, folder) / "deno"
    return run_ts_tests(folder, [file], deno_dir=deno_dir, timeout=timeout)
