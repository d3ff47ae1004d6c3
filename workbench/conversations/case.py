"""A replayed conversation kept as a test: `<gem>/tests/conversations/<name>.json`.

The case is the conversation normalized: its calls in order (the tool's name as the model saw
it, the arguments, the recorded result as content and is_error), the format it was read from,
the gem's id, and the open options a replay needs to see what this one saw (a frozen clock, a
seed, the state folder it started from: KEPT_OPTIONS; never a secret or a credential). It is
written atomically, never through a link (pins/case.py's write_case), and read back by
read_conversation like any transcript; `gem-workbench test GEM` and pytest collect it
(testing/convitems.py) and open its bench with `open_options`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import WorkbenchError
from .._version import __version__
from ..pins.case import case_path, write_case
from .read import CONVERSATION_BYTES, Conversation

if TYPE_CHECKING:
    from ..bench.bench import Bench

__all__ = ["CASE_FOLDER", "KEPT_OPTIONS", "case_of", "conversation_path", "open_options", "save_case"]

CASE_FOLDER = ("tests", "conversations")
#: The open() options a saved case keeps: what makes its calls see what they saw (the time, the
#: draws, the state they started from, the rules). Secrets, credentials and the files of mock
#: handlers are not kept (a case is committed).
KEPT_OPTIONS = (
    "clock",
    "seed",
    "state",
    "strict",
    "reuse",
    "timeout",
    "memory_mb",
    "conversation",
    "headless",
)


def conversation_path(root: Path, name: str) -> Path:
    """Where case `name` of the gem at `root` lives; UsageError for a name that is not a plain
    file name (the pinned calls' rule: letters, digits, '.', '_', '-')."""
    case_path(root, "conversation", name)  # (raises for a name a pin could not have)
    return root.joinpath(*CASE_FOLDER, f"{name}.json")


def _plain(name: str, value: Any, root: Path) -> Any:
    """An option's value as the case keeps it: a time as ISO text, a folder inside the gem
    relative to it (the case travels with the gem), else as given."""
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if name == "state" and value is not None:
        path = Path(value).expanduser().resolve()
        gem = root.resolve()
        return path.relative_to(gem).as_posix() if path.is_relative_to(gem) else str(path)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def case_of(
    conv: Conversation, bench: Bench, options: dict[str, Any], names: dict[str, str] | None = None
) -> dict[str, Any]:
    """The case of `conv` replayed on `bench`, opened with `options` (those of KEPT_OPTIONS),
    the model's `names` of the gem's tools mapped."""
    root = bench.manifest.root
    kept = {k: _plain(k, options[k], root) for k in KEPT_OPTIONS if options.get(k) is not None}
    return {
        "conversation": 1,
        "workbench": __version__,
        "gem": bench.manifest.id,
        "platform": bench.profile.name,
        "format": conv.format,
        "options": kept,
        **({"names": dict(sorted(names.items()))} if names else {}),
        "calls": [
            {
                "call_id": c.call_id,
                "tool": c.name,
                "arguments": c.arguments,
                "result": None
                if c.result is None
                else {"content": c.result.content, "is_error": c.result.is_error},
            }
            for c in conv.calls
        ],
    }


def save_case(path: Path, case: dict[str, Any]) -> Path:
    """Write `case` to `path` atomically; E_TOO_LARGE past CONVERSATION_BYTES (it could not be
    read back)."""
    text = json.dumps(case, indent=1, ensure_ascii=False) + "\n"
    if len(text.encode("utf-8", "surrogatepass")) > CONVERSATION_BYTES:
        raise WorkbenchError(
            "E_TOO_LARGE",
            f"the conversation's case would be over {CONVERSATION_BYTES:,} bytes: not saved",
            limit=CONVERSATION_BYTES,
        )
    return write_case(path, text)


def open_options(options: Any, root: Path | None) -> dict[str, Any]:
    """The open() options of a saved case's `options` (its KEPT_OPTIONS; a relative state
    folder is the gem's at `root`); E_CONVERSATION for an option a case does not keep."""
    if not isinstance(options, dict):
        raise WorkbenchError("E_CONVERSATION", "the case's options are not an object", field="options")
    extra = sorted(set(options) - set(KEPT_OPTIONS))
    if extra:
        raise WorkbenchError(
            "E_CONVERSATION",
            f"the case holds options a saved conversation does not keep: {', '.join(map(str, extra))[:200]}",
            field="options",
        )
    out = dict(options)
    state = out.get("state")
    if isinstance(state, str) and not Path(state).is_absolute() and root is not None:
        out["state"] = str(root / state)
    return out
