"""The debug adapter protocol (DAP) for a bench's JS/TS tools, over the Chrome DevTools
Protocol (CDP): what JupyterLab's debugger panel asks the kernel (debug/kernel.py routes it
here) translated into commands in the sandbox's Worker, and the Worker's pauses into DAP
`stopped` events.

One `Link` per bench: a CDP connection to the bench's inspector relay (debug/inspector.py),
a reader thread that watches the Worker's events while a cell's call runs (the cell's shell
thread is blocked in the call; the panel's requests come on ipykernel's control thread), and
the breakpoints asked for the bench's tool files, bound through each script's inline source
map (debug/sourcemap.py) when its module is parsed. A Worker that loads a tool's module
pauses before it runs (CDP's `beforeScriptWithSourceMapExecution`), so a breakpoint set
before the tool's first call binds in time; the reader resumes it at once.

What the Worker sends is bounded (dapframes.py): variables listed per request, a value's
text (MAX_VALUE), an expression (MAX_EXPRESSION), scripts remembered (MAX_SCRIPTS).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ..ctx.hooks import CallHooks
from .cdp import CDPError, Connection, WorkerSession
from .dapframes import MAX_SCRIPTS, DapError, Pause, Paused, Script, ts_line
from .sourcemap import SourceMap

__all__ = ["DapError", "Link", "bench_files", "ensure_inspector"]

PUMP_SECONDS = 0.05  # the reader holds the connection this long per read
YIELD_SECONDS = 0.002  # and then lets go of it this long
CDP_SECONDS = 10.0  # a command's reply
CONNECT_SECONDS = 30.0  # attaching to a sandbox that starts
Emit = Callable[[str, dict[str, Any]], None]  # emit(event, body): a DAP event to the panel


def bench_files(bench: Any) -> dict[Path, str]:
    """The bench's JS/TS tool files (resolved) and their tool names."""
    out = {}
    for tool in bench.manifest.tools.values():
        if tool.language in ("javascript", "typescript"):
            out[Path(tool.file).resolve()] = tool.name
    return out


def ensure_inspector(bench: Any) -> bool:
    """Give an open bench Deno's inspector (debug/inspector.py) if it has none: its sandbox is
    stopped and the next start (now) has the inspector, as `open(inspect=True)` would. True when
    it was added. The bench's lock is held: a call running in another thread ends first."""
    import dataclasses

    from .inspector import Inspector

    core = bench.core
    with core.lock:
        if core.sandbox_options.inspector is not None:
            return False
        inspector = Inspector(mode=True, title=bench.manifest.id)
        core.sandbox_options = dataclasses.replace(core.sandbox_options, inspector=inspector)
        runner = core.runners.pop("deno", None)
        if runner is not None:
            runner.stop()
        core.finalizers.append(inspector.close)
        core.runner("deno", bench.manifest, bench.providers, bench.profile).warm()
    return True


