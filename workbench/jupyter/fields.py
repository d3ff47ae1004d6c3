"""The fields of a tool's input form, one per inputSchema property (`ToolForm`).

One widget per property: string → Text (Textarea for long text), number and integer →
FloatText (never clamped to minimum/maximum nor rounded: the bounds are shown beside it, and a
value outside them, or 2.5 for an integer, is sent as typed so the platform's own E_SCHEMA
names it), boolean → Checkbox, enum → Dropdown, array of scalars →
Textarea with one item per line (array of enum → SelectMultiple), object with properties → a
nested box; anything else → a Textarea of raw JSON. Required fields are starred.

An optional field left empty is left out of the input. Number and boolean widgets always hold
a value, so optional ones carry a "send" checkbox, ticked as soon as the value is changed. A
schema `default` is filled in (and so sent). An empty required array is sent as `[]`; an empty
required string is left out, so the schema check reports it missing.
"""

from __future__ import annotations

import json
from typing import Any

import ipywidgets as widgets

from ..gem.schema import pointer
from .display import esc

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


class Field:
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

    def fields(self) -> list[Field]:
        return [self]

    def show(self, messages: list[str]) -> None:
        self.error.value = "".join(f"<div style='color:#c62828'>✗ {esc(m)}</div>" for m in messages)


class _Optional(Field):
    """A widget that always holds a value: optional ones get a "send" box, ticked on change."""

    def __init__(self, name: str, schema: dict[str, Any], required: bool, path: str) -> None:
        super().__init__(name, schema, required, path)
        if not required:
            self.include = widgets.Checkbox(
                value="default" in schema,
                description="send",
                indent=False,
                layout=widgets.Layout(width="5em"),
                tooltip="send this optional field (ticked when you change the value)",
            )
            self.widget.observe(lambda _change: setattr(self.include, "value", True), "value")

    def get(self, problems: list[dict[str, str]]) -> Any:
        if self.include is not None and not self.include.value:
            return MISSING
        return self.widget.value


class _Text(Field):
    def make(self) -> Any:
        s = self.schema
        long = s.get("format") in _LONG_FORMATS or "contentMediaType" in s or (s.get("maxLength") or 0) > 200
        hint = s.get("format") or ("" if self.required else "optional")
        return (widgets.Textarea if long else widgets.Text)(placeholder=str(hint), layout=_wide())

    def get(self, problems: list[dict[str, str]]) -> Any:
        return self.widget.value if self.widget.value != "" else MISSING


class _Number(_Optional):
    def make(self) -> Any:
        # FloatText: an IntText would round 2.5, a Bounded one clamp 10 to its maximum; either
        # would hide the value the platform checks. The bounds are said, not enforced here.
        s, integer = self.schema, _type(self.schema) == "integer"
        bounds = [
            f"{word} {s[key]}"
            for key, word in (
                ("minimum", "≥"),
                ("exclusiveMinimum", ">"),
                ("maximum", "≤"),
                ("exclusiveMaximum", "<"),
            )
            if isinstance(s.get(key), (int, float)) and not isinstance(s.get(key), bool)
        ]
        hint = ", ".join(["integer" if integer else "number", *bounds])
        lo, hi = s.get("minimum"), s.get("maximum")  # where it starts (inside the bounds), only
        start = (
            lo
            if isinstance(lo, (int, float)) and lo > 0
            else hi
            if isinstance(hi, (int, float)) and hi < 0
            else 0
        )
        return widgets.FloatText(value=float(start), layout=_wide(), tooltip=hint)

    def get(self, problems: list[dict[str, str]]) -> Any:
        value = super().get(problems)
        if isinstance(value, float) and value.is_integer() and _type(self.schema) == "integer":
            return int(value)  # a whole number typed into an integer field is that integer
        return value

    def row(self) -> Any:
        box = super().row()
        hint = self.widget.tooltip
        box.children[0].children = (
            *box.children[0].children,
            widgets.HTML(f"<span style='color:#888'>{esc(hint)}</span>"),
        )
        return box


class _Bool(_Optional):
    def make(self) -> Any:
        return widgets.Checkbox(value=False, indent=False, layout=widgets.Layout(width="3em"))


class _Enum(Field):
    def make(self) -> Any:
        choices = self.schema["enum"] if "enum" in self.schema else [self.schema["const"]]
        options = [("—", MISSING)] + [(c if isinstance(c, str) else json.dumps(c), c) for c in choices]
        return widgets.Dropdown(options=options, value=MISSING, layout=_wide())

    def get(self, problems: list[dict[str, str]]) -> Any:
        return self.widget.value


class _Lines(Field):
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
            ok = {
                "integer": isinstance(item, int) and not isinstance(item, bool),
                "number": isinstance(item, (int, float)) and not isinstance(item, bool),
                "boolean": isinstance(item, bool),
            }[kind]
            if not ok:
                problems.append(
                    {"path": f"{self.path}/{i}", "message": f"line {i + 1}: {text!r} is not a {kind}"}
                )
            items.append(item)
        return items


class _Choices(Field):
    """An array of enum values: pick several."""

    def make(self) -> Any:
        choices = self.schema["items"]["enum"]
        return widgets.SelectMultiple(
            options=[(c if isinstance(c, str) else json.dumps(c), c) for c in choices], layout=_wide()
        )

    def get(self, problems: list[dict[str, str]]) -> Any:
        value = list(self.widget.value)
        return value if value or self.required else MISSING


class JsonField(Field):
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


class ObjectField(Field):
    """An object with declared properties: one field each, in a nested box."""

    def make(self) -> Any:
        required = set(self.schema.get("required") or ())
        self.children = [
            field_for(
                name, sub if isinstance(sub, dict) else {}, name in required, self.path + pointer([name])
            )
            for name, sub in self.schema["properties"].items()
        ]
        box = ObjectBox(
            [c.row() for c in self.children], layout=widgets.Layout(border="1px solid #ccc", padding="4px")
        )
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

    def fields(self) -> list[Field]:
        return [self] + [f for c in self.children for f in c.fields()]


def field_for(name: str, schema: dict[str, Any], required: bool, path: str) -> Field:
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
        return ObjectField(name, schema, required, path)
    return JsonField(name, schema, required, path)
