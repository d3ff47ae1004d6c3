"""The Python side of the Deno sandbox: the process, the private RPC channel, the limits.

The tool runs in a Worker that may only read the gem folder and its resources (N1); `npm:` and
remote imports are switched off (N4); one process serves one gem and is never shared (N3).
RPC travels on a Unix socket that only the host module may connect to (granted to the host, not
to the worker), accepted once and unlinked at once. stdout/stderr carry only the tool's console
output, captured as logs.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._errors import WorkbenchError
from ..python import Outcome

if TYPE_CHECKING:
    from ...ctx import Capabilities

HERE = Path(__file__).resolve().parent
DENO_FLAGS = ("--no-prompt", "--no-config", "--no-lock", "--no-npm", "--no-remote")
# "Requires read access …"; Deno.exit / self.close (worker.ts); Deno.symlink: "requires
# unscoped --allow-read and --allow-write"
_CAPABILITY = re.compile(r"Requires (\w+) access|(?:Deno|self)\.(exit|close)|and --allow-(\w+)")


@dataclass(frozen=True)
class SandboxOptions:
    """Limits of one gem's sandbox."""

    timeout: float = 30.0          # seconds of wall clock per call; the process is killed after
    memory_mb: int = 512           # V8 heap limit (--max-old-space-size)
    readable: tuple[Path, ...] = field(default_factory=tuple)  # resource folders besides the gem


class _Output:
    """The tool's stdout and stderr, read by the calling thread whenever it waits.

    No reader threads: waking one per output line cost more than the rest of a warm call. A
    call's share of each stream ends at its nonce line, written by the host after the tool
    finished and before the host reports the result.
    """

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        self.bufs = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
        self.open = set(self.bufs)

    def pump(self, fd: int) -> None:
        chunk = os.read(fd, 1 << 16)
        if chunk:
            self.bufs[fd] += chunk
        else:
            self.open.discard(fd)  # EOF: the process is gone

    def take(self, nonce: str | None, timeout: float) -> str:
        """Each stream up to its nonce line (or to EOF when nonce is None / the process died)."""
        deadline, marker, out = time.monotonic() + timeout, (nonce or "") .encode() + b"\n", []
        for fd, buf in self.bufs.items():
            while (nonce is None or marker not in buf) and fd in self.open:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    break
                self.pump(fd)
            cut = buf.find(marker) if nonce is not None else -1
            head = bytes(buf[:cut]) if cut >= 0 else bytes(buf)
            del buf[:cut + len(marker) if cut >= 0 else len(buf)]
            out.append(head.decode("utf-8", "replace"))
        return "".join(out)


