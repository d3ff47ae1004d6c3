"""Platform profiles: one seam under which the platforms share the ctx layer.

    profile = detect("notebooks/gems/notes")   # -> the Notochord profile
    manifest = profile.load(folder)

`registry()` holds every platform the workbench knows: the built-ins and the profiles other
packages register in the `gem_workbench.platforms` entry-point group (docs/platforms.md);
`detect` picks a folder's from what it holds (manifest.json and its `platform`, or a profile's
`detects`, e.g. an Ekanos `integration.ts`). An unknown name is a clear E_MANIFEST, never run
under another platform's rules.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import GemLoadError
from .._plugins import Group, PluginWarning
from ..gem.folder import clip, read_json, realpath
from .base import Capability, EntryPoint, Grants, Limits, Method, Profile, SchemaRules

if TYPE_CHECKING:
    from ..gem import Manifest

#: the built-in platforms, by the name a manifest's `platform` uses (plugins add theirs: `names()`)
KNOWN = {"notochord": "Notochord gems", "agent": "agent custom tools", "ekanos": "Ekanos integrations"}
#: the entry-point group a platform plugin registers its Profile in (docs/platforms.md)
GROUP = "gem_workbench.platforms"
_BUILTIN = {
    "notochord": "workbench.platforms.notochord:PROFILE",
    "agent": "workbench.platforms.agent:PROFILE",
    "ekanos": "workbench.platforms.ekanos:PROFILE",
}  # the fallback when the installed metadata lacks them (a checkout not reinstalled)


def _load_ref(ref: str) -> Any:
    from importlib import import_module

    module, _, attr = ref.partition(":")
    obj: Any = import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


def _builtins() -> dict[str, Profile]:
    # looked up on every call, not cached: a test that monkeypatches `notochord.PROFILE` must
    # see its profile (the modules themselves are imported once, by import_module's cache)
    return {name: _load_ref(ref) for name, ref in _BUILTIN.items()}


#: the entry points' profiles, loaded once per process (a plugin that fails to load, is not a
#: Profile or reuses a name is skipped with a PluginWarning naming it)
_plugins = Group(
    GROUP,
    Profile,
    names=lambda prof: (prof.name,),
    taken=_BUILTIN,
    what="platform name",
    public="workbench.plugin.Profile",
    skip=lambda name, value: value == _BUILTIN.get(name),  # the built-ins' own registration
)


def _lazy_plugins() -> Iterator[Profile]:
    yield from _plugins()  # read when the first is asked for


def registry() -> dict[str, Profile]:
    """{name: profile} of every platform: the built-ins, then the `gem_workbench.platforms`
    entry points' (a plugin that fails to load, is not a Profile or reuses a name is skipped
    with a PluginWarning naming it, never a traceback)."""
    return {**_builtins(), **{prof.name: prof for prof in _plugins()}}


def names() -> list[str]:
    """Every platform's name: the built-ins, then the plugins'."""
    return list(registry())


def profile(name: str) -> Profile:
    """The profile of platform `name`, or E_MANIFEST saying why there is none."""
    if name in _BUILTIN:  # a plugin never takes a built-in's name: no entry-point scan needed
        prof: Profile = _load_ref(_BUILTIN[name])
        return prof
    profiles = registry()
    if name not in profiles:
        raise GemLoadError(
            f'"platform": {clip(repr(name), 80)} is not a platform the workbench knows; use '
            f"one of {', '.join(map(repr, profiles))}",
            pointer="/platform",
            known=list(profiles),
        )
    return profiles[name]


def profiles(*, loaded_only: bool = False) -> list[Profile]:
    """Every platform's profile in registry order, built-ins first (the surfaces that list
    every platform's options: help(workbench.open), the CLI, docs/open.md); with
    `loaded_only`, the plugins' only if something read them already."""
    if loaded_only and not _plugins.read:
        return list(_builtins().values())
    return list(registry().values())


def detect(folder: str | os.PathLike[str]) -> Profile:
    """The profile of the gem at `folder`: manifest.json's `platform` (default "notochord"),
    or, with no manifest.json, the first profile whose `detects(folder)` is true (Ekanos: a
    folder with integration.ts/.js)."""
    root = Path(folder)
    mpath = root / "manifest.json"
    if not os.path.lexists(mpath):
        # the built-ins' hooks first: a plugin's entry points are read only when none claims it
        for prof in itertools.chain(_builtins().values(), _lazy_plugins()):
            if prof.detects is not None and prof.detects(root):
                return prof
        return profile("notochord")  # its loader says what is missing
    real, inside = realpath(mpath), realpath(root)
    if real is None or inside is None or not real.is_relative_to(inside):
        return profile("notochord")  # a link out of the gem: its loader refuses it, unread
    try:
        raw = read_json(mpath)
    except GemLoadError:
        return profile("notochord")  # the loader reports the unreadable manifest in full
    name = raw.get("platform", "notochord") if isinstance(raw, dict) else "notochord"
    if not isinstance(name, str):
        raise GemLoadError(
            f"manifest.json: /platform: give a platform name ({', '.join(registry())}), not {type(name).__name__}",
            file=str(mpath),
            pointer="/platform",
        )
    try:
        return profile(name)
    except GemLoadError as exc:
        raise GemLoadError(f"manifest.json: {exc.message}", file=str(mpath), **exc.details) from None


def load(folder: str | os.PathLike[str]) -> Manifest:
    """Load the gem at `folder` with its platform's loader (GemLoadError when unusable)."""
    return detect(folder).load(Path(folder))


def lint(folder: str | os.PathLike[str]) -> list[dict[str, str]]:
    """Every problem of the gem at `folder` as {file, pointer, message}; [] when it is fine."""
    try:
        prof = detect(folder)
    except GemLoadError as exc:
        return [
            {"file": exc.details.get("file", str(folder)), "pointer": "/platform", "message": exc.message}
        ]
    return prof.lint(Path(folder))


__all__ = [
    "GROUP",
    "KNOWN",
    "Capability",
    "EntryPoint",
    "Grants",
    "Limits",
    "Method",
    "PluginWarning",
    "Profile",
    "SchemaRules",
    "detect",
    "lint",
    "names",
    "load",
    "profile",
    "profiles",
    "registry",
]
