"""The Python side of the Deno sandbox: the process, the private RPC channel, the limits.

The tool runs in a Worker that may only read the gem folder and its resources (N1); `npm:` and
remote imports are switched off (N4); one process serves one gem and is never shared (N3).
RPC travels on two FIFOs (one each way) in a private folder that only the host module may open
(granted to the host, not to the worker), removed once both ends are open. stdout/stderr carry
only the tool's console output, captured as logs, at most limits.log_bytes per call (SEC5).

Here: the process's start and stop, and the call protocol (a call, the ctx calls it makes,
its result). The channel's framing is framing.py, the process's plumbing process.py, its
memory guard guard.py, a ctx call's serving serve.py, `deno check` typecheck.py.
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
from typing import TYPE_CHECKING, Any

from ..._deno import DENO_FLAGS, minimal_env
from ..._errors import WorkbenchError
from ..._json import utf8
from ...ctx.limits import DEFAULT as DEFAULT_LIMITS
from ...gem.links import GemLinks
from ..python import Outcome
from .affinity import RELEASE_AFTER, Colocation
from .errors import tool_error
from .framing import COMPACT, Broken, Framed
from .guard import RUNTIME_MB, Watch, rss_limit_mb, watch
from .job import Job
from .process import Output, alive, kill, open_into, open_writer, terminate
from .serve import serve_ctx as _serve  # a name of this module: the tests wrap it here

if TYPE_CHECKING:
    from ...ctx import Capabilities

HERE = Path(__file__).resolve().parent
RECYCLED = 75  # the host's exit code when a call left its Worker busy (host.ts RECYCLED)


@dataclass(frozen=True)
class SandboxOptions:
    """Limits of one gem's sandbox."""

    timeout: float = 30.0  # seconds of wall clock per call; the process is killed after
    memory_mb: int = 512  # V8 heap limit (--max-old-space-size); the process's: guard.rss_limit_mb
    readable: tuple[Path, ...] = field(default_factory=tuple)  # resource folders besides the gem
    import_map: Path | None = None  # the platform's (Ekanos: @ekanos/sdk), read by Deno itself


