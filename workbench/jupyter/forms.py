"""Input forms generated from a tool's inputSchema (`bench.form("tool")`).

One widget per property: string → Text (Textarea for long text), number → FloatText, integer →
IntText (bounded by minimum/maximum), boolean → Checkbox, enum → Dropdown, array of scalars →
Textarea with one item per line (array of enum → SelectMultiple), object with properties → a
nested box; anything else → a Textarea of raw JSON. Required fields are starred.

An optional field left empty is left out of the input. Number and boolean widgets always hold
a value, so optional ones carry a "send" checkbox, ticked as soon as the value is changed. A
schema `default` is filled in (and so sent). An empty required array is sent as `[]`; an empty
required string is left out, so the schema check reports it missing.
Run checks the input against the schema first: problems are shown next to their fields and the
tool is not called. Otherwise the call goes through `bench.call` (so it lands in
`bench.calls()`) and its result is shown below the form.

For tests and scripts: `f.fields` (name → widget; a nested object's box has `.fields` too),
`f.collect()` (the input dict), `f.run_button.click()` or `f.run()`, `f.output`, `f.status`,
`f.problems` and `f.result`.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from .._errors import WorkbenchError
from ..gem.schema import pointer
from .display import esc, result_html

if TYPE_CHECKING:
    from .._bench import Bench
    from .._result import CallResult

_LONG_FORMATS = {"textarea", "markdown", "multiline", "html"}
_SCALARS = {"string", "number", "integer", "boolean"}
_MAX_SAFE = 2**53 - 1


def _label_layout() -> Any:
    return widgets.Layout(width="11em", min_width="11em")


def _wide() -> Any:
    return widgets.Layout(width="32em")


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()  # "not given": differs from None, which JSON can carry


def _type(schema: dict[str, Any]) -> str | None:
    """The one JSON type a schema asks for (`["string", "null"]` counts as "string")."""
    t = schema.get("type")
    if isinstance(t, list):
        types = [x for x in t if x != "null"]
        return types[0] if len(types) == 1 else None
    return t if isinstance(t, str) else None


class _Field:
    """One property: its input widget, its row in the form, and the value it contributes."""

    def __init__(self, name: str, schema: dict[str, Any], required: bool, path: str) -> None:
        self.name, self.schema, self.required, self.path = name, schema, required, path
        self.error = widgets.HTML(layout=widgets.Layout(margin="0 0 0 11.5em"))
        self.include: Any = None
        self.widget = self.make()
        if "default" in schema:
            self.prefill(schema["default"])

    def make(self) -> Any:
        raise NotImplementedError

    def prefill(self, value: Any) -> None:
        try:
            self.widget.value = value
        except Exception:  # a default the widget cannot hold: leave the field empty
            pass

    def get(self, problems: list[dict[str, str]]) -> Any:
        """The value for the input, or MISSING; unreadable text adds to `problems`."""
        raise NotImplementedError

    def label(self) -> Any:
        star = " <span style='color:#c62828' title='required'>*</span>" if self.required else ""
        return widgets.HTML(f"<b>{esc(self.name)}</b>{star}", layout=_label_layout())

    def row(self) -> Any:
        parts = [self.label(), self.widget]
        if self.include is not None:
            parts.append(self.include)
        desc = self.schema.get("description")
        if desc:
            parts.append(widgets.HTML(f"<span style='color:#888'>{esc(desc)}</span>"))
        return widgets.VBox([widgets.HBox(parts), self.error])

    def fields(self) -> list["_Field"]:
        return [self]

    def show(self, messages: list[str]) -> None:
        self.error.value = "".join(f"<div style='color:#c62828'>✗ {esc(m)}</div>" for m in messages)


class _Optional(_Field):
    """A widget that always holds a value: optional ones get a "send" box, ticked on change."""

    def __init__(self, name: str, schema: dict[str, Any], required: bool, path: str) -> None:
        super().__init__(name, schema, required, path)
        if not required:
            self.include = widgets.Checkbox(value="default" in schema, description="send",
                                            indent=False, layout=widgets.Layout(width="5em"),
                                            tooltip="send this optional field (ticked when "
                                                    "you change the value)")
            self.widget.observe(lambda _change: setattr(self.include, "value", True), "value")

    def get(self, problems: list[dict[str, str]]) -> Any:
        if self.include is not None and not self.include.value:
            return MISSING
        return self.widget.value


class _Text(_Field):
    def make(self) -> Any:
        s = self.schema
        long = (s.get("format") in _LONG_FORMATS or "contentMediaType" in s
                or (s.get("maxLength") or 0) > 200)
        hint = s.get("format") or ("" if self.required else "optional")
        return (widgets.Textarea if long else widgets.Text)(placeholder=str(hint), layout=_wide())

    def get(self, problems: list[dict[str, str]]) -> Any:
        return self.widget.value if self.widget.value != "" else MISSING


class _Number(_Optional):
    def make(self) -> Any:
        s, integer = self.schema, _type(self.schema) == "integer"
        lo = s.get("minimum", s.get("exclusiveMinimum"))
        hi = s.get("maximum", s.get("exclusiveMaximum"))
        if integer and "exclusiveMinimum" in s and "minimum" not in s and lo is not None:
            lo = int(lo) + 1
        if integer and "exclusiveMaximum" in s and "maximum" not in s and hi is not None:
            hi = int(hi) - 1
        if lo is None and hi is None:
            return (widgets.IntText if integer else widgets.FloatText)(layout=_wide())
        lo = -_MAX_SAFE if lo is None else lo
        hi = _MAX_SAFE if hi is None else hi
        start = min(max(0, lo), hi)
        if integer:
            return widgets.BoundedIntText(value=int(start), min=int(lo), max=int(hi), layout=_wide())
        return widgets.BoundedFloatText(value=float(start), min=float(lo), max=float(hi),
                                        layout=_wide())


class _Bool(_Optional):
    def make(self) -> Any:
        return widgets.Checkbox(value=False, indent=False, layout=widgets.Layout(width="3em"))


class _Enum(_Field):
    def make(self) -> Any:
        choices = self.schema["enum"] if "enum" in self.schema else [self.schema["const"]]
        options = [("—", MISSING)] + [(c if isinstance(c, str) else json.dumps(c), c)
                                      for c in choices]
        return widgets.Dropdown(options=options, value=MISSING, layout=_wide())

    def get(self, problems: list[dict[str, str]]) -> Any:
        return self.widget.value


class _Lines(_Field):
    """An array of scalars, one item per line."""

    def make(self) -> Any:
        kind = _type(self.schema.get("items") or {}) or "string"
        return widgets.Textarea(placeholder=f"one {kind} per line", layout=_wide())

    def get(self, problems: list[dict[str, str]]) -> Any:
        kind = _type(self.schema.get("items") or {}) or "string"
        lines = [ln.strip() for ln in self.widget.value.splitlines() if ln.strip()]
        if not lines:
            return [] if self.required else MISSING
        items: list[Any] = []
        for i, text in enumerate(lines):
            if kind == "string":
                items.append(text)
                continue
            try:
                item = json.loads(text)
            except ValueError:
                item = MISSING
            ok = {"integer": isinstance(item, int) and not isinstance(item, bool),
                  "number": isinstance(item, (int, float)) and not isinstance(item, bool),
                  "boolean": isinstance(item, bool)}[kind]
            if not ok:
                problems.append({"path": f"{self.path}/{i}",
                                 "message": f"line {i + 1}: {text!r} is not a {kind}"})
            items.append(item)
        return items


class _Choices(_Field):
    """An array of enum values: pick several."""

    def make(self) -> Any:
        choices = self.schema["items"]["enum"]
        return widgets.SelectMultiple(options=[(c if isinstance(c, str) else json.dumps(c), c)
                                               for c in choices], layout=_wide())

    def get(self, problems: list[dict[str, str]]) -> Any:
        value = list(self.widget.value)
        return value if value or self.required else MISSING


class _Json(_Field):
    """Anything the form cannot draw: the value typed as raw JSON."""

    def make(self) -> Any:
        shape = json.dumps({k: v for k, v in self.schema.items() if k != "description"})
        hint = f"JSON: {shape[:120]}{'…' if len(shape) > 120 else ''}"
        return widgets.Textarea(placeholder=hint, layout=_wide())

    def prefill(self, value: Any) -> None:
        self.widget.value = json.dumps(value, ensure_ascii=False)

    def get(self, problems: list[dict[str, str]]) -> Any:
        text = self.widget.value
        if not text.strip():
            return MISSING
        try:
            return json.loads(text)
        except ValueError as exc:
            problems.append({"path": self.path or "/", "message": f"not valid JSON: {exc}"})
            return MISSING


class ObjectBox(widgets.VBox):
    """The box of a nested object; `.fields` maps its property names to their widgets."""

    fields: dict[str, Any]


class _Object(_Field):
    """An object with declared properties: one field each, in a nested box."""

    def make(self) -> Any:
        required = set(self.schema.get("required") or ())
        self.children = [field_for(name, sub if isinstance(sub, dict) else {}, name in required,
                                   self.path + pointer([name]))
                         for name, sub in self.schema["properties"].items()]
        box = ObjectBox([c.row() for c in self.children],
                        layout=widgets.Layout(border="1px solid #ccc", padding="4px"))
        box.fields = {c.name: c.widget for c in self.children}
        return box

    def prefill(self, value: Any) -> None:
        if isinstance(value, dict):
            for c in self.children:
                if c.name in value:
                    c.prefill(value[c.name])

    def get(self, problems: list[dict[str, str]]) -> Any:
        out = {}
        for c in self.children:
            value = c.get(problems)
            if value is not MISSING:
                out[c.name] = value
        return out if out or self.required else MISSING

    def row(self) -> Any:
        return widgets.VBox([self.label(), self.widget, self.error])

    def fields(self) -> list[_Field]:
        return [self] + [f for c in self.children for f in c.fields()]


def field_for(name: str, schema: dict[str, Any], required: bool, path: str) -> _Field:
    """The field kind that can draw `schema`."""
    t = _type(schema)
    if "enum" in schema or "const" in schema:
        return _Enum(name, schema, required, path)
    if t == "string":
        return _Text(name, schema, required, path)
    if t in ("number", "integer"):
        return _Number(name, schema, required, path)
    if t == "boolean":
        return _Bool(name, schema, required, path)
    items = schema.get("items")
    if t == "array" and isinstance(items, dict):
        if isinstance(items.get("enum"), list):
            return _Choices(name, schema, required, path)
        if _type(items) in _SCALARS:
            return _Lines(name, schema, required, path)
    if t in ("object", None) and isinstance(schema.get("properties"), dict) and schema["properties"]:
        return _Object(name, schema, required, path)
    return _Json(name, schema, required, path)


class ToolForm(widgets.VBox):
    """A form for one tool: fields, a Run button, a status line and the result below."""

    def __init__(self, bench: "Bench", tool: str) -> None:
        spec = bench.manifest.tools[tool]
        self.bench, self.tool = bench, tool
        schema = spec.input_schema
        if isinstance(schema.get("properties"), dict) and schema["properties"]:
            self._root: _Field = _Object("", schema, True, "")
            rows = [c.row() for c in self._root.children] + [self._root.error]
            self.fields: dict[str, Any] = dict(self._root.widget.fields)
            self.raw: Any = None
        else:  # no declared properties: the whole input as JSON
            self._root = _Json("input", schema, False, "")
            rows = [self._root.row()]
            self.fields, self.raw = {}, self._root.widget
        self._by_path = {f.path: f for f in self._root.fields() if f.path}
        self.run_button = widgets.Button(description=f"Run {tool}", button_style="primary",
                                         icon="play")
        self.status = widgets.HTML()
        self.output = widgets.Output()
        self.problems: list[dict[str, str]] = []
        self.result: "CallResult | None" = None
        self._validator: Any = None
        self.run_button.on_click(lambda _button: self.run())
        title = widgets.HTML(f"<b>{esc(tool)}</b> <span style='color:#888'>"
                             f"{esc(spec.description)}</span>")
        super().__init__([title, *rows, widgets.HBox([self.run_button, self.status]),
                          self.output])

    def collect(self) -> Any:
        """The input the form gives now; raises E_SCHEMA if a field's text cannot be read."""
        problems: list[dict[str, str]] = []
        value = self._root.get(problems)
        if problems:
            listed = "; ".join(f"{p['path']}: {p['message']}" for p in problems)
            raise WorkbenchError("E_SCHEMA", f"the form for '{self.tool}' cannot be read: {listed}",
                                 field=problems[0]["path"], violations=problems)
        return {} if value is MISSING else value

    def check(self) -> list[dict[str, str]]:
        """Problems with the current input: unreadable fields, then the schema's violations."""
        try:
            args = self.collect()
        except WorkbenchError as exc:
            return list(exc.details["violations"])
        if self._validator is None:
            from ..gem.schema import InputValidator

            self._validator = InputValidator(self.bench.manifest.tools[self.tool].input_schema)
        return self._validator.violations(self._validator.normalise(args))

    def run(self) -> "CallResult | None":
        """Check the input; if it is fine, call the tool and show the result below the form."""
        for f in self._by_path.values():
            f.show([])
        self._root.show([])
        try:
            self.problems = self.check()
            if self.problems:
                self._show_problems()
                return None
            self.run_button.disabled = True
            try:
                res = self.bench.call(self.tool, self.collect())
            finally:
                self.run_button.disabled = False
        except Exception as exc:  # a click handler's exception would only reach the kernel log
            self._show_failure(exc)
            return None
        self.result = res
        badge = "✓ ok" if res.ok else f"✗ {res.error.code if res.error else 'failed'}"
        self.status.value = (f"<span style='color:{'#2e7d32' if res.ok else '#c62828'}'>"
                             f"{esc(badge)}</span> <span style='color:#888'>"
                             f"{res.duration_ms:,.1f} ms</span>")
        self.output.outputs = ({"output_type": "display_data", "metadata": {},
                                "data": {"text/plain": repr(res), "text/html": result_html(res)}},)
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
        self.status.value = (f"<span style='color:#c62828'>✗ {n} problem{'' if n == 1 else 's'}"
                             f" in the input: not run</span>")


def form(bench: "Bench", tool: str) -> ToolForm:
    """An ipywidgets form for `tool`, generated from its inputSchema (see the module doc)."""
    if tool not in bench.manifest.tools:
        raise WorkbenchError("E_UNKNOWN_TOOL", f"no tool {tool!r} in gem {bench.manifest.id} "
                             f"(tools: {', '.join(bench.manifest.tools) or 'none'})", tool=tool)
    return ToolForm(bench, tool)
