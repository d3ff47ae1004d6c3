"""What the panel reads of a paused JS/TS call (dap.py's Link has it through `Paused`): the
frames at TS lines, scopes and variables (CDP objects by reference, a ctx breakpoint's Python
arguments by reference), expressions evaluated in the paused frame, each bounded."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import WorkbenchError
from .sourcemap import SourceMap, SourceMapError

__all__ = ["MAX_VARIABLES", "DapError", "Pause", "Paused", "Script", "ts_line"]

MAX_VARIABLES = 200  # a variables reply lists at most this many (a big array's first ones)
MAX_VALUE = 1000  # characters of a value's text in the panel
MAX_EXPRESSION = 10_000  # characters of an expression to evaluate
MAX_SCRIPTS = 5000  # scripts remembered per Worker (the runtime's own are many)
MAX_REFS = 100_000  # variable references handed out while one pause lasts
_SCOPES = ("local", "block", "closure", "catch", "with", "module", "script")  # not global: huge


class DapError(WorkbenchError):
    """A DAP request on a JS/TS tool that cannot be answered (E_DAP: no pause, a stale frame,
    an expression over the limit)."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__("E_DAP", message, **details)


@dataclass
class Script:
    """A script the Worker parsed: its file (None: not a file), its map (read when needed)."""

    url: str
    path: Path | None
    map_url: str
    smap: SourceMap | None = None
    read: bool = False

    def source_map(self) -> SourceMap | None:
        if not self.read:
            self.read = True
            try:
                self.smap = SourceMap.from_url(self.map_url) if self.map_url.startswith("data:") else None
            except SourceMapError:
                self.smap = None  # a map that cannot be read: the generated lines are shown
        return self.smap


@dataclass
class Pause:
    """The Worker's current pause as the panel sees it: frames and references by DAP id."""

    frames: list[dict[str, Any]]
    reason: str
    frame_ids: dict[int, dict[str, Any]] = field(default_factory=dict)
    refs: dict[int, str] = field(default_factory=dict)  # variablesReference -> CDP objectId
    # a ctx breakpoint's pause (dapctx.py): (the tool's file, method, arguments); its
    # variables are Python values, by reference
    ctx: tuple[Path, str, dict[str, Any]] | None = None
    py_refs: dict[int, Any] = field(default_factory=dict)


def ts_line(script: Script, line: int, column: int) -> int:
    """A generated 0-based position's 1-based line in the script's own source."""
    smap = script.source_map()
    pos = smap.original(int(line), int(column)) if smap is not None else None
    return (pos.line if pos is not None else int(line)) + 1


