"""Ctx breakpoints: `break_at` names read against the platform's own ctx table.

A tool sees `ctx.files.write`, `ctx.fetch` (Ekanos) or `ctx.tools.send_email` (agents); the ctx
layer, and so a `CallHooks`, sees the method as "files.write", "fetch", "tools.send_email". The
names come from the profile's routes (the table the Python and JS ctx are generated from) and
its dispatch rows (`ctx.tools.<name>`: the built-ins and the gem's own tools), so a breakpoint
can only name what a tool of this platform can call. Both spellings are taken, with or without
`ctx.`; `"ctx"` / `"ctx.*"` is every ctx call, `"ctx.files.*"` every method under `files`.
Anything of the form `path:line` is a source-line breakpoint, for the V8 backend (session.py).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._errors import UsageError

if TYPE_CHECKING:
    from ..gem import Manifest
    from ..platforms import Profile

__all__ = ["Breakpoints", "SourceLine", "ctx_methods", "parse_break_at"]

MAX_BREAKPOINTS = 200  # more than any tool has ctx methods or lines worth stopping at
MAX_NAME = 300  # characters of one name
_SOURCE = re.compile(r"^(?P<file>[^:\s][^:]*\.(?:ts|tsx|js|mjs|mts|py)):(?P<line>[1-9][0-9]{0,6})$")


@dataclass(frozen=True)
class SourceLine:
    """A source-line breakpoint ("tools/t.ts:12"): set by the V8 backend (stage 1)."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Breakpoints:
    """What a debugged call stops at: ctx methods as the ctx layer names them, method prefixes
    (`"files."`), every ctx call (`every`), and source lines (for the V8 backend)."""

    methods: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()
    every: bool = False
    lines: tuple[SourceLine, ...] = ()
    names: tuple[str, ...] = field(default=(), compare=False)  # as given, for the views

    def stops_at(self, method: str) -> bool:
        """Whether a ctx call of `method` ("files.write") pauses the call."""
        return self.every or method in self.methods or method.startswith(self.prefixes)


def ctx_methods(profile: Profile, manifest: Manifest) -> dict[str, str]:
    """{"ctx.files.write": "files.write", …}: every ctx method a tool of `profile` can call,
    as the tool writes it and as the ctx layer names it (`ctx.tools.<name>` for the built-ins
    and the gem's own tools on a platform with a dispatch row)."""
    names = {f"ctx.{m}": m for m in profile.routes}
    for prefix, impl in profile.dispatch.items():
        callable_names: set[str] = set(manifest.tools)
        if impl == "tools":
            from ..ctx.tools_schemas import SCHEMAS

            callable_names |= set(SCHEMAS)
        names.update({f"ctx.{prefix}.{n}": f"{prefix}.{n}" for n in sorted(callable_names)})
    return names


def parse_break_at(break_at: Any, profile: Profile, manifest: Manifest) -> Breakpoints:
    """`break_at` (a name or a list of names) as Breakpoints; E_USAGE naming the entry that is
    not a name, too long, or unknown (with the nearest names of this platform)."""
    given = [break_at] if isinstance(break_at, str) else break_at
    if not isinstance(given, Iterable) or isinstance(given, (bytes, dict)):
        raise UsageError(
            f"break_at={_short(break_at)}: give a name or a list of names "
            '("ctx.files.read", "ctx.*", "tools/t.ts:12")',
            field="break_at",
        )
    entries = list(_bounded(given))
    table = ctx_methods(profile, manifest)
    methods: set[str] = set()
    prefixes: list[str] = []
    lines: list[SourceLine] = []
    every = False
    for i, name in enumerate(entries):
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
            raise UsageError(
                f"break_at[{i}]={_short(name)}: a breakpoint is a name of up to {MAX_NAME} characters",
                field=f"break_at[{i}]",
                limit=MAX_NAME,
            )
        name = name.strip()
        source = _SOURCE.match(name)
        if source is not None:
            lines.append(SourceLine(source["file"], int(source["line"])))
        elif name in ("ctx", "ctx.*", "*"):
            every = True
        elif name.endswith(".*") or _full(name) in _namespaces(table):
            prefix = _full(name.removesuffix(".*"))
            if prefix not in _namespaces(table):
                raise _unknown(i, name, table)
            prefixes.append(prefix.removeprefix("ctx.") + ".")
        elif _full(name) in table:
            methods.add(table[_full(name)])
        else:
            raise _unknown(i, name, table)
    return Breakpoints(frozenset(methods), tuple(prefixes), every, tuple(lines), tuple(map(str, entries)))


def _full(name: str) -> str:
    return name if name == "ctx" or name.startswith("ctx.") else f"ctx.{name}"


def _namespaces(table: dict[str, str]) -> set[str]:
    """ "ctx.files", "ctx.storage", "ctx.storage.kv", …: what holds more than one name."""
    out: set[str] = set()
    for name in table:
        parts = name.split(".")
        out.update(".".join(parts[:k]) for k in range(2, len(parts)))
    return out


def _bounded(given: Iterable[Any]) -> Iterable[Any]:
    for i, name in enumerate(given):
        if i >= MAX_BREAKPOINTS:
            raise UsageError(
                f"break_at: more than {MAX_BREAKPOINTS} breakpoints", field="break_at", limit=MAX_BREAKPOINTS
            )
        yield name


def _unknown(i: int, name: str, table: dict[str, str]) -> UsageError:
    choices = sorted({*table, *(f"{n}.*" for n in _namespaces(table))})
    near = difflib.get_close_matches(_full(name), choices, n=5, cutoff=0.5)
    hint = (
        f"; nearest: {', '.join(near)}"
        if near
        else f"; this platform's ctx has: {', '.join(sorted(table)[:40])}"
    )
    return UsageError(
        f"break_at[{i}]={_short(name)}: no ctx method of that name on this platform{hint}"
        ' (or "ctx.*" for every ctx call, "file.ts:LINE" for a source line)',
        field=f"break_at[{i}]",
        nearest=near,
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "…"
