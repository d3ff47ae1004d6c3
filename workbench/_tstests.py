"""An Ekanos integration's TypeScript tests, for the pytest plugin (testing/ reaches runners
only through the Face): which folders have them, and each test file's cases."""

from __future__ import annotations

from pathlib import Path

from ._errors import WorkbenchError
from .ctx.stores import default_state_dir
from .runners.deno import testrun
from .runners.deno.testrun import TEST_SUFFIXES, Sdk, TsTestCase, test_files

__all__ = [
    "TsTestCase",
    "ekanos_sdk",
    "integration_of",
    "is_ts_integration",
    "run_ts_test_file",
    "run_ts_tests",
    "ts_test_files",
]


def ekanos_sdk() -> Sdk:
    """What Ekanos serves an integration's tests (`@ekanos/sdk`, its testing module, the vitest
    shim), from its profile: the runner is handed it and imports no platform."""
    from .platforms import profile

    prof = profile("ekanos")
    if prof.import_map is None:  # a profile replaced by a plugin without its SDK
        raise WorkbenchError("E_INTERNAL", "the ekanos profile has no import_map for its SDK")
    return Sdk(prof.import_map, prof.sdk_dirs)


def run_ts_tests(
    folder: Path, files: list[Path] | None = None, *, deno_dir: Path, timeout: float | None = 120.0
) -> list[TsTestCase]:
    """Every case of the integration's test files (default: all), with the Ekanos SDK."""
    return testrun.run_ts_tests(folder, files, sdk=ekanos_sdk(), deno_dir=deno_dir, timeout=timeout)


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
