"""The ctx object a Python tool gets, generated from its profile's capability registry.

The same registry gives the sandbox its JS ctx (runners/deno/worker.ts builds it from the
call message), so a Python and a JS tool of one gem see the same names (tested per profile).
An `async def handle` gets coroutine methods (`await ctx.files.read(…)`); a plain `def
handle` gets the same methods returning values directly. Every method goes through
`Capabilities.call`, the one door into the ctx layer.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..platforms import Capability
    from . import Capabilities

#: what a method's result becomes for a Python tool, by the registry's codec name
CODECS: dict[str, Callable[[Any], Any]] = {}


class _Methods:
    """One ctx namespace (ctx.files, ctx.storage.kv, a collection); methods made on first use."""

    def __init__(self, caps: "Capabilities", cap: "Capability", *bound: Any,
                 asynchronous: bool) -> None:
        self._caps, self._prefix, self._bound, self._async = caps, cap.path, bound, asynchronous
        self._names = cap.method_names()
        self._codecs = {m.name: CODECS[m.codec] for m in cap.methods if m.codec}

    def __getattr__(self, attr: str) -> Callable[..., Any]:
        if attr.startswith("_") or attr not in self._names:
            raise AttributeError(f"ctx.{self._prefix} has no method {attr!r} (it has: "
                                 f"{', '.join(self._names)})")
        fn = _method(self._caps, f"{self._prefix}.{attr}", attr, self._bound,
                     self._codecs.get(attr), self._async)
        setattr(self, attr, fn)
        return fn

    def __dir__(self) -> list[str]:
        return list(self._names)

    def __repr__(self) -> str:
        return f"<ctx.{self._prefix}: {', '.join(self._names)}>"


def _method(caps: "Capabilities", name: str, attr: str, bound: tuple[Any, ...],
            codec: Callable[[Any], Any] | None, asynchronous: bool) -> Callable[..., Any]:
    fn: Callable[..., Any]
    if asynchronous:
        async def fn(*args: Any, **kwargs: Any) -> Any:
            out = caps.call(name, *bound, *args, **kwargs)
            return codec(out) if codec else out
    elif codec is not None:
        def fn(*args: Any, **kwargs: Any) -> Any:
            return codec(caps.call(name, *bound, *args, **kwargs))
    else:
        return functools.partial(caps.call, name, *bound)
    fn.__name__ = fn.__qualname__ = attr
    return fn


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

    def __init__(self, caps: "Capabilities", cap: "Capability", asynchronous: bool) -> None:
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
    ctx.email: the call is traced and fails with E_PERM_DENIED).
    """

    def __init__(self, caps: "Capabilities", *, asynchronous: bool) -> None:
        self._caps, self._async = caps, asynchronous
        self._rows: dict[str, list[Capability]] = {}
        for cap in caps.session.profile.capabilities:
            self._rows.setdefault(cap.top, []).append(cap)

    def _present(self) -> list[str]:
        grants = self._caps.session.grants
        return sorted({c.top for c in self._caps.session.profile.present(grants)})

    def __getattr__(self, name: str) -> Any:
        rows = None if name.startswith("_") else self._rows.get(name)
        if rows is None:
            raise AttributeError(f"ctx has no attribute {name!r} (it has: "
                                 f"{', '.join(self._present())})")
        session = self._caps.session
        for cap in rows:
            if cap.grant is not None and not session.grants.has(cap.grant) \
                    and cap.python_absent == "missing":
                raise AttributeError(f"ctx has no attribute {name!r}: "
                                     f"{session.grants.denial(cap.grant).message}")
        value = self._build(name, rows)
        setattr(self, name, value)
        return value

    def _build(self, top: str, rows: "list[Capability]") -> Any:
        caps, sync = self._caps, self._async
        if len(rows) == 1 and rows[0].path == top:
            cap = rows[0]
            if cap.kind == "value":
                return getattr(caps.session, cap.impl)
            if cap.kind == "function":
                m = cap.methods[0]
                return _method(caps, cap.path, m.name, (), CODECS.get(m.codec or ""), sync)
            if cap.kind == "collection":
                return _Collections(caps, cap, sync)
            return _Methods(caps, cap, asynchronous=sync)
        # an inner node: rows one level down (storage.kv, storage.sql)
        children = {cap.path.split(".", 1)[1]: _Methods(caps, cap, asynchronous=sync)
                    for cap in rows}
        return _Node(top, children)

    def __dir__(self) -> list[str]:
        return self._present()

    def __repr__(self) -> str:
        return f"<ctx ({self._caps.session.profile.name}): {', '.join(self._present())}>"
