"""Run an Ekanos integration's TypeScript tests (`tests/**/*.test.ts`) with `deno test`.

Each test file runs in its own `deno test` process, with the SDK's import map (`@ekanos/sdk`,
`@ekanos/sdk/testing`, `vitest`), read access to the integration folder and the SDK only (no
net, env, write, run), the sandbox's minimal environment and a timeout; its static import graph
is checked first (`imports.py`: Deno loads it without checking `--allow-read`). One process per
file because Deno's JUnit report names the file that called `Deno.test`, which under the vitest
shim is the shim; and because a file that throws at import then fails alone. Results come from
the JUnit report (`--junit-path`: a FIFO, read with a bound as Deno writes it); the console
output is kept only for what the report lacks (an uncaught error, a timeout), bounded.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..._deno import DENO_FLAGS, deno_bin, minimal_env
from ..._errors import WorkbenchError
from ..._text import terminal_safe
from ...gem.links import GemLinks
from ..python import CappedLog, render_logs
from .imports import refused_import
from .pump import Bytes, capped, pump

#: Bytes of console output kept per file (its head and tail).
OUTPUT_LIMIT = 64 * 1024
#: Bytes of a file's JUnit report read at most; more stops the run.
JUNIT_LIMIT = 16 * 1024 * 1024
TEST_SUFFIXES = (".test.ts", ".test.js")
# Deno exits 1 when a test used `only` even if all passed; vitest does not, and neither do we.
_ONLY = 'Test failed because the "only" option was used'


@dataclass(frozen=True)
class TsTestCase:
    """One test case of a file: `outcome` is "passed", "failed" or "ignored"; `duration` in s."""

    name: str
    file: Path
    outcome: str
    duration: float = 0.0
    message: str = ""


def test_files(folder: Path) -> list[Path]:
    """`<folder>/tests/**/*.test.ts|js`, sorted; entries that lead out of the folder are left out."""
    root = folder.resolve()
    tests = root / "tests"
    if not tests.is_dir() or not tests.resolve().is_relative_to(root):
        return []
    found = []
    for path in sorted(tests.rglob("*")):
        if path.name.endswith(TEST_SUFFIXES) and path.is_file() and path.resolve().is_relative_to(root):
            found.append(path)
    return found


@dataclass(frozen=True)
class Sdk:
    """What the platform serves the tests (its profile's `import_map` and `sdk_dirs`): the
    caller hands it over, so runners never import a platform."""

    import_map: Path
    dirs: Sequence[Path] = ()


def run_ts_tests(
    folder: Path,
    files: list[Path] | None = None,
    *,
    sdk: Sdk,
    deno_dir: Path,
    timeout: float | None = 120.0,
) -> list[TsTestCase]:
    """Run the integration's test files (default: all of them); every case of every file,
    with the platform's `sdk` (its import map, and the folders Deno may read it from).

    `timeout` is per file; a file that runs over it, or fails outside any test (an import error,
    an uncaught rejection), gives one failed case named "(timeout)" or "(uncaught error)".
    """
    folder = folder.resolve()
    cases: list[TsTestCase] = []
    links = GemLinks(folder).check()  # N1: Deno would follow a link out of the folder
    if links is not None:
        return [TsTestCase("(links)", Path(f), "failed", message=links.message)
                for f in (test_files(folder) if files is None else files)]  # fmt: skip
    for file in test_files(folder) if files is None else files:
        cases += _run_file(folder, Path(file).resolve(), sdk=sdk, deno_dir=deno_dir, timeout=timeout)
    return cases


def _command(folder: Path, file: Path, junit: Path, sdk: Sdk) -> list[str]:
    return [
        deno_bin(),
        "test",
        *DENO_FLAGS,
        # vitest does not type-check either; `gem-workbench check --typecheck` does
        "--no-check",
        "--v8-flags=--max-old-space-size=512",
        f"--import-map={sdk.import_map}",
        f"--allow-read={','.join(map(str, (folder, *sdk.dirs)))}",
        f"--junit-path={junit}",
        str(file),
    ]


def _run_file(
    folder: Path, file: Path, *, sdk: Sdk, deno_dir: Path, timeout: float | None
) -> list[TsTestCase]:
    deno_dir.mkdir(parents=True, exist_ok=True)
    # The Cache API writes under DENO_DIR/location_data with no permission check (see Sandbox):
    # a file in its place makes it fail, so tests cannot write either.
    blocker = deno_dir / "location_data"
    if not blocker.is_file():
        shutil.rmtree(blocker, ignore_errors=True)
        blocker.touch()
    deadline = None if timeout is None else time.monotonic() + timeout
    refused = refused_import(
        file, [folder, *sdk.dirs], import_map=sdk.import_map, deno_dir=deno_dir, deadline=deadline
    )
    if refused is not None and refused.code == "E_TIMEOUT":
        return [
            TsTestCase("(timeout)", file, "failed", timeout or 0.0, _timeout_message(timeout, str(refused)))
        ]
    if refused is not None:
        return [TsTestCase("(imports)", file, "failed", 0.0, str(refused))]
    output, code, report = _run_deno_test(folder, file, sdk, deno_dir, deadline)
    if code == "full":
        over = WorkbenchError(
            "E_TOO_LARGE",
            f"the JUnit report of {file.name} is over {JUNIT_LIMIT:,} bytes (the limit of a test "
            "file's report): the run was stopped as Deno wrote it. Fewer or shorter test names",
            limit=JUNIT_LIMIT,
        )
        return [TsTestCase("(report)", file, "failed", 0.0, str(over))]
    cases = _parse_junit(report, file)
    if code == "timeout":
        return [
            *cases,
            TsTestCase("(timeout)", file, "failed", timeout or 0.0, _timeout_message(timeout, output)),
        ]
    failed = any(c.outcome == "failed" for c in cases)
    if code != 0 and not failed and not (_ONLY in output and cases):
        cases.append(TsTestCase("(uncaught error)", file, "failed", 0.0, _uncaught(output, code)))
    return cases


def _run_deno_test(
    folder: Path, file: Path, sdk: Sdk, deno_dir: Path, deadline: float | None
) -> tuple[str, str | int | None, bytes | None]:
    """(console output, exit code or "timeout" or "full", the JUnit report or None).

    The report goes to a FIFO read as Deno writes it, JUNIT_LIMIT bytes at most: nothing of it
    is stored on disk, and a report over the limit stops the run (SEC5)."""
    tmp = Path(tempfile.mkdtemp(prefix="wb-tstest-"))
    junit = tmp / "junit.xml"
    log, report = CappedLog(OUTPUT_LIMIT), Bytes(JUNIT_LIMIT)
    try:
        os.mkfifo(junit, 0o600)
        fifo = os.open(junit, os.O_RDONLY | os.O_NONBLOCK)  # never blocks: no writer needed
        try:
            proc = subprocess.Popen(
                _command(folder, file, junit, sdk),
                cwd=folder,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=minimal_env(deno_dir),
                start_new_session=True,
            )
            assert proc.stdout is not None
            try:
                out = proc.stdout.fileno()
                status = pump(proc, out, {out: capped(log), fifo: report}, deadline)
            finally:
                proc.stdout.close()
        finally:
            os.close(fifo)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    output = terminal_safe(render_logs([("output", log)], OUTPUT_LIMIT))
    code: str | int | None = proc.returncode if status == "done" else status
    return output, code, bytes(report.data) if report.data else None


def _parse_junit(report: bytes | None, file: Path) -> list[TsTestCase]:
    if report is None:
        return []  # no report: the process died before writing it; the exit code tells
    try:
        root = ET.fromstring(report)
    except ET.ParseError:
        return []  # cut short (killed while writing it): the exit code or the timeout tells
    cases: list[TsTestCase] = []
    seen: dict[str, int] = {}
    for tc in root.iter("testcase"):
        name = tc.get("name", "?")
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:  # pytest items of one file need distinct names
            name = f"{name} [{seen[name]}]"
        failure = tc.find("failure")
        if failure is None:
            failure = tc.find("error")
        try:
            duration = float(tc.get("time") or 0)
        except ValueError:
            duration = 0.0
        if failure is not None:
            text = failure.text or failure.get("message") or "failed"
            cases.append(TsTestCase(name, file, "failed", duration, terminal_safe(text).strip()))
        elif tc.find("skipped") is not None:
            cases.append(TsTestCase(name, file, "ignored", duration))
        else:
            cases.append(TsTestCase(name, file, "passed", duration))
    return cases


def _uncaught(output: str, code: str | int | None) -> str:
    """The ERRORS section of Deno's report (the uncaught error and its stack), else the output."""
    start = output.find(" ERRORS ")
    end = output.find(" FAILURES ", start)
    if start >= 0:
        return output[start + len(" ERRORS ") : end if end > 0 else None].strip()
    return f"deno test exited with code {code}\n{output.strip()}"


def _timeout_message(timeout: float | None, output: str) -> str:
    return f"the test file ran over the {timeout:g} s timeout and was stopped\n{output.strip()}"
