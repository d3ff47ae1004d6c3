"""The Python side of the Deno sandbox: the process, the private RPC channel, the limits.

The tool runs in a Worker that may only read the gem folder and its resources (N1); `npm:` and
remote imports are switched off (N4); one process serves one gem and is never shared (N3).
RPC travels on a Unix socket that only the host module may connect to (granted to the host, not
to the worker), accepted once and unlinked at once. stdout/stderr carry only the tool's console
output, captured as logs, at most limits.log_bytes per call (SEC5).

Framing (host.ts has the message list): a JSON header line, then `n` payload bytes when the
header has `n`. Payloads are read into their own buffer and never scanned for newlines, so a
message costs time linear in its size; each is bounded by limits.bridge_message_bytes.
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
from ..._json import deeper_than
from ...ctx.limits import DEFAULT as DEFAULT_LIMITS
from ..python import CappedLog, Outcome, render_logs

if TYPE_CHECKING:
    from ...ctx import Capabilities

HERE = Path(__file__).resolve().parent
DENO_FLAGS = ("--no-prompt", "--no-config", "--no-lock", "--no-npm", "--no-remote")
# "Requires read access …"; Deno.exit / self.close (worker.ts); Deno.symlink: "requires
# unscoped --allow-read and --allow-write"
_CAPABILITY = re.compile(r"Requires (\w+) access|(?:Deno|self)\.(exit|close)|and --allow-(\w+)")
HEADER_LIMIT = 1 << 20  # a header line is small; a longer one means a broken stream


@dataclass(frozen=True)
class SandboxOptions:
    """Limits of one gem's sandbox."""

    timeout: float = 30.0  # seconds of wall clock per call; the process is killed after
    memory_mb: int = 512  # V8 heap limit (--max-old-space-size)
    readable: tuple[Path, ...] = field(default_factory=tuple)  # resource folders besides the gem


class _Output:
    """The tool's stdout and stderr, read by the calling thread whenever it waits.

    No reader threads: waking one per output line cost more than the rest of a warm call. A
    call's share of each stream ends at its nonce line, written by the host after the tool
    finished and before the host reports the result. Each share is a CappedLog (SEC5): a tool
    printing without end costs log_bytes of memory, and the marker is still found, since
    only the last len(marker) - 1 bytes need keeping to see it across reads.
    """

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        self.fds = (proc.stdout.fileno(), proc.stderr.fileno())
        self.open = set(self.fds)
        self.limit = DEFAULT_LIMITS.log_bytes
        self.marker: bytes | None = None
        self.logs = {fd: CappedLog(self.limit) for fd in self.fds}  # the share being written
        self.ended: dict[int, CappedLog | None] = dict.fromkeys(self.fds)  # closed by the marker
        self.pending = dict.fromkeys(self.fds, b"")  # may be the start of the marker

    def begin(self, nonce: str, limit: int) -> None:
        """A call starts: its share ends at `nonce`; output since the last call belongs to it."""
        self.marker, self.limit = f"{nonce}\n".encode(), limit
        for fd, log in self.logs.items():
            if log.limit != limit and not log.total:
                self.logs[fd] = CappedLog(limit)

    def pump(self, fd: int) -> None:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            self.open.discard(fd)  # EOF: the process is gone
            self.logs[fd].write(self.pending[fd])
            self.pending[fd] = b""
            return
        marker = self.marker
        if marker is None or self.ended[fd] is not None:  # no marker to look for
            self.logs[fd].write(chunk)
            return
        data = self.pending[fd] + chunk if self.pending[fd] else chunk
        cut = data.find(marker)
        if cut >= 0:
            self.logs[fd].write(data[:cut])
            self.ended[fd], self.logs[fd] = self.logs[fd], CappedLog(self.limit)
            self.pending[fd] = b""
            self.logs[fd].write(data[cut + len(marker) :])  # the next call's
            return
        keep = len(marker) - 1
        self.logs[fd].write(data[:-keep])
        self.pending[fd] = data[-keep:]

    def take(self, nonce: str | None, timeout: float) -> str:
        """Each stream up to its nonce line (or to EOF when nonce is None / the process died)."""
        deadline = time.monotonic() + timeout
        parts: list[tuple[str, CappedLog]] = []
        for name, fd in zip(("stdout", "stderr"), self.fds):
            while (nonce is None or self.ended[fd] is None) and fd in self.open:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    break
                self.pump(fd)
            log = self.ended[fd]
            if log is None or nonce is None:  # no marker: all there is, and a fresh share
                if log is not None:
                    parts.append((name, log))
                log = self.logs[fd]
                log.write(self.pending[fd])
                self.pending[fd], self.logs[fd] = b"", CappedLog(self.limit)
            self.ended[fd] = None
            parts.append((name, log))
        self.marker = None
        return (
            render_logs(parts, self.limit)
            if len(parts) == 2
            else "".join(render_logs([p], self.limit) for p in parts)
        )


