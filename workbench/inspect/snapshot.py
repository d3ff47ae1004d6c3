"""Snapshots of a bench's state as a bench shows them: every part its capabilities declare
(ctx/state.py), a diff as a DataFrame."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ctx.state import Snapshot, changes, restore, take

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DIFF_COLUMNS", "Snapshot", "diff", "frame", "restore", "take"]

DIFF_COLUMNS = ["kind", "where", "key", "change", "before", "after"]


def frame(rows: Any) -> pd.DataFrame:
    """Change rows as a DataFrame of DIFF_COLUMNS."""
    import pandas as pd

    # object columns: sizes, documents, values and rows share them; no int -> float/NaN casts
    return pd.DataFrame([tuple(r) for r in rows], columns=DIFF_COLUMNS, dtype=object)


def diff(bench: Any, snap: Snapshot) -> pd.DataFrame:
    """What changed since `snap`, one row per file, key, document, row, mail, …"""
    return frame((c.kind, c.where, c.key, c.change, c.before, c.after) for c in changes(bench, snap))
