"""The pytest plugin: notebooks as opt-in test items on fresh kernels, and the `bench` fixture."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_GEM

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True, scope="module")
def _import_nbclient_once() -> None:
    """In-process pytester runs drop modules they imported; nbclient takes >1 s to import, and
    numpy (through pandas, which a bench's views import) cannot be loaded twice in one process:
    a later test of this process that imported it failed."""
    import jupyter_client.manager  # noqa: F401
    import nbclient  # noqa: F401
    import nbformat  # noqa: F401
    import pandas  # noqa: F401


def write_notebook(path: Path, *cells: str) -> Path:
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    nb = new_notebook(cells=[new_markdown_cell(f"# {path.stem}"), *(new_code_cell(c) for c in cells)])
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


# Each notebook checks its GEM_WORKBENCH_HOME is its own and empty, then leaves a file in it:
# with shared state, whichever ran second would fail.
FRESH_STATE = """
import os, pathlib
home = pathlib.Path(os.environ["GEM_WORKBENCH_HOME"])
assert home.is_dir() and not any(home.iterdir()), sorted(home.iterdir())
(home / "left-behind").write_text("x")
"""


def test_notebooks_pass_and_fail_with_a_readable_report(pytester: pytest.Pytester):
    write_notebook(pytester.path / "nbs" / "one.ipynb", FRESH_STATE, "x = 41\nx + 1")
    write_notebook(pytester.path / "nbs" / "two.ipynb", FRESH_STATE, "%load_ext workbench\nprint('ok')")
    write_notebook(
        pytester.path / "nbs" / "broken.ipynb", "total = 0", "print('about to divide')\ntotal = 1 / total"
    )
    write_notebook(pytester.path / "nbs" / "dies.ipynb", "import os\nos._exit(3)")
    result = pytester.runpytest("--nb", "nbs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["*dies.ipynb: cell 2: the kernel died while running it"])
    out = result.stdout.str()
    report = out[out.index("notebook broken.ipynb") :]
    lines = [  # the cell, its output, then the kernel's traceback (which quotes the source once)
        "*broken.ipynb: cell 3 raised ZeroDivisionError: division by zero",
        "------------------",
        "----- stdout -----",
        "about to divide",
        "------------------",
        "ZeroDivisionError*Traceback (most recent call last)",
        "*total = 1 / total",
        "ZeroDivisionError: division by zero",
    ]
    pytester_lines = pytest.LineMatcher(report.splitlines())
    pytester_lines.fnmatch_lines(lines, consecutive=False)
    assert "\x1b[" not in out, "ANSI colours are stripped"
    section = report[: report.index("notebook dies.ipynb")]  # (the summary lines may quote it too)
    assert section.count("total = 1 / total") == 1, "the cell's source once, not twice"
    assert "running over TCP" not in out + result.stderr.str(), "no kernel log noise"


def test_a_failed_tool_call_fails_the_notebook_only_when_asked(pytester: pytest.Pytester):
    cells = (f"%gem open {EXAMPLE_GEM}", '%tool add_note {"title": 3}', "print('after')")
    write_notebook(pytester.path / "nbs" / "tool.ipynb", *cells)
    pytester.runpytest("--nb", "nbs", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    result = pytester.runpytest("--nb", "nbs", "--nb-tool-errors=fail", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*tool.ipynb: cell 3 raised MagicError: E_SCHEMA: %tool add_note failed:*"])
    pytester.makeini("[pytest]\nnb_tool_errors = fail\n")
    pytester.runpytest("--nb", "nbs", "-p", "no:cacheprovider").assert_outcomes(failed=1)


def test_a_cell_over_the_timeout_fails_the_notebook_quickly(pytester: pytest.Pytester):
    # the kernel writes its pid first; the slow cell would print "slept" after its sleep
    write_notebook(
        pytester.path / "slow.ipynb",
        "import os, pathlib\npathlib.Path('kernel.pid').write_text(str(os.getpid()))\nprint('started')",
        "import time\ntime.sleep(120)\nprint('slept')",
    )
    result = pytester.runpytest("slow.ipynb", "--nb-timeout=0.5", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*slow.ipynb: cell 3 ran over the 1 s cell timeout",  # rounded up
            "*time.sleep(120)",
            "KeyboardInterrupt*",  # the cell was interrupted in its sleep…
        ]
    )
    assert "slept" not in result.stdout.lines  # …and never went on past it (its output)
    # and the kernel was shut down, not left to run: its process is gone by the time the run
    # ends (a zombie counts as gone: it runs nothing)
    pid = int((pytester.path / "kernel.pid").read_text())
    assert not running(pid), f"the kernel (pid {pid}) is still running"


def running(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return "zombie" not in state


def test_notebooks_are_collected_only_when_asked_for(pytester: pytest.Pytester):
    write_notebook(pytester.path / "nbs" / "a.ipynb", "1")
    write_notebook(pytester.path / "other" / "b.ipynb", "1")
    pytester.makepyfile(test_plain="def test_x(): pass")
    listed = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    assert ".ipynb" not in listed.stdout.str()  # a bare pytest never runs notebooks
    listed = pytester.runpytest("--collect-only", "-q", "--nb", "-p", "no:cacheprovider")
    listed.stdout.fnmatch_lines(["nbs/a.ipynb::a", "other/b.ipynb::b"])
    pytester.makeini("[pytest]\nnb_paths = nbs\n")
    listed = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    out = listed.stdout.str()
    assert "nbs/a.ipynb::a" in out and "b.ipynb" not in out and "test_plain.py::test_x" in out
    # (a notebook named on the command line is collected without --nb: see the timeout test)


def test_a_bad_nb_timeout_is_a_usage_error(pytester: pytest.Pytester):
    pytester.makeini("[pytest]\nnb_timeout = soon\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stderr.fnmatch_lines(["*nb_timeout = 'soon'*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_bench_fixture_opens_the_marked_gem_on_mock_providers(pytester: pytest.Pytester):
    shutil.copytree(EXAMPLE_GEM, pytester.path / "gems" / "notes")
    pytester.makeini("[pytest]\ngem = gems/notes\n")
    pytester.makepyfile(
        test_tools=f"""
        import sqlite3
        import pytest

        opened = []

        @pytest.mark.gem({str(EXAMPLE_GEM)!r})
        def test_marked(bench):
            opened.append(bench)
            res = bench.call("add_note", {{"title": "buy milk"}})
            assert res.ok, res.error
            assert len(bench.data("notes")) == 1
            assert set(bench.providers.kind.values()) == {{"mock"}}

        def test_closed_after_the_test():
            with pytest.raises(sqlite3.ProgrammingError):
                opened[0].providers.data_db.conn.execute("select 1")

        def test_from_ini(bench):
            assert bench.call("add_note", {{"title": 3}}).error.code == "E_SCHEMA"
            assert len(bench.data("notes")) == 0   # a fresh bench per test

        @pytest.mark.gem("gems/missing")
        def test_missing(bench):
            pass
    """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*no gem folder 'gems/missing': tried *gems/missing (from the test file's folder, then the rootdir)*"
        ]
    )


def test_gem_marker_is_relative_to_the_test_files_folder(tmp_path: Path):
    """Issue 28: `@pytest.mark.gem` in a scaffolded gem's tests/ names the gem from the test
    file's folder, so `pytest tests` inside the gem and `pytest GEM/tests` above it both open
    it; a path that is nowhere says which folders were tried."""
    import subprocess
    import sys

    from workbench.scaffold._create import create

    gem = create("csvtools", parent=tmp_path, lang="py")  # (`gem-workbench new csvtools`)
    (gem / "tests" / "test_marked.py").write_text(
        "import pytest\n\n\n"
        '@pytest.mark.gem("..")\n'
        "def test_from_the_test_folder(bench):\n"
        "    assert bench.manifest.root.name == 'csvtools'\n\n\n"
        '@pytest.mark.gem("csvtools")\n'
        "def test_from_the_rootdir(bench):\n"
        "    assert bench.manifest.root.name == 'csvtools'\n\n\n"
        '@pytest.mark.gem("nowhere")\n'
        "def test_missing(bench):\n"
        "    pass\n",
        encoding="utf-8",
    )

    def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--rootdir", str(cwd), *args],
            cwd=cwd, capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    # the run: inside the gem, whose folder is the rootdir (no gem in rootdir/..)
    inside = run(gem, "tests", "-k", "from_the_test_folder or missing")
    assert "1 passed, 2 deselected, 1 error" in inside.stdout, inside.stdout + inside.stderr
    tried = f"tried {gem / 'tests' / 'nowhere'}, {gem / 'nowhere'} (from the test file's folder"
    assert tried in inside.stdout, inside.stdout
    above = run(tmp_path, "csvtools/tests", "-k", "not missing")
    assert "3 passed" in above.stdout, above.stdout + above.stderr  # the scaffold's own test too


def test_gem_workbench_test_runs_notebooks_through_pytest(tmp_path, monkeypatch, capsys):
    import subprocess
    import sys

    from workbench.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["test"]) == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "no notebooks given and none in notebooks/" in capsys.readouterr().err
    write_notebook(tmp_path / "notebooks" / "ok.ipynb", "print('hello')")
    write_notebook(tmp_path / "notebooks" / "bad.ipynb", "1/0")
    write_notebook(tmp_path / "notebooks" / "gems" / "not-collected.ipynb", "1/0")
    out = subprocess.run(  # default: notebooks/*.ipynb; after `--`: arguments for pytest
        [sys.executable, "-m", "workbench.cli", "test", "--timeout", "30", "--", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == pytest.ExitCode.TESTS_FAILED, out.stdout + out.stderr
    assert "1 failed, 1 passed" in out.stdout
    assert "notebooks/bad.ipynb: cell 2 raised ZeroDivisionError" in out.stdout


def test_under_xdist_notebooks_run_longest_first_by_their_last_time(pytester: pytest.Pytester):
    for name in ("a", "b", "c", "d"):
        write_notebook(
            pytester.path / "nbs" / f"{name}.ipynb",
            f"import time\ntime.sleep({0.3 if name == 'c' else 0})",
        )
    result = pytester.runpytest("--nb", "nbs", "-p", "no:randomly")  # one process: recorded
    result.assert_outcomes(passed=4)
    seconds = pytester.path / ".pytest_cache" / "v" / "gem_workbench" / "notebook_seconds"
    recorded = json.loads(seconds.read_text())
    assert sorted(recorded) == [f"nbs/{n}.ipynb::{n}" for n in "abcd"]
    assert recorded["nbs/c.ipynb::c"] > 0.3 and all(v > 0 for v in recorded.values())

    # the last run's times (written here: kernel starts vary more than these notebooks do);
    # d has none, so it counts as the longest
    del recorded["nbs/d.ipynb::d"]
    seconds.write_text(
        json.dumps({**recorded, "nbs/a.ipynb::a": 2.0, "nbs/b.ipynb::b": 9.0, "nbs/c.ipynb::c": 5.0})
    )
    ran = pytester.runpytest_subprocess("--nb", "nbs", "-p", "no:randomly", "-n", "1", "-v")
    ran.assert_outcomes(passed=4)
    order = [line.split("::")[0].rsplit("/", 1)[-1] for line in ran.outlines if "PASSED nbs/" in line]
    assert order == ["d.ipynb", "b.ipynb", "c.ipynb", "a.ipynb"], ran.outlines
    assert json.loads(seconds.read_text())["nbs/d.ipynb::d"] > 0  # and the new times are kept

    alone = pytester.runpytest("--nb", "nbs", "-p", "no:randomly", "-v")  # one process: name order
    order = [line.split("::")[0].rsplit("/", 1)[-1] for line in alone.outlines if " PASSED" in line]
    assert order == ["a.ipynb", "b.ipynb", "c.ipynb", "d.ipynb"], alone.outlines


@pytest.mark.parametrize(
    "stored", [["not", "a", "dict"], "text", {"nbs/a.ipynb::a": "9", "nbs/b.ipynb::b": None}]
)
def test_a_cache_file_of_any_shape_orders_nothing_and_breaks_nothing(stored: Any) -> None:
    """The cache is the user's file: what is not {nodeid: seconds} counts as never timed."""
    from types import SimpleNamespace

    from workbench.testing.order import NotebookSeconds

    cache = SimpleNamespace(get=lambda key, default: stored)
    items = [SimpleNamespace(nodeid=f"nbs/{n}.ipynb::{n}") for n in "ab"] + [
        SimpleNamespace(nodeid="t.py::x")
    ]
    ordered = list(items)
    NotebookSeconds(cache).pytest_collection_modifyitems(SimpleNamespace(workerinput={}), ordered)
    assert ordered == items


# A cell that waits (up to 60 s) for another kernel of this pytest process, one started for the
# next notebook, and writes its pid and its GEM_WORKBENCH_HOME to sibling.json
FIND_SIBLING = """
import json, os, pathlib, time
def kernels_beside_me():
    found = []
    for proc in pathlib.Path("/proc").glob("[0-9]*"):
        try:
            stat = (proc / "stat").read_text()
            cmdline = (proc / "cmdline").read_bytes().split(b"\\0")
            environ = (proc / "environ").read_bytes().split(b"\\0")
        except (OSError, ValueError):
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getppid() and int(proc.name) != os.getpid() and b"workbench.kernel" in cmdline:
            home = next(e for e in environ if e.startswith(b"GEM_WORKBENCH_HOME="))
            found.append((int(proc.name), home.split(b"=", 1)[1].decode()))
    return found
deadline = time.monotonic() + 60
while not kernels_beside_me() and time.monotonic() < deadline:
    time.sleep(0.05)
[(pid, home)] = kernels_beside_me()
assert home != os.environ["GEM_WORKBENCH_HOME"]
pathlib.Path("sibling.json").write_text(json.dumps({"pid": pid, "home": home}))
"""


def test_the_next_notebooks_kernel_starts_while_one_runs(pytester: pytest.Pytester, monkeypatch):
    # a.ipynb runs first (name order) and sees b's kernel, already started, beside its own;
    # b then finds its home its own and empty, and runs on that very kernel
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1})  # a CPU left idle
    write_notebook(pytester.path / "a.ipynb", FRESH_STATE, FIND_SIBLING)
    write_notebook(
        pytester.path / "b.ipynb",
        FRESH_STATE,
        "import json, os\nsibling = json.load(open('sibling.json'))\n"
        "assert sibling == {'pid': os.getpid(), 'home': os.environ['GEM_WORKBENCH_HOME']}, sibling",
    )
    pytester.runpytest("--nb", ".", "-p", "no:cacheprovider").assert_outcomes(passed=2)
    sibling = json.loads((pytester.path / "sibling.json").read_text())
    assert not running(sibling["pid"]) and not Path(sibling["home"]).exists()


