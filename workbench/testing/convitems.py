"""Saved conversations as pytest items: `<gem>/tests/conversations/<name>.json`, one item each.

Collected by the pinned calls' rule (`--nb`, a path named on the command line, ini
`nb_paths`); each opens a fresh mock bench of its gem with the case's options (a frozen clock,
a seed, a state folder: conversations/case.py) in a temporary folder, replays the calls in
order and fails with the calls that differ and their value lines."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

CASE_FOLDER = ("tests", "conversations")  # (conversations.case's, not imported at collection)


def is_conversation_file(path: Path) -> bool:
    """Whether `path` is where a saved conversation lives: <gem>/tests/conversations/<name>.json."""
    parts = path.parts
    return path.suffix == ".json" and len(parts) >= 4 and parts[-3:-1] == CASE_FOLDER


def replay_saved(path: Path) -> Any:
    """Replay the saved conversation at `path` on a fresh mock bench of its gem (the folder
    above tests/); its ConversationReplay."""
    from ..bench.open import open as open_bench
    from ..bench.options import gem_options
    from ..conversations.case import open_options
    from ..conversations.read import read_conversation

    path = Path(path)
    root = path.absolute().parents[2]
    conv = read_conversation(path)
    options = {"providers": "mock", "pins": False, **open_options(conv.options, root)}
    known = gem_options(root)
    with tempfile.TemporaryDirectory(prefix="gw-conversation-") as tmp:
        if "headless" in known:  # a platform with ctx.files: its trash is no desktop's
            options.setdefault("headless", True)
        with open_bench(root, state_dir=Path(tmp) / "state", **options) as bench:
            return bench.replay_conversation(conv)


class ConversationFile(pytest.File):
    """A saved conversation: one item."""

    def collect(self) -> Any:
        yield ConversationItem.from_parent(self, name=f"conversations/{self.path.stem}")


class ConversationFailure(Exception):
    """A saved conversation replayed otherwise (or could not be read)."""


class ConversationItem(pytest.Item):
    """Replays one saved conversation and compares each call's result with the recorded one."""

    def runtest(self) -> None:
        from .._errors import WorkbenchError

        try:
            out = replay_saved(self.path)
        except WorkbenchError as exc:
            raise ConversationFailure(f"{self.path}: {exc.code}: {exc.message}") from None
        if not out.ok:
            raise ConversationFailure(out.report())

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | Any:
        if isinstance(excinfo.value, ConversationFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, 0, f"saved conversation {self.name}"
