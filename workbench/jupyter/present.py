"""The presentation backend of the Face: `PRESENTERS`, looked up by `workbench._present`.

The Face (Bench, CallResult, bench.email) asks for these by name, so it never imports this
package. The HTML views are plain string building and are imported here directly; the widget
modules import ipywidgets and pandas, so they are imported only when a widget is drawn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .display import bench_html, result_html, result_text
from .display_agent import outbox_html

if TYPE_CHECKING:
    from ..bench.bench import Bench
    from ..bench.result import CallResult
    from .forms import ToolForm
    from .pin import PinControl
    from .replay import ReplayView


def form(bench: Bench, tool: str) -> ToolForm:
    """`bench.form(tool)`: see `workbench.jupyter.forms.form`."""
    from .forms import form as draw

    return draw(bench, tool)


def replay(
    bench: Bench, tool: str, *, cursor_key: str = "cursor", input: Any = None, events: bool = False
) -> ReplayView:
    """`bench.email.replay(tool)`: see `workbench.jupyter.replay.replay`."""
    from .replay import replay as draw

    return draw(bench, tool, cursor_key=cursor_key, input=input, events=events)


def pin_button(result: CallResult, name: str = "") -> PinControl:
    """`res.pin_button()`: see `workbench.jupyter.pin`."""
    from .pin import pin_button as draw

    return draw(result, name)


#: name → function, for `workbench._present.presenter(name)`
PRESENTERS: dict[str, Callable[..., Any]] = {
    "bench_html": bench_html,
    "result_html": result_html,
    "result_text": result_text,
    "form": form,
    "replay": replay,
    "pin_button": pin_button,
    "outbox_html": outbox_html,
}
