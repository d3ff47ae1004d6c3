"""The ctx object a Python tool gets, generated from its profile's capability registry.

The same registry gives the sandbox its JS ctx (runners/deno/worker/ctx.ts builds it from the
call message), so a Python and a JS tool of one gem see the same names (tested per profile).
An `async def handle` gets coroutine methods (`await ctx.files.read(…)`); a plain `def
handle` gets the same methods returning values directly. Every method goes through
`Capabilities.call`, the one door into the ctx layer.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..platforms import Capability
    from . import Capabilities

#: what a method's result becomes for a Python tool, by the registry's codec name
CODECS: dict[str, Callable[[Any], Any]] = {}


class _Methods:
    """One ctx namespace (ctx.files, ctx.storage.kv, a collection); methods made on first use."""

    def __init__(self, caps: Capabilities, cap: Capability, *bound: Any, asynchronous: bool) -> None:
        self._caps, self._prefix, self._bound, self._async = caps, cap.path, bound, asynchronous
        self._names = cap.method_names()
        self._codecs = {m.name: CODECS[m.codec] for m in cap.methods if m.codec}
        self._cap = cap

    def __getattr__(self, attr: str) -> Callable[..., Any]:
        if attr.startswith("_"):  # never instance state: copy/pickle probe these half-built
            raise AttributeError(attr)
        if attr not in self._names:
            raise AttributeError(
                f"ctx.{self._prefix} has no method {attr!r} (it has: {', '.join(self._names)})"
            )
        fn = _method(
            self._caps, f"{self._prefix}.{attr}", attr, self._bound, self._codecs.get(attr), self._async
        )
        _describe(fn, self._caps, self._cap, attr, len(self._bound))
        setattr(self, attr, fn)
        return fn

    def __dir__(self) -> list[str]:
        return list(self._names)

    def __repr__(self) -> str:
        return f"<ctx.{self._prefix}: {', '.join(self._names)}>"


def _method(
    caps: Capabilities,
    name: str,
    attr: str,
    bound: tuple[Any, ...],
    codec: Callable[[Any], Any] | None,
    asynchronous: bool,
) -> Callable[..., Any]:
    fn: Callable[..., Any]
    if asynchronous:

        async def fn(*args: Any, **kwargs: Any) -> Any:
            out = caps.call(name, *bound, *args, **kwargs)
            return codec(out) if codec else out
    elif codec is not None:

        def fn(*args: Any, **kwargs: Any) -> Any:
            return codec(caps.call(name, *bound, *args, **kwargs))
    else:

        def fn(*args: Any, **kwargs: Any) -> Any:
            return caps.call(name, *bound, *args, **kwargs)

    fn.__name__ = fn.__qualname__ = attr
    return fn


def _describe(fn: Callable[..., Any], caps: Capabilities, cap: Capability, attr: str, bound: int) -> None:
    """Give a ctx method the signature and docstring of the ctx layer's implementation (what
    Jupyter's inspect and help() show), less `self` and the arguments ctx binds (a
    collection's name); the registry's parameter names where no implementation has one
    (ctx.tools.<name>)."""
    key = (caps.session.profile.name, cap.path, attr, bound)
    if key not in _DESCRIBED:  # once per process: each call builds its ctx afresh
        _DESCRIBED[key] = _description(caps.session.profile.routes, cap, attr, bound)
    fn.__signature__, fn.__doc__ = _DESCRIBED[key]  # type: ignore[attr-defined]


_DESCRIBED: dict[tuple[str, str, str, int], tuple[inspect.Signature, str]] = {}


def _description(
    routes: dict[str, tuple[str, str]], cap: Capability, attr: str, bound: int
) -> tuple[inspect.Signature, str]:
    from .registry import implementation

    route = routes.get(f"{cap.path}.{attr}") or routes.get(cap.path)
    impl = getattr(implementation(route[0]), route[1], None) if route else None
    method = next((m for m in cap.methods if m.name == attr), None)
    sig: inspect.Signature | None = None
    if callable(impl):
        try:
            sig = inspect.signature(impl)
            sig = sig.replace(parameters=list(sig.parameters.values())[1 + bound :])
        except (TypeError, ValueError):
            sig = None
    if sig is None:
        names = method.params if method else ("input",)
        sig = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
        )
    own = inspect.getdoc(impl) if callable(impl) else None
    call = f"ctx.{cap.path}" + {"function": "", "collection": f".collection(name).{attr}"}.get(
        cap.kind, f".{attr}"
    )
    return sig, (f"{call}{sig} — {cap.doc}" + (f"\n\n{own}" if own else ""))


class _Node:
    """An inner namespace of the ctx tree (ctx.storage holds kv and sql)."""

    def __init__(self, path: str, children: dict[str, Any]) -> None:
        self._path = path
        self.__dict__.update(children)

    def __dir__(self) -> list[str]:
        return sorted(k for k in self.__dict__ if not k.startswith("_"))

    def __repr__(self) -> str:
        return f"<ctx.{self._path}: {', '.join(self.__dir__())}>"


class _Collections:
    """ctx.data: `collection(name)` checks the name at once (D1, synchronous on the platform)."""

    def __init__(self, caps: Capabilities, cap: Capability, asynchronous: bool) -> None:
        self._caps, self._cap, self._async = caps, cap, asynchronous

    def collection(self, name: str) -> _Methods:
        getattr(self._caps, self._cap.impl).check(name)
        return _Methods(self._caps, self._cap, name, asynchronous=self._async)

    def __dir__(self) -> list[str]:
        return ["collection"]


class PythonCtx:
    """The ctx object handed to a Python tool: its profile's capabilities, as its grants allow.

    A capability the tool has no grant for is missing (AttributeError naming the manifest
    field), except where the registry says the platform denies each call instead (E1's
    ctx.email: the call is traced and fails with E_PERM_DENIED). `dir(ctx)` lists what the
    platform gives this tool, as a JS tool's `Object.keys(ctx)` does.
    """

    def __init__(self, caps: Capabilities, *, asynchronous: bool) -> None:
        self._caps, self._async = caps, asynchronous
        self._rows = caps.session.profile.tops

    def _present(self) -> list[str]:
        session = self._caps.session
        return sorted({c.top for c in session.profile.present(session.grants)})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # never instance state: copy/pickle probe these half-built
            raise AttributeError(name)
        rows = self._rows.get(name)
        foreign = self._caps.session.profile.foreign.get(name)
        if rows is None and foreign is not None:
            raise AttributeError(f"ctx has no attribute {name!r}: {foreign}")
        if rows is None:
            raise AttributeError(f"ctx has no attribute {name!r} (it has: {', '.join(self._present())})")
        grants = self._caps.session.grants
        usable = [c for c in rows if c.grant is None or grants.has(c.grant) or c.python_absent == "deny"]
        if not usable:
            denied = next(c.grant for c in rows if c.grant is not None)
            raise AttributeError(f"ctx has no attribute {name!r}: {grants.denial(denied).message}")
        value = self._tree(rows[0].top, usable)
        setattr(self, name, value)
        return value

    def _tree(self, path: str, rows: list[Capability]) -> Any:
        """The object at `path` from the rows at or below it (any depth, like the JS ctx)."""
        for cap in rows:
            if cap.path == path:
                return self._leaf(cap)
        children: dict[str, list[Capability]] = {}
        for cap in rows:
            children.setdefault(cap.path[len(path) + 1 :].split(".", 1)[0], []).append(cap)
        return _Node(path, {c: self._tree(f"{path}.{c}", below) for c, below in children.items()})

    def _leaf(self, cap: Capability) -> Any:
        caps, sync = self._caps, self._async
        if cap.kind == "value":
            return caps.session.value(cap.impl)
        if cap.kind == "dispatch":  # the names this tool may call, as its grants list them
            present = caps.session.profile.present(caps.session.grants)
            return _Methods(caps, next(c for c in present if c.path == cap.path), asynchronous=sync)
        if cap.kind == "function":
            m = cap.methods[0]
            fn = _method(caps, cap.path, m.name, (), CODECS.get(m.codec or ""), sync)
            _describe(fn, caps, cap, m.name, 0)
            return fn
        if cap.kind == "collection":
            return _Collections(caps, cap, sync)
        return _Methods(caps, cap, asynchronous=sync)

    def __dir__(self) -> list[str]:
        return self._present()

    def __repr__(self) -> str:
        return f"<ctx ({self._caps.session.profile.name}): {', '.join(self._present())}>"
