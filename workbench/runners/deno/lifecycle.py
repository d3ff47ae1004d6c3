"""The sandbox's Deno process: its start (with its private channel) and its stop.

The tool runs in a Worker that may only read the gem folder and its resources (N1); `npm:` and
remote imports are switched off (N4); one process serves one gem and is never shared (N3).
RPC travels on two FIFOs (one each way) in a private folder that only the host module may open
(granted to the host, not to the worker), removed once both ends are open. A Ctrl-C anywhere
in a start or a stop leaves nothing that the next stop does not end (tests/test_deno_interrupts).
"""

from __future__ import annotations

import _thread
import contextlib
import json
import os
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import quote, urljoin

from ..._deno import DENO_FLAGS, minimal_env
from ..._errors import WorkbenchError
from . import bundle
from .affinity import RELEASE_AFTER, Colocation
from .framing import Broken, Framed
from .guard import Watch, rss_limit_mb, watch
from .job import Job
from .process import Output, alive, kill, open_into, open_writer, terminate

HERE = Path(__file__).resolve().parent


class Inspecting(Protocol):
    """What a sandbox asks of its inspector (workbench/debug/inspector.py `Inspector`), when
    the bench was opened with inspect=: the flag of a new process, its start, and how long
    the Worker was held paused by a debugger (the call's deadline moves by as much)."""

    def flag(self) -> str: ...

    def started(self) -> None: ...

    def paused_between(self, start: float, end: float) -> float: ...


@dataclass(frozen=True)
class SandboxOptions:
    """Limits of one gem's sandbox."""

    timeout: float = 30.0  # seconds of wall clock per call; the process is killed after
    memory_mb: int = 512  # V8 heap limit (--max-old-space-size); the process's: guard.rss_limit_mb
    readable: tuple[Path, ...] = field(default_factory=tuple)  # resource folders besides the gem
    import_map: Path | None = None  # the platform's (Ekanos: @ekanos/sdk), read by Deno itself
    inspector: Inspecting | None = None  # open(inspect=): Deno's inspector, on loopback


def import_map(platform: Path | None) -> str:
    """The sandbox's import map, as a data: URL: "node:crypto" through node_crypto.ts (its draws
    follow a call's seed; that module alone gets the runtime's), and the platform's own map, its
    relative addresses made absolute (they were relative to its file)."""
    imports: dict[str, str] = {}
    scopes: dict[str, dict[str, str]] = {}
    if platform is not None:
        raw = json.loads(platform.read_text(encoding="utf-8"))
        base = platform.resolve().as_uri()

        def absolute(m: dict[str, str]) -> dict[str, str]:
            return {
                k if not k.startswith((".", "/")) else urljoin(base, k): urljoin(base, v)
                for k, v in m.items()
            }

        imports.update(absolute(raw.get("imports", {})))
        scopes.update({urljoin(base, s): absolute(m) for s, m in raw.get("scopes", {}).items()})
    shim = (HERE / "node_crypto.ts").as_uri()
    imports["node:crypto"] = shim
    scopes.setdefault(shim, {})["node:crypto"] = "node:crypto"
    return "data:application/json," + quote(json.dumps({"imports": imports, "scopes": scopes}))


