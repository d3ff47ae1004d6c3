"""pytest plugin `gem_workbench`: notebooks as test items, and the `bench` fixture.

Loaded in every pytest run of an environment where gem-workbench is installed (entry point
`pytest11`), so it is opt-in and cheap to import:

- a notebook is collected only when asked for: `pytest --nb PATH…` collects every `*.ipynb`
  under the paths pytest walks, a notebook named on the command line is always collected, and
  the ini option `nb_paths` lists folders (or notebooks) collected without `--nb`. A project
  never runs every `.ipynb` in its tree by accident, and a notebook another plugin collects
  (nbval, pytest-notebook) is left to it: it never runs twice.
- each notebook is one test item, run with nbclient on a fresh `gem-workbench` kernel (ini
  `nb_kernel`, `--nb-kernel`) whose GEM_WORKBENCH_HOME is a new temporary folder; per-cell
  timeout `--nb-timeout` / ini `nb_timeout` (seconds, default 120; 0: none).
- the `tests/**/*.test.ts` (or .js) of an Ekanos integration folder (integration.ts, no
  manifest.json) are collected by the same rule as notebooks; each file runs once with
  `deno test` and each of its test cases is an item (`tstests`); `--nb-timeout` is per file.
- the pinned calls of a gem, `tests/calls/<tool>/<name>.json` (`res.pin`), are collected by the
  same rule; each replays on a fresh mock bench (`pinitems`); `--update-pins` re-records
  (and the summary lists the cases it wrote); a pin made during the run goes to the item's
  own folder, never into a gem's tests/, and the summary lists it (`pinitems`).
- the saved conversations of a gem, `tests/conversations/<name>.json` (`gem-workbench
  conversation GEM FILE --save NAME`), by the same rule; each replays its calls in order on a
  fresh mock bench opened with the case's options (`convitems`).
- `bench` opens the gem of `@pytest.mark.gem("path", **open_options)` (a relative path: from
  the test file's folder, else from the rootdir) or of the ini option `gem` (from the ini
  file's folder) on mock providers, with its state in the test's tmp_path, and closes it after.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .convitems import ConversationFile, is_conversation_file
from .notebook import DEFAULT_KERNEL, DEFAULT_TIMEOUT, NotebookFailure
from .order import NotebookSeconds
from .pinitems import PinFile, close_replayer, is_case_file, note_pins, run_env, run_pins_folder
from .tstests import SUFFIXES as TS_SUFFIXES
from .tstests import collect_ts_file

if TYPE_CHECKING:
    from ..bench.bench import Bench
    from ._kernel import NotebookKernel


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gem-workbench", "Gem Workbench notebooks and gems")
    group.addoption(
        "--nb",
        action="store_true",
        default=False,
        help="collect *.ipynb notebooks under the given paths as tests, each run "
        "on a fresh Gem Workbench kernel",
    )
    group.addoption(
        "--nb-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"per-cell timeout of notebook tests (default: ini nb_timeout, {DEFAULT_TIMEOUT:g}; 0: none)",
    )
    group.addoption(
        "--nb-tool-errors",
        choices=("show", "fail"),
        default=None,
        help="a %%tool call that fails: shown in the notebook (show, the default) or failing "
        "its cell and so the notebook test (fail); also ini nb_tool_errors",
    )
    group.addoption(
        "--update-pins",
        action="store_true",
        default=False,
        help="write each pinned call (tests/calls/**.json) that replays otherwise again from its replay",
    )
    group.addoption(
        "--nb-kernel",
        default=None,
        metavar="NAME",
        help=f"kernel notebook tests run on (default: ini nb_kernel, {DEFAULT_KERNEL})",
    )
    parser.addini(
        "nb_paths",
        type="paths",
        default=[],
        help="folders or notebooks whose *.ipynb are collected as tests without --nb "
        "(relative to the ini file)",
    )
    parser.addini(
        "nb_timeout",
        default=str(DEFAULT_TIMEOUT),
        help="per-cell timeout of notebook tests in seconds (0: none)",
    )
    parser.addini("nb_kernel", default=DEFAULT_KERNEL, help="kernel notebook tests run on")
    parser.addini("nb_tool_errors", default="show", help="show or fail: what a failed %%tool call does")
    parser.addini(
        "gem",
        default="",
        help="gem folder the `bench` fixture opens when the test has no "
        "@pytest.mark.gem (relative to the ini file)",
    )


_TIMEOUT = pytest.StashKey[float | None]()
#: Kernels started for notebooks that have not run yet, by node id.
_STARTED = pytest.StashKey[dict[str, "NotebookKernel"]]()
#: Kernels whose notebook ran, exiting while the next items run (NotebookKernel.ended).
_ENDING = pytest.StashKey[list["NotebookKernel"]]()
#: Whether a kernel's start and end overlap other notebooks (see NotebookItem).
_OVERLAP = pytest.StashKey[bool]()
#: The item that runs after a notebook in this process (None: none, or not known yet).
_NEXT = pytest.StashKey[pytest.Item | None]()


class _YieldToOtherNotebookPlugins:
    """A notebook another plugin collects (nbval's `--nbval`, pytest-notebook's
    `--nb-test-files`, any other) is theirs: ours would run it a second time. A wrapper sees
    what every plugin's pytest_collect_file returned, so no list of plugins is kept."""

    @pytest.hookimpl(wrapper=True)
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> Any:
        collectors = yield
        if file_path.suffix != ".ipynb" or not any(isinstance(c, NotebookFile) for c in collectors):
            return collectors
        others = [c for c in collectors if not isinstance(c, NotebookFile)]
        return others or collectors


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin("gem_workbench_yield"):
        config.pluginmanager.register(_YieldToOtherNotebookPlugins(), "gem_workbench_yield")
    config.addinivalue_line(
        "markers",
        "gem(path, **options): the gem folder the `bench` fixture opens (relative "
        "to the test file's folder, else to the rootdir); options go to workbench.open",
    )
    value = config.getoption("nb_timeout")
    if value is None:
        raw = config.getini("nb_timeout")
        try:
            value = float(raw)
        except ValueError:
            raise pytest.UsageError(
                f"ini option nb_timeout = {raw!r}: give seconds, e.g. 120, or 0 for no timeout"
            ) from None
    config.stash[_TIMEOUT] = value if value > 0 else None
    config.stash[_STARTED] = {}
    config.stash[_ENDING] = []
    # a CPU left idle by this run's processes (xdist's workers, or this one alone)
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    affinity = getattr(os, "sched_getaffinity", None)  # (not on macOS)
    config.stash[_OVERLAP] = (len(affinity(0)) if affinity else os.cpu_count() or 1) > workers
    cache = getattr(config, "cache", None)  # None with -p no:cacheprovider
    if cache is not None:
        config.pluginmanager.register(NotebookSeconds(cache), "gem-workbench-notebook-seconds")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if isinstance(item, NotebookItem):
        item.stash[_NEXT] = nextitem


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After each item: shut down a kernel started for it if it did not run (a skip), and
    finish the ends of kernels that have exited; after the last, wait for them all (what
    they wrote as they exited is a warning: at the session's end it would come too late to
    be shown)."""
    config = item.config
    started, ending = config.stash.get(_STARTED, {}), config.stash.get(_ENDING, [])
    unused = started.pop(item.nodeid, None)
    last = nextitem is None
    if unused is not None or any(k.ended or last for k in ending):
        from jupyter_core.utils import run_sync

        if last:
            for kernel in ending:
                kernel.wait_ended()
        run_sync(_end_kernels)(config, [unused] if unused is not None else [], wait=last)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The pinned calls `--update-pins` wrote again, and the calls pinned during the run."""
    from .pinitems import report_pinned, report_updated

    report_updated(terminalreporter)
    report_pinned(terminalreporter)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Wait for the kernels of notebooks that ran to end; shut down those started for
    notebooks that did not run (-x, Ctrl-C, a crash)."""
    config = session.config
    close_replayer(config)  # the pinned calls' warm benches
    started = config.stash.get(_STARTED, {})
    ending = config.stash.get(_ENDING, [])
    if not (started or ending):
        return
    from jupyter_core.utils import run_sync

    unused = list(started.values())
    started.clear()
    try:
        for kernel in ending:
            kernel.wait_ended()
    except KeyboardInterrupt:  # a second Ctrl-C: the rest are killed, the session still ends
        pass
    run_sync(_end_kernels)(config, unused, wait=True)


async def _end_kernels(config: pytest.Config, unused: list[NotebookKernel], *, wait: bool) -> None:
    """Shut down `unused` kernels (started for items that did not run); close the kernels in
    the _ENDING list that have ended (all of them, killed if need be, if `wait`)."""
    import warnings

    ending = config.stash[_ENDING]
    for kernel in [*unused, *(k for k in list(ending) if wait or k.ended)]:
        try:
            await kernel.aclose()
        except Exception as exc:  # noqa: BLE001 - one kernel's end must not stop the others'
            warnings.warn(f"{kernel.path}: its kernel did not end cleanly: {exc!r}", stacklevel=1)
        if kernel in ending:  # (only now: a Ctrl-C in aclose leaves it to the session's end)
            ending.remove(kernel)
            if output := kernel.output():  # written as it exited, after its test passed
                warnings.warn(f"{kernel.path}: its kernel wrote as it exited:\n{output}", stacklevel=1)


def _wants_notebook(path: Path, parent: pytest.Collector) -> bool:
    config = parent.config
    if config.getoption("nb") or parent.session.isinitpath(path):
        return True
    resolved = path.resolve()
    return any(resolved.is_relative_to(p.resolve()) for p in config.getini("nb_paths"))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix == ".ipynb" and _wants_notebook(file_path, parent):
        return NotebookFile.from_parent(parent, path=file_path)
    if file_path.name.endswith(TS_SUFFIXES) and _wants_notebook(file_path, parent):
        return collect_ts_file(file_path, parent, parent.config.stash[_TIMEOUT])
    if is_case_file(file_path) and _wants_notebook(file_path, parent):
        return PinFile.from_parent(parent, path=file_path)
    if is_conversation_file(file_path) and _wants_notebook(file_path, parent):
        return ConversationFile.from_parent(parent, path=file_path)
    return None


class NotebookFile(pytest.File):
    """A .ipynb file: one item that runs the whole notebook (cells depend on each other)."""

    def collect(self) -> Iterator[pytest.Item]:
        yield NotebookItem.from_parent(self, name=self.path.stem)


#: How jupyter_client's wait_for_ready (and ReadyClient's) says a kernel did not start.
_KERNEL_START_FAILURES = ("Kernel died before replying", "Kernel didn't respond")


class NotebookItem(pytest.Item):
    """Runs every code cell of a notebook on a fresh kernel; fails at the first failing cell.

    When the run leaves a CPU idle (`pytest`, or fewer xdist workers than CPUs), a kernel's
    start and end overlap other notebooks: once a notebook's kernel answers, the kernel of the
    notebook that runs next in this process (if it is one) starts and boots meanwhile, with the
    environment pytest gives that notebook's call (started afresh if the environment changed
    by then); once a passing notebook's last cell ran, the next notebook starts while its
    kernel exits (a failing one's kernel ends in its turn: its report has all it wrote). With
    every CPU busy (`-n auto`), that overlap took more CPU and no less time, so each kernel
    starts and ends in its notebook's turn.
    """

    def runtest(self) -> None:
        from . import _interrupt
        from ._kernel import kill_all

        # Ctrl-C stops the session, as in any test (see _interrupt)
        _interrupt.run(self._run, what=self.path, on_again=kill_all)

    def _options(self) -> tuple[str, dict[str, str] | None]:
        kernel = self.config.getoption("nb_kernel") or self.config.getini("nb_kernel")
        tool_errors = self.config.getoption("nb_tool_errors") or self.config.getini("nb_tool_errors")
        env = {"GEM_WORKBENCH_TOOL_ERRORS": tool_errors} if tool_errors == "fail" else {}
        return kernel, {**env, **run_env(self)}  # its pins: not into the tests/ of a gem under test

    async def start_kernel(self, *, ahead: bool = False) -> NotebookKernel:
        """Start this notebook's kernel (the item before it starts it ahead while it runs);
        `ahead`: during another item, with the environment pytest gives this one's call."""
        from ._kernel import astart_kernel

        kernel_name, env = self._options()
        if ahead:
            env = {**(env or {}), "PYTEST_CURRENT_TEST": f"{self.nodeid} (call)"}
        # its own output goes to this item's report, whenever it runs (with -s: to the terminal)
        keep = self.config.getoption("capture", "fd") != "no"
        return await astart_kernel(self.path, kernel_name=kernel_name, env=env, keep_output=keep)

    async def _run(self) -> None:
        from .notebook import arun_started

        config = self.config
        started = config.stash[_STARTED]
        kernel = started.pop(self.nodeid, None)
        if kernel is not None and kernel.environ != {**os.environ, **(self._options()[1] or {})}:
            await kernel.aclose()  # a fixture or a hook changed the environment since its start
            kernel = None
        kernel = kernel or await self.start_kernel()
        overlap = config.stash[_OVERLAP]
        following = self.stash.get(_NEXT, None) if overlap else None

        async def start_next() -> None:
            if isinstance(following, NotebookItem) and following.nodeid not in started:
                try:
                    started[following.nodeid] = await following.start_kernel(ahead=True)
                except Exception:  # noqa: BLE001 - that notebook's own run reports it
                    pass

        try:
            await arun_started(
                kernel,
                timeout=config.stash[_TIMEOUT],
                on_ready=start_next,
                end_later=config.stash[_ENDING].append if overlap else None,
            )
        finally:
            note_pins(self, run_pins_folder(self))
            if output := kernel.output():  # (all of it unless its end is still to come)
                self.add_report_section("call", "kernel output", output)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | Any:
        exc = excinfo.value
        if isinstance(exc, NotebookFailure):
            from ._report import failure_report

            return failure_report(self.path, exc.headline(), exc.report())
        if type(exc).__name__ == "NoSuchKernel":
            return (
                f"{self.path}: no kernel named {exc.args[0] if exc.args else '?'!r}. "
                "`pip install gem-workbench` installs `gem-workbench` in its environment; "
                "for another Jupyter run `gem-workbench kernel install --user`."
            )
        if isinstance(exc, RuntimeError) and str(exc).startswith(_KERNEL_START_FAILURES):
            # (nbclient's words; its traceback, through pytest and pluggy, says nothing more)
            return (
                f"{self.path}: its kernel did not start: {exc}. What the kernel wrote is in "
                "'Captured kernel output' (with -s: above); run `gem-workbench kernel install "
                "--user` if its kernelspec is out of date."
            )
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, 0, f"notebook {self.path.name}"  # (a skip mark needs a line: the first)


@pytest.fixture
def bench(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Bench]:
    """The gem of @pytest.mark.gem("path", **options) or ini `gem`, on mock providers.

    State (real providers, if asked for) lives under the test's tmp_path; deletes never go to
    the desktop trash; the bench is closed after the test.
    """
    from .. import _errors
    from ..bench import open as _open  # the Face (not the package root, which loads the magics)

    marker = request.node.get_closest_marker("gem")
    config = request.config
    if marker is not None:
        if len(marker.args) != 1:
            pytest.fail(
                '@pytest.mark.gem takes one gem folder: @pytest.mark.gem("gems/notes")', pytrace=False
            )
        where = marker.args[0]
        # the test file's folder first: `pytest tests` inside the gem and `pytest` above it
        # give one marker one folder (the rootdir alone moved with where pytest was started)
        bases = [request.path.parent, config.rootpath]
        options = dict(marker.kwargs)
    else:
        where = config.getini("gem")
        bases = [config.inipath.parent if config.inipath else config.rootpath]
        options = {}
        if not where:
            pytest.fail(
                "the `bench` fixture needs a gem: mark the test with "
                '@pytest.mark.gem("path/to/gem") or set the ini option `gem`',
                pytrace=False,
            )
    absolute = Path(where).is_absolute()
    tried = [Path(where)] if absolute else list(dict.fromkeys(b / where for b in bases))
    path = next((p for p in tried if p.is_dir()), None)
    if path is None:
        whence = (
            "" if absolute
            else " (from the test file's folder, then the rootdir)" if marker is not None
            else " (from the ini file's folder)"
        )  # fmt: skip
        pytest.fail(f"no gem folder {where!r}: tried {', '.join(map(str, tried))}{whence}", pytrace=False)
    options.setdefault("providers", "mock")
    options.setdefault("state_dir", tmp_path / "gem-state")
    options.setdefault("headless", True)
    try:
        opened = _open.open(path, **options)
    except _errors.WorkbenchError as exc:
        pytest.fail(f"the `bench` fixture could not open {path}: {exc}", pytrace=False)
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in run_env(request.node).items():  # a test's pins: not into tests/
                patch.setenv(name, value)
            yield opened
    finally:
        opened.close()
        note_pins(request.node, run_pins_folder(request.node))
