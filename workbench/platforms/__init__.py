"""Platform profiles: one seam under which the platforms share the ctx layer.

    profile = detect("notebooks/gems/notes")   # -> the Notochord profile
    manifest = profile.load(folder)

`PROFILES` names every platform the workbench knows; `detect` picks a folder's from what it
holds (manifest.json and its `platform`, or an Ekanos `integration.ts`). A platform not yet
built is known by name and refused with a clear E_MANIFEST, never run under another's rules.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from .._errors import GemLoadError
from ..gem.folder import clip, read_json, realpath
from .base import Capability, EntryPoint, Grants, Limits, Method, Profile, SchemaRules

if TYPE_CHECKING:
    from ..gem import Manifest

#: every platform the workbench knows, by the name a manifest's `platform` uses
KNOWN = {"notochord": "Notochord gems", "agent": "agent custom tools", "ekanos": "Ekanos integrations"}
_ISSUES = {"agent": "agent custom tools (seed 002)", "ekanos": "Ekanos integrations (seed 003)"}
_MODULES = {
    "notochord": "notochord",
    "agent": "agent",
    "ekanos": "ekanos",
}  # the platforms built so far: name -> subpackage


def profile(name: str) -> Profile:
    """The profile of platform `name`, or E_MANIFEST saying why there is none."""
    if name not in KNOWN:
        raise GemLoadError(
            f'"platform": {clip(repr(name), 80)} is not a platform the workbench knows; use '
            f"one of {', '.join(map(repr, KNOWN))}",
            pointer="/platform",
            known=list(KNOWN),
        )
    if name not in _MODULES:
        raise GemLoadError(
            f'"platform": {name!r} ({_ISSUES[name]}) is not supported yet by '
            f"this version of the workbench: it runs {KNOWN['notochord']} only; "
            "opening it under their rules would misreport what the platform "
            "does",
            pointer="/platform",
            platform=name,
        )
    from importlib import import_module

    prof: Profile = import_module(f"{__name__}.{_MODULES[name]}").PROFILE
    return prof


def profiles() -> list[Profile]:
    """Every platform built so far, in KNOWN's order (the surfaces that list every platform's
    options: help(workbench.open), the CLI, docs/open.md)."""
    return [profile(name) for name in KNOWN if name in _MODULES]


def detect(folder: str | os.PathLike[str]) -> Profile:
    """The profile of the gem at `folder`: manifest.json's `platform` (default "notochord"),
    or "ekanos" for a folder with integration.ts/.js and no manifest.json."""
    root = Path(folder)
    mpath = root / "manifest.json"
    if not os.path.lexists(mpath):
        if any(os.path.lexists(root / f"integration.{ext}") for ext in ("ts", "js")):
            return profile("ekanos")
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
            f"manifest.json: /platform: give a platform name ({', '.join(KNOWN)}), not {type(name).__name__}",
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
    "KNOWN",
    "Capability",
    "EntryPoint",
    "Grants",
    "Limits",
    "Method",
    "Profile",
    "SchemaRules",
    "detect",
    "lint",
    "load",
    "profile",
    "profiles",
]