class SandboxProcess(Framed):
    """A Deno process for one gem (host.ts, its Worker worker/*.ts); starts on first use and
    again after a kill. sandbox.Sandbox runs calls in it."""

    def __init__(self, gem_root: Path, *, deno_dir: Path, options: SandboxOptions) -> None:
        self.gem_root, self.deno_dir, self.options = gem_root, deno_dir, options
        self.proc: subprocess.Popen[bytes] | None = None
        self._output: Output | None = None  # its stdout and stderr
        # the channel's fds, which stop closes; _r and _w are its ends while they are open, -1
        # from before they are closed
        self._fds: list[int] = []
        self._r = self._w = -1
        self._fifo_dir: str | None = None  # a start's FIFO folder, until it is removed
        # a start, or a top-level call (a conversation with the host), began and did not end:
        # the host is in a state nobody knows (a Ctrl-C cut it short), so the next call restarts
        self._unsure = False
        self._finalizer: weakref.finalize | None = None
        self._warming: Job[None] | None = None  # a start in the background (warm)
        self._spawning: Job[subprocess.Popen[bytes]] | None = None  # its Popen (_start)
        self._start_failed: WorkbenchError | None = None  # how it failed, for the next call
        self._colocation = Colocation()  # a call's threads on one CPU (affinity.py)
        self._colocated: int | None = None  # the thread whose waits do so (a top call's)
        self._watch: Watch | None = None  # the process's memory (guard.py)

    def warm(self) -> None:
        """Start the process (and its Worker) in the background, so the first call pays only
        what is left of the start: done when a gem with JS/TS tools opens, and after a kill.
        A failure to start is that call's error (a start that hangs costs its 30 s once, not
        again in the call); the call after it starts afresh."""
        if self.proc is not None or self._warming is not None:
            return
        job = Job(self._background)
        self._warming = job  # before it starts: _warmed waits for it, or keeps it from starting
        job.start()

    def _background(self) -> None:
        try:
            self._start()
        except WorkbenchError as exc:
            self._start_failed = exc
        except Exception:  # noqa: BLE001  (the next call starts it again and says why)
            self.stop()

    def _warmed(self) -> None:
        """Wait for a background start to end (before a call, a stop); a Ctrl-C in the wait
        leaves it known, and the next call waits again."""
        job = self._warming
        if job is not None:
            job.wait()
            self._warming = None

    def _start(self) -> None:
        self._unsure = True  # until "ready": a start cut short is ended by the next call's stop
        self._release()  # what a stop cut short by a Ctrl-C left, if anything
        # 0700: only we can reach the FIFOs; removed once both ends are open (the host sent
        # "ready"). FIFOs, not a socket: the host reads them with readSync (see host.ts). Named
        # here (not by mkdtemp), so that a Ctrl-C at any point leaves it to stop to remove
        self._fifo_dir = fifo_dir = os.path.join(tempfile.gettempdir(), f"wb-rpc-{secrets.token_hex(8)}")
        try:
            cmd, to_host, from_host = self._command(fifo_dir)
            # made in a thread of its own, which a Ctrl-C (raised in the main thread only) cannot
            # cut short: CPython's Popen and shutil.rmtree lose or twice close fds when one does
            job = Job(lambda: self._spawn(cmd, fifo_dir, to_host, from_host))
            self._spawning = job
            job.start()
            failed = self._spawned()
            if failed is not None:
                raise failed
            proc = self.proc
            assert proc is not None
            fds: list[int] = []
            self._fds = fds  # (the last process's list: emptied by _release)
            self._output = Output(proc)
            self._watch = watch(proc, rss_limit_mb(self.options.memory_mb))
            self._colocation.forget()
            # killed with its channel when the Sandbox is collected (stop does it itself)
            self._finalizer = weakref.finalize(self, kill, proc, self._output, fds)
            # ours before the host opens its writing end (after `in`), so that open never blocks
            open_into(fds, from_host, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            self._r = fds[0]
            if open_writer(to_host, proc, fds):
                self._w = fds[1]
            self._rbuf, self._rpos = b"", 0
            self._new_process()
            try:
                got = self._recv(time.monotonic() + 30, 0) if self._w >= 0 else None
            except Broken:  # not the protocol: it did not start
                got = None
        except BaseException:
            self.stop()
            raise
        if not got or got[0].get("t") != "ready":
            err = self.stop()
            raise WorkbenchError("E_SANDBOX", f"the Deno sandbox did not start: {err.strip()[-500:]}")
        self._remove_fifos()  # both ends open: nobody else can open them again
        if self.options.inspector is not None:
            self.options.inspector.started()
        self._unsure = False

    def _spawn(self, cmd: list[str], fifo_dir: str, to_host: str, from_host: str) -> subprocess.Popen[bytes]:
        """The host's process, with its FIFOs (in the start's Job)."""
        self.deno_dir.mkdir(parents=True, exist_ok=True)
        # The Cache API (`caches`) writes under DENO_DIR/location_data with no permission check,
        # in nested workers too: a file in that place makes every cache open fail (N1: no write)
        blocker = self.deno_dir / "location_data"
        if not blocker.is_file():
            shutil.rmtree(blocker, ignore_errors=True)
            blocker.touch()
        os.mkdir(fifo_dir, 0o700)
        os.mkfifo(to_host, 0o600)
        os.mkfifo(from_host, 0o600)
        return subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=minimal_env(self.deno_dir),
            start_new_session=True,
        )

    def _spawned(self) -> Exception | None:
        """Wait for _spawn to end; its process becomes self.proc, or how it failed is returned.
        The job is forgotten only after that: a Ctrl-C anywhere here leaves the process to stop."""
        job = self._spawning
        if job is None:
            return None
        job.wait()
        if job.result is not None:
            self.proc = job.result
        self._spawning = None
        return job.error

    def _command(self, fifo_dir: str) -> tuple[list[str], str, str]:
        """The host's command line, and the paths of its FIFOs (to it, from it) in fifo_dir."""
        from deno import find_deno_bin

        to_host, from_host = os.path.join(fifo_dir, "in"), os.path.join(fifo_dir, "out")
        readable = [str(self.gem_root), *map(str, self.options.readable)]
        # the Worker's modules as one (bundle.py), beside DENO_DIR: inside it, Deno took ~0.5 s
        # longer to start the Worker from it on a fresh DENO_DIR
        folder = self.deno_dir.parent / "bridge"
        try:
            worker = bundle.write(folder)
        except OSError as exc:
            raise WorkbenchError(
                "E_SANDBOX",
                f"the sandbox's bridge could not be written to {folder} ({exc.strerror or exc}): "
                "the state folder must be a writable folder",
                path=str(folder),
            ) from None
        cmd = [
            find_deno_bin(),
            "run",
            *DENO_FLAGS,
            "--unstable-worker-options",
            "--quiet",
            # open(inspect=): Deno's inspector on a loopback port (the Worker's permissions are
            # its own: the inspector adds none); absent otherwise
            *((self.options.inspector.flag(),) if self.options.inspector is not None else ()),
            f"--import-map={import_map(self.options.import_map)}",
            f"--v8-flags=--max-old-space-size={self.options.memory_mb}",
            f"--allow-read={','.join([*readable, str(HERE), str(worker), to_host])}",
            f"--allow-write={fifo_dir}",  # to write `out`, and remove both once open
            str(HERE / "host.ts"),
            *(("--inspected",) if self.options.inspector is not None else ()),  # (host.ts: see there)
            to_host,
            from_host,
            str(os.getpid()),  # the host ends once its parent is another (we died)
            worker.as_uri(),
            *readable,
            # what a tool's `import "node:crypto"` loads (import_map): only these two files
            *(str(HERE / name) for name in ("node_crypto.ts", "internals.ts")),
        ]
        return cmd, to_host, from_host

    def stop(self) -> str:
        """Kill the process (if any) and return what it printed last; the next call starts anew.
        A Ctrl-C anywhere in it leaves nothing that a later stop (the next call's) does not end:
        each step may be done again."""
        self._unsure = True  # (a Ctrl-C may leave it half stopped: the next call restarts it)
        warming = self._warming
        if warming is not None and warming.ident != _thread.get_ident():  # (not its own stop)
            self._warmed()
        left = ""
        proc, output = self.proc, self._output
        if proc is not None:
            self._r = self._w = -1
            terminate(proc)
            if output is not None and output.proc is proc:
                left = output.take(None, 2)
        self._release()
        return left

    def _release(self) -> None:
        """End the process and close all it had (its pipes, its channel, its FIFOs), in steps
        that may be done again (process.kill); its fd numbers are forgotten before they are
        closed, and the process itself last, so that a Ctrl-C in here leaves the rest to the
        next stop."""
        self._r = self._w = -1
        # a start a Ctrl-C cut short as it spawned: its process (how it failed, if it did, the
        # next start finds again)
        self._spawned()
        kill(self.proc, self._output, self._fds)
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        self._remove_fifos()
        if self._finalizer is not None:
            self._finalizer.detach()
        self.proc, self._finalizer = None, None

    def _remove_fifos(self) -> None:
        """Remove the FIFOs and their folder, if a start left them; not through an fd, as
        shutil.rmtree does: a Ctrl-C there may close its fd twice (the second time maybe
        another file's)."""
        folder = self._fifo_dir
        if folder is None:
            return
        for path in (os.path.join(folder, "in"), os.path.join(folder, "out")):
            with contextlib.suppress(OSError):  # not made yet, or the host removed it
                os.unlink(path)
        with contextlib.suppress(OSError):
            os.rmdir(folder)
        self._fifo_dir = None

    def _new_process(self) -> None:
        """What the call protocol knew of the last process is forgotten (sandbox.py)."""

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc and alive(self.proc) else None

    def _wait(self, deadline: float) -> bool:
        """Until the channel is readable (True) or the deadline passed (False). The calling
        thread of a top-level call waits on one CPU with the sandbox's threads, until a wait
        lasts RELEASE_AFTER (affinity.py)."""
        proc, output = self.proc, self._output
        if proc is None or output is None or self._r < 0:  # stopped: nothing more will come
            return False
        if self._colocated != threading.get_ident():
            return output.wait(self._r, deadline)
        try:
            self._colocation.join(proc)
            soon = min(deadline, time.monotonic() + RELEASE_AFTER)
            if output.wait(self._r, soon):
                return True
            if soon == deadline or time.monotonic() < soon:  # the deadline, or the process ended
                return False
            self._colocation.release()
            self._colocated = None  # for the rest of this call
        finally:
            self._colocation.leave()
        return output.wait(self._r, deadline)