class _GemLinks:
    """N1 after load: a symlink added to the gem folder while the bench is open, leading
    outside it, would be followed by Deno (--allow-read checks the path, not its target).
    Checked before every call, cheaply: only folders whose mtime changed are read again (a
    link added, replaced or renamed changes its folder's mtime). A folder modified in the
    last second is read again next time too: mtimes are as coarse as the kernel's clock tick.
    """

    RECENT_NS = 1_000_000_000

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.mtimes: dict[str, int] = {}
        self.bad: dict[str, str] = {}  # link -> where it leads

    def check(self) -> WorkbenchError | None:
        changed = []
        for d, m in self.mtimes.items():
            try:
                if os.stat(d).st_mtime_ns != m:
                    changed.append(d)
            except OSError:
                changed.append(d)
        if changed or not self.mtimes:
            self._scan(changed or [str(self.root)])
        if not self.bad:
            return None
        link, target = next(iter(sorted(self.bad.items())))
        rel = os.path.relpath(link, self.root)
        return WorkbenchError(
            "E_SANDBOX",
            f"the gem folder has a symlink leading outside it: "
            f"{rel} -> {target}. Tools may read only the gem folder and its "
            "resources (N1): remove the link",
            capability="read",
            path=rel,
            target=target,
        )

    def _scan(self, dirs: list[str]) -> None:
        now = time.time_ns()
        todo = list(dirs)
        while todo:
            d = todo.pop()
            prefix = d + os.sep
            for k in [k for k in self.bad if k.startswith(prefix) and os.sep not in k[len(prefix) :]]:
                del self.bad[k]
            try:
                st = os.stat(d)
                entries = list(os.scandir(d))
            except OSError:  # gone: so are the links in it
                self.mtimes.pop(d, None)
                for k in [k for k in self.bad if k.startswith(prefix)]:
                    del self.bad[k]
                continue
            # a folder changed within the last second may change again within the same tick
            self.mtimes[d] = -1 if now - st.st_mtime_ns < self.RECENT_NS else st.st_mtime_ns
            for e in entries:
                if e.is_symlink():  # resolved all the way (a loop stays inside: Deno fails it)
                    target = os.path.realpath(e.path)
                    if not Path(target).is_relative_to(self.root):
                        self.bad[e.path] = target
                elif e.is_dir(follow_symlinks=False) and e.path not in self.mtimes:
                    todo.append(e.path)