def test_a_kernel_started_for_a_notebook_that_never_runs_is_shut_down(pytester: pytest.Pytester, monkeypatch):
    # a fails once b's kernel has started; -x ends the session before b runs
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1})
    write_notebook(pytester.path / "a.ipynb", FIND_SIBLING, "raise RuntimeError('stop here')")
    write_notebook(pytester.path / "b.ipynb", "open('b-ran', 'w').close()")
    result = pytester.runpytest("--nb", ".", "-x", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    sibling = json.loads((pytester.path / "sibling.json").read_text())
    assert not (pytester.path / "b-ran").exists()
    assert not running(sibling["pid"]), "the kernel started for b is still running"
    assert not Path(sibling["home"]).exists(), "its GEM_WORKBENCH_HOME is left behind"


def test_with_no_cpu_idle_each_kernel_starts_and_ends_in_its_turn(pytester: pytest.Pytester, monkeypatch):
    # one CPU for one process: while a runs, no other kernel of this process exists, and a's
    # kernel has exited before b's starts
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0})
    write_notebook(
        pytester.path / "a.ipynb",
        FIND_SIBLING.split("deadline =")[0],
        "assert kernels_beside_me() == [], kernels_beside_me()\nopen('a.pid', 'w').write(str(os.getpid()))",
    )
    write_notebook(
        pytester.path / "b.ipynb",
        FIND_SIBLING.split("deadline =")[0],
        "pid = int(open('a.pid').read())\nassert not pathlib.Path(f'/proc/{pid}').exists(), pid\n"
        "assert kernels_beside_me() == [], kernels_beside_me()",
    )
    pytester.runpytest("--nb", ".", "-p", "no:cacheprovider").assert_outcomes(passed=2)