class Sandbox:
    """A Deno process for one gem; starts on first use and again after a kill."""

    def __init__(self, gem_root: Path, *, deno_dir: Path, options: SandboxOptions) -> None:
        self.gem_root, self.deno_dir, self.options = gem_root, deno_dir, options
        self.proc: subprocess.Popen[bytes] | None = None
        self._mtimes: dict[Path, int] = {}
        self._finalizer: weakref.finalize | None = None

    # -- process ---------------------------------------------------------------------------
    def _start(self) -> None:
        from deno import find_deno_bin

        self.deno_dir.mkdir(parents=True, exist_ok=True)
        # The Cache API (`caches`) writes under DENO_DIR/location_data with no permission check,
        # in nested workers too: a file in that place makes every cache open fail (N1: no write)
        blocker = self.deno_dir / "location_data"
        if not blocker.is_file():
            shutil.rmtree(blocker, ignore_errors=True)
            blocker.touch()
        sock_dir = tempfile.mkdtemp(prefix="wb-rpc-")  # 0700: only we can reach the socket
        path = os.path.join(sock_dir, "rpc")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        readable = [str(self.gem_root), *map(str, self.options.readable)]
        cmd = [find_deno_bin(), "run", *DENO_FLAGS, "--unstable-worker-options", "--quiet",
               f"--v8-flags=--max-old-space-size={self.options.memory_mb}",
               f"--allow-read={','.join([*readable, str(HERE), path])}",
               f"--allow-write={path}", f"--allow-net=unix:{path}",
               str(HERE / "host.ts"), path, (HERE / "worker.ts").as_uri(), *readable]
        try:
            listener.bind(path)
            listener.listen(1)
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=_env(self.deno_dir),
                                         start_new_session=True)
            self._sock = _accept(listener, self.proc)
        finally:  # one connection, then nobody else can connect: the path is gone
            listener.close()
            shutil.rmtree(sock_dir, ignore_errors=True)
        self._r, self._rbuf = self._sock.fileno(), b""
        self._output = _Output(self.proc)
        self._finalizer = weakref.finalize(self, _kill, self.proc, self._sock)
        self._mtimes.clear()
        msg = self._recv(time.monotonic() + 30)
        if not msg or msg.get("t") != "ready":
            err = self.stop()
            raise WorkbenchError("E_SANDBOX", f"the Deno sandbox did not start: {err.strip()[-500:]}")

    def stop(self) -> str:
        """Kill the process (if any) and return what it printed last; the next call starts anew."""
        left = ""
        if self.proc is not None and self._finalizer is not None:
            _terminate(self.proc)
            left = self._output.take(None, 2)
            self._finalizer()
        self.proc, self._finalizer = None, None
        return left

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc and self.proc.poll() is None else None

    # -- channel ---------------------------------------------------------------------------
    def _send(self, msg: dict[str, Any]) -> None:
        data = (json.dumps(msg, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        self._sock.sendall(data)

    def _recv(self, deadline: float) -> dict[str, Any] | None:
        """The next message, or None on timeout or when the process is gone."""
        while b"\n" not in self._rbuf:
            left = deadline - time.monotonic()
            ready = select.select([self._r, *self._output.open], [], [], max(left, 0))[0]
            if not ready:
                return None
            for fd in ready:
                if fd != self._r:
                    self._output.pump(fd)  # keep the tool's output flowing while we wait
                    continue
                try:
                    chunk = os.read(self._r, 1 << 20)
                except ConnectionResetError:
                    chunk = b""
                if not chunk:
                    return None
                self._rbuf += chunk
        line, self._rbuf = self._rbuf.split(b"\n", 1)
        return json.loads(line)

    # -- calls -----------------------------------------------------------------------------
    def call(self, file: Path, args: Any, caps: "Capabilities", *, fresh: bool,
             meta: dict[str, Any]) -> Outcome:
        """Run one call of a JS/TS tool; ctx calls are served by `caps` while it runs."""
        if self.pid is None:
            self.stop()  # a process that died between calls: close its pipes before a new one
            self._start()
        mtime = file.stat().st_mtime_ns
        fresh = fresh or self._mtimes.get(file, mtime) != mtime  # an edited tool: re-import
        self._mtimes[file] = mtime
        call_id, nonce = caps.session.call_id, f"--wb-end-{secrets.token_hex(16)}--"
        deadline = caps.session.deadline or time.monotonic() + self.options.timeout
        try:
            self._send({"t": "call", "id": call_id, "file": str(file), "input": args,
                        "fresh": fresh, "nonce": nonce, "meta": meta})
            while True:
                msg = self._recv(deadline)
                if msg is None:
                    return self._died(deadline)
                if msg.get("t") == "ctx" and msg.get("id") == call_id:
                    self._send({"t": "reply", "id": call_id, "seq": msg["seq"],
                                **_serve(caps, msg["method"], msg.get("args") or [])})
                elif msg.get("t") == "done" and msg.get("id") == call_id:
                    logs = self._output.take(nonce, 5)
                    return self._outcome(msg, logs)
        except (BrokenPipeError, ConnectionResetError):  # it died while we wrote to it
            return self._died(deadline)

    def _died(self, deadline: float) -> Outcome:
        timed_out = time.monotonic() >= deadline and self.proc is not None and self.proc.poll() is None
        logs = self.stop()
        if timed_out:
            err = WorkbenchError("E_TIMEOUT", f"the call ran over {self.options.timeout:g} s and "
                                 "the sandbox was killed; the next call gets a fresh one",
                                 limit=self.options.timeout)
        elif "out of memory" in logs.lower():
            err = WorkbenchError("E_OUT_OF_MEMORY", f"the sandbox ran out of memory (V8 heap "
                                 f"limit {self.options.memory_mb} MB) and was restarted",
                                 limit=self.options.memory_mb)
        else:
            err = WorkbenchError("E_SANDBOX", "the Deno sandbox process died during the call; "
                                 "the next call gets a fresh one", capability="process")
        return Outcome(error=err, logs=logs)

    def _outcome(self, msg: dict[str, Any], logs: str) -> Outcome:
        if msg.get("ok"):  # N9 is checked on this text by the call pipeline, as for Python
            return Outcome(json=msg["json"], logs=logs)
        return Outcome(error=self._error(msg.get("error") or {}), logs=logs)

    def _error(self, e: dict[str, Any]) -> WorkbenchError:
        name, message = e.get("name", "Error"), e.get("message", "")
        stack = _tool_stack(e.get("stack", ""), self.gem_root)
        if name == "CtxError" and e.get("code"):
            return WorkbenchError(e["code"], message, stack=stack)
        if name == "ResultError":
            return WorkbenchError("E_RESULT_NOT_JSON", f"the tool returned a value JSON.stringify "
                                  f"cannot serialise: {message}", stack=stack)
        if "cache storage directory" in message:  # the Cache API, blocked in _start
            return WorkbenchError("E_SANDBOX", "the Cache API (caches) writes to disk and the "
                                  f"sandbox has no write access (N1): {message}",
                                  capability="write", stack=stack)
        m = _CAPABILITY.search(message)
        # a denied import (a file outside the gem, https:, jsr:) fails the module load with a
        # TypeError "Requires read|import access", not NotCapable
        if (name == "NotCapable" or (name == "TypeError" and m and m.group(1))
                or "--no-npm" in message or "--no-remote" in message):
            cap = ((m.group(1) or m.group(2) or m.group(3)) if m else "npm" if "--no-npm" in message
                   else "import" if "--no-remote" in message
                   else "permissions")  # e.g. a Worker asking for more than the tool has
            hint = {"npm": "npm: imports are rejected (N4)",
                    "import": "remote (https:, jsr:) imports are not allowed"}.get(
                cap, f"the sandbox has no {cap} access (N1)")
            return WorkbenchError("E_SANDBOX", f"{hint}: {message}", capability=cap, stack=stack)
        return WorkbenchError("E_TOOL_ERROR", f"{name}: {message}", stack=stack)


def _env(deno_dir: Path) -> dict[str, str]:
    """A minimal environment: nothing of the user's leaks into the sandbox."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(deno_dir),
            "DENO_DIR": str(deno_dir), "NO_COLOR": "1", "DENO_NO_UPDATE_CHECK": "1"}


def typecheck(files: list[Path], *, deno_dir: Path) -> str | None:
    """Run `deno check` on TypeScript tools; the compiler's report, or None when they pass."""
    from deno import find_deno_bin

    deno_dir.mkdir(parents=True, exist_ok=True)
    flags = [f for f in DENO_FLAGS if f != "--no-prompt"]  # `deno check` has no --no-prompt
    out = subprocess.run([find_deno_bin(), "check", *flags, "--quiet", *map(str, files)],
                         capture_output=True, text=True, env=_env(deno_dir), timeout=300)
    if out.returncode == 0:
        return None
    return (out.stdout + out.stderr).split("\nStack backtrace:")[0].strip()


def _serve(caps: "Capabilities", method: str, args: list[Any]) -> dict[str, Any]:
    try:
        value = caps.call(method, *args)
        json.dumps(value)  # what cannot cross the channel is an error here, not a crash there
        return {"ok": True, "value": value}
    except WorkbenchError as exc:
        return {"ok": False, "error": {"code": exc.code, "message": exc.message,
                                       "details": _jsonable(exc.details)}}
    except (TypeError, ValueError) as exc:
        return {"ok": False, "error": {"code": "E_INTERNAL", "message": f"{method}: the value "
                                       f"cannot be sent to JavaScript: {exc}"}}


def _jsonable(details: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(details, default=str))


def _tool_stack(stack: str, root: Path) -> str:
    """Only the frames in the gem's own files, with paths relative to the gem."""
    prefix = root.as_uri() + "/"
    return "\n".join(line.strip().replace(prefix, "") for line in stack.splitlines()
                     if prefix in line)


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def _accept(listener: socket.socket, proc: subprocess.Popen[bytes]) -> socket.socket:
    """The host's connection; if Deno dies first, a socket that reads EOF (so start fails)."""
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:
        if select.select([listener], [], [], 0.05)[0]:
            return listener.accept()[0]
    a, b = socket.socketpair()
    b.close()
    return a


def _kill(proc: subprocess.Popen[bytes], sock: socket.socket) -> None:
    """Kill the process and close every channel to it (also run when a Sandbox is collected)."""
    _terminate(proc)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    sock.close()