class Paused:
    """The answers about the current pause (a mixin of dap.Link, which sets these attributes)."""

    pause: Pause | None
    name: str
    thread_id: int
    root: Path
    _lock: threading.RLock
    _scripts: dict[str, Script]
    _ids: Callable[[], int]

    def _post(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        raise NotImplementedError  # (Link's: a command in the Worker)

    def _py(self, pause: Pause, name: str, value: Any) -> dict[str, Any]:
        from .dapctx import py_value

        text, kind, more = py_value(value, limit=MAX_VALUE)
        ref = 0
        if more:
            if len(pause.py_refs) >= MAX_REFS:
                raise DapError(f"over {MAX_REFS:,} variables expanded in one pause", limit=MAX_REFS)
            ref = self._ids()
            pause.py_refs[ref] = value
        return {"name": name[:MAX_VALUE], "value": text, "type": kind, "variablesReference": ref}

    def _paused_now(self) -> Pause:
        if self.pause is None:
            raise DapError(f"{self.name} is not paused", thread=self.thread_id)
        return self.pause

    def stack_trace(self) -> list[dict[str, Any]]:
        """The paused Worker's frames in the gem's files, at their TS lines (the tool's real
        path: the panel opens it)."""
        with self._lock:
            pause = self._paused_now()
            out = []
            if pause.ctx is not None:  # before a ctx call: one frame, in the tool's file
                fid = self._ids()
                pause.frame_ids[fid] = {"ctx": True}
                file, method, _ = pause.ctx
                return [
                    {
                        "id": fid,
                        "name": f"ctx.{method} (before the call)",
                        "line": 1,
                        "column": 1,
                        "source": {"name": file.name, "path": str(file)},
                    }
                ]
            for frame in pause.frames:
                loc = frame.get("location") or {}
                script = self._scripts.get(str(loc.get("scriptId")))
                if script is None or script.path is None or not script.path.is_relative_to(self.root):
                    continue  # the runtime's own frames (the sandbox's worker, Deno's)
                fid = self._ids()
                pause.frame_ids[fid] = frame
                line = ts_line(script, loc.get("lineNumber", 0), loc.get("columnNumber", 0))
                out.append(
                    {
                        "id": fid,
                        "name": str(frame.get("functionName") or "(anonymous)"),
                        "line": line,
                        "column": 1,
                        "source": {"name": script.path.name, "path": str(script.path)},
                    }
                )
            return out

    def scopes(self, frame_id: int) -> list[dict[str, Any]]:
        """The frame's scopes (Local first; not the global one), each expandable."""
        with self._lock:
            pause = self._paused_now()
            frame = pause.frame_ids.get(frame_id)
            if frame is None:
                raise DapError(f"no frame {frame_id} in the current pause", frameId=frame_id)
            if pause.ctx is not None:
                ref = self._py(pause, "", pause.ctx[2])["variablesReference"]
                return [{"name": "Arguments", "variablesReference": ref, "expensive": False}]
            out = []
            for scope in frame.get("scopeChain") or []:
                kind, obj = scope.get("type"), scope.get("object") or {}
                if kind not in _SCOPES or not obj.get("objectId"):
                    continue
                ref = self._ref(pause, str(obj["objectId"]))
                name = str(kind).capitalize() if kind != "local" else "Locals"
                out.append({"name": name, "variablesReference": ref, "expensive": False})
            return out

    def variables(self, ref: int) -> list[dict[str, Any]]:
        """An object's own properties (at most MAX_VARIABLES), objects expandable."""
        with self._lock:
            pause = self._paused_now()
            if ref in pause.py_refs:
                from .dapctx import py_children

                kids = py_children(pause.py_refs[ref], most=MAX_VARIABLES)
                return [self._py(pause, name, value) for name, value in kids]
            object_id = pause.refs.get(ref)
            if object_id is None:
                raise DapError(f"no variable reference {ref} in the current pause", variablesReference=ref)
            got = self._post(
                "Runtime.getProperties",
                {"objectId": object_id, "ownProperties": True, "generatePreview": False},
            )
            out: list[dict[str, Any]] = []
            for prop in got.get("result") or []:
                if len(out) >= MAX_VARIABLES:
                    out.append(
                        {"name": "…", "value": f"(more than {MAX_VARIABLES} shown)", "variablesReference": 0}
                    )
                    break
                if not isinstance(prop, dict) or "value" not in prop:
                    continue  # an accessor: reading it would run the tool's code
                out.append({"name": str(prop.get("name"))[:MAX_VALUE], **self._value(pause, prop["value"])})
            return out

    def evaluate(self, frame_id: int, expression: str) -> dict[str, Any]:
        """`expression` evaluated in the paused frame: {result, type, variablesReference}."""
        if not isinstance(expression, str) or len(expression) > MAX_EXPRESSION:
            raise DapError(
                f"the expression is over {MAX_EXPRESSION:,} characters",
                field="expression",
                limit=MAX_EXPRESSION,
            )
        with self._lock:
            pause = self._paused_now()
            if pause.ctx is not None:
                raise DapError(
                    f"paused before ctx.{pause.ctx[1]}: the tool's JS frames are not paused, so there is no "
                    "scope to evaluate in (its arguments are the variables)",
                    field="expression",
                )
            frame = pause.frame_ids.get(frame_id) or (pause.frames[0] if pause.frames else None)
            if frame is None:
                raise DapError(f"no frame {frame_id} in the current pause", frameId=frame_id)
            got = self._post(
                "Debugger.evaluateOnCallFrame",
                {"callFrameId": frame.get("callFrameId"), "expression": expression, "generatePreview": False},
            )
            if got.get("exceptionDetails"):
                details = got["exceptionDetails"]
                text = (
                    (details.get("exception") or {}).get("description")
                    or details.get("text")
                    or "an exception"
                )
                raise DapError(str(text)[:MAX_VALUE], field="expression")
            value = self._value(pause, got.get("result") or {})
            return {
                "result": value["value"],
                "type": value["type"],
                "variablesReference": value["variablesReference"],
            }

    def _ref(self, pause: Pause, object_id: str) -> int:
        if len(pause.refs) >= MAX_REFS:
            raise DapError(f"over {MAX_REFS:,} variables expanded in one pause", limit=MAX_REFS)
        ref = self._ids()
        pause.refs[ref] = object_id
        return ref

    def _value(self, pause: Pause, obj: dict[str, Any]) -> dict[str, Any]:
        """A CDP RemoteObject as a DAP variable's value, type and reference. JupyterLab's
        panel shows a variable's value only for the types "int", "float", "bool" and "str"
        (debugpy's names) and the type otherwise: JS primitives are typed so, objects by class."""
        kind = str(obj.get("type") or "undefined")
        value = obj.get("value")
        if kind == "number":
            text = str(obj.get("unserializableValue") or obj.get("description") or value)
            shown = "int" if isinstance(value, int) else "float"
        elif kind == "boolean":
            text, shown = ("true" if value else "false"), "bool"
        elif kind == "string":
            text, shown = json.dumps(str(value)[:MAX_VALUE], ensure_ascii=False), "str"
        elif kind == "object" and obj.get("subtype") == "null":
            text, shown = "null", "null"
        elif kind == "object":
            text = str(obj.get("description") or obj.get("className") or kind)
            shown = text if len(text) <= 40 else str(obj.get("className") or "object")
        else:  # undefined, bigint, symbol, function
            text = str(obj.get("description") or obj.get("unserializableValue") or kind)
            shown = kind
        ref = 0
        if kind == "object" and obj.get("objectId") and obj.get("subtype") != "null":
            ref = self._ref(pause, str(obj["objectId"]))
        if len(text) > MAX_VALUE:
            text = text[: MAX_VALUE - 1] + "…"
        return {"value": text, "type": shown, "variablesReference": ref}
