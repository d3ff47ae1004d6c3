"""A plugin's rows checked against what implements them, at load (pluggy's `_verify_hook`):
every ctx method a platform's capability row names exists on its capability's class and takes
the row's parameters, and every function a profile or a capability spec hands the workbench
takes the arguments the workbench passes it. Each problem names the place as
`platform.row.method(param)` (or `capability.field(param)`); a plugin with any is skipped
(workbench/_plugins.py). The built-ins pass the same check (tests/test_platforms.py).

The rule for a method row, pluggy's turned to how ctx methods are called: JS tools pass the
row's parameters by position, Python tools by position or name. So every parameter the
implementation requires is one the row declares, at the same place (pluggy: every argument a
hookimpl names is in the hookspec); a positional-only one may be named as the implementation
likes (no caller names it); and the implementation takes as many positional arguments as the
row declares (a JS call passes them all).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..platforms import Capability, Profile
    from .spec import CapabilitySpec

__all__ = ["profile_problems", "spec_problems"]

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_EMPTY = inspect.Parameter.empty

#: the arguments the workbench passes each function of a profile, by field (platforms/base.py)
PROFILE_CALLS: dict[str, tuple[str, ...]] = {
    "load": ("folder",),
    "lint": ("folder",),
    "grants_for": ("manifest", "tool"),
    "call_values": ("manifest", "options"),
    "check_stored": ("manifest", "scope", "key", "value", "max_depth"),
    "judge": ("manifest", "tool", "value"),
    "opened": ("manifest",),
    "closed": ("manifest",),
    "detects": ("folder",),
    "declarations.ts_modules": ("lines",),
    "declarations.gem_ctx": ("manifest",),
    "scaffold.files": ("values",),
}
#: ... and of a capability spec (ctx/spec.py), of its state parts (ctx/parts.py) and effects
SPEC_CALLS: dict[str, tuple[str, ...]] = {
    "backend": ("opening",),
    "call_state": ("session",),
    "fixtures": ("root",),
    "close": ("backend",),
    "notice": ("method", "result"),
    "replayed": ("method",),
    "real_effects": ("backend",),
}
PART_CALLS: dict[str, tuple[str, ...]] = {
    "dump": ("cx",),
    "put": ("cx", "value", "bad"),
    "snapshot": ("cx",),
    "restore": ("cx", "snapshot"),
    "diff": ("before", "after"),
    "current": ("cx",),
    "blank": (),
    "reached": ("cx", "method", "args", "reach"),
    "before_json": ("copy", "named", "changed"),
    "changed": ("copy", "cx"),
}
EFFECT_CALLS: dict[str, tuple[str, ...]] = {
    "acts": ("args",),
    "same": ("a", "b"),
    "deduped": ("args", "key"),
    "describe": ("args",),
}


def _signature(fn: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: nothing to compare
        return None


def _takes(fn: Any, passed: tuple[str, ...]) -> str | None:
    """None when `fn` can be called with `passed` positionally; else the problem, naming the
    parameter in `(…)` as the place to fix."""
    if not callable(fn):
        return f"({', '.join(passed)}): is a {type(fn).__name__}, not a function"
    sig = _signature(fn)
    if sig is None:
        return None
    params = list(sig.parameters.values())
    slots = [p for p in params if p.kind in _POSITIONAL]
    if len(slots) < len(passed) and not any(p.kind == p.VAR_POSITIONAL for p in params):
        name = passed[len(slots)]
        return f"({name}): takes {len(slots)} argument(s), the workbench passes {len(passed)} ({', '.join(passed)})"
    extra = [p for p in slots[len(passed) :] if p.default is _EMPTY]
    extra += [p for p in params if p.kind == p.KEYWORD_ONLY and p.default is _EMPTY]
    if extra:
        return f"({extra[0].name}): requires {extra[0].name!r}, which the workbench never passes"
    return None


def _own_params(impl: type, attr: str) -> list[inspect.Parameter] | None:
    """The parameters of `impl.attr` as a caller of an instance sees them (without self)."""
    sig = _signature(getattr(impl, attr))
    if sig is None:
        return None
    params = list(sig.parameters.values())
    static = isinstance(inspect.getattr_static(impl, attr), (staticmethod, classmethod))
    return params if static or not params else params[1:]


def method_problem(impl: type, attr: str, declared: tuple[str, ...], bound: int) -> str | None:
    """Why `impl.attr` does not serve a row method declaring `declared` (the first `bound` of
    them the ctx fills in: a collection's name, a dispatch's tool name); None when it does. The
    text starts with `(param)`, the parameter to fix."""
    if not callable(getattr(impl, attr, None)):
        return f"({', '.join(declared[bound:])}): {impl.__name__} has no method {attr!r}"
    params = _own_params(impl, attr)
    if params is None:
        return None
    shown = f"{impl.__name__}.{attr}({', '.join(p.name for p in params)})"
    if not any(p.kind == p.VAR_POSITIONAL for p in params):
        slots = [p for p in params if p.kind in _POSITIONAL]
        if len(slots) < len(declared):
            missing = declared[len(slots)]
            return f"({missing}): {shown} takes no argument for {missing!r}"
    for i, p in enumerate(params):
        if p.default is not _EMPTY or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.kind == p.KEYWORD_ONLY or i >= len(declared):  # no call passes it
            return f"({p.name}): {shown} requires {p.name!r}, which the row does not declare"
        if i >= bound and p.kind != p.POSITIONAL_ONLY and p.name != declared[i]:
            return f"({p.name}): {shown} takes {p.name!r} where the row declares {declared[i]!r}"
    return None


def _rows(profile: Profile) -> Iterator[tuple[Capability, str, str, tuple[str, ...], int]]:
    """(row, where, implementation attribute, declared parameters, how many are bound) of
    every method a profile's capability rows route to an implementation."""
    for cap in profile.capabilities:
        where = f"{profile.name}.{cap.path}"
        if cap.kind == "dispatch":  # ctx.tools.<name>(input) is call(name, input)
            yield cap, where, "call", ("name", "input"), 1
        elif cap.kind == "function" and cap.methods:
            yield cap, where, cap.methods[0].name, cap.methods[0].params, 0
        elif cap.kind in ("namespace", "collection"):
            bound = 1 if cap.kind == "collection" else 0
            for m in cap.methods:
                yield cap, f"{where}.{m.name}", m.name, m.params, bound


