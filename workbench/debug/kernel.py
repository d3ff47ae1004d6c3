"""The Gem Workbench kernel's debugger: ipykernel's (debugpy for Python cells and tools) plus
the workbench's own for JS/TS tools (debug/dap.py), behind the one Jupyter debug protocol that
JupyterLab's debugger panel speaks.

Routing (each `debug_request` arrives on ipykernel's control thread):
- `setBreakpoints` on a `.ts`/`.js` tool file of an open bench: the workbench's (kept, bound
  through the source map, listed in `debugInfo` so the panel shows them after a reload);
- `stackTrace`, `continue`, `next`, `stepIn`, `stepOut`, `pause` on a "JS: <gem>" thread, and
  `scopes`, `variables`, `evaluate`, `richInspectVariables` on its frame and variable ids (from
  ID_BASE up): the workbench's;
- `threads`, `debugInfo`, `modules`: debugpy's answer with the workbench's threads, breakpoints
  and tool files added;
- everything else: debugpy's, unchanged.

The debugger toggle is enough: once the panel attached, every open bench with JS/TS tools (a
`Bench` in the notebook's namespace) gets Deno's inspector (its sandbox restarted with it once)
and a CDP session; a bench opened later is found at the panel's next request (it asks for
`modules` after each cell).
"""

from __future__ import annotations

import itertools
import threading
from pathlib import Path
from typing import Any

from ipykernel.debugger import Debugger

from .._errors import WorkbenchError

__all__ = ["ID_BASE", "JS_THREAD_BASE", "WorkbenchDebugger"]

JS_THREAD_BASE = 1_000_001  # "JS: <gem>" thread ids (debugpy's are small)
ID_BASE = 1 << 30  # frame and variable ids of JS pauses (debugpy's stay below)
MAX_BREAKPOINTS = 200  # in one source: more than a tool has lines worth stopping at
_STEPS = ("continue", "next", "stepIn", "stepOut", "pause")