@pytest.fixture
def idle_cpu(monkeypatch):
    """This process's run leaves a CPU idle: kernels start and end beside other notebooks."""
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1})


def test_a_kernel_started_ahead_has_the_environment_of_its_own_call(pytester: pytest.Pytester, idle_cpu):
    # a hook sets a variable per item at its setup, after the next kernel may have started
    pytester.makeconftest(
        "import os\ndef pytest_runtest_setup(item):\n    os.environ['NB_DATA'] = item.path.stem + '.data'\n"
    )
    for name in ("a", "b", "c"):
        write_notebook(
            pytester.path / f"{name}.ipynb",
            f"import os\nassert os.environ['NB_DATA'] == '{name}.data', os.environ['NB_DATA']\n"
            f"assert os.environ['PYTEST_CURRENT_TEST'] == '{name}.ipynb::{name} (call)', "
            "os.environ['PYTEST_CURRENT_TEST']",
        )
    pytester.runpytest("--nb", ".", "-p", "no:cacheprovider").assert_outcomes(passed=3)


def test_a_kernel_started_for_a_skipped_notebook_ends_with_it(pytester: pytest.Pytester, idle_cpu):
    pytester.makeconftest(
        "import pytest\ndef pytest_runtest_setup(item):\n"
        "    if item.name == 'b':\n        pytest.skip('not this one')\n"
    )
    write_notebook(pytester.path / "a.ipynb", FIND_SIBLING)  # b's kernel, started ahead
    write_notebook(
        pytester.path / "c.ipynb",
        "import json, pathlib\npid = json.load(open('sibling.json'))['pid']\n"
        "assert not pathlib.Path(f'/proc/{pid}').exists(), f'the kernel of skipped b ({pid}) runs'",
    )
    write_notebook(pytester.path / "b.ipynb", "1")
    pytester.runpytest("--nb", ".", "-p", "no:cacheprovider").assert_outcomes(passed=2, skipped=1)


