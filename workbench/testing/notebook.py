"""Run a notebook on a fresh kernel with nbclient; report a failing cell as nbclient does.

nbclient, nbformat, jupyter_client (and asyncio) are imported inside the functions that use
them: nbclient alone costs over a second to import, and this module is loaded by the pytest
plugin in every pytest run of the environment, the xdist controller's included.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

#: The kernel notebooks run on unless told otherwise (the kernelspec this package installs).
DEFAULT_KERNEL = "gem-workbench"
#: Seconds one cell may run before the notebook fails.
DEFAULT_TIMEOUT = 120.0
#: Seconds the kernel may take to start and answer.
STARTUP_TIMEOUT = 60.0

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_RULE = "------------------"


def strip_ansi(text: str) -> str:
    """`text` without ANSI colour and cursor codes (IPython colours its tracebacks)."""
    return _ANSI.sub("", text)


class NotebookFailure(Exception):
    """A notebook cell raised, ran over its timeout, or killed the kernel.

    `str()` is the report: which cell, its source, its captured output, the kernel traceback.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        kind: str,
        cell_index: int,
        source: str,
        output: str = "",
        traceback: str = "",
        ename: str = "",
        evalue: str = "",
        timeout: float | None = None,
    ) -> None:
        self.path = Path(path)
        self.kind = kind  # "error" | "timeout" | "dead kernel"
        self.cell_index = cell_index  # 0-based index in the notebook's cells
        self.source = source
        self.output = output
        self.traceback = traceback
        self.ename = ename
        self.evalue = evalue
        self.timeout = timeout
        super().__init__(self.headline())

    def headline(self) -> str:
        where = f"{self.path}: cell {self.cell_index + 1}"
        if self.kind == "timeout":
            return f"{where} ran over the {self.timeout:g} s cell timeout"
        if self.kind == "dead kernel":
            return f"{where}: the kernel died while running it"
        return (
            f"{where} raised {self.ename}: {self.evalue}" if self.evalue else f"{where} raised {self.ename}"
        )

    def report(self) -> str:
        # IPython's traceback quotes the failing lines of the cell: the source once is enough
        quoted = self.traceback and re.search(r"^(Cell In\[\d+\]|Input In \[)", self.traceback, re.M)
        parts = [self.headline(), _RULE] + ([] if quoted else [self.source.rstrip(), _RULE])
        if self.output:
            parts += [self.output.rstrip(), _RULE]
        if self.traceback:
            parts += ["", self.traceback.rstrip()]
        return "\n".join(parts) + "\n"

    def __str__(self) -> str:
        return self.report()


def captured_output(cell: Any) -> str:
    """A cell's streams and plain-text results, labelled like nbclient's error message."""
    parts = []
    for out in cell.get("outputs", []):
        kind = out.get("output_type")
        if kind == "stream":
            text = out.get("text", "")
            parts.append(f"----- {out.get('name', 'stdout')} -----\n{strip_ansi(text).rstrip()}")
        elif kind in ("execute_result", "display_data"):
            text = out.get("data", {}).get("text/plain")
            if text:
                text = "".join(text) if isinstance(text, list) else text
                parts.append(f"----- {kind.replace('_', ' ')} -----\n{strip_ansi(text).rstrip()}")
    return "\n".join(parts)


#: Arguments every notebook kernel starts with: IPython history in memory (nothing shared
#: between notebook runs) and its log only from errors up (ipykernel warns on every start that
#: it "is running over TCP without encryption", a local test kernel: noise in every report).
KERNEL_ARGUMENTS = ["--HistoryManager.hist_file=:memory:", "--Application.log_level=ERROR"]


