"""Run a notebook on a fresh kernel with nbclient; report a failing cell as nbclient does.

nbclient, nbformat, jupyter_client (and asyncio) are imported inside the functions that use
them: nbclient alone costs over a second to import, and this module is loaded by the pytest
plugin in every pytest run of the environment, the xdist controller's included.
"""

from __future__ import annotations

import atexit
import functools
import math
import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._text import terminal_safe
from ._shared import DEFAULT_KERNEL, OUTPUT_TAIL

if TYPE_CHECKING:
    from ._kernel import NotebookKernel

#: Seconds one cell may run before the notebook fails.
DEFAULT_TIMEOUT = 120.0
#: Seconds the kernel may take to start and answer.
STARTUP_TIMEOUT = 60.0
#: Seconds a cell's outputs may still arrive after its reply. nbclient's 4 s dropped the end of
#: a cell that printed 20,000 lines on a busy machine ("Timeout waiting for IOPub output"); the
#: kernel's idle status ends the wait as soon as they are in, so this costs a normal cell nothing.
IOPUB_TIMEOUT = 60


_RULE = "------------------"

#: How IPython names a cell in a traceback, by its execution count: `Cell In[3], line 2`
#: (IPython 8 and later), `Input In [3]` (7.x).
_IPYTHON_CELL = re.compile(r"\b(?:Cell In\[(\d+)\]|Input In \[(\d+)\])")
#: How a report's traceback names a cell (what `name_cells` made of IPython's name).
_REPORT_CELL = re.compile(r"^(?:cell \d+|input \d+ \(no cell of this notebook\)),", re.M)


def strip_ansi(text: str) -> str:
    """`text` without ANSI colour and cursor codes (IPython colours its tracebacks), every other
    escape and control character shown visibly (`workbench._text.terminal_safe`)."""
    return terminal_safe(text)


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
        self.kind = kind  # "error" | "timeout" | "dead kernel" | "too large" (ename: its code)
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
        if self.kind == "too large":
            return f"{where}: {self.ename}: {self.evalue}"
        return (
            f"{where} raised {self.ename}: {first_line(self.evalue)}"
            if self.evalue
            else f"{where} raised {self.ename}"
        )

    def report(self) -> str:
        # IPython's traceback quotes the failing lines of the cell: the source once is enough
        quoted = self.traceback and _REPORT_CELL.search(self.traceback)
        parts = [self.headline(), _RULE] + ([] if quoted else [self.source.rstrip(), _RULE])
        if self.output:
            parts += [self.output.rstrip(), _RULE]
        if self.traceback:
            parts += ["", self.traceback.rstrip()]
        return "\n".join(parts) + "\n"

    def __str__(self) -> str:
        return self.report()


def captured_output(cell: Any) -> str:
    """A cell's streams and plain-text results, labelled like nbclient's error message (their
    last OUTPUT_TAIL characters)."""
    parts: list[tuple[str, str]] = []
    for out in cell.get("outputs", []):
        kind = out.get("output_type")
        if kind == "stream":
            parts.append(
                (f"----- {out.get('name', 'stdout')} -----", strip_ansi(out.get("text", "")).rstrip())
            )
        elif kind in ("execute_result", "display_data"):
            text = out.get("data", {}).get("text/plain")
            if text:
                text = "".join(text) if isinstance(text, list) else text
                parts.append((f"----- {kind.replace('_', ' ')} -----", strip_ansi(text).rstrip()))
    kept: list[str] = []  # from the end, whole parts, then the end of one, under its label
    left = OUTPUT_TAIL
    for i in range(len(parts) - 1, -1, -1):
        label, text = parts[i]
        if len(text) > left:
            dropped = len(text) - left + sum(len(t) for _, t in parts[:i])
            kept.append(f"{label}\n[{dropped} characters not shown]\n{text[len(text) - left :]}")
            break
        kept.append(f"{label}\n{text}")
        left -= len(text)
    return "\n".join(reversed(kept))


def name_cells(text: str, cells: dict[int, int]) -> str:
    """`text` (a kernel's traceback) with each cell IPython names by its execution count named
    as the rest of the report names it, by its place in the notebook: `cell 4, line 2`.
    `cells` maps execution counts to 0-based cell indexes; code the kernel ran that is no cell
    (`get_ipython().run_cell(…)` in one) is `input N (no cell of this notebook)`."""

    def name(match: re.Match[str]) -> str:
        count = int(match.group(1) or match.group(2))
        index = cells.get(count)
        return f"cell {index + 1}" if index is not None else f"input {count} (no cell of this notebook)"

    return _IPYTHON_CELL.sub(name, text)