class Sandbox:
    """A Deno process for one gem; starts on first use and again after a kill."""

    def __init__(self, gem_root: Path, *, deno_dir: Path, options: SandboxOptions) -> None:
        self.gem_root, self.deno_dir, self.options = gem_root, deno_dir, options
        self.proc: subprocess.Popen[bytes] | None = None
        self._mtimes: dict[Path, int] = {}
        self._finalizer: weakref.finalize | None = None
        self._links = _GemLinks(gem_root)

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
        cmd = [
            find_deno_bin(),
            "run",
            *DENO_FLAGS,
            "--unstable-worker-options",
            "--quiet",
            f"--v8-flags=--max-old-space-size={self.options.memory_mb}",
            f"--allow-read={','.join([*readable, str(HERE), path])}",
            f"--allow-write={path}",
            f"--allow-net=unix:{path}",
            str(HERE / "host.ts"),
            path,
            (HERE / "worker.ts").as_uri(),
            *readable,
        ]
        try:
            listener.bind(path)
            listener.listen(1)
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=_env(self.deno_dir),
                start_new_session=True,
            )
            self._sock = _accept(listener, self.proc)
        finally:  # one connection, then nobody else can connect: the path is gone
            listener.close()
            shutil.rmtree(sock_dir, ignore_errors=True)
        self._r, self._rbuf, self._rpos = self._sock.fileno(), b"", 0
        self._output = _Output(self.proc)
        self._finalizer = weakref.finalize(self, _kill, self.proc, self._sock)
        self._mtimes.clear()
        got = self._recv(time.monotonic() + 30, 0)
        if not got or got[0].get("t") != "ready":
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
    def _send(self, header: dict[str, Any], payload: bytes = b"", *, deadline: float) -> None:
        head = (json.dumps(header, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        # the host reads all the time; the timeout only covers a host that stopped reading
        self._sock.settimeout(max(deadline - time.monotonic(), 0.001))
        if len(payload) <= 1 << 16:
            self._sock.sendall(head + payload)
        else:
            self._sock.sendall(head)
            self._sock.sendall(payload)

    def _wait(self, deadline: float) -> bool:
        """Until the channel is readable (True) or the deadline passed (False), pumping the
        tool's output meanwhile. A tool printing without pause keeps the output readable all
        the time: the deadline is checked on every turn, not only when nothing is ready."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready = select.select([self._r, *self._output.open], [], [], left)[0]
            for fd in ready:
                if fd != self._r:
                    self._output.pump(fd)
            if self._r in ready:
                return True

    def _read_some(self, deadline: float) -> bool:
        """More bytes into the read buffer; False on timeout or when the process is gone."""
        if not self._wait(deadline):
            return False
        try:
            chunk = self._sock.recv(1 << 20)
        except (ConnectionResetError, BlockingIOError, TimeoutError):
            chunk = b""
        if not chunk:
            return False
        # only the unread rest is kept, and it is a partial header (< HEADER_LIMIT)
        self._rbuf = self._rbuf[self._rpos :] + chunk if self._rpos < len(self._rbuf) else chunk
        self._rpos = 0
        return True

    def _recv(self, deadline: float, limit: int) -> tuple[dict[str, Any], bytes | None] | None:
        """The next message (header, payload); None on timeout or when the process is gone.

        Linear in the message size: a header is looked for only in what is unread, a payload
        is read straight into its buffer. A payload over `limit` is read and dropped (payload
        None), never held."""
        while (nl := self._rbuf.find(b"\n", self._rpos)) < 0:
            if len(self._rbuf) - self._rpos > HEADER_LIMIT:
                raise _Broken("a header line longer than the bridge allows")
            if not self._read_some(deadline):
                return None
        try:
            header = json.loads(self._rbuf[self._rpos : nl])
        except ValueError as exc:
            raise _Broken(f"an unreadable header: {exc}") from None
        self._rpos = nl + 1
        n = header.get("n") if isinstance(header, dict) else None
        if not isinstance(n, int) or n <= 0:
            return (header if isinstance(header, dict) else {}), (b"" if n == 0 else None)
        if n > limit:
            return (header, None) if self._skip(n, deadline) else None
        have = len(self._rbuf) - self._rpos
        if have >= n:
            payload = self._rbuf[self._rpos : self._rpos + n]
            self._rpos += n
            return header, payload
        buf = bytearray(n)
        view = memoryview(buf)
        view[:have] = self._rbuf[self._rpos :]
        self._rbuf, self._rpos = b"", 0
        while have < n:
            if not self._wait(deadline):
                return None
            try:
                got = self._sock.recv_into(view[have:])
            except (ConnectionResetError, BlockingIOError, TimeoutError):
                got = 0
            if not got:
                return None
            have += got
        return header, bytes(buf)

    def _skip(self, n: int, deadline: float) -> bool:
        """Read past an oversized payload without keeping it."""
        have = min(n, len(self._rbuf) - self._rpos)
        self._rpos += have
        while have < n:
            if not self._wait(deadline):
                return False
            try:
                got = len(self._sock.recv(min(n - have, 1 << 20)))
            except (ConnectionResetError, BlockingIOError, TimeoutError):
                got = 0
            if not got:
                return False
            have += got
        return True

    # -- calls -----------------------------------------------------------------------------
    def call(self, file: Path, args: Any, caps: Capabilities, *, fresh: bool) -> Outcome:
        """Run one call of a JS/TS tool; ctx calls are served by `caps` while it runs. Its
        ctx is the shape its profile's registry gives its grants (built in the Worker)."""
        session = caps.session
        limits, profile, grants = session.limits, session.profile, session.grants
        link = self._links.check()
        if link is not None:
            return Outcome(error=link)
        data = json.dumps(args, ensure_ascii=False, separators=(",", ":")).encode()
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
        if self.pid is None:
            self.stop()  # a process that died between calls: close its pipes before a new one
            self._start()
        mtime = file.stat().st_mtime_ns
        fresh = fresh or self._mtimes.get(file, mtime) != mtime  # an edited tool: re-import
        self._mtimes[file] = mtime
        call_id, nonce = caps.session.call_id, f"--wb-end-{secrets.token_hex(16)}--"
        deadline = caps.session.deadline or time.monotonic() + self.options.timeout
        limit = limits.bridge_message_bytes
        self._output.begin(nonce, limits.log_bytes)
        try:
            self._send(
                {
                    "t": "call",
                    "id": call_id,
                    "file": file.as_uri(),
                    "fresh": fresh,
                    "nonce": nonce,
                    "limit": limit,
                    "ctx": {
                        "shape": profile.js_shape(grants),
                        "values": profile.values(grants, session),
                        **profile.entry.message(),
                    },
                    "resultChars": limits.result_chars,
                    "n": len(data),
                },
                data,
                deadline=deadline,
            )
            while True:
                got = self._recv(deadline, limit)
                if got is None:
                    return self._died(deadline)
                msg, payload = got
                if msg.get("t") == "ctx" and msg.get("id") == call_id:
                    ok, body = _serve(caps, str(msg.get("method")), payload, limits)
                    self._send(
                        {"t": "reply", "id": call_id, "seq": msg.get("seq"), "ok": ok, "n": len(body)},
                        body,
                        deadline=deadline,
                    )
                elif msg.get("t") == "done" and msg.get("id") == call_id:
                    logs = self._output.take(nonce, 5)
                    return self._outcome(msg, payload, logs, limits)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):  # it died (or hung)
            return self._died(deadline)
        except _Broken as exc:  # the host wrote something that is not the protocol: restart it
            logs = self.stop()
            return Outcome(
                error=WorkbenchError(
                    "E_SANDBOX",
                    f"the sandbox broke the bridge protocol ({exc}) and was restarted",
                    capability="process",
                ),
                logs=logs,
            )

    def _died(self, deadline: float) -> Outcome:
        timed_out = time.monotonic() >= deadline and self.proc is not None and self.proc.poll() is None
        logs = self.stop()
        if timed_out:
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
        return Outcome(error=err, logs=logs)

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
            return Outcome(json=text, logs=logs)
        try:
            error = json.loads(text)
        except (ValueError, RecursionError):
            error = None
        return Outcome(error=self._error(error if isinstance(error, dict) else {}, limits), logs=logs)

    def _error(self, e: dict[str, Any], limits: Any = DEFAULT_LIMITS) -> WorkbenchError:
        """The tool's error as a coded one. Never raises, whatever the message holds (missing or
        odd fields are E_TOOL_ERROR). A platform code or a result-size verdict is taken only
        from `bridge`, which worker.ts sets on what it made itself (a ctx error it created, a
        result too large or not JSON): a tool naming its error "CtxError" or "ResultTooLarge"
        is an ordinary tool error."""
        try:
            return self._coded(e, limits)
        except Exception:  # noqa: BLE001  (never out of bench.call)
            return WorkbenchError("E_TOOL_ERROR", "the tool failed with an error the workbench cannot read")

    def _coded(self, e: dict[str, Any], limits: Any) -> WorkbenchError:
        def text(key: str, default: str = "") -> str:
            v = e.get(key, default)
            return v if isinstance(v, str) else default

        name, message = text("name", "Error") or "Error", text("message")
        stack = _tool_stack(text("stack"), self.gem_root)
        bridge = e.get("bridge")
        code = e.get("code")
        if bridge == "ctx" and isinstance(code, str) and re.fullmatch(r"E_[A-Z0-9_]{1,60}", code):
            return WorkbenchError(code, message, stack=stack)
        size = e.get("size")
        if bridge == "result_too_large" and type(size) is int:  # N9, found by the worker
            return WorkbenchError(
                "E_RESULT_TOO_LARGE",
                f"the result is {size:,} JSON characters; at most "
                f"{limits.result_chars:,}. Write large output to ctx.files or storage and "
                "return a summary",
                size=size,
                limit=limits.result_chars,
            )
        if bridge == "result_error":
            return WorkbenchError(
                "E_RESULT_NOT_JSON",
                f"the tool returned a value JSON.stringify cannot serialise: {message}",
                stack=stack,
            )
        if "cache storage directory" in message:  # the Cache API, blocked in _start
            return WorkbenchError(
                "E_SANDBOX",
                f"the Cache API (caches) writes to disk and the sandbox has no write access (N1): {message}",
                capability="write",
                stack=stack,
            )
        m = _CAPABILITY.search(message)
        # a denied import (a file outside the gem, https:, jsr:) fails the module load with a
        # TypeError "Requires read|import access", not NotCapable
        if (
            name == "NotCapable"
            or (name == "TypeError" and m and m.group(1))
            or "--no-npm" in message
            or "--no-remote" in message
        ):
            cap = (
                (m.group(1) or m.group(2) or m.group(3))
                if m
                else "npm"
                if "--no-npm" in message
                else "import"
                if "--no-remote" in message
                else "permissions"
            )  # e.g. a Worker asking for more than the tool has
            hint = {
                "npm": "npm: imports are rejected (N4)",
                "import": "remote (https:, jsr:) imports are not allowed",
            }.get(cap, f"the sandbox has no {cap} access (N1)")
            return WorkbenchError("E_SANDBOX", f"{hint}: {message}", capability=cap, stack=stack)
        return WorkbenchError("E_TOOL_ERROR", f"{name}: {message}", stack=stack)


def _env(deno_dir: Path) -> dict[str, str]:
    """A minimal environment: nothing of the user's leaks into the sandbox."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(deno_dir),
        "DENO_DIR": str(deno_dir),
        "NO_COLOR": "1",
        "DENO_NO_UPDATE_CHECK": "1",
    }


def typecheck(files: list[Path], *, deno_dir: Path) -> str | None:
    """Run `deno check` on TypeScript tools; the compiler's report, or None when they pass."""
    from deno import find_deno_bin

    deno_dir.mkdir(parents=True, exist_ok=True)
    flags = [f for f in DENO_FLAGS if f != "--no-prompt"]  # `deno check` has no --no-prompt
    out = subprocess.run(
        [find_deno_bin(), "check", *flags, "--quiet", *map(str, files)],
        capture_output=True,
        text=True,
        env=_env(deno_dir),
        timeout=300,
    )
    if out.returncode == 0:
        return None
    return (out.stdout + out.stderr).split("\nStack backtrace:")[0].strip()


class _Broken(Exception):
    """The host wrote something that is not the protocol."""


def _error_body(code: str, message: str, **details: Any) -> tuple[bool, bytes]:
    body = {"code": code, "message": message, "details": _jsonable(details)}
    return False, json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def _serve(caps: Capabilities, method: str, payload: bytes | None, limits: Any) -> tuple[bool, bytes]:
    """One ctx call from JS: (ok, the reply's payload: the value or the error as JSON).

    Never raises for what the tool sent (SEC7): arguments that are not a JSON list, nested
    past limits.json_depth or too big for the bridge are E_INVALID_ARGUMENT / E_TOO_LARGE,
    and so is a value that cannot go back."""
    limit = limits.bridge_message_bytes
    if payload is None:  # the worker checks the size first: only a forged message gets here
        return _error_body(
            "E_TOO_LARGE",
            f"{method}: the arguments are over {limit:,} bytes (limit bridge_message_bytes)",
            method=method,
            limit=limit,
        )
    try:
        args = json.loads(payload, parse_int=_js_int)
        too_deep = deeper_than(args, limits.json_depth + 1)  # + 1: the argument list itself
    except RecursionError:
        too_deep = True
    except ValueError as exc:
        return _error_body(
            "E_INVALID_ARGUMENT", f"{method}: the arguments are not JSON: {exc}", method=method
        )
    if too_deep:
        return _error_body(
            "E_INVALID_ARGUMENT",
            f"{method}: an argument is nested deeper than {limits.json_depth} levels (limit json_depth)",
            method=method,
            limit=limits.json_depth,
        )
    if not isinstance(args, list):
        return _error_body("E_INVALID_ARGUMENT", f"{method}: the arguments are not a list", method=method)
    try:
        value = caps.call(method, *args)
        body = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    except WorkbenchError as exc:
        return _error_body(exc.code, exc.message, **exc.details)
    except (TypeError, ValueError, RecursionError) as exc:
        # what cannot cross the channel is an error here, not a crash there
        return _error_body(
            "E_INTERNAL",
            f"{method}: the value cannot be sent to JavaScript: {type(exc).__name__}: {exc}",
            method=method,
        )
    if len(body) > limit:
        return _error_body(
            "E_TOO_LARGE",
            f"{method}: the result is {len(body):,} bytes as "
            f"JSON; one message to the sandbox holds at most {limit:,} bytes "
            "(limit bridge_message_bytes)",
            method=method,
            size=len(body),
            limit=limit,
        )
    return True, body


def _js_int(text: str) -> int | float:
    """An integer literal from JavaScript: a number is a double there, so one past 2**53 is a
    float here too (12345678901234567890 binds to SQLite as a REAL, as the platform's would)."""
    n = int(text)
    return n if -(2**53) <= n <= 2**53 else float(n)


def _jsonable(details: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(details, default=str))


def _tool_stack(stack: str, root: Path) -> str:
    """Only the frames in the gem's own files, with paths relative to the gem."""
    prefix = root.as_uri() + "/"
    return "\n".join(line.strip().replace(prefix, "") for line in stack.splitlines() if prefix in line)


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