def test_a_kernel_ends_while_a_plain_test_runs(pytester: pytest.Pytester, idle_cpu):
    # a's kernel was asked to shut down: it is reaped (no zombie) while the plain test waits
    write_notebook(pytester.path / "a.ipynb", "import os\nopen('a.pid', 'w').write(str(os.getpid()))")
    pytester.makepyfile(
        test_z="""
import pathlib, time
def test_wait_for_the_kernel_of_a():
    pid = int(pathlib.Path('a.pid').read_text())
    deadline = time.monotonic() + 30
    while pathlib.Path(f'/proc/{pid}').exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pathlib.Path(f'/proc/{pid}').exists(), f'kernel {pid} still there'
"""
    )
    pytester.runpytest("--nb", ".", "-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_a_test_that_closes_the_event_loop_breaks_no_kernel_end(pytester: pytest.Pytester, idle_cpu):
    write_notebook(pytester.path / "a.ipynb", "1")
    pytester.makepyfile(
        b_test="""
import asyncio
from jupyter_core.utils import ensure_event_loop
def test_closes_the_loop():  # the one notebook runs use, as asyncio.get_event_loop() may give
    loop = ensure_event_loop()
    loop.run_until_complete(asyncio.sleep(0))
    loop.close()
"""
    )
    write_notebook(pytester.path / "c.ipynb", "2")
    result = pytester.runpytest("--nb", ".", "-p", "no:cacheprovider", "-o", "python_files=*_test.py")
    result.assert_outcomes(passed=3)
    assert result.ret == 0
    assert not [line for line in result.outlines if "Error" in line or "did not end" in line]


def test_a_skip_mark_on_a_notebook_skips_it(pytester: pytest.Pytester):
    # (pytest reports a mark's skip at the item's line: reportinfo once gave none, INTERNALERROR)
    pytester.makeconftest(
        "import pytest\ndef pytest_collection_modifyitems(items):\n"
        "    for item in items:\n        item.add_marker(pytest.mark.skip(reason='later'))\n"
    )
    write_notebook(pytester.path / "a.ipynb", "raise RuntimeError('ran')")
    result = pytester.runpytest("--nb", ".", "-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=1)
    assert "SKIPPED [1] a.ipynb: later" in result.outlines


# The idle_cpu fixture for a run in a process of its own (runpytest_subprocess): a conftest is
# imported before the plugin's pytest_configure looks at the CPUs
IDLE_CPU_CONFTEST = "import os\nos.sched_getaffinity = lambda pid: {0, 1}\n"


def _kernel_startup(pytester: pytest.Pytester, code: str) -> None:
    """IPython startup code every kernel of the run executes (its IPYTHONDIR is the test's),
    in a run that leaves a CPU idle."""
    startup = pytester.path / "ipy" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00.py").write_text(code)
    pytester.makeconftest(
        IDLE_CPU_CONFTEST
        + f"def pytest_configure(config):\n    os.environ['IPYTHONDIR'] = {str(pytester.path / 'ipy')!r}\n"
    )


def test_a_kernel_that_dies_at_start_is_reported_by_its_own_notebook(pytester: pytest.Pytester):
    # b's kernel starts (ahead) while a runs, writes a line and dies: b's report has the line,
    # a's does not, and the report is a few lines, not nbclient's traceback through pluggy
    _kernel_startup(
        pytester,
        "import os\nif 'b.ipynb' in os.environ.get('PYTEST_CURRENT_TEST', ''):\n"
        "    os.write(2, b'b refuses to start\\n')\n    os._exit(3)\n",
    )
    for name in ("a", "b", "c"):
        write_notebook(pytester.path / f"{name}.ipynb", "import time\ntime.sleep(0.5)")
    result = pytester.runpytest_subprocess("--nb", ".", "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=2, failed=1)
    report = result.stdout.str()
    b = report[report.index("notebook b.ipynb") : report.index("short test summary")]
    assert "b.ipynb: its kernel did not start: Kernel died before replying" in b
    assert "b refuses to start" in b and report.count("b refuses to start") == 1
    assert len(b.splitlines()) < 15, b
    assert "Exception ignored in atexit" not in report + result.stderr.str()


def test_what_a_failing_notebooks_kernel_writes_as_it_exits_is_in_its_report(
    pytester: pytest.Pytester, idle_cpu
):
    write_notebook(
        pytester.path / "a.ipynb",
        "import atexit, os, time\natexit.register(time.sleep, 0.3)\n"
        "atexit.register(os.write, 2, b'a says goodbye\\n')",
        "raise ValueError('no')",
    )
    write_notebook(pytester.path / "b.ipynb", "import time\ntime.sleep(1)")
    result = pytester.runpytest("--nb", ".", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    report = result.stdout.str()
    a = report[report.index("notebook a.ipynb") : report.index("short test summary")]
    assert "Captured kernel output" in a and "a says goodbye" in a


def test_what_a_passing_notebooks_kernel_writes_after_its_test_is_a_warning(pytester: pytest.Pytester):
    pytester.makeconftest(IDLE_CPU_CONFTEST)  # (without the overlap a's kernel ends in its turn)
    # a's kernel writes as it exits once b runs, so after a's report was made (what it writes
    # before is in that report)
    write_notebook(
        pytester.path / "a.ipynb",
        "import atexit, os, pathlib, time\n"
        "def goodbye():\n"
        "    deadline = time.monotonic() + 30\n"
        "    while not pathlib.Path('b-runs').exists() and time.monotonic() < deadline:\n"
        "        time.sleep(0.01)\n"
        "    os.write(2, b'a says goodbye\\n')\n"
        "atexit.register(goodbye)",
    )
    write_notebook(pytester.path / "b.ipynb", "import time\nopen('b-runs', 'w').close()\ntime.sleep(0.5)")
    # (in a process of its own, as a user runs it: run in this process, pytester's counts of
    # the inner run had no warning and an error not shown)
    result = pytester.runpytest_subprocess("--nb", ".", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(["*a.ipynb: its kernel wrote as it exited:*", "*a says goodbye*"])


def test_a_failing_cells_report_shows_the_end_of_a_long_output(pytester: pytest.Pytester):
    from workbench.testing.notebook import OUTPUT_TAIL

    write_notebook(pytester.path / "loud.ipynb", "for i in range(5000): print(i, 'x' * 100)\n1/0")
    result = pytester.runpytest("loud.ipynb", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "characters not shown]" in out and "4999 xxx" in out and "\n0 xxx" not in out
    assert len(out) < OUTPUT_TAIL + 20_000, len(out)


@pytest.mark.parametrize("workers", [[], ["-n", "1"]], ids=["one-process", "xdist"])
def test_on_ci_the_short_summary_has_a_notebooks_headline_not_its_report(
    pytester: pytest.Pytester, monkeypatch, workers
):
    # (on CI, pytest's short summary shows a report given as text whole: each came twice)
    monkeypatch.setenv("CI", "true")
    write_notebook(pytester.path / "bad.ipynb", "print('about to divide')\n1/0")
    result = pytester.runpytest_subprocess("bad.ipynb", "-p", "no:cacheprovider", *workers)
    result.assert_outcomes(failed=1)
    summary = result.stdout.str().split("short test summary info")[1]
    assert summary.splitlines()[1].endswith(
        "bad.ipynb::bad - cell 2 raised ZeroDivisionError: division by zero"
    )
    assert "about to divide" not in summary and "Traceback" not in summary, summary
    assert result.stdout.str().count("Traceback (most recent call last)") == 1


def test_a_long_output_keeps_the_label_of_what_it_shows_the_end_of():
    from workbench.testing.notebook import OUTPUT_TAIL, NotebookFailure, captured_output

    def stream(name: str, text: str) -> dict[str, str]:
        return {"output_type": "stream", "name": name, "text": text}

    shown = captured_output(
        {"outputs": [stream("stdout", "a" * 10), stream("stderr", "E" * 100_000), stream("stdout", "ok")]}
    )
    assert shown.startswith(f"----- stderr -----\n[{100_010 - OUTPUT_TAIL + 2} characters not shown]\nEEE")
    assert shown.endswith("EEE\n----- stdout -----\nok")
    # a long exception message is one line of the headline, cut
    failure = NotebookFailure(
        "a.ipynb", kind="error", cell_index=0, source="", ename="ValueError", evalue="v" * 10**6
    )
    assert len(failure.headline()) < 600 and failure.headline().endswith("v […]")


def test_a_notebook_nbval_collects_is_not_collected_again(pytester: pytest.Pytester):
    """With nbval installed, `pytest --nbval nb.ipynb` collected the notebook twice (nbval's
    item and ours, for a path named on the command line) and ran it twice: now nbval's alone;
    without --nbval, ours as before."""
    import nbval  # noqa: F401  (in the [test] extra: an ImportError, never a skip)

    nb = write_notebook(pytester.path / "once.ipynb", "1 + 1")
    both = pytester.runpytest("--collect-only", "-q", "--nbval-lax", str(nb), "-p", "no:cacheprovider")
    items = [line for line in both.stdout.lines if line.startswith("once.ipynb::")]
    assert items == ["once.ipynb::Cell 0"], both.stdout.lines  # nbval's, one per code cell
    ours = pytester.runpytest("--collect-only", "-q", str(nb), "-p", "no:cacheprovider")
    assert [line for line in ours.stdout.lines if line.startswith("once.ipynb::")] == ["once.ipynb::once"]