def profile_problems(profile: Profile, implementation: Callable[[str], Any]) -> list[str]:
    """Every problem of `profile`'s rows and functions, each naming its place: a row whose
    capability (`implementation(impl)`: its class, None when none has it) lacks the method or
    takes other parameters, a function that cannot take what the workbench passes it."""
    out = []
    for field, passed in PROFILE_CALLS.items():
        fn: Any = profile
        for attr in field.split("."):  # "scaffold.files": the scaffold's, when there is one
            fn = getattr(fn, attr, None)
        if fn is not None and (why := _takes(fn, passed)):
            out.append(f"{profile.name}.{field}{why}")
    for cap, where, attr, declared, bound in _rows(profile):
        impl = implementation(cap.impl)
        if not isinstance(impl, type):
            out.append(f"{where}: no capability implements {cap.impl!r}")
            continue
        if why := method_problem(impl, attr, declared, bound):
            out.append(f"{where}{why}")
    return out


def spec_problems(spec: CapabilitySpec) -> list[str]:
    """Every problem of a capability spec: its class is not a class, or one of its functions
    (its own, its options', views', actions', state parts' and effects') cannot take what the
    workbench passes it."""
    out = []
    name = spec.impl or "bench"
    if spec.implementation is not None and not isinstance(spec.implementation, type):
        out.append(f"{name}.implementation: is a {type(spec.implementation).__name__}, not a class")
    found: list[tuple[str, Any, tuple[str, ...]]] = [
        (f"{name}.{f}", getattr(spec, f), passed) for f, passed in SPEC_CALLS.items()
    ]
    found += [(f"{name}.options.{o.name}.check", o.check, ("value",)) for o in spec.options]
    found += [(f"{name}.flags.{f.flag}.parse", f.parse, ("text",)) for o in spec.options for f in o.flags]
    found += [(f"{name}.views.{v.name}", v.fn, ("bench",)) for v in spec.views]
    found += [(f"{name}.actions.{a.flag}", a.apply, ("bench", "values")) for a in spec.actions]
    found += [
        (f"{name}.state.{part.name}.{f}", getattr(part, f), passed)
        for part in spec.state
        for f, passed in PART_CALLS.items()
    ]
    found += [
        (f"{name}.effects.{e.method}.{f}", getattr(e, f), passed)
        for e in spec.effects
        for f, passed in EFFECT_CALLS.items()
    ]
    for where, fn, passed in found:
        if fn is not None and (why := _takes(fn, passed)):
            out.append(f"{where}{why}")
    return out
