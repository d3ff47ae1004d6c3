"""A notebook's kernel apart from its run: started before the run, ended after it.

The pytest plugin starts the next notebook's kernel while one runs, and lets a kernel exit
while the next notebook runs (see `plugin.NotebookItem`); `notebook.run_notebook` does both in
turn. Imported only when a notebook runs (it imports jupyter_client).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

from jupyter_client.manager import AsyncKernelManager

from . import _asserts
from ._client import ReadyClient
from ._reap import MARKER, kill_marked, kill_pids, new_marker, stop_tree
from ._shared import DEFAULT_KERNEL, OUTPUT_TAIL  # (of the kernel's own output too: `output()`)

#: Arguments every notebook kernel starts with: IPython history in memory (nothing shared
#: between notebook runs) and its log only from errors up (ipykernel warns on every start that
#: it "is running over TCP without encryption", a local test kernel: noise in every report).
KERNEL_ARGUMENTS = ["--HistoryManager.hist_file=:memory:", "--Application.log_level=ERROR"]
#: And on the workbench's own kernel (known to import this package): stdout and stderr sent in
#: bounded messages, its IOPub paced by the client, never dropping (see _stream); the kernel
#: the subreaper of what it starts (see _reap).
WORKBENCH_KERNEL_ARGUMENTS = [
    "--IPKernelApp.outstream_class=workbench.testing._stream.ChunkedOutStream",
    "--IPKernelApp.extra_extensions=workbench.testing._reap",
    "--IPKernelApp.extra_extensions=workbench.testing._stream",
]


#: The kernels started in this process and not closed yet (what `kill_all` kills).
_live: set[NotebookKernel] = set()


def kill_all() -> None:
    """Kill every kernel of this process that runs (a second Ctrl-C: no waiting for them)."""
    for kernel in list(_live):
        kernel.kill()


class NotebookKernel:
    """A fresh kernel started for one run of one notebook, possibly before that run.

    `environ` is the environment its process started with, but GEM_WORKBENCH_HOME (a
    temporary folder made for it, removed with it, unless the caller's env named one).
    """

    def __init__(self, path: Path, km: AsyncKernelManager, cwd: Path, environ: dict[str, str]) -> None:
        self.path = path
        self.km = km
        self.cwd = cwd
        self.environ = environ
        self.client: Any = None  # its client, once a run has connected one
        # what its process writes to stdout and stderr, when astart_kernel was asked to keep it
        self._output: IO[bytes] | None = None
        self._read = 0  # how much of it output() has given
        self._left = ""  # what output() had not given when aclose closed the file
        self._home: tempfile.TemporaryDirectory[str] | None = None
        self._ending: threading.Thread | None = None
        self._process: subprocess.Popen[bytes] | None = None  # what _ending waits for
        self.marker = new_marker()  # in its environment: its descendants are found by it
        # what it started, stopped before it was killed (its exit would have killed them)
        self._stopped: set[int] = set()

    def end_in_background(self, grace: float) -> bool:
        """After a shutdown request: a thread waits up to `grace` seconds for the process to
        exit and kills it if it does not. False (nothing started) if its process is not one
        this process can wait for; `aclose(grace=…)` then does it all."""
        process = getattr(self.km.provisioner, "process", None)
        if not isinstance(process, subprocess.Popen):
            return False
        self._process = process

        def end() -> None:
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                self._stop_tree(process)
                process.kill()
                process.wait()

        self._ending = threading.Thread(target=end, name=f"end of kernel {process.pid}", daemon=True)
        self._ending.start()
        return True

    def kill(self) -> None:
        """Kill its process now, unless it has ended (and was reaped: its pid may be another's),
        and every process it started."""
        process = getattr(self.km.provisioner, "process", None)
        if isinstance(process, subprocess.Popen) and process.poll() is None:
            self._stop_tree(process)
            process.kill()
        kill_marked(self.marker)
        kill_pids(self._stopped)

    def _stop_tree(self, process: subprocess.Popen[bytes]) -> None:
        """Stop what the kernel started before it is killed: it cannot kill them itself then, and
        their new parent would be PID 1 (the kernel is their subreaper while it runs)."""
        self._stopped |= stop_tree(process.pid)

    def make_files(self, env: dict[str, str], *, own_home: bool, keep_output: bool) -> dict[str, Any]:
        """Before its process starts: a GEM_WORKBENCH_HOME of its own (set in `env`) when
        `own_home`, a file for its stdout and stderr when `keep_output` (read by `output()`);
        the streams to start the process with. aclose removes both."""
        if own_home:
            self._home = tempfile.TemporaryDirectory(prefix="gem-workbench-nb-", ignore_cleanup_errors=True)
            env["GEM_WORKBENCH_HOME"] = self._home.name
        if not keep_output:
            return {}
        self._output = tempfile.TemporaryFile()
        # each write of the kernel lands at the end, wherever the shared offset is
        fcntl.fcntl(self._output, fcntl.F_SETFL, fcntl.fcntl(self._output, fcntl.F_GETFL) | os.O_APPEND)
        return {"stdout": self._output, "stderr": subprocess.STDOUT}

    def output(self) -> str:
        """What the kernel's process wrote since the last call (its last OUTPUT_TAIL bytes);
        "" if its output is not kept."""
        if self._output is None:
            text, self._left = self._left, ""
            return text
        # (pread and fstat: the kernel shares the file's offset, which is left alone)
        fd = self._output.fileno()
        size = os.fstat(fd).st_size
        start = max(self._read, size - OUTPUT_TAIL)
        data = os.pread(fd, size - start, start)
        skipped, self._read = start - self._read, start + len(data)
        text = data.decode("utf-8", "replace")
        return f"[{skipped} bytes not shown]\n{text}" if skipped else text

    @property
    def ended(self) -> bool:
        """Whether the thread of `end_in_background` is done (its process has exited)."""
        return self._ending is not None and not self._ending.is_alive()

    def wait_ended(self) -> None:
        """Wait for the thread of `end_in_background`; on Ctrl-C, kill the process first."""
        if self._ending is None or self._process is None:
            return
        try:
            self._ending.join()
        except KeyboardInterrupt:
            self._process.kill()
            self._ending.join()
            raise

    async def aclose(self, *, grace: float = 0) -> None:
        """Wait up to `grace` seconds for the kernel to exit (it was asked to), then kill it if
        it still runs; free its ports and files, remove its home."""
        try:
            try:
                if self._ending is None:
                    # jupyter_client's graceful shutdown looks at the process every 100 ms:
                    # ~50 ms lost per notebook on average; this looks every 10 ms
                    deadline = time.monotonic() + grace
                    while time.monotonic() < deadline and await self.km.is_alive():
                        await asyncio.sleep(0.01)
            finally:  # (also when a Ctrl-C cancelled the wait)
                # a process the end thread reaped gets no signal: its process group id may be
                # another's by now
                if self.km.has_kernel and not self.ended:
                    process = getattr(self.km.provisioner, "process", None)
                    if isinstance(process, subprocess.Popen) and process.poll() is None:
                        self._stop_tree(process)
                    await self.km.shutdown_kernel(now=True)
        finally:
            try:
                if self.client is not None:
                    client, self.client = self.client, None
                    try:
                        client.stop_channels()
                    except RuntimeError:  # its sockets' event loop was closed (by a test)
                        pass
                await self.km.cleanup_resources()
            finally:
                _live.discard(self)
                # what it started and left running, in a session of its own included (_reap)
                kill_marked(self.marker)
                kill_pids(self._stopped)
                if self._home is not None:
                    self._home.cleanup()
                    self._home = None
                if self._output is not None:
                    self._left = self.output()
                    self._output.close()
                    self._output = None


async def astart_kernel(
    path: str | os.PathLike[str],
    *,
    kernel_name: str,
    env: dict[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    keep_output: bool = False,
) -> NotebookKernel:
    """Start the kernel a run of the notebook at `path` will use (see `run_notebook` for
    `env` and `cwd`); it boots while the caller does something else. `keep_output`: its
    process writes stdout and stderr to a file of its own (`output()`), not to this process's."""
    nb_path = Path(path)
    environ = {**os.environ, **(env or {})}
    folder = Path(cwd) if cwd is not None else nb_path.resolve().parent
    # ReadyClient: no 0.2 s of waiting for IOPub to fall quiet at each start (see its module)
    km = AsyncKernelManager(kernel_name=kernel_name, client_factory=ReadyClient)
    kernel = NotebookKernel(nb_path, km, folder, environ)
    _live.add(kernel)
    kernel_env = {**environ, MARKER: kernel.marker}
    # a failing assert says what it compared, as in pytest (unless the caller's env says not to)
    if _asserts.ENV not in (env or {}):
        kernel_env[_asserts.ENV] = "1"
    streams = kernel.make_files(
        kernel_env, own_home="GEM_WORKBENCH_HOME" not in (env or {}), keep_output=keep_output
    )
    try:
        await km.start_kernel(
            extra_arguments=KERNEL_ARGUMENTS
            + (WORKBENCH_KERNEL_ARGUMENTS if kernel_name == DEFAULT_KERNEL else []),
            env=kernel_env,
            cwd=str(folder),
            **streams,
        )
    except BaseException:
        await kernel.aclose()
        raise
    return kernel
