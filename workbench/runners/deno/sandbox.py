"""The Python side of the Deno sandbox: the process, the private RPC channel, the limits.

The tool runs in a Worker that may only read the gem folder and its resources (N1); `npm:` and
remote imports are switched off (N4); one process serves one gem and is never shared (N3).
RPC travels on two pipes that only the host module can open (/dev/fd/N, granted to the host,
not to the worker). stdout/stderr carry only the tool's console output, captured as logs.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import select
import shutil
import signal
import subprocess
import threading
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


class _Stream(threading.Thread):
    """Collects one of the tool's output streams; a call's share ends at its nonce line."""

    def __init__(self, pipe: Any) -> None:
        super().__init__(daemon=True, name="workbench-deno-output")
        self.pipe, self.buf, self.cond = pipe, b"", threading.Condition()
        self.closed = False

    def run(self) -> None:
        with self.pipe:  # EOF comes when the process is gone
            while chunk := self.pipe.read1(1 << 16):
                with self.cond:
                    self.buf += chunk
                    self.cond.notify_all()
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def take(self, nonce: str | None, timeout: float) -> str:
        """Everything up to the nonce line (or all of it when the process is gone)."""
        marker = (nonce + "\n").encode() if nonce else None
        with self.cond:
            self.cond.wait_for(lambda: self.closed or (marker is not None and marker in self.buf),
                               timeout)
            if marker is not None and marker in self.buf:
                head, self.buf = self.buf.split(marker, 1)
            else:
                head, self.buf = self.buf, b""
        return head.decode("utf-8", "replace")


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
        to_host, host_in = os.pipe()
        host_out, from_host = os.pipe()
        readable = [str(self.gem_root), *map(str, self.options.readable)]
        cmd = [find_deno_bin(), "run", *DENO_FLAGS, "--unstable-worker-options", "--quiet",
               f"--v8-flags=--max-old-space-size={self.options.memory_mb}",
               f"--allow-read={','.join([*readable, str(HERE), f'/dev/fd/{to_host}'])}",
               f"--allow-write=/dev/fd/{from_host}",
               str(HERE / "host.ts"), f"/dev/fd/{to_host}", f"/dev/fd/{from_host}",
               (HERE / "worker.ts").as_uri(), *readable]
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=_env(self.deno_dir),
                                         pass_fds=(to_host, from_host), start_new_session=True)
        finally:
            os.close(to_host)
            os.close(from_host)
        self._w, self._r, self._rbuf = host_in, host_out, b""
        self._out, self._err = _Stream(self.proc.stdout), _Stream(self.proc.stderr)
        self._out.start()
        self._err.start()
        self._finalizer = weakref.finalize(self, _kill, self.proc, host_in, host_out)
        self._mtimes.clear()
        msg = self._recv(time.monotonic() + 30)
        if not msg or msg.get("t") != "ready":
            err = self._err.take(None, 1)
            self.stop()
            raise WorkbenchError("E_SANDBOX", f"the Deno sandbox did not start: {err.strip()[-500:]}")

    def stop(self) -> None:
        """Kill the process (if any); the next call starts a fresh one."""
        if self._finalizer is not None:
            self._finalizer()
        self.proc, self._finalizer = None, None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc and self.proc.poll() is None else None

    # -- channel ---------------------------------------------------------------------------
    def _send(self, msg: dict[str, Any]) -> None:
        data = (json.dumps(msg, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self._w, view):]

    def _recv(self, deadline: float) -> dict[str, Any] | None:
        """The next message, or None on timeout or when the process is gone."""
        while b"\n" not in self._rbuf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                return None
            chunk = os.read(self._r, 1 << 20)
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
        deadline = time.monotonic() + self.options.timeout
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
                    logs = self._out.take(nonce, 5) + self._err.take(nonce, 5)
                    return self._outcome(msg, logs)
        except BrokenPipeError:  # it died while we wrote to it, e.g. a ctx reply: same as above
            return self._died(deadline)

    def _died(self, deadline: float) -> Outcome:
        timed_out = time.monotonic() >= deadline and self.proc is not None and self.proc.poll() is None
        self.stop()
        logs = self._out.take(None, 2) + self._err.take(None, 2)
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
        if msg.get("ok"):
            size = msg.get("size", 0)
            if size > 1_048_576:
                return Outcome(error=WorkbenchError(
                    "E_RESULT_TOO_LARGE", f"the result is {size:,} JSON characters; at most "
                    "1,048,576. Write large output to ctx.files or storage and return a summary",
                    size=size, limit=1_048_576), logs=logs)
            return Outcome(value=json.loads(msg["json"]), logs=logs)
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


def _kill(proc: subprocess.Popen[bytes], *fds: int) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
