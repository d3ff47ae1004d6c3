"""Entry-point plugins, loaded one way for every group (platforms' profiles, capabilities'
specs): each entry point once, sorted by name; one that fails to load (raising anything,
SystemExit and KeyboardInterrupt included), is not of the group's
type, takes a name already used or fails its group's check (`CHECKS`: its rows against what
implements them, ctx/verify.py) is skipped with a `PluginWarning` naming it, never a
traceback (a plugin's bug must not stop the workbench)."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Collection
from typing import Any, Generic, TypeVar

__all__ = ["CHECKS", "Group", "PluginWarning", "load_group", "on_loaded"]

T = TypeVar("T")


class PluginWarning(UserWarning):
    """A plugin that could not be used (it is skipped; the message names its entry point)."""


_LISTENERS: list[Callable[[], None]] = []

#: {group: the check of each object loaded from it, returning its problems (each naming its
#: place, `platform.row.method(param)`): one with any is skipped}. Set by the layer that can
#: see what the rows name: ctx/registry.py for capabilities; the package's __init__ for
#: platforms, whose rows name the ctx layer's classes, which workbench.platforms may not import
CHECKS: dict[str, Callable[[Any], list[str]]] = {}


def on_loaded(fn: Callable[[], None]) -> None:
    """Call `fn` whenever a group's plugins have been loaded (`Group`), e.g. to write
    `help(workbench.open)` again with their options."""
    _LISTENERS.append(fn)


@functools.cache
def _installed() -> Any:
    """Every installed entry point, read once per process for all the groups (a read of the
    installed distributions' metadata costs about 10 ms here: docs/benchmarks.md); Python
    3.11's SelectableGroups or 3.12's EntryPoints, both with `select(group=…)`."""
    from importlib.metadata import entry_points

    return entry_points()


def load_group(
    group: str,
    kind: type[T],
    *,
    names: Callable[[T], Collection[str]],
    taken: set[str],
    what: str,
    public: str,
    skip: Callable[[str, str], bool] = lambda name, value: False,
) -> list[T]:
    """The objects the entry points of `group` name that are `kind`s, in entry-point name
    order. names: the names an object takes (a platform's, a capability's and what it
    covers), checked against and added to `taken`; what: "platform name" or "capability
    name", and public: the type's public name, for the warning; skip(name, value): an entry
    point to pass over silently (a built-in's own registration). An object that `CHECKS[group]`
    finds problems in is skipped, its warning naming each."""
    out: list[T] = []
    for ep in sorted(_installed().select(group=group), key=lambda e: e.name):
        if skip(ep.name, ep.value):
            continue
        where = f"entry point {ep.name!r} = {ep.value!r} (group {group})"
        try:
            got = ep.load()
        # a plugin's bug must not stop the workbench: a SystemExit or KeyboardInterrupt raised
        # at its import ended the CLI (a Ctrl-C then is taken for the plugin's: see readings)
        except BaseException as exc:  # noqa: BLE001
            problem = f"failed to load: {type(exc).__name__}: {exc}"
        else:
            own = names(got) if isinstance(got, kind) else ()
            problem = (
                f"is a {type(got).__name__}, not a {public}; skipped"
                if not isinstance(got, kind)
                else f"has no {what}; skipped"
                if not own or not all(own)
                else f"{what} {sorted(set(own) & taken)[0]!r} is already taken; skipped"
                if set(own) & taken
                else _checked(group, got)
            )
        if problem:
            warnings.warn(f"{where}: {problem}", PluginWarning, stacklevel=4)
            continue
        taken.update(own)
        out.append(got)
    return out


def _checked(group: str, got: Any) -> str:
    """The problems `CHECKS[group]` finds in `got`, as a warning's end ("" when none); a check
    that raises is the plugin's problem too (a row it cannot even read)."""
    check = CHECKS.get(group)
    if check is None:
        return ""
    try:
        problems = check(got)
    except Exception as exc:  # noqa: BLE001 - whatever a plugin's objects raise, it is skipped
        problems = [f"could not be checked: {type(exc).__name__}: {exc}"]
    return f"{'; '.join(problems)}; skipped" if problems else ""


class Group(Generic[T]):
    """One entry-point group's plugins (`load_group`'s arguments), loaded on the first call,
    once per process; then each `on_loaded` listener is told, outside the load, so that a
    listener may ask for them (or for another group) again."""

    def __init__(
        self,
        group: str,
        kind: type[T],
        *,
        names: Callable[[T], Collection[str]],
        taken: Collection[str],
        what: str,
        public: str,
        skip: Callable[[str, str], bool] = lambda name, value: False,
    ) -> None:
        self._load = functools.partial(
            load_group, group, kind, names=names, what=what, public=public, skip=skip
        )
        self._taken = frozenset(taken)
        self._found: tuple[T, ...] | None = None

    @property
    def read(self) -> bool:
        """Whether the group's entry points were read already (a surface may skip them if not)."""
        return self._found is not None

    def __call__(self) -> tuple[T, ...]:
        if self._found is None:
            self._found = tuple(self._load(taken=set(self._taken)))
            if self._found:
                for fn in list(_LISTENERS):
                    fn()
        return self._found
