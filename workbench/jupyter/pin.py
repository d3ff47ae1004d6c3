"""The pin control: a case name, a **pin** button, and a line saying where the case went.

Shown by `res.pin_button()` and under a form's result (forms.py), never by a result's own
display: that stays plain HTML, so saved notebooks, nbconvert and notebook tests see the same
outputs as before, and a notebook of many calls makes no widgets it did not ask for.

For tests and scripts: `c.name` (the Text), `c.button.click()` or `c.pin()`, `c.status`
(the line, HTML), `c.path` (the case written last, or None) and `c.result` (the call it pins).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import ipywidgets as widgets

from .._errors import WorkbenchError
from ._html import esc
from .pinflag import shown_path

if TYPE_CHECKING:
    from ..bench.result import CallResult

_RED, _GREEN = "#c62828", "#2e7d32"


class PinControl(widgets.HBox):
    """Pin one call (`res.pin(name)`) from the notebook, and show the path or the error."""

    def __init__(self, result: CallResult | None = None, *, name: str = "") -> None:
        self.result = result
        self.path: Path | None = None
        self.name = widgets.Text(
            value=name,
            placeholder="case name, e.g. first",
            layout=widgets.Layout(width="14em", flex="0 0 auto"),
        )
        self.button = widgets.Button(
            description="pin",
            icon="thumb-tack",
            tooltip="save this call as a regression case: tests/calls/<tool>/<name>.json of the gem",
            # never shrunk: a long error beside it would squeeze its label to "📌 …"
            layout=widgets.Layout(width="auto", flex="0 0 auto"),
        )
        # the line takes the room left and wraps (min-width 0: a flex item may be narrower
        # than its text)
        self.status = widgets.HTML(layout=widgets.Layout(flex="1 1 auto", min_width="0"))
        self.button.on_click(lambda _button: self.pin())
        super().__init__(
            [self.name, self.button, self.status], layout=widgets.Layout(align_items="flex-start")
        )

    def show(self, result: CallResult) -> None:
        """Pin `result` from now on (a form's next run); the name typed is kept."""
        self.result, self.path = result, None
        self.status.value = ""

    def pin(self) -> Path | None:
        """Pin the call under the name typed; the path, or None with the reason on the line."""
        name = self.name.value.strip()
        if self.result is None:
            problem = "error E_USAGE: no call to pin yet"
        elif not name:
            problem = "type a name for the case first (letters, digits, '.', '_', '-')"
        else:
            try:
                self.path = Path(self.result.pin(name))
            except WorkbenchError as exc:
                problem = f"error {exc}"
            except Exception as exc:  # a click handler's exception would only reach the kernel log
                sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, exc.__traceback__
                problem = f"error E_INTERNAL: {type(exc).__name__}: {exc}"
            else:
                self._say(f"pinned: {shown_path(self.path)}", _GREEN)
                return self.path
        self._say(problem, _RED)
        return None

    def _say(self, text: str, colour: str) -> None:
        self.status.value = f"<span style='color:{colour}'>{esc(text)}</span>"


def pin_button(result: CallResult, name: str = "") -> PinControl:
    """`res.pin_button()`: a pin control for `result` (see the module doc)."""
    return PinControl(result, name=name)
