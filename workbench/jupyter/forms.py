"""Input forms generated from a tool's inputSchema (`bench.form("tool")`).

One field per inputSchema property, drawn by `workbench.jupyter.fields` (which widget for
which JSON type, and what an empty or optional field sends).

Run checks the input against the schema first: problems are shown next to their fields and the
tool is not called. Otherwise the call goes through `bench.call` (so it lands in
`bench.calls()`) and its result is shown below the form.

For tests and scripts: `f.fields` (name → widget; a nested object's box has `.fields` too),
`f.collect()` (the input dict), `f.run_button.click()` or `f.run()`, `f.output`, `f.status`,
`f.problems` and `f.result`; `f.pin_control` (pin.py), shown once a call ran, pins the result.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from .._errors import WorkbenchError
from .display import esc, result_html
from .fields import MISSING, Field, JsonField, ObjectField
from .pin import PinControl

if TYPE_CHECKING:
    from ..bench.bench import Bench
    from ..bench.result import CallResult


class ToolForm(widgets.VBox):
    """A form for one tool: fields, a Run button, a status line and the result below."""

    def __init__(self, bench: Bench, tool: str) -> None:
        spec = bench.manifest.tool(tool)
        assert spec is not None  # form() checked the name
        self.bench, self.tool = bench, spec.name
        schema = spec.input_schema
        if isinstance(schema.get("properties"), dict) and schema["properties"]:
            self._root: Field = ObjectField("", schema, True, "")
            rows = [c.row() for c in self._root.children] + [self._root.error]
            self.fields: dict[str, Any] = dict(self._root.widget.fields)
            self.raw: Any = None
        else:  # no declared properties: the whole input as JSON
            self._root = JsonField("input", schema, False, "")
            rows = [self._root.row()]
            self.fields, self.raw = {}, self._root.widget
        self._by_path = {f.path: f for f in self._root.fields() if f.path}
        # width "auto": ipywidgets' default button width cut the name ("Run csv_summ…")
        self.run_button = widgets.Button(
            description=f"Run {tool}",
            tooltip=f"call {tool} with this input",
            button_style="primary",
            icon="play",
            layout=widgets.Layout(width="auto", min_width="max-content"),
        )
        self.status = widgets.HTML()
        self.output = widgets.Output()
        self.problems: list[dict[str, str]] = []
        self.result: CallResult | None = None
        self._validator: Any = None
        self.run_button.on_click(lambda _button: self.run())
        self.pin_control = PinControl()  # hidden until there is a result to pin
        self.pin_control.layout.display = "none"
        title = widgets.HTML(f"<b>{esc(tool)}</b> <span style='color:#888'>{esc(spec.description)}</span>")
        super().__init__(
            [title, *rows, widgets.HBox([self.run_button, self.status]), self.pin_control, self.output]
        )

    def collect(self) -> Any:
        """The input the form gives now; raises E_SCHEMA if a field's text cannot be read."""
        problems: list[dict[str, str]] = []
        value = self._root.get(problems)
        if problems:
            listed = "; ".join(f"{p['path']}: {p['message']}" for p in problems)
            raise WorkbenchError(
                "E_SCHEMA",
                f"the form for '{self.tool}' cannot be read: {listed}",
                field=problems[0]["path"],
                violations=problems,
            )
        return {} if value is MISSING else value

    def check(self) -> list[dict[str, str]]:
        """Problems with the current input: unreadable fields, then the schema's violations."""
        try:
            args = self.collect()
        except WorkbenchError as exc:
            return list(exc.details["violations"])
        if self._validator is None:
            from ..gem.schema import InputValidator

            schema = self.bench.manifest.tools[self.tool].input_schema
            self._validator = InputValidator(schema, self.bench.profile.schema_rules)
        return self._validator.violations(self._validator.normalise(args))

    def run(self) -> CallResult | None:
        """Call the tool with the form's input and show the result below the form; fields the
        schema refuses are marked (the call's E_SCHEMA says the same). Not run only when a
        field's text cannot be read at all (raw JSON that does not parse)."""
        if self.bench.closed:  # say so plainly, not as the call's E_USAGE
            self.run_button.disabled = True
            self.status.value = (
                f"<span style='color:#c62828'>error E_USAGE: the bench of "
                f"{esc(self.bench.manifest.id)} is closed — by a bench.close() run after the form "
                "was made: run the cell that made it again</span>"
            )
            return None
        for f in self._by_path.values():
            f.show([])
        self._root.show([])
        try:
            try:
                args = self.collect()
            except WorkbenchError as exc:  # a field's text cannot be read: there is no input
                self.problems = list(exc.details["violations"])
                self._show_problems()
                return None
            # a value the schema refuses is still sent, as typed: the result is the platform's
            # own E_SCHEMA, and the fields it names are marked here too
            self.problems = self.check()
            if self.problems:
                self._show_problems()
            self.run_button.disabled = True
            try:
                res = self.bench.call(self.tool, args)
            finally:
                self.run_button.disabled = False
        except Exception as exc:  # a click handler's exception would only reach the kernel log
            self._show_failure(exc)
            return None
        self.result = res
        self.pin_control.show(res)
        self.pin_control.layout.display = None
        badge = "✓ ok" if res.ok else f"✗ {res.error.code if res.error else 'failed'}"
        self.status.value = (
            f"<span style='color:{'#2e7d32' if res.ok else '#c62828'}'>"
            f"{esc(badge)}</span> <span style='color:#888'>"
            f"{res.duration_ms:,.1f} ms</span>"
        )
        self.output.outputs = (
            {
                "output_type": "display_data",
                "metadata": {},
                "data": {"text/plain": repr(res), "text/html": result_html(res)},
            },
        )
        return res

    def _show_failure(self, exc: Exception) -> None:
        if isinstance(exc, WorkbenchError):
            line = str(exc)
        else:  # a bug of ours: %tb and %debug find it
            sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, exc.__traceback__
            line = f"E_INTERNAL: {type(exc).__name__}: {exc}"
        self.status.value = f"<span style='color:#c62828'>error {esc(line)}</span>"

    def _show_problems(self) -> None:
        by_field: dict[str, list[str]] = {}
        general: list[str] = []
        for p in self.problems:
            path = p["path"]
            while path and path not in self._by_path:
                path = path.rsplit("/", 1)[0]
            if path:
                by_field.setdefault(path, []).append(p["message"])
            else:
                general.append(p["message"])
        for path, messages in by_field.items():
            self._by_path[path].show(messages)
        self._root.show(general)
        n = len(self.problems)
        self.status.value = (
            f"<span style='color:#c62828'>✗ {n} problem{'' if n == 1 else 's'} in the input: not run</span>"
        )


def form(bench: Bench, tool: str) -> ToolForm:
    """An ipywidgets form for `tool`, generated from its inputSchema (see the module doc)."""
    if bench.manifest.tool(tool) is None:
        raise WorkbenchError(
            "E_UNKNOWN_TOOL",
            bench.manifest.no_tool(tool),
            tool=tool,
        )
    return ToolForm(bench, tool)