def first_line(text: str, limit: int = 500) -> str:
    """The first line of `text`, cut to `limit` characters, " […]" after it if that left some
    out (a failure's message, in a headline or pytest's short summary)."""
    first = text.split("\n", 1)[0]
    return first if len(first) <= limit and first == text else f"{first[:limit]} […]"


def _tail(text: str) -> str:
    """The last OUTPUT_TAIL characters of `text` (a traceback), saying how many were left out."""
    if len(text) <= OUTPUT_TAIL:
        return text
    return f"[{len(text) - OUTPUT_TAIL} characters not shown]\n{text[-OUTPUT_TAIL:]}"


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
    from . import _interrupt
    from ._kernel import astart_kernel, kill_all

    async def start_and_run() -> Any:
        kernel = await astart_kernel(path, kernel_name=kernel_name, env=env, cwd=cwd)
        return await arun_started(kernel, timeout=timeout)

    return _interrupt.run(start_and_run, what=path, on_again=kill_all)


async def arun_started(
    kernel: NotebookKernel,
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
    on_ready: Callable[[], Awaitable[None]] | None = None,
    end_later: Callable[[NotebookKernel], None] | None = None,
) -> Any:
    """`run_notebook` on a kernel `_kernel.astart_kernel` made, which is shut down after.

    `on_ready` is awaited once the kernel answers, before the first cell runs. The kernel is
    asked to shut down once the last cell ran (or failed); its end (the process exiting, or
    killed if it does not in time; its files removed) is awaited here, or, for a notebook that
    passed and given `end_later`, waited for by a thread while `end_later(kernel)` makes sure
    `aclose()` runs once it is done. (A failure's report then has all the kernel wrote, and
    after a timeout nbclient's output task still reads the channels until the process ends.)
    """
    passed = False
    try:
        result = await _run(kernel, math.ceil(timeout) if timeout and timeout > 0 else None, on_ready)
        passed = True
        return result
    finally:
        grace = kernel.km.shutdown_wait_time
        if passed and end_later is not None and kernel.end_in_background(grace):
            end_later(kernel)
        else:
            await kernel.aclose(grace=grace)


async def _run(
    kernel: NotebookKernel, timeout: int | None, on_ready: Callable[[], Awaitable[None]] | None
) -> Any:
    import nbformat
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    from . import _interrupt

    path = kernel.path
    nb = nbformat.read(path, as_version=4)
    current: dict[str, Any] = {"index": -1, "cell": {"source": "", "outputs": []}, "reply": {}}

    client = _new_client(kernel, nb, current, timeout, on_ready)

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
        tb = name_cells(strip_ansi("\n".join(reply.get("traceback") or [])), _cells(nb, current))
        evalue = _name_compiled_cell(strip_ansi(exc.evalue), tb, current["index"])
        failed = failure("error", traceback=_tail(tb), ename=exc.ename, evalue=evalue)
    except CellTimeoutError:
        failed = failure("timeout", timeout=timeout)
    except DeadKernelError:
        failed = failure("dead kernel")
    finally:
        flood = client.flood
        if flood is not None:  # (nbclient saw a cancelled cell: a dead kernel)
            failed = failure("too large", ename="E_TOO_LARGE", evalue=flood.message())
            if client.kc is not None:  # what the kernel still sends is then neither read nor queued
                client.kc.iopub_channel.close()
        client.forget_exit_cleanup()
        _interrupt.reclaim()  # (nbclient removed its handler, leaving Python's default one)
        timed_out = failed is not None and failed.kind == "timeout"
        # (after a Ctrl-C, a kernel found idle would never send the reply a timeout waits for)
        interrupted = await _shutdown(
            kernel, client, interrupt=timed_out or flood is not None or _interrupt.pressed(), reply=timed_out
        )
    if _interrupt.pressed():  # (a cell ran, or the run would have ended cancelled, at once)
        at = f" at cell {current['index'] + 1}" if current["index"] >= 0 else ""
        raise KeyboardInterrupt(f"{path}: Ctrl-C{at}")
    if failed is not None and interrupted.get("traceback"):  # where the cell was stuck
        failed.traceback = _tail(
            name_cells(strip_ansi("\n".join(interrupted["traceback"])), _cells(nb, current))
        )
    if failed is not None:
        raise failed
    return nb