class NotebookKernel:
    """A fresh kernel started for one run of one notebook, possibly before that run.

    Made by `astart_kernel`, used once by `arun_started`, which shuts it down; `aclose()` shuts
    down one that will not run (the pytest plugin starts the next notebook's kernel while the
    current notebook runs, and closes it if the session ends first).
    """

    def __init__(self, path: Path, km: Any, cwd: Path, home: Any) -> None:
        self.path = path
        self.km = km  # jupyter_client's AsyncKernelManager
        self.client: Any = None  # its client once a run has connected one
        self.cwd = cwd
        # the temporary GEM_WORKBENCH_HOME made for it, removed with it (None: the caller's
        # env named one)
        self._home: tempfile.TemporaryDirectory[str] | None = home

    async def aclose(self, *, grace: float = 0) -> None:
        """Wait up to `grace` seconds for the kernel to exit (it was asked to), then kill it if
        it still runs; free its ports and files, remove its home."""
        import asyncio

        try:
            # jupyter_client's graceful shutdown looks at the process every 100 ms: ~50 ms
            # lost per notebook on average; this looks every 10 ms
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and await self.km.is_alive():
                await asyncio.sleep(0.01)
            if self.km.has_kernel:
                await self.km.shutdown_kernel(now=True)
        finally:
            try:
                if self.client is not None:
                    self.client.stop_channels()
                    self.client = None
                await self.km.cleanup_resources()
            finally:
                if self._home is not None:
                    self._home.cleanup()
                    self._home = None


