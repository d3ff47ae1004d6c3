"""Source lines for `bench.debug(...)`: `V8Frames`, the session's FrameBackend over the V8
inspector of the bench's Deno sandbox.

It reuses the kernel's link to the Worker (dap.py's `Link`: the CDP session, the breakpoints
bound through each script's source map when the tool's module loads, the reader thread that
sees `Debugger.paused`, the frames at TS lines, the steps) with an emit callback of its own: a
V8 pause in the tool's files makes the session "paused" at a `LinePause` (where, the call
stack), and the notebook's next cell reads `locals`, evaluates, steps or continues.

Values come back as JSON-able Python, bounded (MAX_DEPTH levels, MAX_ITEMS entries, MAX_OBJECTS
objects read per request): the tool's objects can be huge or cyclic. The time a Worker spends
paused is not the call's: the inspector relay counts V8 pauses (debug/inspector.py) and the
sandbox's deadline moves by them.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import UsageError, WorkbenchError
from .ctxbreak import SourceLine
from .dapframes import MAX_EXPRESSION, MAX_VALUE

if TYPE_CHECKING:
    from .dap import Link
    from .session import DebugSession

__all__ = ["LinePause", "Locals", "V8Frames"]

AROUND = 4  # source lines shown either side of the paused one
MAX_DEPTH = 3  # levels of nested objects read into a value (deeper: its description)
MAX_ITEMS = 50  # entries of an object or array read (the rest: "…": "N more")
MAX_OBJECTS = 100  # objects read per locals()/eval() (each is a round trip into the Worker)
MAX_STACK = 20  # frames kept with a pause
_RECURSE = (None, "array")  # object subtypes read entry by entry (others: their description)


class _Route:
    """A bench's one link's emit: to the session debugging it now. With none (between
    sessions), a pause the link reports (a `debugger;` statement) is resumed at once."""

    def __init__(self) -> None:
        self.frames: V8Frames | None = None
        self.link: Link | None = None

    def __call__(self, event: str, body: dict[str, Any]) -> None:
        frames = self.frames
        if frames is not None:
            frames.event(event, body)
        elif event == "stopped" and self.link is not None and body.get("reason") != "function breakpoint":
            self.link.command("Debugger.resume")


# one link per bench, kept while it is open: the Worker takes one debugger session at a time,
# and one that detached and attached again is not stopped by its breakpoints
_LINKS: weakref.WeakKeyDictionary[Any, tuple[Link, _Route]] = weakref.WeakKeyDictionary()
_LINKS_LOCK = threading.Lock()


def _link_of(bench: Any) -> tuple[Link, _Route]:
    """The bench's link to its Worker (made, and its inspector added, on first use)."""
    from .dap import Link

    with _LINKS_LOCK:
        got = _LINKS.get(bench.core)
        if got is not None and not got[0].stopped:
            return got
        route, ids = _Route(), itertools.count(1)
        link = Link(bench, thread_id=1, ids=lambda: next(ids), emit=route)
        route.link = link
        try:
            link.start(hook_here=True)
        except BaseException:
            link.close()  # (its hook off the bench again)
            raise
        bench.core.finalizers.append(link.close)
        _LINKS[bench.core] = (link, route)
        return link, route


@dataclass
class LinePause:
    """The call, paused by V8 at a line of the tool's own source (a breakpoint or a step)."""

    n: int  # this pause's number in the debug session
    why: str  # "breakpoint", "step", "debugger statement"
    file: str  # in the gem: "tools/t.ts"
    line: int  # 1-based TS line
    function: str
    code: list[tuple[int, str]]  # the lines around it
    stack: list[tuple[str, int, str]]  # (file, line, function), innermost first
    done: str = ""  # "ran", "stepped", "stepped over", "aborted"
    frame_id: int = 0  # the innermost frame's id in the link's pause
    seconds: float = field(default=0.0, repr=False)  # how long it lasted

    @property
    def name(self) -> str:
        """Where, as `break_at` writes it: "tools/t.ts:12"."""
        return f"{self.file}:{self.line}"

    def __repr__(self) -> str:
        from . import view

        return view.line_text(self)

    def _repr_html_(self) -> str:
        from . import view

        return view.line_html(self)


class Locals(dict[str, Any]):
    """The paused frame's locals (a dict), shown as a table in a notebook."""

    def _repr_html_(self) -> str:
        from . import view

        return view.locals_html(self)


