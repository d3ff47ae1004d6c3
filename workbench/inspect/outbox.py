"""`bench.outbox()`'s frame: a DataFrame whose notebook display keeps the mail bodies' line
breaks (pandas' own HTML writes a newline as a literal `\\n` and cuts the cell at 50
characters)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .._present import presenter


class OutboxFrame(pd.DataFrame):
    """A DataFrame in every way; only its `_repr_html_` differs (`workbench.jupyter`'s
    "outbox_html"). Selecting columns or rows keeps the class, so `out[["to", "body_text"]]`
    shows line breaks too."""

    @property
    def _constructor(self) -> Any:
        return OutboxFrame

    def _repr_html_(self) -> str | None:
        return str(presenter("outbox_html")(self))