def _new_client(
    kernel: NotebookKernel,
    nb: Any,
    current: dict[str, Any],
    timeout: int | None,
    on_ready: Callable[[], Awaitable[None]] | None,
) -> Any:
    """nbclient's client of `kernel` for `nb`, keeping in `current` the cell that runs (its
    index, the cell, the reply of its error) and awaiting `on_ready` once it is connected."""

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
    km = kernel.km
    return _client_class()(
        nb,
        km=km,
        kernel_name=km.kernel_name,
        timeout=timeout,
        startup_timeout=STARTUP_TIMEOUT,
        iopub_timeout=IOPUB_TIMEOUT,
        resources={"metadata": {"path": str(kernel.cwd)}},
        on_cell_execute=on_cell_execute,
        on_cell_error=on_cell_error,
        on_notebook_start=on_notebook_start,
    )


def _name_compiled_cell(evalue: str, traceback: str, index: int) -> str:
    """A SyntaxError's message names the cell by the file IPython compiled it as
    (`incomplete input (1672429193.py, line 2)`): named as the traceback names it instead."""
    found = re.search(r"\((\d+)\.py, line (\d+)\)\Z", evalue)
    if found is None or f"cell {index + 1}, line {found[2]}\n" not in traceback:
        return evalue
    return f"{evalue[: found.start()]}(cell {index + 1}, line {found[2]})"


def _cells(nb: Any, current: dict[str, Any]) -> dict[int, int]:
    """Execution count -> 0-based index of the notebook's cells that ran (the current one's
    count from its reply, should nbclient not have set it)."""
    cells = {c["execution_count"]: i for i, c in enumerate(nb.cells) if c.get("execution_count")}
    count = current["reply"].get("execution_count")
    if isinstance(count, int) and current["index"] >= 0:
        cells[count] = current["index"]
    return cells


@functools.cache
def _client_class() -> type:
    from nbclient import NotebookClient

    from . import _interrupt
    from ._iopub import BoundedIOPubChannel, Flood
    from ._outputs import OutputBound

    class Client(NotebookClient):
        """nbclient's client, with Ctrl-C ours while the kernel boots too (see _interrupt), and
        each cell's outputs bounded as they arrive (see _outputs, _iopub)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._bound = OutputBound()
            self.flood: Flood | None = None

        async def async_start_new_kernel_client(self) -> Any:
            _interrupt.reclaim()  # (nbclient set its own SIGINT handler just before this)
            kc = await super().async_start_new_kernel_client()
            if isinstance(kc.iopub_channel, BoundedIOPubChannel):
                kc.iopub_channel.on_flood = self._flooded
                kc.iopub_channel.alive = self._kernel_alive
            return kc

        def forget_exit_cleanup(self) -> None:
            """Unregister nbclient's atexit cleanup of the kernel: it registers one as it sets the
            kernel up and forgets it only if the setup succeeded; one that did not start would be
            cleaned up again, and fail, at exit (the kernel is ours: `_shutdown` ends it)."""
            atexit.unregister(self._cleanup_kernel)

        async def _kernel_alive(self) -> bool:
            from jupyter_core.utils import ensure_async

            return self.km is not None and bool(await ensure_async(self.km.is_alive()))

        def _flooded(self, flood: Flood) -> None:
            """Stop the cell at once (nbclient then says its kernel died: `_run` says why)."""
            self.flood = flood
            task = getattr(self, "task_poll_for_reply", None)
            if task is not None and not task.done():
                task.cancel()

        def output(
            self, outs: list[Any], msg: dict[str, Any], display_id: str | None, cell_index: int
        ) -> Any:
            out = super().output(outs, msg, display_id, cell_index)
            if out is not None and outs and outs[-1] is out:  # (an Output widget's hook keeps none)
                self._bound.added(outs, cell_index, self._display_id_map)
            return out

    return Client


async def _shutdown(kernel: NotebookKernel, client: Any, *, interrupt: bool, reply: bool) -> dict[str, Any]:
    """Ask the kernel to shut down (a graceful end: its atexit handlers close open benches and
    their Deno sandboxes); `interrupt` it first, and given `reply` return the reply of the cell
    it interrupted (if it sends one)."""
    from queue import Empty

    km = kernel.km
    content: dict[str, Any] = {}
    try:
        if km.has_kernel and await km.is_alive():
            if interrupt:  # a busy kernel would only be killed after shutdown_wait_time
                await km.interrupt_kernel()
                if reply and client.kc is not None:
                    try:  # the interrupted cell's reply: the kernel is idle again
                        msg = await client.kc.get_shell_msg(timeout=5)
                        content = msg.get("content", {})
                    except Empty:
                        pass
            await km.request_shutdown()
    finally:
        # its channels stay open until the process has ended (NotebookKernel.aclose), as in
        # jupyter_client's own shutdown
        kernel.client = client.kc
    return content