class V8Frames:
    """Source-line debugging of a `bench.debug` call through the bench's V8 inspector."""

    def __init__(self, bench: Any, debug: DebugSession) -> None:
        self.bench, self.debug = bench, debug
        self.link: Link | None = None
        self.lines: tuple[SourceLine, ...] = ()
        self.wanted: dict[Path, list[int]] = {}
        self._route: _Route | None = None
        self._budget = 0

    # -- set up and tear down ------------------------------------------------------------------
    def set_breakpoints(self, lines: tuple[SourceLine, ...]) -> None:
        """Give the bench its inspector (once), attach to its Worker and bind `lines`: E_USAGE
        for a file that is not a JS/TS tool of the gem, E_UNSUPPORTED for a Python one."""
        if not lines:
            return
        from .dap import bench_files  # (the CDP client: only for a session with lines)

        root = Path(self.bench.manifest.root).resolve()
        files = bench_files(self.bench)
        wanted: dict[Path, list[int]] = {}
        for sl in lines:
            path = (root / sl.file).resolve()
            if path.suffix == ".py":
                raise WorkbenchError(
                    "E_UNSUPPORTED",
                    f"break_at {sl}: a Python tool's lines are stepped with the kernel's debugger "
                    "(JupyterLab's panel, or a breakpoint() in the tool); bench.debug stops Python "
                    'tools at ctx breakpoints ("ctx.files.read")',
                    field="break_at",
                    feature="python source lines",
                )
            if path not in files:
                known = ", ".join(sorted(str(p.relative_to(root)) for p in files)) or "none"
                raise UsageError(
                    f"break_at {sl}: not a JS/TS tool file of this gem (its tools' files: {known})",
                    field="break_at",
                )
            wanted.setdefault(path, []).append(sl.line)
        self.lines, self.wanted = lines, wanted
        link, route = _link_of(self.bench)
        self.link, self._route, route.frames = link, route, self
        for path, numbers in wanted.items():
            link.set_breakpoints(path, sorted(set(numbers)))

    def close(self) -> None:
        """Let go of the call: its breakpoints removed, the Worker resumed if it is paused at a
        line, the bench's link left to the next session (the bench's later calls run undebugged)."""
        link, route, self.link = self.link, self._route, None
        if link is None or route is None:
            return
        if route.frames is self:
            route.frames = None
        for path in self.wanted:
            link.set_breakpoints(path, [])
        pause = link.pause
        if pause is not None and pause.ctx is None:
            try:
                link.command("Debugger.resume")
            except WorkbenchError:
                pass  # the Worker is gone (its sandbox stopped): nothing paused

    # -- the link's events (its reader thread, or the thread that stepped) ---------------------
    def event(self, event: str, body: dict[str, Any]) -> None:
        """What the link reports: a pause in the tool's files, or the Worker running again."""
        link = self.link
        if link is None:
            return
        if event == "stopped":
            self.debug.line_paused(self._pause(link, str(body.get("reason") or "pause")))
        elif event == "continued":
            self.debug.line_resumed()

    def _pause(self, link: Link, reason: str) -> LinePause:
        """(under the link's lock) The pause as the notebook sees it: the TS lines of the
        tool's frames, the innermost one's source around its line."""
        root = link.root
        frames = link.stack_trace()[:MAX_STACK]
        stack = []
        for f in frames:
            path = Path(f["source"]["path"])
            stack.append((str(path.relative_to(root)), int(f["line"]), str(f["name"])))
        file, line, fn = stack[0] if stack else ("?", 0, "?")
        code: list[tuple[int, str]] = []
        if frames:
            try:
                text = Path(frames[0]["source"]["path"]).read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
            rows = text.splitlines()
            first = max(1, line - AROUND)
            code = [(n, rows[n - 1][:200]) for n in range(first, min(len(rows), line + AROUND) + 1)]
        why = {"step": "step", "breakpoint": "breakpoint"}.get(reason, "debugger statement")
        return LinePause(
            n=len(self.debug.pauses) + 1,
            why=why,
            file=file,
            line=line,
            function=fn,
            code=code,
            stack=stack,
            frame_id=int(frames[0]["id"]) if frames else 0,
        )

    # -- the paused frame ------------------------------------------------------------------------
    def _paused(self, what: str) -> tuple[Link, LinePause]:
        pause = self.debug.paused
        if self.link is None or not isinstance(pause, LinePause):
            raise UsageError(
                f"{self.debug.label}: {what} needs a call paused at a source line, and it is "
                + (f"paused before {pause.name}" if pause is not None else self.debug.state)
                + ' (give break_at a line: "tools/t.ts:12")',
                session=self.debug.label,
                state=self.debug.state,
            )
        return self.link, pause

    def resume(self, how: str) -> None:
        """continue / next / stepIn, as the link's steps (the session, which checked that it is
        paused at a line, waits for what follows)."""
        if self.link is not None:
            self.link.step(how)

    def where(self) -> LinePause:
        return self._paused("where")[1]

    def locals(self) -> Locals:
        """The innermost frame's local and block scopes, as JSON-able Python (bounded)."""
        link, _ = self._paused("locals")
        self._budget = MAX_OBJECTS
        out = Locals()
        for scope in link.top_frame().get("scopeChain") or []:
            if scope.get("type") not in ("local", "block", "catch"):
                continue
            object_id = (scope.get("object") or {}).get("objectId")
            if object_id:
                for name, value in self._props(link, str(object_id), MAX_DEPTH).items():
                    out.setdefault(name, value)  # the innermost scope's name wins
        return out

    def eval(self, expr: str) -> Any:
        """`expr` evaluated in the innermost paused frame; E_EVAL naming what it threw."""
        if not isinstance(expr, str) or len(expr) > MAX_EXPRESSION:
            raise UsageError(
                f"eval(expr): a string of up to {MAX_EXPRESSION:,} characters",
                field="expr",
                limit=MAX_EXPRESSION,
            )
        link, _ = self._paused("eval")
        got = link.command(
            "Debugger.evaluateOnCallFrame",
            {
                "callFrameId": link.top_frame().get("callFrameId"),
                "expression": expr,
                "generatePreview": False,
            },
        )
        details = got.get("exceptionDetails")
        if details:
            text = (
                (details.get("exception") or {}).get("description") or details.get("text") or "an exception"
            )
            raise WorkbenchError(
                "E_EVAL", f"eval({expr[:80]!r}) threw: {str(text)[:MAX_VALUE]}", field="expr"
            )
        self._budget = MAX_OBJECTS
        return self._py(link, got.get("result") or {}, MAX_DEPTH)

    # -- CDP values as Python ----------------------------------------------------------------------
    def _props(self, link: Link, object_id: str, depth: int) -> dict[str, Any]:
        self._budget -= 1
        got = link.command("Runtime.getProperties", {"objectId": object_id, "ownProperties": True})
        out: dict[str, Any] = {}
        props = [p for p in got.get("result") or [] if isinstance(p, dict) and "value" in p]
        for prop in props[:MAX_ITEMS]:  # (accessors skipped: reading one runs the tool's code)
            out[str(prop.get("name"))[:MAX_VALUE]] = self._py(link, prop["value"], depth - 1)
        if len(props) > MAX_ITEMS:
            out["…"] = f"{len(props) - MAX_ITEMS} more"
        return out

    def _py(self, link: Link, obj: dict[str, Any], depth: int) -> Any:
        """A CDP RemoteObject as Python: primitives as such, arrays as lists and plain objects
        as dicts to `depth` levels; anything else (and what is past a bound) as its description."""
        kind, value = obj.get("type"), obj.get("value")
        if kind in ("string", "boolean"):
            return str(value)[:MAX_VALUE] if kind == "string" else bool(value)
        if kind == "number":
            return value if "unserializableValue" not in obj else str(obj["unserializableValue"])
        if kind == "undefined" or (kind == "object" and obj.get("subtype") == "null"):
            return None
        text = str(obj.get("description") or obj.get("unserializableValue") or kind)[:MAX_VALUE]
        object_id = obj.get("objectId")
        if kind != "object" or not object_id or obj.get("subtype") not in _RECURSE:
            return text
        if depth <= 0 or self._budget <= 0:
            return text
        props = self._props(link, str(object_id), depth)
        if obj.get("subtype") == "array":
            items = [v for k, v in props.items() if k.isdigit()]
            return items + ([props["…"]] if "…" in props else [])
        return props