class WorkbenchDebugger(Debugger):
    """ipykernel's Debugger with JS/TS tools' breakpoints, pauses and frames routed to the
    workbench (debug/dap.py)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.links: dict[int, Any] = {}  # id(bench) -> dap.Link
        self._ids = itertools.count(ID_BASE)
        self._id_lock = threading.Lock()
        self._threads = itertools.count(JS_THREAD_BASE)
        self._seq = itertools.count(1)
        self.attached = False  # the panel's `attach` came (the debugger is on)

    # -- the protocol ----------------------------------------------------------------------------
    async def process_request(self, message: dict[str, Any]) -> dict[str, Any]:
        """One debug_request: the workbench's when it is about a JS/TS tool, else debugpy's."""
        command = str(message.get("command"))
        args = message.get("arguments")
        args = args if isinstance(args, dict) else {}
        try:
            body = self._js(command, args)
        except WorkbenchError as exc:
            return _response(message, success=False, message=f"{exc.code}: {exc}")
        except Exception as exc:  # noqa: BLE001 - the panel gets a failed answer, the kernel lives
            self.log.error("Gem Workbench: the debugger failed on %s", command, exc_info=True)
            return _response(
                message, success=False, message=f"E_DAP: {command} failed: {type(exc).__name__}: {exc}"
            )
        if body is not None:
            return _response(message, body=body)
        reply = await super().process_request(message)
        if command == "attach" and reply.get("success"):
            self.attached = True
            self._discover()
        elif command == "disconnect":
            self._detach()
        elif command == "debugInfo":
            self._debug_info(reply)
        elif command == "threads":
            reply = reply or _response(message, body={"threads": []})
            reply.setdefault("body", {}).setdefault("threads", []).extend(
                {"id": link.thread_id, "name": link.name} for link in self._live()
            )
            reply["success"] = True
        elif command == "modules":
            self._discover()
            mods = reply.setdefault("body", {}).setdefault("modules", [])
            for link in self._live():
                for path, tool in sorted(link.files.items()):
                    mods.append(
                        {"id": str(path), "name": f"{link.bench.manifest.id}: {tool}", "path": str(path)}
                    )
        return reply

    def _js(self, command: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """The body of the reply when the request is the workbench's; None otherwise."""
        if command == "setBreakpoints":
            source = args.get("source")
            path = str(source.get("path") or "") if isinstance(source, dict) else ""
            lines = _lines(args.get("breakpoints"))
            if path == "ctx" or path.startswith("ctx."):  # a ctx breakpoint, on every debugged bench
                self._discover()
                got = [link.set_ctx(path, lines) for link in self._live()]
                if not got:
                    from .dap import DapError

                    raise DapError(f"{path}: no open bench with JS/TS tools to stop", field="source.path")
                return {"breakpoints": next((g for g in got if g and not g[0]["verified"]), got[0])}
            if not path.endswith((".ts", ".js", ".mts", ".mjs", ".tsx", ".jsx")):
                return None
            link = self._link_for(Path(path))
            if link is None:
                return None
            return {"breakpoints": link.set_breakpoints(Path(path).resolve(), lines)}
        if command == "stackTrace" or command in _STEPS:
            link = self._by_thread(args.get("threadId"))
            if link is None and command == "continue" and not self.stopped_threads:
                # JupyterLab's Continue drops the stopped thread before it asks, and then names
                # thread 1 (its default): with no Python thread stopped, it means the JS pause
                link = next((x for x in self._live() if x.pause is not None), None)
            if link is None:
                return None
            if command == "stackTrace":
                frames = link.stack_trace()
                return {"stackFrames": frames, "totalFrames": len(frames)}
            link.step(command)
            return {"allThreadsContinued": False} if command == "continue" else {}
        if command in ("scopes", "evaluate", "richInspectVariables"):
            frame = args.get("frameId")
            link = self._by_id(frame)
            if link is None:
                return None
            if command == "scopes":
                return {"scopes": link.scopes(frame)}
            if command == "evaluate":
                return link.evaluate(frame, args.get("expression"))
            got = link.evaluate(frame, str(args.get("variableName")))
            return {"data": {"text/plain": got["result"]}, "metadata": {}}
        if command == "variables":
            ref = args.get("variablesReference")
            link = self._by_id(ref)
            return None if link is None else {"variables": link.variables(ref)}
        return None

    def _debug_info(self, reply: dict[str, Any]) -> None:
        """debugInfo: the JS/TS breakpoints (as bound) and paused JS threads added."""
        body = reply.setdefault("body", {})
        for link in self._live():
            for path, lines in link.wanted.items():
                bound = link.bound.get(path) or lines
                body.setdefault("breakpoints", []).append(
                    {"source": str(path), "breakpoints": [{"line": n} for n in bound]}
                )
            for name, lines in link.ctx_points.items():
                body.setdefault("breakpoints", []).append(
                    {"source": name, "breakpoints": [{"line": n} for n in lines]}
                )
            if link.pause is not None:
                body.setdefault("stoppedThreads", []).append(link.thread_id)

    # -- benches and their links -------------------------------------------------------------------
    def _benches(self) -> list[Any]:
        """The open benches in the notebook's namespace that have JS/TS tools."""
        from IPython import get_ipython

        shell = get_ipython()
        found = []
        for value in list((shell.user_ns if shell is not None else {}).values()):
            core, manifest = getattr(value, "core", None), getattr(value, "manifest", None)
            if core is None or manifest is None or not hasattr(core, "sandbox_options"):
                continue
            if getattr(value, "closed", True) or not hasattr(manifest, "tools"):
                continue
            if any(t.language in ("javascript", "typescript") for t in manifest.tools.values()):
                found.append(value)
        return found

    def _discover(self) -> None:
        """(debugger on) A link for each open bench that has none."""
        if not self.attached:
            return
        for bench in self._benches():
            self._link(bench)

    def _link(self, bench: Any) -> Any:
        from .dap import Link

        link = self.links.get(id(bench))
        if link is not None and link.bench is bench:
            return link
        link = Link(bench, thread_id=next(self._threads), ids=self._next_id, emit=self._emit)
        self.links[id(bench)] = link
        try:
            link.start()
        except WorkbenchError as exc:
            self.log.warning("Gem Workbench: cannot debug %s's JS/TS tools: %s", bench.manifest.id, exc)
        return link

    def _live(self) -> list[Any]:
        for key, link in list(self.links.items()):
            if getattr(link.bench, "closed", False):
                link.close()
                del self.links[key]
        return list(self.links.values())

    def _link_for(self, path: Path) -> Any:
        """The link of the bench whose JS/TS tool `path` is (made now if need be)."""
        from .dap import bench_files

        resolved = path.resolve()
        for bench in self._benches():
            if resolved in bench_files(bench):
                return self._link(bench)
        return None

    def _by_thread(self, thread_id: Any) -> Any:
        return next((x for x in self._live() if x.thread_id == thread_id), None)

    def _by_id(self, ref: Any) -> Any:
        if not isinstance(ref, int) or ref < ID_BASE:
            return None
        for link in self._live():
            pause = link.pause
            if pause is not None and (ref in pause.frame_ids or ref in pause.refs or ref in pause.py_refs):
                return link
        from .dap import DapError

        raise DapError(f"id {ref} is no longer valid (the JS pause it belonged to ended)", id=ref)

    def _next_id(self) -> int:
        with self._id_lock:
            return next(self._ids)

    def _emit(self, event: str, body: dict[str, Any]) -> None:
        """A DAP event to the panel (debug_event on IOPub; from the link's reader thread)."""
        self.event_callback({"seq": next(self._seq), "type": "event", "event": event, "body": body})

    def _detach(self) -> None:
        self.attached = False
        for link in self.links.values():
            link.close()
        self.links.clear()


def _lines(breakpoints: Any) -> list[int]:
    """The lines of a setBreakpoints request (at most MAX_BREAKPOINTS; E_DAP past it)."""
    from .dap import DapError

    if not isinstance(breakpoints, list):
        return []
    if len(breakpoints) > MAX_BREAKPOINTS:
        raise DapError(
            f"{len(breakpoints):,} breakpoints in one source; at most {MAX_BREAKPOINTS}",
            field="breakpoints",
            limit=MAX_BREAKPOINTS,
        )
    out = []
    for b in breakpoints:
        line = b.get("line") if isinstance(b, dict) else None
        if isinstance(line, int) and not isinstance(line, bool) and 0 < line < 10_000_000:
            out.append(line)
    return out


def _response(
    request: dict[str, Any], *, body: dict[str, Any] | None = None, success: bool = True, message: str = ""
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "response",
        "request_seq": request.get("seq"),
        "success": success,
        "command": request.get("command"),
        "body": body if body is not None else {},
    }
    if message:
        out["message"] = message
    return out