class Sandbox(Framed):
    """A Deno process for one gem; starts on first use and again after a kill."""

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
        self._mtimes: dict[Path, int] = {}
        self._nested: set[Path] = set()  # tools that ran nested: checked for edits at top calls
        self._finalizer: weakref.finalize | None = None
        self._links = GemLinks(gem_root)
        # the calls in flight, outermost first: a JS tool's ctx.tools call may run another JS
        # tool of the gem while it waits (nested, A3), served by this same loop re-entered
        self._active: dict[str, Capabilities] = {}
        # per call in flight, what arrived for it while a call nested in it ran: its "done", and
        # its own ctx.tools calls (each would nest again; its own loop serves them in turn)
        self._held: dict[str, list[tuple[dict[str, Any], bytes | None]]] = {}
        self._death: WorkbenchError | None = None  # how the process ended, for the outer calls
        self._warming: Job[None] | None = None  # a start in the background (warm)
        self._spawning: Job[subprocess.Popen[bytes]] | None = None  # its Popen (_start)
        self._start_failed: WorkbenchError | None = None  # how it failed, for the next call
        # ctx shapes by number: a shape's text (~2 kB) crosses once per process, then its number
        self._shape_ids: dict[str, int] = {}
        self._shapes_sent: set[int] = set()
        self._colocation = Colocation()  # a call's threads on one CPU (affinity.py)
        self._colocated: int | None = None  # the thread whose waits do so (a top call's)
        self._watch: Watch | None = None  # the process's memory (guard.py)
        self._between: list[str] = []  # why the process ended after the last call: a warning

    # -- process ---------------------------------------------------------------------------
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
            self._mtimes.clear()
            self._shapes_sent.clear()
            for held in self._held.values():
                held.clear()  # messages of a process that is gone
            self._death = None
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
        cmd = [
            find_deno_bin(),
            "run",
            *DENO_FLAGS,
            "--unstable-worker-options",
            "--quiet",
            *([f"--import-map={self.options.import_map}"] if self.options.import_map else []),
            f"--v8-flags=--max-old-space-size={self.options.memory_mb}",
            f"--allow-read={','.join([*readable, str(HERE), to_host])}",
            f"--allow-write={fifo_dir}",  # to write `out`, and remove both once open
            str(HERE / "host.ts"),
            to_host,
            from_host,
            str(os.getpid()),  # the host ends once its parent is another (we died)
            (HERE / "worker.ts").as_uri(),
            *readable,
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

    # -- calls -----------------------------------------------------------------------------
    def call(self, file: Path, args: Any, caps: Capabilities, *, fresh: bool) -> Outcome:
        """Run one call of a JS/TS tool; ctx calls are served by `caps` while it runs. Its
        ctx is the shape its profile's registry gives its grants (built in the Worker).

        Called again while a call is in flight (a ctx call of that tool runs another JS/TS tool
        of the gem: ctx.tools, A3), the nested call runs in the same Worker beside it, on this
        thread's stack: this loop then also serves the outer calls' ctx calls, except their
        own ctx.tools calls and their end, which wait for their loop to resume. So calls one
        tool makes through ctx.tools at once run one after the other (a result is held back
        until the calls started before it ended). A nested call's console output is part of
        its top call's logs; an edited tool is re-imported by the next top call.
        """
        out = self._call(file, args, caps, fresh=fresh)
        if out is None:  # the host ended before it read the call (RECYCLED): run it afresh
            out = self._call(file, args, caps, fresh=fresh)
        return out or Outcome(error=self._death or _gone())

    def _call(self, file: Path, args: Any, caps: Capabilities, *, fresh: bool) -> Outcome | None:
        """call(), once; None when the host had ended (recycled) before it read the call."""
        session = caps.session
        limits, profile, grants = session.limits, session.profile, session.grants
        link = self._links.check()
        if link is not None:
            return Outcome(error=link)
        data = utf8(COMPACT.encode(args))  # a lone surrogate as the platform's JSON carries it
        if len(data) > limits.bridge_message_bytes:
            return Outcome(
                error=WorkbenchError(
                    "E_TOO_LARGE",
                    f"the input is {len(data):,} bytes as JSON; one message to the "
                    f"sandbox holds at most {limits.bridge_message_bytes:,} bytes (limit "
                    "bridge_message_bytes)",
                    size=len(data),
                    limit=limits.bridge_message_bytes,
                )
            )
        self._warmed()
        nested = bool(self._active)
        if nested and self.proc is None:  # an earlier nested call of this invocation ended it
            return Outcome(error=self._death or _gone())
        failed, self._start_failed = self._start_failed, None
        if failed is not None and not nested:
            raise failed
        w = self._watch
        if w is not None and not nested:
            w.begin()  # from now on its CPU is the call's: the guard kills it for memory only
        killed = w is not None and w.fired  # (maybe still dying)
        if not nested and (self._unsure or killed or self.pid is None):
            # a process that died (or the guard killed) between calls, or one a Ctrl-C left in
            # the middle of its start or of a call: ended, and what a stop cut short closed,
            # before a new one
            self._ended_between()
            self.stop()
            self._start()
        if not nested:
            self._unsure = True  # until its "done": cut short, it leaves the host mid-conversation
        fresh = self._changed(file, fresh, nested)
        call_id = caps.session.call_id
        nonce = "" if nested else f"--wb-end-{secrets.token_hex(16)}--"
        deadline = caps.session.deadline or time.monotonic() + self.options.timeout
        limit = limits.bridge_message_bytes
        proc, output = self.proc, self._output
        assert proc is not None and output is not None  # started above; a nested call returned if it was gone
        self._active[call_id] = caps
        held = self._held[call_id] = []
        answered = False  # (a host that ended before it answered never began the call)
        try:
            if not nested:
                output.begin(nonce, limits.log_bytes)
                self._colocated = threading.get_ident()
            self._send(
                {
                    "t": "call",
                    "id": call_id,
                    "file": file.as_uri(),
                    "fresh": fresh,
                    "nonce": nonce,
                    "limit": limit,
                    "ctx": {
                        **self._shape(profile.js_shape(grants)),
                        "values": profile.values(grants, session),
                        "tool": session.tool.name,  # the element of entry.js_member to run
                        **profile.entry.message,
                    },
                    "resultChars": limits.result_chars,
                    "n": len(data),
                },
                data,
                deadline=deadline,
            )
            while True:
                got = held.pop(0) if held else self._recv(deadline, limit)
                if got is None:
                    return (
                        None if self._recycled(proc, nested or answered, deadline) else self._died(deadline)
                    )
                answered = True
                msg, payload = got
                mid, kind = msg.get("id"), msg.get("t")
                of = self._active.get(mid) if isinstance(mid, str) else None
                if of is None:
                    continue
                if mid != call_id and (kind == "done" or (kind == "ctx" and _nests(of, msg))):
                    self._held[str(mid)].append(got)  # an outer call's: its own loop takes it
                elif kind == "ctx":
                    ok, body = _serve(of, str(msg.get("method")), payload, limits)
                    if self.proc is not proc:  # a nested call it ran ended the process
                        return self._ended(call_id, held, deadline, limits)
                    self._send(
                        {"t": "reply", "id": mid, "seq": msg.get("seq"), "ok": ok, "n": len(body)},
                        body,
                        deadline=deadline,
                    )
                elif kind == "done":
                    if not nested and self._watch is not None and self._watch.check() is not None:
                        return self._died(deadline)  # its memory is over the limit: killed now
                    logs = output.take(nonce, 5) if nonce else ""
                    outcome = self._outcome(msg, payload, logs, limits)
                    if not nested and self._between:
                        outcome.warnings[:0], self._between = self._between, []
                    if not nested:
                        self._unsure = False  # the host is waiting for the next call again
                    return outcome
        except OSError:  # it died or hung (a broken pipe, a timeout, a closed FIFO)
            return None if self._recycled(proc, nested or answered, deadline) else self._died(deadline)
        except Broken as exc:  # the host wrote something that is not the protocol: restart it
            logs = self.stop()
            return Outcome(
                error=WorkbenchError(
                    "E_SANDBOX",
                    f"the sandbox broke the bridge protocol ({exc}) and was restarted",
                    capability="process",
                ),
                logs=logs,
            )
        except BaseException:  # interrupted (Ctrl-C in a notebook): where the host is in the
            self.stop()  # conversation is unknown, and the next call would wait for it in vain
            raise
        finally:
            del self._active[call_id], self._held[call_id]
            if not nested:
                if self._watch is not None:
                    self._watch.end()
                self._colocated = None
                self._colocation.leave()  # (a Ctrl-C in a wait's own leave left it pinned)

    def _shape(self, text: str) -> dict[str, Any]:
        """A call's ctx shape: its number, and its text the first time this process sees it
        (the host keeps the texts and gives each new Worker the ones it needs)."""
        sid = self._shape_ids.setdefault(text, len(self._shape_ids))
        if sid in self._shapes_sent:
            return {"shape": sid}
        self._shapes_sent.add(sid)
        return {"shape": sid, "shapeText": text}

    def _changed(self, file: Path, fresh: bool, nested: bool) -> bool:
        """Whether the Worker must start anew to run `file`: asked to, or it or a tool that
        ran nested (which a caller may run again) was edited since it was imported. A nested
        call cannot restart it (its callers run there): it records the file, so the next top
        call sees an edit. Only those files are looked at: one stat per call for most gems."""
        if nested:
            self._mtimes.setdefault(file, _mtime(file))
            self._nested.add(file)
            return False
        now = {f: _mtime(f) for f in (file, *self._nested)}
        fresh = fresh or any(self._mtimes.get(f, m) != m for f, m in now.items())
        self._mtimes.update(now)
        return fresh

    def _ended(self, call_id: str, held: list[Any], deadline: float, limits: Any) -> Outcome:
        """The process ended while this call's ctx call ran a nested one: its result if it had
        already returned (a caller that did not wait), else how the process ended."""
        for msg, payload in held:
            if msg.get("t") == "done":
                return self._outcome(msg, payload, "", limits)
        return self._died(deadline)

    def _died(self, deadline: float) -> Outcome:
        if self.proc is None and self._death is not None:  # a nested call saw it end first
            return Outcome(error=self._death)
        timed_out = time.monotonic() >= deadline and self.proc is not None and alive(self.proc)
        killed = self._watch.killed if self._watch is not None else None
        logs = self.stop()
        if killed is not None:
            err = self._memory_error(killed)
        elif timed_out:
            err = WorkbenchError(
                "E_TIMEOUT",
                f"the call ran over {self.options.timeout:g} s and "
                "the sandbox was killed; the next call gets a fresh one",
                limit=self.options.timeout,
            )
        elif "out of memory" in logs.lower():
            err = WorkbenchError(
                "E_OUT_OF_MEMORY",
                f"the sandbox ran out of memory (V8 heap "
                f"limit {self.options.memory_mb} MB) and was restarted",
                limit=self.options.memory_mb,
            )
        else:
            err = WorkbenchError(
                "E_SANDBOX",
                "the Deno sandbox process died during the call; the next call gets a fresh one",
                capability="process",
            )
        self._death = err
        if not self._active or len(self._active) == 1:  # (not under an outer call: it sees the death)
            self.warm()  # the next call's sandbox starts now, in the background
        return Outcome(error=err, logs=logs)

    def _memory_error(self, size: int, when: str = "") -> WorkbenchError:
        """The sandbox was killed for its resident size `size` (bytes): guard.py."""
        mb, limit = self.options.memory_mb, rss_limit_mb(self.options.memory_mb)
        return WorkbenchError(
            "E_OUT_OF_MEMORY",
            f"the sandbox's memory ({size >> 20} MB resident: V8 heap, ArrayBuffers and Workers "
            f"together) went over its limit of {limit} MB (2 x memory_mb {mb} + {RUNTIME_MB} MB)"
            f"{when} and it was killed; the next call gets a fresh one",
            limit=mb,
            rss_limit_mb=limit,
            rss_mb=size >> 20,
        )

    def _recycled(self, proc: subprocess.Popen[bytes], began: bool, deadline: float) -> bool:
        """Whether the host ended on its own (RECYCLED: the last call left its Worker busy,
        host.ts) before it read this call, which can then run in a fresh process."""
        if began or self.proc is not proc or time.monotonic() >= deadline:
            return False
        try:
            code = proc.wait(min(2.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return False
        if code != RECYCLED:
            return False
        self.stop()
        return True

    def _ended_between(self) -> None:
        """Before a restart: why the process ended after the last call, if it ended on its own
        (the next top call reports it as a warning)."""
        w = self._watch
        if w is not None and w.killed is not None:
            when = " between calls (what earlier calls kept: module state, ArrayBuffers)"
            self._between.append(self._memory_error(w.killed, when).message)
        elif w is not None and w.spun is not None:
            self._between.append(
                f"the sandbox used {w.spun:.1f} CPU-s/s with no call running (something an "
                "earlier call left running, e.g. an async loop) and was killed; this call runs "
                "in a fresh one"
            )

    def _outcome(self, msg: dict[str, Any], payload: bytes | None, logs: str, limits: Any) -> Outcome:
        if payload is None:  # over bridge_message_bytes: the host never sends that
            return Outcome(
                error=WorkbenchError(
                    "E_TOO_LARGE",
                    "the tool's result message is over the bridge's limit "
                    f"({limits.bridge_message_bytes:,} bytes)",
                    limit=limits.bridge_message_bytes,
                ),
                logs=logs,
            )
        text = payload.decode("utf-8", "replace")
        if msg.get("ok") is True:  # N9 is checked on this text by the call pipeline, as for Python
            return Outcome(json=text, logs=logs, warnings=_late(msg.get("late")))
        try:
            error = json.loads(text)
        except (ValueError, RecursionError):
            error = None
        return Outcome(error=self._error(error if isinstance(error, dict) else {}, limits), logs=logs)

    def _error(self, e: dict[str, Any], limits: Any = DEFAULT_LIMITS) -> WorkbenchError:
        """The tool's error as a coded one; never raises (errors.tool_error)."""
        return tool_error(e, self.gem_root, limits)


def _late(late: Any) -> list[str]:
    """The warning for ctx calls the tool did not wait for (worker.ts `late`: [count, names])."""
    if not (isinstance(late, list) and len(late) == 2 and type(late[0]) is int and late[0] > 0):
        return []
    names = [n for n in late[1] if isinstance(n, str)][:5] if isinstance(late[1], list) else []
    more = f" and {late[0] - len(names)} more" if late[0] > len(names) else ""
    return [
        f"the tool returned while {late[0]} ctx call{'s' if late[0] > 1 else ''} it made had not "
        f"completed ({', '.join(names)}{more}): a missing `await`? The platform may end the call "
        "before they run; here they completed after the tool returned"
    ]


def _nests(caps: Capabilities, msg: dict[str, Any]) -> bool:
    """Whether a ctx message runs a tool (ctx.tools.<name>): it would nest another call."""
    return str(msg.get("method")).rpartition(".")[0] in caps.session.profile.dispatch


def _mtime(file: Path) -> int:
    try:
        return file.stat().st_mtime_ns
    except OSError:
        return -1  # gone: counts as changed, and the import says what is missing


def _gone() -> WorkbenchError:
    return WorkbenchError("E_SANDBOX", "the Deno sandbox ended during this invocation", capability="process")
