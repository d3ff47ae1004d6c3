"""The capability registry: every capability as a unit (ctx/spec.py), the built-ins' and the
ones other packages register in the `gem_workbench.capabilities` entry-point group.

A plugin's `CapabilitySpec` is everything the workbench needs to offer it: its ctx class (the
Python and JS ctx route a platform row naming its `impl` to it), its `open()` options and
their CLI flags, its backend, per-call state, views and actions. A platform — built-in or a
plugin of `gem_workbench.platforms` — uses it by naming its `impl` in a capability row
(docs/platforms.md). The entry points are read only when a platform names a capability the
built-ins lack, or a surface lists every capability (the CLI's flags, docs), so opening a
built-in platform's gem does no plugin work.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._plugins import CHECKS, Group
from . import account as _account
from . import audit as _audit
from . import data as _data
from . import email as _email
from . import extract as _extract
from . import files as _files
from . import http as _http
from . import logger as _logger
from . import resources as _resources
from . import secrets as _secrets
from . import storage as _storage
from . import tools as _tools
from .spec import CapabilitySpec, specs_for

if TYPE_CHECKING:
    from ..platforms import Profile

__all__ = [
    "GROUP",
    "IMPLEMENTATIONS",
    "SPECS",
    "implementation",
    "capability",
    "specs",
    "specs_of",
]

#: the entry-point group a capability plugin registers its CapabilitySpec in
GROUP = "gem_workbench.capabilities"

#: the built-in capabilities, one row each, in the order surfaces list them (docs/open.md, the
#: CLI, help(open)); plugins' follow them (`specs`)
SPECS: dict[str, CapabilitySpec] = {
    s.impl: s
    for s in (
        _files.SPEC,
        _data.SPEC,
        _storage.KV_SPEC,
        _storage.SQL_SPEC,
        _email.SPEC,
        _http.SPEC,
        _extract.SPEC,
        _resources.SPEC,
        _tools.SPEC,
        _audit.SPEC,
        _account.SPEC,
        _secrets.SPEC,
        _logger.SPEC,
    )
}
#: the built-ins' ctx classes, by the `impl` name a profile's registry rows use
IMPLEMENTATIONS: dict[str, type] = {
    name: s.implementation for name, s in SPECS.items() if s.implementation is not None
}
_BUILTIN_NAMES = frozenset(n for s in SPECS.values() for n in (s.impl, *s.covers))


def _problems(spec: CapabilitySpec) -> list[str]:
    """A capability plugin's problems (ctx/verify.py, loaded only when a plugin is)."""
    from .verify import spec_problems

    return spec_problems(spec)


CHECKS[GROUP] = _problems
#: the entry points' specs, loaded once per process (one that fails to load, is not a
#: CapabilitySpec, reuses a name or fails its check is skipped with a PluginWarning naming it)
_plugins = Group(
    GROUP,
    CapabilitySpec,
    names=lambda s: (s.impl, *s.covers),
    taken=_BUILTIN_NAMES,
    what="capability name",
    public="workbench.plugin.CapabilitySpec",
)


def specs(*, loaded_only: bool = False) -> list[CapabilitySpec]:
    """Every capability's spec: the built-ins, then the plugins' (read on first use; with
    `loaded_only`, only if something read them already)."""
    if loaded_only and not _plugins.read:
        return list(SPECS.values())
    return [*SPECS.values(), *_plugins()]


def capability(name: str) -> CapabilitySpec | None:
    """The spec whose `impl` (or one of its `covers`) is `name`; None: no capability has it."""
    found = SPECS.get(name)
    if found is not None:
        return found
    return next((s for s in specs() if name == s.impl or name in s.covers), None)


def _named(profile: Profile) -> set[str]:
    return {c.impl for c in profile.capabilities if c.kind != "value"}


def specs_of(profile: Profile) -> list[CapabilitySpec]:
    """The specs a bench of `profile` has: every bench's (`spec.BENCH`), then its capabilities'
    in registry order (plugins are read only when it names a capability the built-ins lack)."""
    pool = SPECS.values() if _named(profile) <= _BUILTIN_NAMES else specs()
    return specs_for(profile, pool)


def provider_kinds(profile: Profile, kinds: Mapping[str, str]) -> dict[str, str]:
    """`kinds` (providers.kind: "files"/"storage" -> "mock"/"real") for the kinds the
    capabilities of `profile` sit on: an agent bench has neither, an Ekanos one storage."""
    used = {k for s in specs_of(profile) for k in s.provider_kinds}
    return {k: v for k, v in kinds.items() if k in used}


def implementation(name: str) -> Callable[..., Any] | None:
    """The ctx class of capability `name` (a row's `impl`); None: no capability has it."""
    cls = IMPLEMENTATIONS.get(name)
    if cls is not None:
        return cls
    found = capability(name)
    return found.implementation if found is not None and found.impl == name else None
