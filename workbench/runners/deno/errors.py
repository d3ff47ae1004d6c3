"""A tool's error, as the host reports it, made a coded WorkbenchError."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..._errors import WorkbenchError
from ..._text import well_formed
from ...ctx.limits import DEFAULT as DEFAULT_LIMITS

# "Requires read access …"; Deno.exit / self.close / self.postMessage (worker/confine.ts); Deno.symlink:
# "requires unscoped --allow-read and --allow-write"
_CAPABILITY = re.compile(r"Requires (\w+) access|(?:Deno|self)\.(exit|close|postMessage)|and --allow-(\w+)")


def tool_error(e: dict[str, Any], root: Path, limits: Any = DEFAULT_LIMITS) -> WorkbenchError:
    """The tool's error as a coded one. Never raises, whatever the message holds (missing or
    odd fields are E_TOOL_ERROR). A platform code or a result-size verdict is taken only
    from `bridge`, which the Worker (worker/) sets on what it made itself (a ctx error it created, a
    result too large or not JSON): a tool naming its error "CtxError" or "ResultTooLarge"
    is an ordinary tool error."""
    try:
        return _coded(e, root, limits)
    except Exception:  # noqa: BLE001  (never out of bench.call)
        return WorkbenchError("E_TOOL_ERROR", "the tool failed with an error the workbench cannot read")


def _coded(e: dict[str, Any], root: Path, limits: Any) -> WorkbenchError:
    def text(key: str, default: str = "") -> str:
        v = e.get(key, default)
        return well_formed(v) if isinstance(v, str) else default  # a lone surrogate: U+FFFD

    name, message = text("name", "Error") or "Error", text("message")
    stack = _tool_stack(text("stack"), root)
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
    if "cache storage directory" in message:  # the Cache API, blocked in Sandbox._start
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
            "import": "remote (https:, jsr:) imports are not allowed (N4)",
        }.get(cap, f"the sandbox has no {cap} access (N1)")
        # Deno's advice ("run again with the --allow-env flag") is for a command line the
        # author does not have: say what the platform allows instead
        message = _RUN_AGAIN.sub("", message)
        allowed = _ALLOWED.get(cap, "")
        return WorkbenchError(
            "E_SANDBOX",
            f"{hint}: {message}" + (f". {allowed}" if allowed else ""),
            capability=cap,
            stack=stack,
        )
    if name == "TypeError" and message.startswith("SyntaxError"):  # the module does not parse
        name, message = "SyntaxError", message[len("SyntaxError") :].lstrip(": ")
    message = message.replace(root.as_uri() + "/", "")  # "at tools/x.ts:2:21", as the stack
    return WorkbenchError("E_TOOL_ERROR", f"{name}: {message}", stack=stack)


_RUN_AGAIN = re.compile(r",?\s*run again with the --allow-[a-z-]+ flag")
_ALLOWED = {
    "env": "Tools get no environment variables: settings come from the tool's input or storage",
    "net": "A tool reaches the network only through its ctx (ctx.http.fetch with the manifest's "
    "permissions.http, or an Ekanos integration's ctx.fetch to its egress hosts)",
    "read": "A tool reads only its own gem folder (and its resources); other files come through "
    "its ctx (ctx.files)",
    "write": "A tool writes only through its ctx (ctx.files, storage)",
    "run": "Tools cannot start programs",
    "ffi": "Tools cannot load native libraries",
    "sys": "Tools cannot read system information",
}


def _tool_stack(stack: str, root: Path) -> str:
    """Only the frames in the gem's own files, with paths relative to the gem."""
    prefix = root.as_uri() + "/"
    return "\n".join(line.strip().replace(prefix, "") for line in stack.splitlines() if prefix in line)