async def astart_kernel(
    path: str | os.PathLike[str],
    *,
    kernel_name: str = DEFAULT_KERNEL,
    env: dict[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> NotebookKernel:
    """Start the kernel a run of the notebook at `path` will use (see `run_notebook` for
    `env` and `cwd`); it boots while the caller does something else."""
    from jupyter_client.manager import AsyncKernelManager

    from workbench.testing._client import ReadyClient

    nb_path = Path(path)
    kernel_env = {**os.environ, **(env or {})}
    folder = Path(cwd) if cwd is not None else nb_path.resolve().parent
    home = None
    if not (env and "GEM_WORKBENCH_HOME" in env):
        home = tempfile.TemporaryDirectory(prefix="gem-workbench-nb-", ignore_cleanup_errors=True)
        kernel_env["GEM_WORKBENCH_HOME"] = home.name
    # ReadyClient: no 0.2 s of waiting for IOPub to fall quiet at each start (see its module)
    km = AsyncKernelManager(kernel_name=kernel_name, client_factory=ReadyClient)
    kernel = NotebookKernel(nb_path, km, folder, home)
    try:
        await km.start_kernel(extra_arguments=list(KERNEL_ARGUMENTS), env=kernel_env, cwd=str(folder))
    except BaseException:
        await kernel.aclose()
        raise
    return kernel


def run_notebook(
    path: str | os.PathLike[str],
    *,
    kernel_name: str = DEFAULT_KERNEL,
    timeout: float | None = DEFAULT_TIMEOUT,
    env: dict[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Any:
    """Execute every code cell of the notebook at `path` on a fresh kernel; return the notebook.

    Raises NotebookFailure at the first failing cell (cells tagged `raises-exception` may fail,
    cells tagged `skip-execution` are skipped). `timeout` is per cell, in seconds (nbclient counts
    whole seconds: a fraction rounds up); None or 0: no limit.
    `env` is added to this process's environment for the kernel; unless it sets
    GEM_WORKBENCH_HOME, that points at a new temporary folder removed afterwards, so real
    state never leaks between notebooks. `cwd` defaults to the notebook's folder, as in
    JupyterLab.
    """
    from jupyter_core.utils import run_sync

    async def start_and_run() -> Any:
        kernel = await astart_kernel(path, kernel_name=kernel_name, env=env, cwd=cwd)
        return await arun_started(kernel, timeout=timeout)

    return run_sync(start_and_run)()


async def arun_started(
    kernel: NotebookKernel,
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
    on_ready: Callable[[], Awaitable[None]] | None = None,
    then_close: Callable[[Coroutine[Any, Any, None]], None] | None = None,
) -> Any:
    """`run_notebook` on a kernel `astart_kernel` made; it is shut down after, whatever happens.

    `on_ready` is awaited once the kernel answers, before the first cell runs. The kernel is
    asked to shut down once the last cell ran (or failed); the rest of its end (waiting for the
    process to exit, killing it if it does not in time, removing its files) is awaited here,
    or handed to `then_close` to run while the caller goes on.
    """
    asked = False
    try:
        result = await _run(kernel, math.ceil(timeout) if timeout and timeout > 0 else None, on_ready)
        asked = True
        return result
    except NotebookFailure:
        asked = True
        raise
    finally:
        closing = kernel.aclose(grace=kernel.km.shutdown_wait_time if asked else 0)
        if then_close is not None and asked:
            then_close(closing)
        else:
            await closing


async def _run(
    kernel: NotebookKernel, timeout: int | None, on_ready: Callable[[], Awaitable[None]] | None
) -> Any:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    path, km = kernel.path, kernel.km
    nb = nbformat.read(path, as_version=4)
    current: dict[str, Any] = {"index": -1, "cell": {"source": "", "outputs": []}, "reply": {}}

    def on_cell_execute(cell: Any, cell_index: int) -> None:
        current.update(index=cell_index, cell=cell, reply={})

    def on_cell_error(cell: Any, cell_index: int, execute_reply: dict[str, Any]) -> None:
        current["reply"] = execute_reply.get("content", {})

    async def on_notebook_start(notebook: Any) -> None:
        if on_ready is not None:
            await on_ready()

    # We own the kernel manager (nbclient then leaves shutdown to us) so that a timed-out cell
    # can be interrupted first and every kernel is shut down gracefully: its atexit handlers
    # close open benches and their Deno sandboxes, leaving no process behind. The kernel runs
    # already: nbclient only connects to it.
    client = NotebookClient(
        nb,
        km=km,
        kernel_name=km.kernel_name,
        timeout=timeout,
        startup_timeout=STARTUP_TIMEOUT,
        resources={"metadata": {"path": str(kernel.cwd)}},
        extra_arguments=list(KERNEL_ARGUMENTS),
        on_cell_execute=on_cell_execute,
        on_cell_error=on_cell_error,
        on_notebook_start=on_notebook_start,
    )

    def failure(kind: str, **extra: Any) -> NotebookFailure:
        cell = current["cell"]
        return NotebookFailure(
            path,
            kind=kind,
            cell_index=current["index"],
            source=cell.get("source", ""),
            output=captured_output(cell),
            **extra,
        )

    failed: NotebookFailure | None = None
    try:
        await client.async_execute()
    except CellExecutionError as exc:
        reply = current["reply"]
        # (no traceback: a magic's one-line error, already in the output; nbclient's text
        # would repeat the source and the output)
        tb = "\n".join(reply.get("traceback") or [])
        failed = failure("error", traceback=strip_ansi(tb), ename=exc.ename, evalue=strip_ansi(exc.evalue))
    except CellTimeoutError:
        failed = failure("timeout", timeout=timeout)
    except DeadKernelError:
        failed = failure("dead kernel")
    finally:
        timed_out = failed is not None and failed.kind == "timeout"
        interrupted = await _shutdown(kernel, client, interrupt=timed_out)
    if failed is not None and interrupted.get("traceback"):  # where the cell was stuck
        failed.traceback = strip_ansi("\n".join(interrupted["traceback"]))
    if failed is not None:
        raise failed
    return nb


async def _shutdown(kernel: NotebookKernel, client: Any, *, interrupt: bool) -> dict[str, Any]:
    """Ask the kernel to shut down (a graceful end: its atexit handlers close open benches and
    their Deno sandboxes); return the reply of the cell interrupted first, if any."""
    from queue import Empty

    km = kernel.km
    reply: dict[str, Any] = {}
    try:
        if km.has_kernel and await km.is_alive():
            if interrupt:  # a busy kernel would only be killed after shutdown_wait_time
                await km.interrupt_kernel()
                if client.kc is not None:
                    try:  # the interrupted cell's reply: the kernel is idle again
                        msg = await client.kc.get_shell_msg(timeout=5)
                        reply = msg.get("content", {})
                    except Empty:
                        pass
            await km.request_shutdown()
    finally:
        # its channels stay open until the process has ended (NotebookKernel.aclose), as in
        # jupyter_client's own shutdown
        kernel.client, client.kc = client.kc, None
    return reply
