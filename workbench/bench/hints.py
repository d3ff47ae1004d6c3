"""Hints added to a tool's error where the platform's own message would not say why."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from .._errors import WorkbenchError
from ..gem.folder import open_regular

if TYPE_CHECKING:
    from ..gem import ToolSpec
    from ..platforms import Grants, Profile


def explain_absent(err: WorkbenchError, tool: ToolSpec, profile: Profile, grants: Grants) -> WorkbenchError:
    """A JS tool's TypeError on a ctx capability it has no grant for (it is undefined, as on
    the platform, e.g. E1's ctx.email): say why, naming the manifest field to add. Only when
    the error is about one of its methods and the tool's source uses that capability: a
    `x.path` on some other undefined value is not R1's."""
    if err.code != "E_TOOL_ERROR" or tool.language == "python":
        return err
    if "is not a function" in err.message:
        return _wrong_method(err, profile, grants)
    if "undefined" not in err.message:
        return err
    source: str | None = None
    for name, why in profile.foreign.items():  # another platform's capability
        if re.search(rf"\bctx\s*\.\s*{re.escape(name)}\b", source := source or _source(tool)):
            return WorkbenchError(err.code, f"{err.message} — ctx.{name} is undefined: {why}", **err.details)
    for cap in profile.capabilities:
        if cap.grant is None or grants.has(cap.grant):
            continue
        if any(f"'{m}'" in err.message for m in cap.method_names()):
            source = source or _source(tool)
            name = cap.path.rsplit(".", 1)[-1]
            if not re.search(rf"\.\s*{re.escape(name)}\b|\b{re.escape(name)}\s*[,}}:]", source):
                continue
            hint = grants.denial(cap.grant)
            return WorkbenchError(
                err.code,
                f"{err.message} — ctx.{cap.path} is undefined: {hint.message}",
                **err.details,
                missing=hint.details.get("missing", []),
            )
    return err


def _source(tool: ToolSpec, limit: int = 1 << 20) -> str:
    """The tool's source text (its first MiB; '' if it cannot be read now). Opened as the
    edit loop opens gem files: a FIFO swapped in since the call is refused, never waited on."""
    try:
        fd = open_regular(tool.file)
    except WorkbenchError:
        return ""
    try:
        return os.read(fd, limit).decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


_NOT_A_FUNCTION = re.compile(r"\bctx\.((?:\w+\.)*\w+)\.(\w+) is not a function")


def _wrong_method(err: WorkbenchError, profile: Profile, grants: Grants) -> WorkbenchError:
    """`ctx.files.readFile is not a function`: name the methods ctx.files has, and the closest
    (a Python tool is told the same by its ctx)."""
    import difflib

    m = _NOT_A_FUNCTION.search(err.message)
    if m is None:
        return err
    path, wrong = m.groups()
    for cap in profile.present(grants):
        if cap.path == path and cap.kind in ("namespace", "dispatch"):
            names = cap.method_names()
            close = difflib.get_close_matches(wrong, names, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            return WorkbenchError(
                err.code,
                f"{err.message} — ctx.{path} has no method {wrong!r} (it has: {', '.join(names)}){hint}",
                **err.details,
            )
    return err
