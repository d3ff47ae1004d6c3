"""One JupyterLab server and one headless Chromium per test session, for the browser tests.

Starting JupyterLab took 16-21 s of each browser test; the `lab` fixture (tests/conftest.py
makes it every module's) starts it once per session (per xdist worker: the browser modules
are one xdist_group, so one worker) and stops it after the last browser test of a run of them
(conftest's pytest_runtest_teardown), or at the session's end. Each test still gets its own: a fresh
folder under the server's root (`lab.folder()`), a fresh page, a JupyterLab
workspace of its own (no tab of another test's notebook is restored), and so its own kernels,
which are shut down when its page closes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ARTIFACTS

CHROMIUM = "/usr/bin/chromium"
TOKEN = "wb-e2e"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A running JupyterLab (`gem-workbench lab` on `root`) and a Chromium context to drive it
    (one context: its HTTP cache keeps JupyterLab's scripts from one page to the next)."""

    def __init__(self, root: Path, server: str, proc: subprocess.Popen[bytes], context: Any) -> None:
        self.root, self.server, self.proc, self.context = root, server, proc, context
        self.started = 0  # pages opened so far (each test's folder and workspace are numbered)

    def folder(self, name: str = "") -> Path:
        """A new empty folder under the server's root, for one test's notebooks and gems."""
        self.started += 1
        path = self.root / f"t{self.started:02d}{'-' + name if name else ''}"
        path.mkdir()
        return path

    def _api(self, method: str, path: str) -> Any:
        req = urllib.request.Request(f"{self.server}{path}?token={TOKEN}", method=method)
        with urllib.request.urlopen(req, timeout=30) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def sessions(self) -> list[dict[str, Any]]:
        """The server's sessions (a notebook and its kernel each), paths relative to the root."""
        sessions: list[dict[str, Any]] = self._api("GET", "/api/sessions")
        return sessions

    def _shut_down(self, folder: Path) -> None:
        """Shut down the kernels of the notebooks in `folder` (one test's), and wait for it."""
        sub = folder.relative_to(self.root).as_posix()
        for session in self.sessions():
            if session.get("path", "").startswith(f"{sub}/"):
                with contextlib.suppress(OSError):  # (ended meanwhile)
                    self._api("DELETE", f"/api/sessions/{session['id']}")

    @contextlib.contextmanager
    def page(self, folder: Path, screenshot: str, *, height: int = 900) -> Iterator[tuple[Any, str]]:
        """A fresh page (`height` pixels tall, for what its screenshot must hold) and the URL
        of `folder` in a workspace of its own: open a notebook at f"{base}/NAME?token=TOKEN".
        The screenshot is taken pass or fail (for the CI log); the folder's kernels stop after."""
        assert self.proc.poll() is None, (self.root / "lab.log").read_text()
        sub = folder.relative_to(self.root).as_posix()
        base = f"{self.server}/lab/workspaces/{folder.name}/tree/{sub}"
        page = self.context.new_page()
        try:
            page.set_viewport_size({"width": 1280, "height": height})
            try:
                yield page, base
            finally:  # what the page showed, pass or fail, for the CI log
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / screenshot))
        finally:
            page.close()
            self._shut_down(folder)


@contextlib.contextmanager
def running(root: Path) -> Iterator[Lab]:
    """JupyterLab on `root` (started by `gem-workbench lab`) and Chromium; both stopped after."""
    from playwright.sync_api import sync_playwright

    port = _free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(root / ".cfg"),
        "JUPYTER_RUNTIME_DIR": str(root / ".rt"),
        "IPYTHONDIR": str(root / ".ipy"),
        "GEM_WORKBENCH_HOME": str(root / ".home"),
    }
    exe = shutil.which("gem-workbench", path=os.path.dirname(sys.executable))
    assert exe, "gem-workbench is not installed beside this Python"
    log = root / "lab.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                exe,
                "lab",
                str(root),
                "--no-browser",
                "--port",
                str(port),
                "--",
                f"--IdentityProvider.token={TOKEN}",
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60  # (a bound for a server that never answers)
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                urllib.request.urlopen(f"{server}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "JupyterLab did not answer in 60 s"
                time.sleep(0.25)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                yield Lab(root, server, proc, browser.new_context())
            finally:
                browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


class Labs:
    """The session's JupyterLab and Chromium: started by the first browser test that asks, stopped
    after the last of a run of them (conftest's pytest_runtest_teardown calls `stop_all`), so
    no other test runs beside them: Playwright's sync API keeps an asyncio loop running in this
    thread while its browser is open, and `asyncio.run` in a later test then fails."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self._factory = factory
        self._stack: contextlib.ExitStack | None = None
        self._lab: Lab | None = None
        _open.append(self)

    def get(self) -> Lab:
        if self._lab is None:
            stack = contextlib.ExitStack()
            self._lab = stack.enter_context(running(self._factory.mktemp("lab")))
            self._stack = stack
        return self._lab

    def stop(self) -> None:
        if self._stack is not None:
            stack, self._stack, self._lab = self._stack, None, None
            stack.close()


_open: list[Labs] = []


def stop_all() -> None:
    """Stop the JupyterLab and Chromium the browser tests started, if they run."""
    for labs in _open:
        labs.stop()


@pytest.fixture(scope="session")
def labs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Labs]:
    """The session's one JupyterLab, started on demand (see Labs)."""
    labs = Labs(tmp_path_factory)
    try:
        yield labs
    finally:
        labs.stop()
        _open.remove(labs)


@pytest.fixture
def lab(labs: Labs) -> Lab:
    """The session's JupyterLab and Chromium, running (started if this is the first test of a
    run of browser tests)."""
    return labs.get()


@pytest.fixture
def folder(lab: Lab) -> Path:
    """A new folder of this test's own under the module's JupyterLab root."""
    return lab.folder()