class Link(Paused):
    """One bench's JS/TS debugging: the CDP session in its Worker, breakpoints, the pause."""

    def __init__(self, bench: Any, *, thread_id: int, ids: Callable[[], int], emit: Emit) -> None:
        self.bench, self.thread_id, self._ids, self._emit = bench, thread_id, ids, emit
        self.name = f"JS: {bench.manifest.id}"
        self.root = Path(bench.manifest.root).resolve()
        self.files = bench_files(bench)
        self.wanted: dict[Path, list[int]] = {}  # breakpoints asked (1-based TS lines)
        self.bound: dict[Path, list[int]] = {}  # the lines they bound to
        self._cdp_ids: dict[Path, list[str]] = {}
        self._scripts: dict[str, Script] = {}
        self._lock = threading.RLock()
        self._conn: Connection | None = None
        self._worker: WorkerSession | None = None
        self.pause: Pause | None = None
        self._stepping = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ctx_points: dict[str, list[int]] = {}  # ctx breakpoint name -> the panel's lines
        self._breaks: Any = None  # ctxbreak.Breakpoints of those names
        self._ctx_hook: Any = None  # dapctx.CtxBreaks, standing on the bench while there are any
        self._hook: _Attach | None = None  # attaches before each JS/TS call (added by the reader)

    # -- connection ----------------------------------------------------------------------------
    def start(self, *, hook_here: bool = False) -> None:
        """Attach to the bench's Worker (its inspector added if it had none) and watch it.
        `hook_here`: the standing hook is added by this thread, now (`bench.debug`'s: its call
        starts next and holds the bench's lock, which the reader would wait for to add it)."""
        ensure_inspector(self.bench)
        if hook_here and self._hook is None:
            self._hook = _Attach(self)
            self.bench.core.add_hook(self._hook)
        with self._lock:
            self._connect()
        if self._thread is None:
            self._thread = threading.Thread(target=self._read, name=f"wb-dap-{self.thread_id}", daemon=True)
            self._thread.start()

    def ensure_attached(self, session: Any) -> None:
        """(a JS/TS call's start, its thread) Attached before the tool runs, when there are
        breakpoints: a sandbox started anew (after an interrupt, a kill, a recycle) is attached
        to before the tool's module loads, so they bind. The time taken is given back."""
        if self.attached or not self.wanted or self._stop.is_set():
            return
        start = time.monotonic()
        self.bench.core.runner("deno", self.bench.manifest, self.bench.providers, self.bench.profile).warm()
        with self._lock:
            if not self.attached:
                try:
                    self._connect()
                except (CDPError, OSError):
                    pass  # the call runs undebugged; the reader tries again
        session.extend_deadline(time.monotonic() - start)

    def _connect(self) -> None:
        """(under the lock) A new CDP session in the Worker, its breakpoints bound again."""
        conn = Connection(self.bench.inspector.ws_url, timeout=CONNECT_SECONDS)
        try:
            worker = conn.worker(timeout=CONNECT_SECONDS)
            worker.send("Debugger.enable", timeout=CDP_SECONDS)
            worker.send(
                "Debugger.setInstrumentationBreakpoint",
                {"instrumentation": "beforeScriptWithSourceMapExecution"},
                timeout=CDP_SECONDS,
            )
        except CDPError:
            conn.close()
            raise
        self._conn, self._worker = conn, worker
        self._scripts.clear()
        self._cdp_ids.clear()
        self._drain()

    @property
    def stopped(self) -> bool:
        """Whether the link was closed (its bench closed, or the panel let it go)."""
        return self._stop.is_set()

    @property
    def attached(self) -> bool:
        """Whether a CDP session in the Worker is open now."""
        return self._conn is not None and not self._conn.closed

    def close(self) -> None:
        """Detach: the Worker resumed, its debugger off, the reader stopped."""
        self._stop.set()
        if self._ctx_hook is not None:
            self._ctx_hook.release()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
            self._conn = self._worker = None
            self.pause = None
        if self._thread is not None:
            self._thread.join(2)
        hooks = [h for h in (self._hook, self._ctx_hook) if h is not None]
        self._hook = self._ctx_hook = None
        if hooks and not getattr(self.bench, "closed", False):  # (a call may hold the bench: not here)
            core = self.bench.core
            threading.Thread(target=lambda: [core.remove_hook(h) for h in hooks], daemon=True).start()

    def _read(self) -> None:
        """The reader thread: events while no request is asked; a new session when the
        sandbox was started anew (the relay lets a stopped process's debuggers go)."""
        # the standing hook is added here, not on the panel's thread: adding waits for a call
        if self._hook is None:
            self._hook = _Attach(self)
            self.bench.core.add_hook(self._hook)
        while not self._stop.is_set():
            if getattr(self.bench, "closed", False):
                return
            alive = False
            with self._lock:
                conn = self._conn
                if conn is not None and not conn.closed:
                    try:
                        conn.pump(time.monotonic() + PUMP_SECONDS, "an event")
                    except CDPError:
                        pass  # no event in that time (or the socket broke: closed is set)
                    self._drain()
                    alive = not conn.closed
                    if not alive:
                        self._lost()
            if alive:
                # out of the lock a moment: a lock is not fair, and the panel's request (the
                # control thread) waiting for it would otherwise wait several reads
                time.sleep(YIELD_SECONDS)
                continue
            time.sleep(0.5)
            if self._stop.is_set():
                return
            with self._lock:
                if self.attached:
                    continue
                try:
                    self._connect()
                except (CDPError, OSError):
                    pass  # no sandbox runs now: tried again

    def _lost(self) -> None:
        """(under the lock) The session ended (the sandbox stopped): a pause shown ends."""
        self._conn = self._worker = None
        if self.pause is not None:
            self.pause = None
            self._emit("continued", {"threadId": self.thread_id, "allThreadsContinued": False})

    # -- the Worker's events ---------------------------------------------------------------------
    def _drain(self) -> None:
        """(under the lock) The Worker's events read so far: scripts, pauses, resumes."""
        worker = self._worker
        while worker is not None and (events := worker.events()):
            for ev in events:
                method, params = ev.get("method"), ev.get("params") or {}
                if method == "Debugger.scriptParsed":
                    self._parsed(params)
                elif method == "Debugger.paused":
                    self._paused(params)
                elif method == "Debugger.resumed" and self.pause is not None:
                    self.pause = None
                    if not self._stepping:
                        self._emit("continued", {"threadId": self.thread_id, "allThreadsContinued": False})

    def _parsed(self, params: dict[str, Any]) -> None:
        sid, url = str(params.get("scriptId")), str(params.get("url") or "")
        if len(self._scripts) >= MAX_SCRIPTS:
            self._scripts.pop(next(iter(self._scripts)))
        path = _file(url)
        self._scripts[sid] = Script(url, path, str(params.get("sourceMapURL") or ""))
        if path is not None and path in self.wanted:
            self._bind(path)

    def _paused(self, params: dict[str, Any]) -> None:
        frames = [f for f in params.get("callFrames") or [] if isinstance(f, dict)]
        reason = str(params.get("reason") or "other")
        if reason == "instrumentation" or not frames or not self._ours(frames[0]):
            # a module about to run (its breakpoints are bound by now), or a step that left the
            # tool's files for the runtime's: on to the tool's next pause
            if reason != "instrumentation":
                self._stepping = False
            self._post("Debugger.resume")
            return
        stepping, self._stepping = self._stepping, False
        hit = params.get("hitBreakpoints") or []
        why = (
            "step"
            if stepping
            else "breakpoint"
            if hit
            else "debugger statement"
            if reason == "other"
            else reason
        )
        self.pause = Pause(frames, why)
        self._emit(
            "stopped",
            {
                "reason": "step" if stepping else "breakpoint" if hit else "pause",
                "description": f"Paused in {self.name}",
                "threadId": self.thread_id,
                "allThreadsStopped": False,
            },
        )

    def _ours(self, frame: dict[str, Any]) -> bool:
        script = self._scripts.get(str((frame.get("location") or {}).get("scriptId")))
        return script is not None and script.path is not None and script.path.is_relative_to(self.root)

    def top_frame(self) -> dict[str, Any]:
        """The paused Worker's innermost CDP call frame ({} when not paused at a line)."""
        with self._lock:
            pause = self.pause
            return pause.frames[0] if pause is not None and pause.frames else {}

    def command(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A CDP command in the Worker and its result (bench.debug's frames read them so)."""
        with self._lock:
            return self._post(method, params)

    def _post(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if self._worker is None:
            raise DapError(f"{self.name}: the sandbox's Worker is not attached", thread=self.thread_id)
        return self._worker.send(method, params, timeout=CDP_SECONDS)

    # -- breakpoints ---------------------------------------------------------------------------------
    def set_breakpoints(self, path: Path, lines: list[int]) -> list[dict[str, Any]]:
        """The DAP breakpoints of `path` now `lines` (1-based TS lines): each verified with the
        line it bound to, or unverified until the tool's module is loaded."""
        with self._lock:
            self.wanted[path] = list(lines)
            if not lines:
                self.wanted.pop(path, None)
            if self.attached:
                self._drain()
                self._bind(path)
            bound = self.bound.get(path)
        if bound is not None and len(bound) == len(lines):
            return [{"verified": True, "line": b, "source": {"path": str(path)}} for b in bound]
        return [
            {
                "verified": False,
                "line": line,
                "source": {"path": str(path)},
                "message": f"binds when {self.files.get(path, path.name)}'s module loads (its next call)",
            }
            for line in lines
        ]

    def _bind(self, path: Path) -> None:
        """(under the lock) Bind `path`'s wanted lines in its newest parsed script."""
        for old in self._cdp_ids.pop(path, []):
            try:
                self._post("Debugger.removeBreakpoint", {"breakpointId": old})
            except CDPError:
                pass
        self.bound.pop(path, None)
        script_id = next((s for s, sc in reversed(self._scripts.items()) if sc.path == path), None)
        lines = self.wanted.get(path, [])
        if script_id is None or not lines:
            return
        script = self._scripts[script_id]
        smap = script.source_map()
        ids, bound = [], []
        for line in lines:
            at = _generated(smap, path, line - 1)
            if at is None:
                bound.append(line)  # past the map's end: kept as asked, never hit
                continue
            try:
                got = self._post(
                    "Debugger.setBreakpoint",
                    {"location": {"scriptId": script_id, "lineNumber": at[0], "columnNumber": at[1]}},
                )
            except CDPError:
                bound.append(line)
                continue
            ids.append(str(got.get("breakpointId")))
            actual = got.get("actualLocation") or {}
            bound.append(ts_line(script, actual.get("lineNumber", at[0]), actual.get("columnNumber", 0)))
        self._cdp_ids[path], self.bound[path] = ids, bound

    # -- ctx breakpoints (dapctx.py) ---------------------------------------------------------------
    def set_ctx(self, name: str, lines: list[int]) -> list[dict[str, Any]]:
        """The ctx breakpoint `name` ("ctx.files.write") on (`lines`: the panel's) or off
        (none): verified when the platform's ctx has it, else E_USAGE naming the known ones."""
        from .._errors import UsageError
        from .ctxbreak import parse_break_at
        from .dapctx import CtxBreaks

        names = (
            {**self.ctx_points, name: lines}
            if lines
            else {k: v for k, v in self.ctx_points.items() if k != name}
        )
        try:
            points = parse_break_at(list(names), self.bench.profile, self.bench.manifest) if names else None
        except UsageError as exc:
            return [
                {"verified": False, "line": n, "source": {"path": name}, "message": f"{exc.code}: {exc}"}
                for n in lines
            ]
        self.ctx_points, self._breaks = names, points
        if points is not None and self._ctx_hook is None:
            self._ctx_hook = CtxBreaks(
                stops_at=lambda m: self._breaks is not None and self._breaks.stops_at(m),
                pause=self._ctx_pause,
                resumed=self._ctx_resumed,
                closed=lambda: self._stop.is_set() or bool(getattr(self.bench, "closed", False)),
            )
            self.bench.core.add_hook(self._ctx_hook)
        elif points is None and self._ctx_hook is not None:
            self.bench.core.remove_hook(self._ctx_hook)
            self._ctx_hook.release()
            self._ctx_hook = None
        return [{"verified": True, "line": n, "source": {"path": name}} for n in lines]

    def _ctx_pause(self, session: Any, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """(the call's thread, in the hook) A ctx call waits: shown as a stop of this thread."""
        arguments = {**{str(i): a for i, a in enumerate(args)}, **kwargs}
        with self._lock:
            self.pause = Pause([], "ctx", ctx=(Path(session.tool.file).resolve(), method, arguments))
        self._emit(
            "stopped",
            {
                "reason": "function breakpoint",
                "description": f"Paused before ctx.{method}",
                "threadId": self.thread_id,
                "allThreadsStopped": False,
            },
        )

    def _ctx_resumed(self) -> None:
        with self._lock:
            if self.pause is None or self.pause.ctx is None:
                return
            self.pause = None
        self._emit("continued", {"threadId": self.thread_id, "allThreadsContinued": False})

    def step(self, how: str) -> None:
        """continue / next / stepIn / stepOut / pause, as the panel's buttons."""
        method = {
            "continue": "Debugger.resume",
            "next": "Debugger.stepOver",
            "stepIn": "Debugger.stepInto",
            "stepOut": "Debugger.stepOut",
            "pause": "Debugger.pause",
        }[how]
        with self._lock:
            if self.pause is not None and self.pause.ctx is not None and self._ctx_hook is not None:
                if how != "pause":
                    self._ctx_hook.release()  # the ctx call runs; the call goes on
                return
            if how != "pause":
                self._paused_now()
            self._stepping = how not in ("continue", "pause")
            self._post(method)
            self._drain()


class _Attach(CallHooks):
    """A debugged bench's standing hook: its JS/TS calls start attached (Link.ensure_attached)."""

    def __init__(self, link: Link) -> None:
        self.link = link

    def on_call_start(self, *, session: Any, **_: Any) -> None:
        if getattr(session.tool, "language", None) in ("javascript", "typescript"):
            self.link.ensure_attached(session)


def _file(url: str) -> Path | None:
    """A `file://` script URL's path (its query, a reload's, dropped); None for others."""
    if not url.startswith("file://"):
        return None
    try:
        return Path(unquote(urlparse(url).path)).resolve()
    except (OSError, ValueError):
        return None


def _generated(smap: SourceMap | None, path: Path, line: int) -> tuple[int, int] | None:
    """Where V8 runs 0-based TS `line` of `path` (a script without a map: the same line)."""
    if smap is None:
        return (line, 0)
    name = smap.sources[0] if len(smap.sources) == 1 else path.name
    return smap.generated(name, line)
