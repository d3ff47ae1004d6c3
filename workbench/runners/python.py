"""Python tools, in-process: `tools/x.py` defining `handle(input, ctx)`, sync or async.

In-process means `%debug` and breakpoints work on tool code. The runner knows nothing of
storage: it gets the ctx layer's `Capabilities` and turns them into the tool's `ctx`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import inspect
import io
import sys
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from ..ctx import CtxCrash, PythonCtx

if TYPE_CHECKING:
    from ..ctx import Capabilities
    from ..gem import ToolSpec


@dataclass
class Outcome:
    """What running a tool produced: a value, or an error; plus its console output.

    `json` is the value already serialised by the tool's own runtime (JS: JSON.stringify),
    which is what the caller receives and what N9 measures.
    """

    value: Any = None
    error: WorkbenchError | None = None
    logs: str = ""
    json: str | None = None


_modules: dict[Path, tuple[int, ModuleType]] = {}


def _load(tool: "ToolSpec", fresh: bool) -> ModuleType:
    """Import the tool's file; again when it changed on disk, or when `fresh` (reuse policy)."""
    mtime = tool.file.stat().st_mtime_ns
    cached = _modules.get(tool.file)
    if cached and cached[0] == mtime and not fresh:
        return cached[1]
    name = f"_workbench_tool_{abs(hash(str(tool.file)))}_{tool.name}"
    spec = importlib.util.spec_from_file_location(name, tool.file)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _modules[tool.file] = (mtime, module)
    return module


def _tool_frames(exc: BaseException, root: Path) -> str:
    """The traceback restricted to frames in the gem's own files."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if Path(f.filename).is_relative_to(root)]
    if isinstance(exc, SyntaxError) and exc.filename and Path(exc.filename).is_relative_to(root):
        return "".join(traceback.format_exception_only(exc))
    return "".join(traceback.format_list(frames))


def _run_coroutine(coro: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # a loop already runs in this thread (Jupyter): give the tool its own loop in a thread
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # handed back to the caller's thread
            box["error"] = exc

    t = threading.Thread(target=target, name="workbench-tool")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def run(tool: "ToolSpec", args: Any, caps: "Capabilities", *, fresh: bool = False) -> Outcome:
    """Run one call of a Python tool; `fresh` gives it a new module instance (N5)."""
    out, root = io.StringIO(), tool.file.parent.parent
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            module = _load(tool, fresh)
            handle = getattr(module, "handle", None)
            if not callable(handle):
                return Outcome(error=WorkbenchError(
                    "E_TOOL_ERROR", f"{tool.rel_file} defines no handle(input, ctx) function",
                    file=tool.rel_file), logs=out.getvalue())
            is_async = inspect.iscoroutinefunction(handle)
            ctx = PythonCtx(caps, asynchronous=is_async)
            value = _run_coroutine(handle(args, ctx)) if is_async else handle(args, ctx)
            if inspect.isawaitable(value):  # a sync def returning a coroutine: await it too
                value = _run_coroutine(value)
        return Outcome(value=value, logs=out.getvalue())
    except CtxCrash as exc:  # N7: a simulated crash; the bench reruns the call
        exc.logs = out.getvalue()
        raise
    except WorkbenchError as exc:  # a ctx error the tool did not catch keeps its code
        sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, exc.__traceback__
        return Outcome(error=WorkbenchError(exc.code, exc.message, **exc.details,
                                            stack=_tool_frames(exc, root)), logs=out.getvalue())
    except Exception as exc:
        sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, exc.__traceback__
        return Outcome(error=WorkbenchError("E_TOOL_ERROR", f"{type(exc).__name__}: {exc}",
                                            stack=_tool_frames(exc, root), file=tool.rel_file),
                       logs=out.getvalue())
